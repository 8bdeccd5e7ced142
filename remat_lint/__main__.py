from remat_lint.launch import main

raise SystemExit(main())
