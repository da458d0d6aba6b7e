"""EncryptedArray: a numpy object array of raw ciphertexts (Paillier or OU).

All elements share one fixed-point exponent, so homomorphic operations are
elementwise big-integer arithmetic modulo the key's ``ciphertext_modulus``
(``n**2`` for Paillier, ``n = p**2 q`` for Okamoto-Uchiyama):

==========================  =============================================
plaintext operation         ciphertext operation (mod ciphertext modulus)
==========================  =============================================
``a + b``                   ``E(a) * E(b)``
``-a``                      ``E(a)**-1``
``a + m`` (plaintext m)     ``E(a) * E_0(m)``: Paillier ``1 + m n``, OU ``G**m``
``k a`` (plaintext int k)   ``E(a)**k``
``a * 2**d`` (rescale)      ``E(a)**(2**d)``
==========================  =============================================

A sum of ciphertexts is their product modulo the ciphertext modulus: the
reductions protocols are built from are sums over all rows
(:meth:`EncryptedArray.sum`) and per group of rows, e.g. SecureBoost's
gradient histograms (:meth:`EncryptedArray.group_sum`). :func:`concatenate`
joins arrays along an axis, aligning their exponents to the smallest.

The array calls only the key's raw operations (``raw_add_plain``,
``raw_obfuscators``, ``ciphertext_modulus``; see :mod:`skfed.crypto._scheme`),
so every operation below serves both schemes.
"""

import gmpy2
import numpy as np

from ._group_sum import group_counts, raw_group_sum
from ._parallel import parallel_map
from ._plaintext import PlaintextArray, concatenate_plaintext
from ._raw import (
    as_object,
    max_abs,
    mulmod,
    object_array,
    plain_operand,
    powmod,
)
from .encoding import FLOAT_MANTISSA_BITS, encode

__all__ = ["EncryptedArray", "concatenate"]

# Exponent of plaintext float operands (addends and factors). It is fixed, not
# chosen from the operand's values, because the exponent of the result travels
# in the clear: a value-dependent one would reveal the magnitude of a party's
# private plaintext to whoever receives the result.
PLAINTEXT_FLOAT_EXPONENT = -FLOAT_MANTISSA_BITS
_KEEP = object()
_ONE = gmpy2.mpz(1)  # the raw encryption of 0 with obfuscator 1


