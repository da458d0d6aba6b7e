"""What every additively homomorphic scheme shares: encode, encrypt, decrypt, decode.

Paillier (:mod:`skfed.crypto.paillier`) and Okamoto-Uchiyama
(:mod:`skfed.crypto._ou`) differ only in their raw operations on integers
(``raw_encrypt``, ``raw_decrypt``, the ciphertext modulus, adding a plaintext,
obfuscators). The fixed-point encoding, packing, the overflow bound and the
decoding of decrypted residues are the same, and live here once; so do
:class:`~skfed.crypto.EncryptedArray`'s operations, which only call the
key's raw operations.

Interface a public key offers to :class:`~skfed.crypto.EncryptedArray`:
``ciphertext_modulus``, ``ciphertext_bytes``, ``max_int``,
``plaintext_bits``, ``raw_add_plain(ciphertexts, mantissas)`` and
``raw_obfuscators(count, obfuscation, n_jobs)``; a private key offers
``raw_decrypt(ciphertexts, n_jobs)`` and ``plaintext_modulus``.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np

from ._array import EncryptedArray
from ._parallel import parallel_map
from ._raw import max_abs
from .encoding import (
    PackedEncoder,
    choose_exponent,
    decode,
    encode,
    signed_from_residues,
)

__all__ = ["SCHEMES", "PublicKeyMixin", "decrypt_array", "encrypt_array",
           "encrypt_packed_array", "plaintext_bits"]

#: The schemes :func:`skfed.crypto.generate_keypair` makes keys for.
SCHEMES = ("paillier", "ou")


def plaintext_bits(key_size, scheme="paillier"):
    """Packed plaintexts below ``2**bits`` in magnitude fit any key of this size.

    Paillier: ``key_size - 3`` (``max_int = n // 3 - 1`` with ``n >= 2**(k-1)``);
    Okamoto-Uchiyama: ``key_size // 3 - 3`` (the public bound on the secret
    prime ``p``, see :mod:`skfed.crypto._ou`).
    """
    if scheme == "paillier":
        return int(key_size) - 3
    if scheme == "ou":
        return int(key_size) // 3 - 3
    raise ValueError(f"scheme must be one of {SCHEMES}, got {scheme!r}.")


class PublicKeyMixin:
    """What Paillier's and OU's public keys share.

    The key provides ``_obfuscator_source(obfuscation)``: a function
    ``count -> list`` of fresh encryptions of 0 (its docstring lists the
    key's obfuscations).
    """

    def raw_obfuscators(self, count, obfuscation=None, n_jobs=None):
        """``count`` fresh obfuscators: encryptions of 0, from :mod:`secrets`.

        Parameters
        ----------
        count : int
        obfuscation : str or None
            None: the key's default (Paillier ``"djn"``, OU ``"short"``);
            the choices and their assumptions are in the key's
            ``_obfuscator_source``.
        n_jobs : int or None
            Worker threads.

        Returns
        -------
        obfuscators : list of mpz
        """
        source = self._obfuscator_source(obfuscation)
        return parallel_map(lambda chunk: source(len(chunk)), [None] * count, n_jobs,
                            release_gil=obfuscation == "standard")


def encrypt_array(public_key, raw_encrypt, values, precision):
    """Encode ``values`` with one exponent and encrypt them with ``raw_encrypt``."""
    values = np.asarray(values)
    exponent = choose_exponent(values, precision)
    mantissas = encode(values, exponent, public_key.max_int)
    ciphertexts = raw_encrypt(mantissas)
    return EncryptedArray(
        public_key, ciphertexts, exponent, is_integer=values.dtype.kind in "iub",
        mantissa_bound=max_abs(mantissas),
    )


def encrypt_packed_array(public_key, raw_encrypt, values, encoder):
    """Pack ``values[..., j]`` with ``encoder`` and encrypt with ``raw_encrypt``."""
    if not isinstance(encoder, PackedEncoder):
        raise TypeError(f"encoder must be a PackedEncoder, got {type(encoder)}.")
    encoder.check_capacity(public_key.max_int)
    packed = encoder.pack(values)
    ciphertexts = raw_encrypt(packed)
    counts = np.ones(packed.shape, dtype=np.int64)
    return EncryptedArray(public_key, ciphertexts, 0, encoder=encoder, counts=counts)


def decrypt_array(private_key, encrypted, n_jobs=None):
    """Decrypt an :class:`EncryptedArray` with ``private_key`` (see ``decrypt``)."""
    if not isinstance(encrypted, EncryptedArray):
        raise TypeError(
            f"Expected an EncryptedArray, got {type(encrypted).__name__}."
        )
    if encrypted.public_key != private_key.public_key:
        raise ValueError(
            "This EncryptedArray was encrypted under a different public key."
        )
    residues = private_key.raw_decrypt(encrypted.ciphertexts, n_jobs)
    modulus = private_key.plaintext_modulus
    max_int = private_key.public_key.max_int
    if encrypted.encoder is not None:
        if any(r > max_int for r in residues.ravel().tolist()):
            raise OverflowError(
                "A packed value is negative or overflowed: was a packed "
                "array subtracted from one that does not contain it?"
            )
        return encrypted.encoder.unpack(residues, encrypted.counts)
    mantissas = signed_from_residues(residues, modulus, max_int)
    return decode(mantissas, encrypted.exponent, encrypted.is_integer)
