"""Fixed-point encoding of numpy arrays for Paillier, and packing.

Paillier encrypts integers modulo ``n``. A real number ``x`` is stored as an
integer *mantissa* ``m`` and an *exponent* ``e`` (base 2) with

    x ~= m * 2**e.

The whole array shares one exponent, so that two arrays encrypted with the same
exponent add by a plain modular multiplication of their raw ciphertexts (no
per-element rescaling, which is what makes ``phe`` ~13x slower on sums of
numbers with different exponents).

Negative mantissas are represented modulo ``n``: ``m`` and ``n + m`` are the
same plaintext. Only ``|m| <= max_int = n // 3 - 1`` is accepted (python-paillier
uses the same bound): a decrypted residue in the gap ``(max_int, n - max_int)``
can only come from an overflow, and is reported as one.

Packing (:class:`PackedEncoder`) stores several non-negative fixed-point slots
in one plaintext, each wide enough that a sum of up to ``max_summands`` values
never carries into the next slot.
"""

import math

import numpy as np

__all__ = [
    "PackedEncoder",
    "choose_exponent",
    "decode",
    "encode",
    "signed_from_residues",
]

# Significant bits kept by the default float encoding: those of a float64, so
# that encoding a float64 array with precision=None is lossless for its largest
# element (and for every element whose magnitude is within 2**53 of it).
FLOAT_MANTISSA_BITS = 53


def _check_finite(values):
    if values.dtype.kind == "f" and not np.all(np.isfinite(values)):
        raise ValueError(
            "Cannot encode NaN or infinite values; got "
            f"{int(np.sum(~np.isfinite(values)))} non-finite value(s)."
        )


def _as_numeric(values):
    values = np.asarray(values)
    if values.dtype.kind == "b":
        values = values.astype(np.int64)
    if values.dtype.kind not in "iuf":
        raise TypeError(
            f"Expected an array of floats or integers, got dtype {values.dtype}."
        )
    _check_finite(values)
    return values


def _trailing_zero_bits(mantissas):
    """Number of trailing zero bits shared by every nonzero int64 mantissa."""
    nonzero = mantissas[mantissas != 0]
    if nonzero.size == 0:
        return 0
    # m & -m isolates the lowest set bit of each mantissa (two's complement).
    lowest = np.bitwise_and(nonzero, -nonzero)
    return int(np.log2(np.min(np.abs(lowest)).astype(np.float64)))


def choose_exponent(values, precision=None):
    """Exponent ``e`` (base 2) used to encode ``values`` as ``m * 2**e``.

    Parameters
    ----------
    values : ndarray of float or int
        The values that will share the exponent.
    precision : float or None, default=None
        Absolute precision wanted. ``None`` keeps 53 significant bits (a
        float64's mantissa) of the largest magnitude, so the encoding of a
        float64 array is exact for its largest element. Ignored for integer
        arrays, which are always encoded exactly with exponent 0.

    Returns
    -------
    exponent : int
        ``floor(log2(precision))`` if a precision is given; otherwise the
        largest exponent that represents the largest magnitude with 53 bits,
        raised further while every mantissa stays an integer (so that ``0.5``
        is stored as ``1 * 2**-1`` and not ``2**52 * 2**-53``). Exponent 0 for
        integer arrays.
    """
    values = _as_numeric(values)
    if values.dtype.kind in "iu":
        return 0
    if precision is not None:
        if not precision > 0 or not math.isfinite(precision):
            raise ValueError(f"precision must be a positive float, got {precision!r}.")
        return math.floor(math.log2(precision))
    if values.size == 0:
        return 0
    max_abs = float(np.max(np.abs(values)))
    if max_abs == 0.0:
        return 0
    exponent = math.frexp(max_abs)[1] - FLOAT_MANTISSA_BITS
    # At this exponent the largest magnitude is exact (a float64 has 53 bits)
    # and smaller values are rounded to a multiple of 2**exponent, as the
    # terms of a float64 sum would be. Raising the exponent by the trailing
    # zero bits shared by all mantissas loses nothing and keeps later
    # multiplications and exponent alignments cheap.
    mantissas = np.rint(np.ldexp(values, -exponent)).astype(np.int64)
    return exponent + _trailing_zero_bits(mantissas)


