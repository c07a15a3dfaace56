"""``python -m contactopt`` is the ``contactopt`` command."""

import sys

from contactopt.cli import main

sys.exit(main())
