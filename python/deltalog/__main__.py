"""``python -m deltalog``: the command line (:mod:`deltalog.cli.main`)."""

import sys

from deltalog.cli.main import main

sys.exit(main())
