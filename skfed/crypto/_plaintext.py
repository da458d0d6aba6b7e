"""Plaintext mode: the EncryptedArray interface with no encryption.

``generate_keypair(key_size, plaintext=True)`` returns these keys. Protocol
code written against :class:`EncryptedArray` runs unchanged on
:class:`PlaintextArray` (``+``, ``-``, ``*``, ``sum``, ``group_sum``, indexing,
:func:`concatenate`, ``rerandomize``), with exact float64 arithmetic and no
fixed-point rounding: this is the lossless reference that the encrypted runs
are compared with, and the fast mode for teaching.

Nothing is hidden in this mode: every party sees every value it receives.
"""

import numpy as np

from .encoding import PackedEncoder

__all__ = ["PlaintextArray", "PlaintextPrivateKey", "PlaintextPublicKey"]


class PlaintextPublicKey:
    """Stand-in for :class:`PaillierPublicKey` that does not encrypt.

    Parameters
    ----------
    key_size : int
        Kept for reporting and for packing-capacity checks, so that a packing
        layout that would not fit a real key fails in plaintext mode too.
    scheme : {"paillier", "ou"}, default="paillier"
        The scheme whose plaintext capacity the checks use.
    identity : int or None, default=None
        What tells two stand-in keys apart, as a real key's modulus does:
        :func:`~skfed.crypto.generate_keypair` draws a random 64-bit one,
        so that arrays of two key pairs do not mix and
        :func:`~skfed.privacy.check_messages` can bind a key to the rows of
        its holders in plaintext mode too. Keys are equal when their size,
        scheme and identity are.
    """

    def __init__(self, key_size=2048, scheme="paillier", identity=None):
        self.key_size = int(key_size)
        self.scheme = scheme
        self.identity = identity
        # The smallest max_int of any real key of this size and scheme
        # (Paillier: n >= 2**(k-1); OU: p >= 2**(k // 3 - 1)).
        top = self.key_size // 3 if scheme == "ou" else self.key_size
        self.max_int = (1 << (top - 1)) // 3 - 1
        self.plaintext_bits = top - 3

    def __repr__(self):
        return f"<PlaintextPublicKey {self.key_size} bits (no encryption)>"

    def __eq__(self, other):
        return (isinstance(other, PlaintextPublicKey) and other.key_size == self.key_size
                and other.scheme == self.scheme and other.identity == self.identity)

    def __hash__(self):
        return hash(("plaintext", self.key_size, self.scheme, self.identity))

    def __message_size__(self):
        """Nothing to send: there is no key material in plaintext mode."""
        return (0, 0, 0)

    def encrypt(self, values, *, precision=None, obfuscation="djn", n_jobs=None):
        """Wrap a copy of ``values`` (float64, or int64 for integer input).

        Parameters
        ----------
        values : array-like of float or int
            NaN and infinities are refused, as when encrypting.
        precision, obfuscation, n_jobs
            Accepted for interface parity and ignored: values stay exact.

        Returns
        -------
        PlaintextArray
        """
        values = _numeric(values)
        dtype = np.int64 if values.dtype.kind in "iu" else np.float64
        return PlaintextArray(self, values.astype(dtype))

    def encrypt_packed(self, values, encoder, *, obfuscation="djn", n_jobs=None):
        """Wrap ``values`` of shape ``(..., n_slots)`` as a packed array.

        The encoder's bounds and capacity are checked as for a real key; the
        values themselves are kept exactly.
        """
        if not isinstance(encoder, PackedEncoder):
            raise TypeError(f"encoder must be a PackedEncoder, got {type(encoder)}.")
        encoder.check_capacity(self.max_int)
        encoder.pack(values)  # validates shape and bounds
        values = np.asarray(values, dtype=np.float64)
        return PlaintextArray(self, values, n_slots=encoder.n_slots, encoder=encoder)


class PlaintextPrivateKey:
    """Stand-in for :class:`PaillierPrivateKey`: returns the values."""

    def __init__(self, public_key):
        self.public_key = public_key

    def __repr__(self):
        return f"<PlaintextPrivateKey for {self.public_key!r}>"

    def encrypt(self, values, *, precision=None, n_jobs=None):
        """As :meth:`PaillierPrivateKey.encrypt` (key-owner encryption): no-op wrap.

        Same result as ``self.public_key.encrypt(values)``, so that protocol
        code encrypting as the key owner runs unchanged in plaintext mode.
        """
        return self.public_key.encrypt(values, precision=precision, n_jobs=n_jobs)

    def encrypt_packed(self, values, encoder, *, n_jobs=None):
        """As :meth:`PaillierPrivateKey.encrypt_packed`: the public key's."""
        return self.public_key.encrypt_packed(values, encoder, n_jobs=n_jobs)

    def precompute_obfuscators(self, count, n_jobs=None, min_count=None):
        """As :meth:`PaillierPrivateKey.precompute_obfuscators`: nothing to do."""
        return False

    def stop_precomputing(self):
        """As :meth:`PaillierPrivateKey.stop_precomputing`: nothing to do."""

    def decrypt(self, encrypted, n_jobs=None):
        if not isinstance(encrypted, PlaintextArray):
            raise TypeError(
                f"Expected a PlaintextArray, got {type(encrypted).__name__}."
            )
        if encrypted.public_key != self.public_key:
            raise ValueError("This PlaintextArray belongs to a different key.")
        return encrypted.values.copy()


def _numeric(values):
    values = np.asarray(values)
    if values.dtype.kind == "b":
        values = values.astype(np.int64)
    if values.dtype.kind not in "iuf":
        raise TypeError(f"Expected numeric values, got dtype {values.dtype}.")
    if values.dtype.kind == "f" and not np.all(np.isfinite(values)):
        raise ValueError("Cannot encode NaN or infinite values.")
    return values