class EncryptedArray:
    """Array of ciphertexts sharing one fixed-point exponent.

    Created by ``encrypt`` or ``encrypt_packed`` of a
    :class:`PaillierPublicKey` or an :class:`OUPublicKey` (or of their
    private keys), not directly.

    Parameters
    ----------
    public_key : PaillierPublicKey or OUPublicKey
        The key the ciphertexts were encrypted under.
    ciphertexts : ndarray of object
        Raw ciphertexts (mpz) modulo ``public_key.ciphertext_modulus``.
    exponent : int
        Element ``i`` encrypts ``m_i`` standing for ``m_i * 2**exponent``.
    is_integer : bool, default=False
        Encrypted from integers and only combined with integers since; such
        arrays decrypt to int64.
    encoder : PackedEncoder or None
        Set for packed arrays (whose plaintexts hold several slots).
    counts : ndarray of int64 or None
        For packed arrays: number of packed values summed into each element.
    mantissa_bound : int or None
        Upper bound on ``|m_i|`` for every element, tracked through every
        operation so that one that *could* leave ``[-max_int, max_int]``
        raises OverflowError at once, instead of decrypting to a wrapped,
        wrong value. None (packed arrays, which use ``counts``) means unchecked.

    Notes
    -----
    Supported: ``+``/``-`` with another EncryptedArray of the same key
    (exponents aligned to the smaller one, at the cost of ``d`` modular
    squarings per element for a difference ``d``), ``+``/``-`` with a plaintext
    array or scalar, ``*`` by a plaintext int or float array or scalar
    (broadcast as numpy does), :meth:`sum`, :meth:`group_sum` (whose raw
    products are in :mod:`skfed.crypto._group_sum`), indexing, and
    :func:`concatenate`.

    Plaintext float operands are encoded with the fixed exponent
    ``f = -53`` (absolute error ``2**-54`` each): adding them gives exponent
    ``min(self.exponent, -53)``, multiplying by them gives
    ``self.exponent - 53`` (the product itself is exact). Integer operands are
    exact and leave the exponent unchanged.

    What travels in the clear with an array: its shape, its exponent, whether
    it is integer-encoded, and for packed arrays the summand counts. Results
    of operations with plaintexts have exponents that do not depend on the
    plaintext values (see above), so they reveal nothing about a party's
    private operands. The exponent chosen by :meth:`PaillierPublicKey.encrypt`
    with ``precision=None`` does depend on the data (it reveals
    ``floor(log2(max|x|))``); protocols pass a fixed ``precision``. The
    ``counts`` of a packed :meth:`group_sum` are the group sizes.

    Overflow: every operation updates ``mantissa_bound`` (sums add bounds,
    products multiply them, exponent alignment by ``d`` multiplies by
    ``2**d``); an operation whose worst case exceeds ``max_int`` raises
    OverflowError instead of producing ciphertexts that would decrypt to a
    wrapped value. The bound depends on private values, so it stays with the
    party that computed it: :meth:`rerandomize` and pickling drop it (the
    receiver's further operations are then unchecked). Decryption refuses
    residues in the overflow gap in any case.

    Results of homomorphic operations are deterministic functions of their
    inputs (an empty group sum is even the constant ``1``): call
    :meth:`rerandomize` on anything that leaves a party.

    Examples
    --------
    >>> import numpy as np
    >>> from skfed.crypto import generate_keypair
    >>> public_key, private_key = generate_keypair(key_size=512)
    >>> g = public_key.encrypt(np.array([0.5, -1.0, 0.25, 2.0]))
    >>> bins = np.array([[0, 1], [1, 1], [0, 0], [1, -1]])  # -1: missing
    >>> private_key.decrypt(g.group_sum(bins, n_groups=2))  # (n_features, n_groups)
    array([[ 0.75,  1.  ],
           [ 0.25, -0.5 ]])
    >>> private_key.decrypt(g * np.array([2, 0, 4, 1]) - 1.0)
    array([ 0., -1.,  0.,  1.])
    """

    # Make numpy defer to our reflected operators: ndarray + EncryptedArray.
    __array_ufunc__ = None

    def __init__(self, public_key, ciphertexts, exponent=0, *, is_integer=False,
                 encoder=None, counts=None, mantissa_bound=None):
        if mantissa_bound is not None and mantissa_bound > public_key.max_int:
            raise OverflowError(
                "This homomorphic operation could overflow the plaintext range: "
                f"results up to 2**{int(mantissa_bound).bit_length()} * "
                f"2**{int(exponent)} in magnitude, but the key encodes at most "
                f"max_int ~ 2**{int(public_key.max_int).bit_length()} mantissas. "
                "Use a larger key, or align fewer exponents (e.g. encrypt with a "
                "coarser precision)."
            )
        self.mantissa_bound = mantissa_bound
        self.public_key = public_key
        self.ciphertexts = ciphertexts
        self.exponent = int(exponent)
        self.is_integer = bool(is_integer)
        self.encoder = encoder
        self.counts = counts

    # -- array protocol --------------------------------------------------

    @property
    def shape(self):
        return self.ciphertexts.shape

    @property
    def ndim(self):
        return self.ciphertexts.ndim

    @property
    def size(self):
        return self.ciphertexts.size

    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of a 0-d EncryptedArray")
        return self.shape[0]

    def __repr__(self):
        if self.encoder is not None:
            kind = f"packed x{self.encoder.n_slots}"
        else:
            kind = f"exponent={self.exponent}"
        return f"EncryptedArray(shape={self.shape}, {kind}, key={self.public_key!r})"

    def _new(self, ciphertexts, exponent=None, *, is_integer=None, counts=None,
             bound=_KEEP):
        return EncryptedArray(
            self.public_key,
            as_object(ciphertexts, np.shape(ciphertexts)),
            self.exponent if exponent is None else exponent,
            is_integer=self.is_integer if is_integer is None else is_integer,
            encoder=self.encoder,
            counts=counts,
            mantissa_bound=self.mantissa_bound if bound is _KEEP else bound,
        )

    def _scaled_bound(self, factor):
        if self.mantissa_bound is None:
            return None
        return self.mantissa_bound * int(factor)

    def __getitem__(self, key):
        if isinstance(key, EncryptedArray):
            raise TypeError("Cannot index with an EncryptedArray.")
        selected = self.ciphertexts[key]
        counts = None if self.counts is None else np.asarray(self.counts[key])
        if not isinstance(selected, np.ndarray):
            selected = object_array([selected], ())
        return self._new(selected, counts=counts)

    def reshape(self, *shape):
        """Same ciphertexts with a new shape.

        Parameters
        ----------
        *shape : int or tuple of int
            As for :meth:`numpy.ndarray.reshape`.

        Returns
        -------
        EncryptedArray
        """
        counts = None if self.counts is None else self.counts.reshape(*shape)
        return self._new(self.ciphertexts.reshape(*shape), counts=counts)

    def ravel(self):
        return self.reshape(-1)

    # -- serialisation ---------------------------------------------------

    def __message_size__(self):
        """``(n_scalars, n_ciphertexts, n_bytes)`` of this array as a message.

        ``n_bytes`` is the serialised size: ``public_key.ciphertext_bytes``
        (``ceil(bitlen(n**2) / 8)`` for Paillier, ``ceil(bitlen(n) / 8)`` for
        OU) bytes per
        ciphertext, plus 8 bytes per plaintext scalar (the summand counts of a
        packed array, which travel with it; ``n_scalars`` counts those).
        """
        n_scalars = 0 if self.counts is None else int(self.counts.size)
        n_bytes = self.size * self.public_key.ciphertext_bytes + 8 * n_scalars
        return (n_scalars, int(self.size), int(n_bytes))

    def __reduce__(self):
        # Raw fixed-width integers + exponent + the public key (which pickles
        # as its public parameters only); never phe objects.
        width = self.public_key.ciphertext_bytes
        blob = b"".join(
            int(c).to_bytes(width, "little") for c in self.ciphertexts.ravel().tolist()
        )
        return (
            _rebuild_encrypted_array,
            (self.public_key, blob, self.shape, self.exponent,
             self.is_integer, self.encoder, self.counts),
        )

    # -- homomorphic operations -----------------------------------------

    def _check_same_key(self, other):
        if other.public_key != self.public_key:
            raise ValueError(
                "EncryptedArrays were encrypted under different public keys."
            )
        if (self.encoder is None) != (other.encoder is None) or (
            self.encoder is not None and self.encoder != other.encoder
        ):
            raise ValueError(
                "Cannot combine packed and unpacked EncryptedArrays, or packed "
                "arrays with different PackedEncoders."
            )

    def decrease_exponent_to(self, new_exponent):
        """Same values encoded with the smaller exponent ``new_exponent``.

        Multiplies every plaintext by ``2**(exponent - new_exponent)``, i.e.
        raises each ciphertext to that power (that many modular squarings).

        Parameters
        ----------
        new_exponent : int
            At most ``self.exponent``.

        Returns
        -------
        EncryptedArray
            ``self`` if the exponent is unchanged.
        """
        if new_exponent > self.exponent:
            raise ValueError(
                f"New exponent {new_exponent} must not exceed {self.exponent}."
            )
        if new_exponent == self.exponent:
            return self
        factor = gmpy2.mpz(1) << (self.exponent - new_exponent)
        return self._new(
            powmod(self.ciphertexts, factor, self.public_key.ciphertext_modulus),
            new_exponent,
            counts=self.counts,
            bound=self._scaled_bound(factor),
        )

    def __add__(self, other):
        modulus = self.public_key.ciphertext_modulus
        if isinstance(other, EncryptedArray):
            self._check_same_key(other)
            exponent = min(self.exponent, other.exponent)
            a = self.decrease_exponent_to(exponent)
            b = other.decrease_exponent_to(exponent)
            counts = None if self.counts is None else self.counts + other.counts
            bound = None
            if a.mantissa_bound is not None and b.mantissa_bound is not None:
                bound = a.mantissa_bound + b.mantissa_bound
            return self._new(
                mulmod(a.ciphertexts, b.ciphertexts, modulus),
                exponent,
                is_integer=self.is_integer and other.is_integer,
                counts=counts,
                bound=bound,
            )
        if self.encoder is not None:
            raise TypeError(
                "Cannot add a plaintext to a packed EncryptedArray; encrypt it "
                "with encrypt_packed first."
            )
        if _is_plaintext_array(other):
            raise TypeError("Cannot combine an EncryptedArray with a PlaintextArray.")
        other = plain_operand(other)
        exponent = self.exponent
        if other.dtype.kind == "f":
            exponent = min(exponent, PLAINTEXT_FLOAT_EXPONENT)
        a = self.decrease_exponent_to(exponent)
        mantissas = encode(other, exponent, self.public_key.max_int)
        bound = None
        if a.mantissa_bound is not None:
            bound = a.mantissa_bound + max_abs(mantissas)
        return self._new(
            self.public_key.raw_add_plain(a.ciphertexts, mantissas),
            exponent,
            is_integer=self.is_integer and other.dtype.kind in "iu",
            bound=bound,
        )

    __radd__ = __add__

    def __neg__(self):
        if self.encoder is not None:
            raise TypeError(
                "Cannot negate a packed EncryptedArray (slots must stay >= 0)."
            )
        return self._new(powmod(self.ciphertexts, -1,
                                self.public_key.ciphertext_modulus))

    def __sub__(self, other):
        if isinstance(other, EncryptedArray) and self.encoder is not None:
            self._check_same_key(other)
            counts = self.counts - other.counts
            if np.any(counts < 0):
                raise ValueError(
                    "Packed subtraction a - b needs b's summands to be a subset "
                    "of a's; some element of b has more summands than a."
                )
            modulus = self.public_key.ciphertext_modulus
            inverse = powmod(other.ciphertexts, -1, modulus)
            return self._new(
                mulmod(self.ciphertexts, inverse, modulus),
                counts=counts,
            )
        if isinstance(other, EncryptedArray):
            return self + (-other)
        return self + (-plain_operand(other))

    def __rsub__(self, other):
        return (-self) + other

    def __mul__(self, other):
        """Elementwise product with a plaintext (numpy broadcasting).

        Integers (int arrays, or object arrays of Python ints of any size)
        keep the exponent: ``E(m)**k``. Floats are encoded with exponent -53
        (see the class Notes), so the result's exponent is
        ``self.exponent - 53``. Packed arrays accept non-negative integers
        only (which multiply their counts too).
        """
        if isinstance(other, EncryptedArray):
            raise TypeError(
                "Additively homomorphic encryption (Paillier, OU) cannot "
                "multiply two ciphertexts; multiply by a plaintext."
            )
        if _is_plaintext_array(other):
            raise TypeError("Cannot combine an EncryptedArray with a PlaintextArray.")
        other = plain_operand(other, allow_big_ints=True)
        modulus = self.public_key.ciphertext_modulus
        if other.dtype.kind in "iuO":
            if other.dtype == object:
                factors = other
            else:
                factors = encode(other, 0, self.public_key.max_int)
            counts = None
            if self.encoder is not None:
                if np.any(other < 0):
                    raise ValueError(
                        "Packed arrays can only be multiplied by non-negative integers."
                    )
                counts = self.counts * other.astype(np.int64)
            return self._new(
                powmod(self.ciphertexts, factors, modulus),
                counts=counts,
                bound=self._scaled_bound(max_abs(factors)),
            )
        if self.encoder is not None:
            raise TypeError(
                "Packed arrays can only be multiplied by non-negative integers "
                "(each slot has its own fixed exponent)."
            )
        factor_exponent = PLAINTEXT_FLOAT_EXPONENT
        factors = encode(other, factor_exponent, self.public_key.max_int)
        return self._new(
            powmod(self.ciphertexts, factors, modulus),
            self.exponent + factor_exponent,
            is_integer=False,
            bound=self._scaled_bound(max_abs(factors)),
        )

    __rmul__ = __mul__

    def __truediv__(self, other):
        """Multiply by ``1 / other`` (rounded to 53 significant bits)."""
        other = plain_operand(other).astype(np.float64)
        return self * (1.0 / other)

    def sum(self, axis=None, n_jobs=None):
        """Homomorphic sum over ``axis`` (all elements if None).

        Parameters
        ----------
        axis : int or None, default=None
            Axis to sum over; None sums every element.
        n_jobs : int or None, default=None
            Worker threads (used for ``axis=None``).

        Returns
        -------
        EncryptedArray
            0-d for ``axis=None``, otherwise the shape without ``axis``.
        """
        modulus = self.public_key.ciphertext_modulus
        if axis is None:
            def product(chunk):
                acc = _ONE
                for c in chunk:
                    acc = acc * c % modulus
                return [acc]

            partials = parallel_map(
                product, self.ciphertexts.ravel().tolist(), n_jobs,
                release_gil=False,  # short products
            )
            total = product(partials)[0]
            counts = None if self.counts is None else np.asarray(self.counts.sum())
            return self._new(
                object_array([total], ()), counts=counts,
                bound=self._scaled_bound(self.size),
            )
        moved = np.moveaxis(self.ciphertexts, axis, 0)
        if moved.shape[0] == 0:
            acc = object_array([_ONE] * int(np.prod(moved.shape[1:])), moved.shape[1:])
        else:
            acc = moved[0]
            for row in moved[1:]:
                acc = mulmod(acc, row, modulus)
        counts = None if self.counts is None else self.counts.sum(axis=axis)
        return self._new(
            as_object(acc, moved.shape[1:]), counts=counts,
            bound=self._scaled_bound(moved.shape[0]),
        )

    def group_sum(self, group_ids, n_groups, n_jobs=None):
        """Sum the elements of each group: the encrypted histogram primitive.

        Parameters
        ----------
        group_ids : array-like of int, shape (n,) or (n, n_features)
            Group of each row (row = element along axis 0). Negative ids
            are skipped (e.g. rows outside a tree node, or missing values).
        n_groups : int
            Number of groups; ids must be < n_groups.
        n_jobs : int or None, default=None
            Worker threads; work is split over features and row blocks.

        Returns
        -------
        EncryptedArray
            With 1-D ``group_ids``: shape ``(n_groups,) + self.shape[1:]``,
            ``out[g] = sum(self[i] for i with group_ids[i] == g)`` (like
            ``np.add.at(out, group_ids, x)``).
            With 2-D ``group_ids`` (``self`` must be 1-D): shape
            ``(n_features, n_groups)``, ``out[f, g] = sum(self[i] for i with
            group_ids[i, f] == g)``: one histogram per feature, e.g. the
            gradient histograms of SecureBoost from the bin indices of all
            features in one call.

        Notes
        -----
        Each row costs one modular multiplication per feature (see
        :func:`skfed.crypto._group_sum.raw_group_sum`). An empty group gets
        the constant ``1`` (an encryption of 0 without randomness):
        rerandomize before sending.
        """
        ids = np.asarray(group_ids)
        if ids.dtype.kind not in "iu":
            raise TypeError(f"group_ids must be integers, got dtype {ids.dtype}.")
        n_groups = int(n_groups)
        if self.ndim == 0 or ids.ndim not in (1, 2) or ids.shape[0] != self.shape[0]:
            raise ValueError(
                f"group_ids of shape {ids.shape} do not match an EncryptedArray of "
                f"shape {self.shape}: expected ({self.shape[0] if self.ndim else 0},) "
                "or (n_rows, n_features)."
            )
        if ids.size and ids.max() >= n_groups:
            raise ValueError(f"group id {int(ids.max())} >= n_groups={n_groups}.")
        if ids.ndim == 2 and self.ndim != 1:
            raise ValueError("2-D group_ids need a 1-D EncryptedArray.")
        ciphertexts = raw_group_sum(
            self.ciphertexts, ids, n_groups, self.public_key.ciphertext_modulus, n_jobs
        )
        counts = None
        if self.counts is not None:
            counts = group_counts(self.counts, ids, n_groups)
        largest_group = max(
            (int(np.bincount(column[column >= 0]).max(initial=0))
             for column in ids.reshape(ids.shape[0], -1).T),
            default=0,
        )
        return self._new(
            ciphertexts, counts=counts, bound=self._scaled_bound(largest_group)
        )

    def rerandomize(self, obfuscation=None, n_jobs=None):
        """Fresh obfuscation of every element: same plaintexts, new ciphertexts.

        Multiplies each ciphertext by a fresh encryption of 0 (Paillier: a
        random n-th residue; OU: ``H**r``) drawn from :mod:`secrets` (never
        reused), so what leaves a party cannot be linked to the ciphertexts
        it was computed from.

        Parameters
        ----------
        obfuscation : str or None, default=None
            The key's default (Paillier ``"djn"``, OU ``"short"``), or see
            the keys' ``_obfuscator_source``
            (:mod:`skfed.crypto.paillier`, :mod:`skfed.crypto._ou`).
        n_jobs : int or None, default=None
            Worker threads.

        Returns
        -------
        EncryptedArray
            Same shape, exponent and counts; without ``mantissa_bound``, which
            depends on private values.
        """
        key = self.public_key
        obfuscators = key.raw_obfuscators(self.size, obfuscation, n_jobs)
        modulus = key.ciphertext_modulus
        fresh = [
            c * s % modulus
            for c, s in zip(self.ciphertexts.ravel().tolist(), obfuscators)
        ]
        # The magnitude bound is dropped: it depends on private values.
        return self._new(
            object_array(fresh, self.shape), counts=self.counts, bound=None
        )


