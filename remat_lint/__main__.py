from remat_lint.cli import main

raise SystemExit(main())
