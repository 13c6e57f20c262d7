from compile_lint.linter.cli import main

raise SystemExit(main())
