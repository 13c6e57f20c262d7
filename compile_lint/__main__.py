from compile_lint.frontends.cli import main

raise SystemExit(main())