def encode(values, exponent, max_int):
    """Signed integer mantissas ``round(values / 2**exponent)``.

    Parameters
    ----------
    values : ndarray of float or int
        Values to encode (NaN and infinities are refused).
    exponent : int
        Shared base-2 exponent, see :func:`choose_exponent`.
    max_int : int
        Largest magnitude of a mantissa (``n // 3 - 1`` for a Paillier key).

    Returns
    -------
    mantissas : ndarray of object
        Python ints of the same shape as ``values``.

    Raises
    ------
    ValueError
        If a value is NaN or infinite, or if a mantissa would exceed
        ``max_int`` (the message names the largest encodable magnitude).

    Notes
    -----
    Rounding to the nearest multiple of ``2**exponent`` has absolute error at
    most ``2**(exponent - 1)`` per value; a homomorphic sum of ``k`` encoded
    values has absolute error at most ``k * 2**(exponent - 1)`` and no further
    rounding (integer arithmetic modulo ``n`` is exact while it does not
    overflow).
    """
    values = _as_numeric(values)
    if values.dtype.kind in "iu":
        ints = values.ravel().tolist()
        if exponent < 0:
            # Exact: an integer is a multiple of any 2**exponent with exponent <= 0.
            ints = [v << -exponent for v in ints]
        elif exponent > 0:
            # Round half up to a multiple of 2**exponent.
            half = 1 << (exponent - 1)
            ints = [(v + half) >> exponent for v in ints]
        mantissas = np.empty(values.shape, dtype=object)
        mantissas.ravel()[:] = ints
        largest = max(abs(v) for v in ints) if ints else 0
    else:
        with np.errstate(over="ignore"):  # inf is reported as overflow below
            scaled = np.rint(np.ldexp(values.astype(np.float64), -exponent))
        largest_float = float(np.max(np.abs(scaled))) if values.size else 0.0
        if not math.isfinite(largest_float) or largest_float > max_int:
            _raise_overflow(values, exponent, max_int)
        mantissas = np.empty(values.shape, dtype=object)
        if largest_float < 2.0**62:
            # Fast path: exact int64 conversion, then to Python ints.
            mantissas.ravel()[:] = scaled.astype(np.int64).ravel().tolist()
        else:
            # float -> int is exact in Python for any finite float.
            mantissas.ravel()[:] = [int(v) for v in scaled.ravel().tolist()]
        largest = int(largest_float)
    if largest > max_int:
        _raise_overflow(values, exponent, max_int)
    return mantissas


def _raise_overflow(values, exponent, max_int):
    limit = max_int * 2.0**exponent if exponent < 1000 else float("inf")
    raise ValueError(
        f"Values too large to encode: max |x| = {float(np.max(np.abs(values))):.6g} "
        f"but the largest magnitude encodable with exponent {exponent} is "
        f"max_int * 2**{exponent} = {limit:.6g} (max_int = 2**{int(max_int).bit_length()} "
        "roughly: n // 3 for Paillier, 2**(key_size / 3) / 6 for OU). "
        "Use a coarser precision or a larger key."
    )


