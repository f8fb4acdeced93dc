"""``python -m deltalog``: the command line (:mod:`deltalog.cli`)."""

import sys

from deltalog.cli import main

sys.exit(main())
