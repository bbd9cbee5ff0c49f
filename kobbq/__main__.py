from kobbq.cli import main

raise SystemExit(main())
