from remat_lint.cli.launch import main

raise SystemExit(main())
