"""Canonical bytes of ids, shared by every group the PSI runs in."""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import numbers

import numpy as np

__all__ = ["encode_id", "id_kind"]


def encode_id(x):
    """Canonical bytes of an id: equal ids of the same kind give equal bytes
    at every party (``5``, ``np.int64(5)`` alike); 5 and "5" differ."""
    kind = type(x)  # exact types first: no abstract-class checks per id
    if kind is int:
        return b"i" + str(x).encode()
    if kind is str:
        return b"s" + x.encode("utf-8")
    if isinstance(x, str):
        return b"s" + x.encode("utf-8")
    if isinstance(x, numbers.Integral) and not isinstance(x, (bool, np.bool_)):
        return b"i" + str(int(x)).encode()
    if isinstance(x, bytes):
        return b"b" + x
    raise TypeError(f"ids must be integers or strings, got {type(x).__name__}")


def id_kind(x):
    """``"integer"``, ``"string"`` or ``"bytes"`` (None for anything else)."""
    if isinstance(x, str):
        return "string"
    if isinstance(x, bytes):
        return "bytes"
    if isinstance(x, numbers.Integral) and not isinstance(x, (bool, np.bool_)):
        return "integer"
    return None