def _is_plaintext_array(obj):
    return isinstance(obj, PlaintextArray)


def _rebuild_encrypted_array(public_key, blob, shape, exponent, is_integer, encoder,
                             counts):
    width = public_key.ciphertext_bytes
    ciphertexts = [
        gmpy2.mpz(int.from_bytes(blob[i:i + width], "little"))
        for i in range(0, len(blob), width)
    ]
    return EncryptedArray(
        public_key, object_array(ciphertexts, shape), exponent,
        is_integer=is_integer, encoder=encoder, counts=counts,
    )


def concatenate(arrays, axis=0):
    """Join EncryptedArrays (or PlaintextArrays) along an existing axis.

    Parameters
    ----------
    arrays : sequence of EncryptedArray or of PlaintextArray
        Same key (and same PackedEncoder if packed); exponents are aligned to
        the smallest.
    axis : int, default=0
        Axis along which to join (as :func:`numpy.concatenate`).

    Returns
    -------
    EncryptedArray or PlaintextArray
    """
    arrays = list(arrays)
    if not arrays:
        raise ValueError("need at least one array to concatenate")
    if all(_is_plaintext_array(a) for a in arrays):
        return concatenate_plaintext(arrays, axis)
    if not all(isinstance(a, EncryptedArray) for a in arrays):
        raise TypeError("concatenate needs all EncryptedArrays or all PlaintextArrays.")
    first = arrays[0]
    for other in arrays[1:]:
        first._check_same_key(other)
    exponent = min(a.exponent for a in arrays)
    aligned = [a.decrease_exponent_to(exponent) for a in arrays]
    ciphertexts = np.concatenate([a.ciphertexts for a in aligned], axis=axis)
    counts = None
    if first.counts is not None:
        counts = np.concatenate([a.counts for a in arrays], axis=axis)
    bounds = [a.mantissa_bound for a in aligned]
    return EncryptedArray(
        first.public_key, ciphertexts, exponent,
        is_integer=all(a.is_integer for a in arrays), encoder=first.encoder,
        counts=counts, mantissa_bound=None if None in bounds else max(bounds),
    )