def signed_from_residues(residues, n, max_int):
    """Map decrypted residues in ``[0, n)`` back to signed mantissas.

    Parameters
    ----------
    residues : ndarray of object
        Raw plaintexts modulo ``n``.
    n : int
        The plaintext modulus: Paillier's ``n``, or Okamoto-Uchiyama's
        secret prime ``p`` (only its key owner decrypts).
    max_int : int
        Largest encodable magnitude (``n // 3 - 1`` for Paillier).

    Returns
    -------
    mantissas : ndarray of object
        ``r`` if ``r <= max_int``, ``r - n`` if ``r >= n - max_int``.

    Raises
    ------
    OverflowError
        If a residue falls in the gap ``(max_int, n - max_int)``, which only
        an overflowing homomorphic computation can produce.
    """
    flat = residues.ravel().tolist()
    out = []
    for r in flat:
        if r <= max_int:
            out.append(int(r))
        elif r >= n - max_int:
            out.append(int(r - n))
        else:
            raise OverflowError(
                "Decrypted value overflowed: the homomorphic computation left "
                "the range [-max_int, max_int] of the key (n // 3 - 1 for "
                "Paillier, 2**(key_size // 3 - 1) // 3 - 1 for OU)."
            )
    mantissas = np.empty(residues.shape, dtype=object)
    mantissas.ravel()[:] = out
    return mantissas


def decode(mantissas, exponent, is_integer=False):
    """Values ``mantissas * 2**exponent`` as a float64 (or int64) array.

    Parameters
    ----------
    mantissas : ndarray of object
        Signed Python ints.
    exponent : int
        Shared base-2 exponent.
    is_integer : bool, default=False
        Return int64 (exact) instead of float64. Mantissas outside the int64
        range give an object array of Python ints.

    Returns
    -------
    values : ndarray
        float64 values, correctly rounded from the exact rational
        ``m * 2**exponent``; or int64 when ``is_integer``.
    """
    flat = mantissas.ravel().tolist()
    if is_integer and exponent >= 0:
        ints = [m << exponent for m in flat]
        try:
            return np.array(ints, dtype=np.int64).reshape(mantissas.shape)
        except OverflowError:
            out = np.empty(mantissas.shape, dtype=object)
            out.ravel()[:] = ints
            return out
    if exponent >= 0:
        # float() of a Python int is correctly rounded (inf beyond 2**1024).
        out = [float(m << exponent) if m.bit_length() + exponent < 1024
               else math.copysign(math.inf, m) for m in flat]
    else:
        # int / int true division is correctly rounded in CPython, even for
        # mantissas far wider than a float.
        scale = 1 << -exponent
        out = [m / scale for m in flat]
    return np.array(out, dtype=np.float64).reshape(mantissas.shape)


