"""Run the s2sad command line from a checkout: ``python cli.py FILE.py:FUNCTION``."""
import sys

from s2sad.cli import main

if __name__ == "__main__":
    sys.exit(main())
