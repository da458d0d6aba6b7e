"""The Okamoto-Uchiyama private key: short-exponent decryption, checks, CRT encryption.

Decryption (Coron, Naccache and Paillier 1999): with ``p - 1 = t u`` and a
ciphertext ``c = G**m H**r mod n``, ``H**t = 1`` and ``G**t`` lies in the
subgroup of order ``p`` modulo ``p**2``, so

    ``m = L(c**t mod p**2) * L(G**t mod p**2)**-1 mod p``,  ``L(x) = (x - 1) / p``:

one exponentiation with a ``2 kappa``-bit exponent modulo ``p**2`` (a third
of the modulus), where Paillier's CRT decryption needs two with half-size
exponents modulo ``p**2`` and ``q**2``.

What decryption can detect. Every honest ciphertext satisfies
``c**t = 1 (mod p)`` (both ``G**t`` and ``H**t`` do), and is a unit below
``n``. A ciphertext altered by anything else than a homomorphic operation
(a flipped bit, a random number, a value from another key) fails the first
test unless its order modulo ``p`` happens to divide ``t``, which has
probability about ``1 / u`` (``u`` has ``key_size / 3 - 2 kappa`` bits):
decryption refuses it with a ``ValueError``. Like every additively
homomorphic scheme, OU is malleable: ``c * G**k`` is a valid encryption of
``m + k`` and cannot be detected. (Paillier's ciphertext space is all of
``Z*_{n**2}``: every unit decrypts to something, so there is no such check.)

The key owner encrypts like anyone else (same tables, same ciphertext
distribution), but can have the next round's obfuscators computed while it
waits (:class:`~skfed.crypto._precompute.PrecomputingKeyMixin`), forks
workers for large batches, and encrypts long (packed) plaintexts modulo
``p**2`` and ``q`` (:mod:`skfed.crypto._ou_crt`: the same ciphertexts,
cheaper).
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import threading

import gmpy2
import numpy as np

from ._ou import RANDOM_BITS
from ._ou_crt import CRT_MIN_BITS, OUCRTEncryptor
from ._parallel import fork_map, parallel_map
from ._precompute import PrecomputingKeyMixin
from ._raw import object_array
from ._scheme import decrypt_array, encrypt_array, encrypt_packed_array

__all__ = ["OUPrivateKey", "ou_subgroup_bits"]

RANDOM_BYTES = RANDOM_BITS // 8
_CRT_LOCK = threading.Lock()

# Key-owner encryption forks worker processes only from this many values per
# process (an OU encryption costs ~50 us at 2048 bits; a fork ~25 ms).
_MIN_ITEMS_PER_PROCESS = 1024


def ou_subgroup_bits(key_size):
    """Bits of the prime ``t`` dividing ``p - 1``: twice the key's security level.

    160 below 2048 bits, 224 from 2048, 256 from 3072 (NIST SP 800-57
    subgroup sizes for 80, 112 and 128-bit security, as HEU uses), but at
    most half of ``p`` for the small keys of tests.
    """
    key_size = int(key_size)
    bits = 256 if key_size >= 3072 else 224 if key_size >= 2048 else 160
    return min(bits, (key_size // 3) // 2)


class OUPrivateKey(PrecomputingKeyMixin):
    """Okamoto-Uchiyama private key: decryption and key-owner encryption of arrays.

    Parameters
    ----------
    public_key : OUPublicKey
    p, q : int
        The primes, ``n = p**2 q``.
    t : int
        The prime factor of ``p - 1`` that orders ``H`` (decryption exponent).
    """

    def __init__(self, public_key, p, q, t):
        p, q, t = gmpy2.mpz(p), gmpy2.mpz(q), gmpy2.mpz(t)
        if p * p * q != public_key.n:
            raise ValueError("p**2 * q does not equal the public key's n.")
        if (p - 1) % t:
            raise ValueError("t does not divide p - 1.")
        self.public_key = public_key
        self.p, self.q, self.t = p, q, t
        self.psquare = p * p
        gt = gmpy2.powmod(public_key.G, t, self.psquare)
        self.g_inverse_l = gmpy2.invert((gt - 1) // p, p)

    def __repr__(self):
        return f"<OUPrivateKey for {self.public_key!r}>"

    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop("_pool", None)  # precomputed obfuscators never travel
        state.pop("_crt_encryptor", None)  # tables are rebuilt where needed
        return state

    @property
    def plaintext_modulus(self):
        """``p``: decrypted residues are modulo the secret prime ``p``."""
        return self.p

    # -- decryption ------------------------------------------------------

    def raw_decrypt(self, ciphertexts, n_jobs=None):
        """Decrypt raw ciphertexts to residues in ``[0, p)``.

        Raises
        ------
        ValueError
            If a ciphertext is not a unit below ``n`` or fails
            ``c**t = 1 (mod p)``: it was not produced by this key's
            encryption and homomorphic operations (tampered, corrupted, or
            of another key). See the module docstring for what this detects.
        """
        ciphertexts = np.asarray(ciphertexts, dtype=object)
        p, q, t, psquare = self.p, self.q, self.t, self.psquare
        n, g_inverse_l = self.public_key.n, self.g_inverse_l

        def work(chunk):
            out = []
            for c in chunk:
                if not 0 < c < n or c % q == 0:
                    raise ValueError(_INVALID)
                x = gmpy2.powmod(c % psquare, t, psquare)
                ell, remainder = divmod(x - 1, p)
                if remainder:
                    raise ValueError(_INVALID)
                out.append(ell * g_inverse_l % p)
            return out

        return object_array(
            parallel_map(work, ciphertexts.ravel().tolist(), n_jobs), ciphertexts.shape)

    def decrypt(self, encrypted, n_jobs=None):
        """Decrypt an :class:`EncryptedArray` (as :meth:`PaillierPrivateKey.decrypt`).

        Raises
        ------
        ValueError
            If ``encrypted`` belongs to another key, or a ciphertext is not
            a valid OU ciphertext of this key (see :meth:`raw_decrypt`).
        OverflowError
            If a homomorphic computation overflowed the plaintext range.
        """
        return decrypt_array(self, encrypted, n_jobs)

    # -- key-owner encryption -------------------------------------------

    def _min_items_per_process(self):
        scale = max(1, 2048 // self.public_key.key_size) ** 2
        return _MIN_ITEMS_PER_PROCESS * scale

    def _pool_source(self, n_jobs=None):
        return self.public_key._obfuscator_source(None)

    def raw_obfuscators(self, count, n_jobs=None):
        """``count`` fresh obfuscators ``H**r mod n`` (``r`` of 256 bits)."""
        source = self._pool_source()
        return fork_map(lambda chunk: source(len(chunk)), [None] * count, n_jobs,
                        self._min_items_per_process())

    def raw_encrypt(self, plaintexts, n_jobs=None, precomputed=True):
        """Encrypt signed integer plaintexts as the key owner.

        The same ciphertexts as ``public_key.raw_encrypt`` (``G**m H**r mod
        n``, ``r`` of 256 bits from :mod:`secrets`), with two differences:
        obfuscators computed ahead by :meth:`precompute_obfuscators` are used
        first, each once (``precomputed=False``: compute all), and
        ``n_jobs > 1`` forks worker processes, as Paillier's key owner does
        (each product is too short for threads to pay).

        A batch whose longest plaintext has :data:`~._ou_crt.CRT_MIN_BITS`
        bits or more (packed plaintexts) is encrypted modulo ``p**2`` and
        ``q`` (:class:`~._ou_crt.OUCRTEncryptor`: the same ciphertexts,
        about 1.8x cheaper for 672-bit plaintexts at 2048 bits).

        Notes
        -----
        Computing ``G**m`` and ``H**r`` modulo ``p**2`` and ``q`` with CRT
        and the full exponents (the key owner's Paillier trick) gave 1.04x
        at 2048 bits and 0.80x at 1024 bits (the products are cheaper but
        as many, and Python's per-product cost stays,
        ``benchmarks/bench_crypto.py --schemes``). What pays is the key's
        structure: modulo ``p**2`` both exponents reduce to ``2 kappa``
        bits (:mod:`._ou_crt`), which matters for long plaintexts only.
        """
        plaintexts = np.asarray(plaintexts, dtype=object)
        flat = plaintexts.ravel().tolist()
        ready = self._take_precomputed(len(flat), precomputed)
        longest = max((abs(int(m)).bit_length() for m in flat[len(ready):]),
                      default=0)
        if longest >= CRT_MIN_BITS:
            crt = self._crt().build()  # tables inherited by forked workers
            encrypt_chunk = crt.encrypt
        else:
            public_key = self.public_key.build_tables()
            source = self._pool_source()

            def encrypt_chunk(chunk):
                return public_key._encrypt_chunk(chunk, source(len(chunk)))

        head = self.public_key._encrypt_chunk(flat[:len(ready)], ready)
        rest = fork_map(encrypt_chunk, flat[len(ready):], n_jobs,
                        self._min_items_per_process())
        return object_array(head + rest, plaintexts.shape)

    def _crt(self):
        """The key owner's CRT encryptor (tables built on first use)."""
        crt = self.__dict__.get("_crt_encryptor")
        if crt is None:
            with _CRT_LOCK:
                crt = self.__dict__.get("_crt_encryptor")
                if crt is None:
                    crt = OUCRTEncryptor(self.public_key, self.p, self.q,
                                         self.t, RANDOM_BYTES)
                    self._crt_encryptor = crt
        return crt

    def encrypt(self, values, *, precision=None, n_jobs=None):
        """Encrypt like :meth:`OUPublicKey.encrypt`, as the key owner (faster)."""
        return encrypt_array(self.public_key, lambda m: self.raw_encrypt(m, n_jobs),
                             values, precision)

    def encrypt_packed(self, values, encoder, *, n_jobs=None):
        """Like :meth:`OUPublicKey.encrypt_packed`, as the key owner."""
        return encrypt_packed_array(
            self.public_key, lambda m: self.raw_encrypt(m, n_jobs), values, encoder)


_INVALID = (
    "Not a valid Okamoto-Uchiyama ciphertext of this key (c must be a unit "
    "below n with c**t = 1 mod p): it was tampered with, corrupted, or "
    "encrypted under another key."
)