class PlaintextArray:
    """Plain numpy values behind the :class:`EncryptedArray` interface.

    Parameters
    ----------
    public_key : PlaintextPublicKey
    values : ndarray
        The values; for packed arrays, with a trailing slot axis that
        ``shape`` does not show (as for a packed EncryptedArray).
    n_slots : int or None
        Number of slots of a packed array.
    encoder : PackedEncoder or None
        The encoder of a packed array (as on a packed EncryptedArray).
    """

    __array_ufunc__ = None
    exponent = 0  # interface parity: values are kept exactly

    def __init__(self, public_key, values, n_slots=None, encoder=None):
        self.public_key = public_key
        self.values = values
        self.n_slots = n_slots
        self.encoder = encoder

    @property
    def shape(self):
        return self.values.shape[:-1] if self.n_slots else self.values.shape

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return int(np.prod(self.shape))

    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of a 0-d PlaintextArray")
        return self.shape[0]

    def __repr__(self):
        return f"PlaintextArray(shape={self.shape}, values={self.values!r})"

    def __message_size__(self):
        """``(n_scalars, 0, n_bytes)``: plain float64/int64 scalars."""
        return (int(self.values.size), 0, int(self.values.nbytes))

    def _new(self, values):
        return PlaintextArray(self.public_key, values, self.n_slots, self.encoder)

    def _operand(self, other):
        if isinstance(other, PlaintextArray):
            if other.public_key != self.public_key or other.n_slots != self.n_slots:
                raise ValueError("PlaintextArrays of different keys or packings.")
            return other.values
        if hasattr(other, "ciphertexts"):
            raise TypeError("Cannot combine a PlaintextArray with an EncryptedArray.")
        other = _numeric(other)
        if self.n_slots:
            raise TypeError("Cannot add a plaintext to a packed array.")
        return other

    def __getitem__(self, key):
        return self._new(np.asarray(self.values[key]))

    def reshape(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], tuple):
            shape = shape[0]
        if self.n_slots:
            shape = tuple(shape) + (self.n_slots,)
        return self._new(self.values.reshape(shape))

    def ravel(self):
        return self.reshape(-1)

    def __add__(self, other):
        return self._new(self.values + self._operand(other))

    __radd__ = __add__

    def __sub__(self, other):
        return self._new(self.values - self._operand(other))

    def __rsub__(self, other):
        return self._new(self._operand(other) - self.values)

    def __neg__(self):
        if self.n_slots:
            raise TypeError("Cannot negate a packed array.")
        return self._new(-self.values)

    def __mul__(self, other):
        if isinstance(other, PlaintextArray) or hasattr(other, "ciphertexts"):
            raise TypeError(
                "Cannot multiply two (encrypted) arrays; multiply by a plaintext."
            )
        other = _numeric(other)
        if self.n_slots:
            if other.dtype.kind not in "iu" or np.any(other < 0):
                raise ValueError(
                    "Packed arrays can only be multiplied by non-negative integers."
                )
            other = other[..., np.newaxis]
        return self._new(self.values * other)

    __rmul__ = __mul__

    def __truediv__(self, other):
        return self * (1.0 / _numeric(other).astype(np.float64))

    def sum(self, axis=None, n_jobs=None):
        if axis is None:
            axes = tuple(range(self.ndim))
        else:
            axes = axis % self.ndim if self.ndim else axis
        return self._new(np.asarray(self.values.sum(axis=axes)))

    def group_sum(self, group_ids, n_groups, n_jobs=None):
        """Sum the elements of each group, as :meth:`EncryptedArray.group_sum`.

        Parameters
        ----------
        group_ids : array-like of int, shape (n,) or (n, n_features)
            Group of each row; negative ids are skipped.
        n_groups : int
            Number of groups.
        n_jobs : int or None
            Ignored.

        Returns
        -------
        PlaintextArray
            Shape ``(n_groups,) + self.shape[1:]`` or ``(n_features, n_groups)``.
        """
        ids = np.asarray(group_ids)
        if ids.dtype.kind not in "iu":
            raise TypeError(f"group_ids must be integers, got dtype {ids.dtype}.")
        if self.ndim == 0 or ids.ndim not in (1, 2) or ids.shape[0] != self.shape[0]:
            raise ValueError(
                f"group_ids of shape {ids.shape} do not match an array of "
                f"shape {self.shape}."
            )
        if ids.size and ids.max() >= n_groups:
            raise ValueError(f"group id {int(ids.max())} >= n_groups={n_groups}.")
        if ids.ndim == 2 and self.ndim != 1:
            raise ValueError("2-D group_ids need a 1-D array.")
        values = self.values
        if ids.ndim == 1:
            valid = ids >= 0
            out = np.zeros((n_groups,) + values.shape[1:], dtype=values.dtype)
            np.add.at(out, ids[valid], values[valid])
            return self._new(out)
        out = np.zeros((ids.shape[1], n_groups) + values.shape[1:], dtype=values.dtype)
        for f in range(ids.shape[1]):
            valid = ids[:, f] >= 0
            np.add.at(out[f], ids[valid, f], values[valid])
        return self._new(out)

    def rerandomize(self, obfuscation="djn", n_jobs=None):
        """No-op (returns a copy): there is no obfuscation in plaintext mode."""
        return self._new(self.values.copy())


def concatenate_plaintext(arrays, axis=0):
    first = arrays[0]
    for other in arrays[1:]:
        if other.public_key != first.public_key or other.n_slots != first.n_slots:
            raise ValueError("PlaintextArrays of different keys or packings.")
    axis = axis % first.ndim
    return first._new(np.concatenate([a.values for a in arrays], axis=axis))
