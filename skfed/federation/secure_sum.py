"""Secure aggregation with pairwise ring masks.

Every pair of parties ``(i, j)`` shares a seed ``s_ij`` drawn from party
``i``'s CSPRNG and sent to ``j`` once per federation. To upload a value ``v_i``
for the sum number ``t`` (a public counter), party ``i`` encodes ``v_i`` as
fixed-point integers in the ring ``Z_{2^64}`` and adds

    m_i = sum_{j > i} PRG(s_ij, t) - sum_{j < i} PRG(s_ji, t)   (mod 2^64)

The masks of all uploads cancel exactly, so the receiver decodes the exact
fixed-point sum; each single upload is uniformly distributed in the ring for
anyone who does not hold at least one of its pair seeds (Bonawitz et al.,
2017, without the dropout recovery: a simulated party does not drop out).
Because the masks cancel exactly, they cannot change a fitted model.

The PRG is SHAKE-256 of the pair seed and the counter, from :mod:`hashlib`:
a cryptographic expander, unlike numpy's generators.

Three encoders turn the parties' values into ring elements and the masked
total back: :class:`RingEncoder` (one fixed point in 64 bits),
:class:`ExactSumEncoder` (a float64 as an exact integer in eight 40-bit
limbs: the exact sum, rounded once, whatever the data's scale) and
:class:`AnyEncoder` (a secure OR: the receiver learns whether any party's
flag is set, not how many nor which).
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import hashlib
import itertools
import math
import secrets

import numpy as np

from .party import Local

__all__ = ["RingEncoder", "ExactSumEncoder", "AnyEncoder", "secure_sum"]

_RING_BITS = 64


class RingEncoder:
    """Fixed-point numbers in the ring of integers modulo ``2**64``.

    ``x`` is stored as ``round(x * 2**frac_bits)`` in two's complement, so a
    sum of encodings decodes to the sum of the values as long as every
    partial sum stays below ``2**(63 - frac_bits)`` in magnitude.

    Parameters
    ----------
    frac_bits : int, default=32
        Bits after the binary point (absolute precision ``2**-frac_bits``).

    Examples
    --------
    >>> import numpy as np
    >>> enc = RingEncoder(frac_bits=20)
    >>> u = enc.encode(np.array([1.5, -2.25])) + enc.encode(np.array([0.5, 0.25]))
    >>> enc.decode(u)
    array([ 2., -2.])
    """

    def __init__(self, frac_bits=32):
        if not 0 <= int(frac_bits) <= 62:
            raise ValueError(f"frac_bits must be in [0, 62], got {frac_bits}.")
        self.frac_bits = int(frac_bits)
        self.scale = float(2 ** self.frac_bits)
        self.max_abs = float(2 ** (_RING_BITS - 1 - self.frac_bits))

    @classmethod
    def for_bound(cls, bound, n_terms=1, margin_bits=2):
        """The finest encoder whose sums of ``n_terms`` values of magnitude
        at most ``bound`` cannot overflow."""
        total = max(float(bound) * max(int(n_terms), 1), 2.0 ** -20)
        int_bits = max(int(np.ceil(np.log2(total))), 0) + int(margin_bits)
        return cls(frac_bits=min(62, max(0, _RING_BITS - 1 - int_bits)))

    def encode(self, values):
        values = np.asarray(values, dtype=float)
        if not np.all(np.isfinite(values)):
            raise ValueError("Cannot encode non-finite values in the ring.")
        if values.size and np.max(np.abs(values)) >= self.max_abs:
            raise OverflowError(
                f"A value of magnitude {np.max(np.abs(values)):.3g} does not "
                f"fit a ring encoding with {self.frac_bits} fractional bits "
                f"(limit {self.max_abs:.3g}); use fewer fractional bits.")
        return np.round(values * self.scale).astype(np.int64).view(np.uint64)

    def decode(self, ring_values):
        ring_values = np.asarray(ring_values, dtype=np.uint64)
        return ring_values.view(np.int64) / self.scale

    def __repr__(self):
        return f"RingEncoder(frac_bits={self.frac_bits})"



# -- exact float sums and a secure OR (used by skfed.preprocessing) ----------
#
# Beside the fixed-point RingEncoder (whose 64 bits hold one fixed point: a
# sum of squares of data in unknown units cannot be both free of overflow and
# accurate to 1e-10 in it):
#
# - :class:`ExactSumEncoder`: a float64 as a signed integer of ``2**-160`` in
#   eight limbs of 40 bits; limbs are summed separately (13 bits of headroom:
#   up to ``2**13`` parties), and the receiver joins the limb totals with
#   Python integers. The total is the exact sum of the parties' values,
#   rounded once to float64, for any magnitude in ``[2**-107, 2**146)``
#   (below, an absolute error of at most ``2**-161`` per value). Nothing about
#   the data's scale needs to be public.
# - :class:`AnyEncoder`: a secure OR. A party whose flag is set adds a fresh
#   uniform nonzero ring element from its CSPRNG, the others add 0; the total
#   is 0 exactly when no flag is set and otherwise uniform, so the receiver
#   learns whether any party's flag is set and nothing else (not how many,
#   not which). It errs (reports "none") with probability ``2**-64`` per
#   flag when some are set.

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

def prg_uint64(seed, counter, shape):
    """Uniform ``uint64`` array expanded from ``seed`` for sum ``counter``."""
    n = int(np.prod(shape, dtype=np.int64))
    stream = hashlib.shake_256(bytes(seed) + int(counter).to_bytes(8, "big"))
    return np.frombuffer(stream.digest(8 * n), dtype=np.uint64).reshape(shape).copy()


def _stash(state):
    return state.stash.setdefault("secure-sum", {})


def _draw_seed(state, peer):
    # The seed is the sender's protocol secret: its own CSPRNG, never
    # random_state.
    seed = secrets.token_bytes(16)
    _stash(state)[peer] = seed
    return np.frombuffer(seed, dtype=np.uint8).copy()


def _store_seed(state, peer, seed):
    seed = np.asarray(seed)
    if seed.shape != (16,) or seed.dtype != np.uint8:
        # Masks from a malformed seed would not cancel: a wrong sum, silently.
        raise ValueError(f"The pairwise seed from {peer!r} is not 16 bytes "
                         f"(shape {seed.shape}, dtype {seed.dtype}).")
    _stash(state)[peer] = seed.tobytes()


def _masked_upload(state, local, me, peers, counter, encoder, *args):
    value = np.asarray(local(state, *args), dtype=float)
    ring = encoder.encode(value)
    seeds = _stash(state)
    for peer in peers:
        mask = prg_uint64(seeds[peer], counter, ring.shape)
        # The lower-named party of a pair adds the mask, the other subtracts
        # it: uint64 arithmetic wraps, which is the ring's.
        ring = ring + mask if me < peer else ring - mask
    return ring


def _add_upload(state, total, upload):
    return upload.copy() if total is None else total + upload


def _decode(state, total, encoder):
    return encoder.decode(total)


_counters = itertools.count()


def secure_sum(fed, parties, receiver, local, *args, phase="secure-sum",
               encoder=None, sender=None):
    """The exact sum of the parties' values, revealed to ``receiver`` only.

    Parameters
    ----------
    fed : Federation

    parties : sequence of str
        The contributors (two or more for the sum to hide anything; with one
        the receiver learns that party's value, which is the sum).

    receiver : str
        The party that decodes the total (often a data-less server; it may
        also be one of ``parties``).

    local : callable
        ``local(state, *args) -> array of float``, run on every contributor.

    *args
        Passed to ``local`` (a broadcast from ``sender``, if given).

    phase : str, default="secure-sum"
        Messages are counted under ``"<phase>/keys"`` (pair seeds, once per
        pair and federation), ``"<phase>/request"`` (the broadcast of
        ``args``) and ``"<phase>/upload"``.

    encoder : RingEncoder, optional
        Fixed-point encoding; the default has 32 fractional bits.

    sender : str, optional
        The party that broadcasts ``args``.

    Returns
    -------
    PartyFuture
        The decoded sum, held by ``receiver``.

    Examples
    --------
    >>> import numpy as np
    >>> from skfed.federation import Federation
    >>> from skfed.federation.secure_sum import secure_sum
    >>> states = {"a": {"v": 1.5}, "b": {"v": 2.0}, "c": {"v": -0.5}, "s": {}}
    >>> with Federation(states) as fed:
    ...     secure_sum(fed, ["a", "b", "c"], "s",
    ...                lambda st: np.array([st.v])).result()
    array([3.])
    """
    parties = [str(p) for p in parties]
    if len(set(parties)) != len(parties) or not parties:
        raise ValueError("secure_sum needs distinct contributing parties.")
    encoder = RingEncoder() if encoder is None else encoder
    exchanged = fed.__dict__.setdefault("_secure_sum_pairs", set())
    for i, a in enumerate(parties):
        for b in parties[i + 1:]:
            low, high = sorted((a, b))
            if (low, high) in exchanged:
                continue
            seed = fed[low].call(_draw_seed, Local(high)).result()
            fed[high].call(_store_seed, Local(low), seed, sender=low,
                           phase=f"{phase}/keys").result()
            exchanged.add((low, high))
    # A public counter makes every sum's masks fresh with the same seeds.
    counter = next(_counters)
    uploads = {
        p: fed[p].call(_masked_upload, Local(local), Local(p),
                       Local([q for q in parties if q != p]), Local(counter),
                       Local(encoder), *args, sender=sender,
                       phase=f"{phase}/request")
        for p in parties
    }
    total, shape = None, None
    for p in parties:
        upload = uploads[p].result()
        shape = np.shape(upload) if shape is None else shape
        _check_shape(upload, shape, p, f"{phase}/request")
        if total is not None:
            _check_shape(total.result(), shape, receiver, f"{phase}/upload")
        total = fed[receiver].call(
            _add_upload, Local(None if total is None else total.result()),
            Local(upload) if p == receiver else upload,
            sender=p, phase=f"{phase}/upload")
    _check_shape(total.result(), shape, receiver, f"{phase}/upload")
    return _ShapeCheckedFuture(
        fed[receiver].call(_decode, Local(total.result()), Local(encoder),
                           phase=phase), shape, receiver, phase)


def _check_shape(value, shape, party, phase):
    # Shares of different shapes would not sum to the total: a wrong
    # result, silently (numpy broadcasts), rather than an error.
    if np.shape(value) != shape:
        raise ValueError(f"Party {party!r} gave a value of shape "
                         f"{np.shape(value)} in phase {phase!r}; the sum's "
                         f"shares have shape {shape}.")


class _ShapeCheckedFuture:
    """The receiver's future total, checked to have the shares' shape."""

    def __init__(self, future, shape, party, phase):
        self._future, self._shape = future, shape
        self._party, self._phase = party, phase

    def done(self):
        return self._future.done()

    def result(self, timeout=None):
        value = self._future.result(timeout)
        _check_shape(value, self._shape, self._party, self._phase)
        return value
