"""Ring encodings of the preprocessing sums: exact float sums and a secure OR.

:func:`~skfed.federation.secure_sum.secure_sum` adds the parties' values in
the ring ``Z_{2^64}`` under pairwise masks, through an encoder that turns
floats into ring elements and the masked total back. Two encoders are
defined here, beside the fixed-point
:class:`~skfed.federation.secure_sum.RingEncoder` (whose 64 bits hold one
fixed point: a sum of squares of data in unknown units cannot be both free of
overflow and accurate to 1e-10 in it):

- :class:`ExactSumEncoder`: a float64 as a signed integer of ``2**-160`` in
  eight limbs of 40 bits; limbs are summed separately (13 bits of headroom:
  up to ``2**13`` parties), and the receiver joins the limb totals with
  Python integers. The total is the exact sum of the parties' values,
  rounded once to float64, for any magnitude in ``[2**-107, 2**146)``
  (below, an absolute error of at most ``2**-161`` per value). Nothing about
  the data's scale needs to be public.
- :class:`AnyEncoder`: a secure OR. A party whose flag is set adds a fresh
  uniform nonzero ring element from its CSPRNG, the others add 0; the total
  is 0 exactly when no flag is set and otherwise uniform, so the receiver
  learns whether any party's flag is set and nothing else (not how many,
  not which). It errs (reports "none") with probability ``2**-64`` per
  flag when some are set.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import math
import secrets

import numpy as np

__all__ = ["ExactSumEncoder", "AnyEncoder", "MAX_PARTIES"]

_LIMB_BITS = 40
_N_LIMBS = 8
_FRAC_BITS = 160
_WIDTH = _LIMB_BITS * _N_LIMBS
_MASK = (1 << _LIMB_BITS) - 1
_HEADROOM = 53 - _LIMB_BITS

#: the most parties whose limb totals stay exact (below 2**53: the secure
#: sum carries a holder's values as float64 before encoding them)
MAX_PARTIES = 1 << _HEADROOM

#: values of this magnitude or more are refused (their sum over
#: MAX_PARTIES parties must fit the signed window)
MAX_ABS = 2.0 ** (_WIDTH - 1 - _FRAC_BITS - _HEADROOM)


class ExactSumEncoder:
    """Float64 values as exact multi-limb fixed point in ``Z_{2^64}``.

    A holder :meth:`split` s its values into limbs (floats holding integers
    below ``2**40``, shape ``s + (8,)``); :meth:`encode` and :meth:`decode`
    map limbs to ring elements and limb totals back, keeping the shape (as
    :func:`~skfed.federation.secure_sum.secure_sum` requires); :meth:`join`
    turns the limb totals into the exact sum of the split values, rounded
    once.

    Examples
    --------
    >>> import numpy as np
    >>> enc = ExactSumEncoder()
    >>> parts = [np.array([1e20, 0.1]), np.array([1.0, 0.2]),
    ...          np.array([-1e20, 0.3])]
    >>> total = sum(enc.encode(enc.split(p)) for p in parts)
    >>> enc.join(enc.decode(total))
    array([1. , 0.6])
    >>> (1e20 + 1.0) - 1e20  # float64 arithmetic loses the 1
    0.0
    """

    n_limbs = _N_LIMBS

    def split(self, values):
        values = np.asarray(values, dtype=np.float64)
        if not np.all(np.isfinite(values)):
            raise ValueError("Cannot encode non-finite values in the ring.")
        if values.size and np.max(np.abs(values)) >= MAX_ABS:
            raise OverflowError(
                f"A statistic of magnitude {np.max(np.abs(values)):.3g} does "
                f"not fit the exact ring encoding (limit {MAX_ABS:.3g}); "
                "rescale the data (divide the column by a power of ten).")
        out = np.empty(values.shape + (_N_LIMBS,), dtype=np.float64)
        flat = out.reshape(-1, _N_LIMBS)
        for i, v in enumerate(values.ravel().tolist()):
            # ldexp by a power of two is exact; round() of a float gives the
            # nearest integer exactly (only values below 2**-107 lose bits)
            n = round(math.ldexp(v, _FRAC_BITS)) % (1 << _WIDTH)
            flat[i] = [(n >> (_LIMB_BITS * j)) & _MASK for j in range(_N_LIMBS)]
        return out

    def encode(self, limbs):
        return np.asarray(limbs, dtype=np.float64).astype(np.uint64)

    def decode(self, ring_values):
        # limb totals stay below 2**53 for up to MAX_PARTIES: exact as floats
        return np.asarray(ring_values, dtype=np.uint64).view(np.int64).astype(
            np.float64)

    def join(self, limb_totals):
        limb_totals = np.asarray(limb_totals, dtype=np.float64)
        flat = limb_totals.reshape(-1, _N_LIMBS)
        out = np.empty(flat.shape[0], dtype=np.float64)
        for i, limbs in enumerate(flat.tolist()):
            n = sum(int(limb) << (_LIMB_BITS * j) for j, limb in enumerate(limbs))
            n %= 1 << _WIDTH
            if n >> (_WIDTH - 1):
                n -= 1 << _WIDTH
            out[i] = n / (1 << _FRAC_BITS)  # int / int: correctly rounded
        return out.reshape(limb_totals.shape[:-1])

    def __repr__(self):
        return "ExactSumEncoder()"


class AnyEncoder:
    """A secure OR through a ring sum (see the module docstring).

    ``encode`` runs in the contributing party's thread (inside its masked
    upload), so the uniform elements come from that party's CSPRNG.

    Examples
    --------
    >>> import numpy as np
    >>> enc = AnyEncoder()
    >>> total = enc.encode(np.array([0., 1., 0.])) + enc.encode(np.array([0., 1., 1.]))
    >>> enc.decode(total).tolist()
    [False, True, True]
    """

    def encode(self, flags):
        flags = np.asarray(flags) != 0
        out = np.zeros(flags.shape, dtype=np.uint64)
        n = int(flags.sum())
        draws = np.frombuffer(secrets.token_bytes(8 * n), dtype=np.uint64).copy()
        while n and not draws.all():  # nonzero: a set flag must count
            zero = draws == 0
            draws[zero] = np.frombuffer(
                secrets.token_bytes(8 * int(zero.sum())), dtype=np.uint64)
        out[flags] = draws
        return out

    def decode(self, ring_values):
        return np.asarray(ring_values, dtype=np.uint64) != 0

    def __repr__(self):
        return "AnyEncoder()"
