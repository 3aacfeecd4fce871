"""``python -m s2sad``: the command line."""
import sys

from .cli import main

sys.exit(main())
