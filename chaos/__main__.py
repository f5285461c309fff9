"""`python -m chaos` is the same as the `chaos` console script."""

import sys

from chaos.cli import main

sys.exit(main())
