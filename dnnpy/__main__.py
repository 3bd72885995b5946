"""``python -m dnnpy ...``: the command line (see ``dnnpy.cli``)."""

import sys

from .cli import main

sys.exit(main())