class PackedEncoder:
    """Pack several bounded fixed-point values into one Paillier plaintext.

    Slot ``j`` of a packed plaintext holds ``q_j + B`` where
    ``q_j = round(x_j / 2**e_j)`` is the fixed-point mantissa of the value
    ``x_j`` and ``B = 2**precision_bits`` is an offset that makes every slot
    non-negative; slots are laid side by side, slot 0 in the least
    significant bits::

        plaintext = sum_j (q_j + B) * 2**(j * slot_bits).

    Adding packed plaintexts adds the slots independently as long as no slot
    carries into the next one. A sum of ``k`` values has slot content
    ``sum q + k * B`` in ``[0, 2 * k * B]``; the slot width is chosen so that
    ``2 * max_summands * B < 2**slot_bits``, so a sum of at most
    ``max_summands`` values can never carry. The decrypting side removes the
    offset ``k * B``, which is why packed encrypted arrays carry the number of
    summands ``k`` of every element (the ``counts``).

    Parameters
    ----------
    bounds : array-like of float
        One positive bound per slot: values of slot ``j`` must satisfy
        ``|x_j| <= bounds[j]``. The number of slots is ``len(bounds)``.
    max_summands : int
        The largest number of packed values that will ever be added together
        into one element (for a histogram: the number of rows).
    precision_bits : int, default=48
        Significant bits kept per slot relative to its bound:
        ``e_j = ceil(log2(bounds[j])) - precision_bits``.

    Attributes
    ----------
    n_slots : int
        Number of values per plaintext.
    exponents : ndarray of int
        Base-2 exponent ``e_j`` of each slot.
    offset : int
        ``B = 2**precision_bits``.
    slot_bits : int
        Width of each slot, ``precision_bits + 1 + max_summands.bit_length()``.
    n_bits : int
        Bits used by a packed plaintext, ``n_slots * slot_bits``; it must be
        below ``(n // 3 - 1).bit_length()`` of the key used (checked when
        encrypting).

    Notes
    -----
    Precision: each value is rounded to a multiple of ``2**e_j``, so its
    absolute error is at most ``2**(e_j - 1) <= bounds[j] * 2**-precision_bits``,
    and a sum of ``k`` values has absolute error at most
    ``k * bounds[j] * 2**-precision_bits``.

    Capacity: with ``precision_bits=48`` and ``max_summands=10**6`` a slot is
    ``48 + 1 + 20 = 69`` bits, so a 1024-bit key holds 14 slots and a
    2048-bit key 29.

    Privacy: the counts travel with the ciphertexts (the decryptor needs
    them), so a packed :meth:`~skfed.crypto.EncryptedArray.group_sum` tells
    the decrypting party how many rows fell in each group. Where group sizes
    are private, pack signed digits instead (no offsets, no counts; see
    ``skfed.ensemble._packing``) or send unpacked ciphertexts.

    Subtracting packed arrays (``a - b``) is only meaningful when the values
    summed into ``b`` are a subset of those summed into ``a`` (for example
    "parent histogram minus left child"); then every slot stays non-negative.
    The counts are subtracted too, and a negative count is refused.

    Examples
    --------
    >>> import numpy as np
    >>> from skfed.crypto import PackedEncoder
    >>> enc = PackedEncoder(bounds=[1.0, 0.25], max_summands=1000)
    >>> packed = enc.pack(np.array([[0.5, 0.25], [-1.0, 0.0]]))
    >>> enc.unpack(packed, counts=np.array([1, 1]))
    array([[ 0.5 ,  0.25],
           [-1.  ,  0.  ]])
    """

    def __init__(self, bounds, max_summands, precision_bits=48):
        bounds = np.atleast_1d(np.asarray(bounds, dtype=np.float64))
        if bounds.ndim != 1 or bounds.size == 0:
            raise ValueError("bounds must be a non-empty 1-D sequence of floats.")
        if not np.all(np.isfinite(bounds)) or np.any(bounds <= 0):
            raise ValueError(f"bounds must be positive and finite, got {bounds}.")
        max_summands = int(max_summands)
        if max_summands < 1:
            raise ValueError(f"max_summands must be >= 1, got {max_summands}.")
        precision_bits = int(precision_bits)
        if precision_bits < 1:
            raise ValueError(f"precision_bits must be >= 1, got {precision_bits}.")
        self.bounds = bounds
        self.max_summands = max_summands
        self.precision_bits = precision_bits
        self.n_slots = bounds.size
        self.exponents = np.array(
            [math.ceil(math.log2(b)) - precision_bits for b in bounds], dtype=np.int64
        )
        self.offset = 1 << precision_bits
        # The largest slot content is max_summands * 2 * offset
        # = max_summands * 2**(precision_bits + 1), which needs exactly
        # max_summands.bit_length() + precision_bits + 1 bits.
        self.slot_bits = max_summands.bit_length() + precision_bits + 1
        self.n_bits = self.n_slots * self.slot_bits

    def __repr__(self):
        return (
            f"PackedEncoder(bounds={self.bounds.tolist()}, "
            f"max_summands={self.max_summands}, "
            f"precision_bits={self.precision_bits})"
        )

    def __eq__(self, other):
        return (
            isinstance(other, PackedEncoder)
            and np.array_equal(self.bounds, other.bounds)
            and self.max_summands == other.max_summands
            and self.precision_bits == other.precision_bits
        )

    def __hash__(self):
        return hash((tuple(self.bounds), self.max_summands, self.precision_bits))

    def __message_size__(self):
        """The layout travels as ``n_slots`` bounds plus two integers."""
        return (self.n_slots + 2, 0, 8 * (self.n_slots + 2))

    @staticmethod
    def max_slots(key_size, max_summands, precision_bits=48, scheme="paillier"):
        """Number of slots that fit in a plaintext of a ``key_size``-bit key.

        ``scheme="ou"``: an Okamoto-Uchiyama key, whose plaintexts are about
        a third of its size (``key_size // 3 - 3`` bits).
        """
        slot_bits = int(max_summands).bit_length() + int(precision_bits) + 1
        if scheme == "ou":
            return (int(key_size) // 3 - 3) // slot_bits
        # max_int = n // 3 - 1 has at least key_size - 3 bits.
        return (int(key_size) - 3) // slot_bits

    def check_capacity(self, max_int):
        """Raise ValueError if packed plaintexts could exceed ``max_int``."""
        if self.n_bits >= int(max_int).bit_length():
            raise ValueError(
                f"{self.n_slots} slots of {self.slot_bits} bits "
                f"({self.n_bits} bits) do not fit in a plaintext of this key "
                f"(at most {int(max_int).bit_length() - 1} bits); use fewer "
                "slots, fewer precision_bits, or a larger key."
            )

    def pack(self, values):
        """Pack an array of shape ``(..., n_slots)`` into Python ints.

        Parameters
        ----------
        values : array-like of float, shape (..., n_slots)
            Values with ``|values[..., j]| <= bounds[j]``.

        Returns
        -------
        packed : ndarray of object, shape (...)
            Non-negative packed plaintexts, one summand each.
        """
        values = _as_numeric(values).astype(np.float64)
        if values.ndim < 1 or values.shape[-1] != self.n_slots:
            raise ValueError(
                f"Expected values of shape (..., {self.n_slots}), got {values.shape}."
            )
        too_large = np.abs(values) > self.bounds
        if np.any(too_large):
            offending = too_large.reshape(-1, self.n_slots).any(axis=0)
            slot = int(np.nonzero(offending)[0][0])
            raise ValueError(
                f"Values of slot {slot} exceed its bound: max |x| = "
                f"{float(np.max(np.abs(values[..., slot]))):.6g} > "
                f"{self.bounds[slot]:.6g}."
            )
        # |x| <= bound <= 2**(e + precision_bits), so |q| <= offset and
        # q + offset lies in [0, 2 * offset].
        shifted = (
            np.rint(np.ldexp(values, -self.exponents)).astype(np.int64) + self.offset
        )
        flat = shifted.reshape(-1, self.n_slots).tolist()
        widths = [j * self.slot_bits for j in range(self.n_slots)]
        packed = [sum(q << w for q, w in zip(row, widths)) for row in flat]
        out = np.empty(values.shape[:-1], dtype=object)
        out.ravel()[:] = packed
        return out

    def unpack(self, packed, counts):
        """Unpack non-negative packed ints into an array ``(..., n_slots)``.

        Parameters
        ----------
        packed : ndarray of object
            Packed plaintexts (decrypted residues), each the sum of
            ``counts`` packed values.
        counts : ndarray of int, same shape as ``packed``
            Number of summands of each element, whose offsets are removed.

        Returns
        -------
        values : ndarray of float64, shape ``packed.shape + (n_slots,)``
        """
        counts = np.broadcast_to(np.asarray(counts, dtype=np.int64), packed.shape)
        if np.any(counts > self.max_summands):
            raise OverflowError(
                f"An element is the sum of {int(counts.max())} packed values, "
                f"more than max_summands={self.max_summands}: its slots may "
                "have carried into each other."
            )
        mask = (1 << self.slot_bits) - 1
        flat = packed.ravel().tolist()
        flat_counts = counts.ravel().tolist()
        out = np.empty((len(flat), self.n_slots), dtype=np.float64)
        for j, exponent in enumerate(self.exponents.tolist()):
            shift = j * self.slot_bits
            # Slot content minus the offsets of its summands: the exact sum of
            # the slot's mantissas, decoded (correctly rounded) like any other.
            sums = np.empty(len(flat), dtype=object)
            sums[:] = [int((v >> shift) & mask) - c * self.offset
                       for v, c in zip(flat, flat_counts)]
            out[:, j] = decode(sums, exponent)
        return out.reshape(packed.shape + (self.n_slots,))
