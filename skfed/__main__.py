"""``python -m skfed``: the quick tour (``--help`` for the options)."""

import sys

from skfed._tour import main

if __name__ == "__main__":
    sys.exit(main())
