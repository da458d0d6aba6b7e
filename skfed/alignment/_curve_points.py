"""Which 32 bytes are points of Curve25519 the PSI accepts.

A received value is accepted when it is the canonical little-endian
encoding of the u-coordinate of a point of the curve itself (not of its
quadratic twist) outside the 8-torsion, the only values an honest party's
X25519 outputs can be. The field arithmetic is one Legendre symbol (gmpy2).
:mod:`skfed.alignment._x25519` checks every received message with
:func:`_message_problem` and :func:`point_problem`, refuses a bad one with
:func:`_refuse`, and re-exports these names.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import gmpy2
import numpy as np

__all__ = ["P", "A", "LOW_ORDER_U", "POINT_DTYPE", "point_problem"]

#: The field prime of Curve25519 and the coefficient A of its Montgomery
#: form v^2 = u^3 + A u^2 + u (RFC 7748, section 4.1).
P = 2**255 - 19
A = 486662
_P = gmpy2.mpz(P)

#: The u-coordinates of the points of small order on the curve itself (the
#: 8-torsion: u = 0 for the point of order 2 and the point at infinity,
#: u = 1 for the two of order 4, these two for the four of order 8). X25519
#: maps them to the all-zero output, which ``cryptography`` refuses.
#: (The twist's small-order points are refused as twist points.)
LOW_ORDER_U = frozenset({
    0,
    1,
    325606250916557431795983626356110631294008115727848805560023387167927233504,
    39382357235489614581723060781553021112529911719440698176882885853963445705823,
})

#: The numpy type of a point in messages: 32 opaque bytes (the little-endian
#: u-coordinate), one array item per point, so that a message of N points
#: counts N scalars and 32 N bytes, as N group elements should.
POINT_DTYPE = np.dtype("V32")


def point_problem(value):
    """Why 32 bytes are not a point the protocol accepts (None if they are).

    A point is accepted when it is the canonical encoding of the
    u-coordinate of a point of the curve (not of its twist) outside the
    8-torsion: every honest message carries only such points.
    """
    if len(value) != 32:
        return f"{len(value)} bytes long, not 32"
    return _u_problem(int.from_bytes(value, "little"))


def _u_problem(u):
    if u >= P:
        return "not a canonical encoding (u >= 2^255 - 19)"
    if u in LOW_ORDER_U:
        return ("a point of small order (X25519 would map it to the all-zero "
                "output)")
    u = gmpy2.mpz(u)
    # The Jacobi symbol modulo the prime p is its Legendre symbol.
    if gmpy2.jacobi(u * (u * (u + A) + 1) % _P, _P) != 1:
        return ("on the quadratic twist, not on Curve25519 (hashed ids are "
                "always on the curve, and X25519 keeps them there)")
    return None


def _message_problem(values):
    if not isinstance(values, np.ndarray):
        return f"a {type(values).__name__}, not an array of 32-byte points"
    if values.dtype != POINT_DTYPE or values.ndim != 1:
        return (f"an array of dtype {values.dtype} and shape {values.shape}, "
                "not a 1-D array of 32-byte points (dtype V32)")
    return None


def _refuse(receiver, sender, problem):
    raise ValueError(
        f"{receiver} refused the points sent by {sender}: {problem}. Every "
        "value must be the 32-byte u-coordinate of a point of Curve25519 "
        "outside its small subgroup, as X25519 outputs; the sender deviated "
        "from the protocol or its message was corrupted.")
