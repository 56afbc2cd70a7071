"""``python -m audits`` is the ``unlearn`` command line."""

from audits.cli import main

raise SystemExit(main())
