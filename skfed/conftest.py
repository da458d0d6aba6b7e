"""Doctest setup: the examples in docstrings use small (512-bit) keys.

Like the test suite (``tests/conftest.py``), the doctests opt in to
insecure keys for speed; ``setup.cfg`` filters the warning they still raise.
"""

import os

os.environ["SKFED_ALLOW_INSECURE_KEYS"] = "1"
