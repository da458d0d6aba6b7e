"""The Paillier private key: CRT decryption, and faster encryption by the key owner.

Decryption uses the Chinese remainder theorem (Paillier 1999, section 7):
``m mod p`` is ``L_p(c**(p-1) mod p**2) h_p mod p`` with
``L_p(x) = (x - 1) / p`` and ``h_p = L_p(g**(p-1) mod p**2)**-1 mod p``;
likewise modulo ``q``; then CRT. The key owner also encrypts faster than
anyone else, computing the DJN obfuscators modulo ``p**2`` and ``q**2``
(:class:`~skfed.crypto._obfuscation.CRTDJNObfuscator`).
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import threading

import gmpy2
import numpy as np
import phe

from ._obfuscation import CRTDJNObfuscator
from ._parallel import fork_map, parallel_map
from ._precompute import PrecomputingKeyMixin
from ._raw import object_array
from ._scheme import decrypt_array, encrypt_array, encrypt_packed_array

__all__ = ["PaillierPrivateKey"]

# Guards the lazy creation of a private key's CRT obfuscator.
_crt_lock = threading.Lock()
# Key-owner encryption forks worker processes only from this many values per
# process at 2048 bits (scaled up for smaller keys, whose values are cheaper).
_MIN_ITEMS_PER_PROCESS_2048 = 128


class PaillierPrivateKey(PrecomputingKeyMixin):
    """Paillier private key with CRT decryption of whole arrays.

    Parameters
    ----------
    public_key : PaillierPublicKey
    p, q : int
        The prime factors of ``public_key.n``.

    Notes
    -----
    Holds ``p, q, p**2, q**2, p**-1 mod q`` and ``h_p, h_q`` (Paillier 1999,
    section 7, "decryption using Chinese-remaindering"), so each decryption is
    two exponentiations with half-size exponents and moduli (about 4x cheaper
    than one with ``lambda`` modulo ``n**2``).
    """

    def __init__(self, public_key, p, q):
        p, q = gmpy2.mpz(p), gmpy2.mpz(q)
        if p * q != public_key.n:
            raise ValueError("p * q does not equal the public key's n.")
        self.public_key = public_key
        self.p, self.q = p, q
        self.psquare, self.qsquare = p * p, q * q
        self.p_inverse = gmpy2.invert(p, q)
        self.hp = self._h_function(p, self.psquare)
        self.hq = self._h_function(q, self.qsquare)

    def __repr__(self):
        return f"<PaillierPrivateKey for {self.public_key!r}>"

    def __getstate__(self):
        # The CRT tables (and their lock) are rebuilt on demand, never pickled.
        state = dict(self.__dict__)
        state.pop("_crt_djn", None)
        state.pop("_pool", None)  # precomputed obfuscators never travel
        return state

    @property
    def crt_djn(self):
        """The key owner's :class:`CRTDJNObfuscator` (tables built on first use).

        Same ``h_s`` as ``public_key.djn``, hence the same obfuscators.
        """
        crt_djn = self.__dict__.get("_crt_djn")
        if crt_djn is None:
            with _crt_lock:
                crt_djn = self.__dict__.get("_crt_djn")
                if crt_djn is None:
                    crt_djn = CRTDJNObfuscator(self.public_key.djn, self.p, self.q)
                    self._crt_djn = crt_djn
        return crt_djn

    def _min_items_per_process(self):
        # Forking the pool costs ~25 ms: give each process >= ~50 ms of work
        # (an encryption costs ~350 us at 2048 bits, 4x less per halving).
        scale = max(1, 2048 // self.public_key.key_size) ** 2
        return _MIN_ITEMS_PER_PROCESS_2048 * scale

    def raw_obfuscators(self, count, n_jobs=None):
        """``count`` fresh DJN obfuscators ``h_s**a mod n**2``, computed with CRT.

        The same distribution as ``public_key.raw_obfuscators(count)`` (same
        ``h_s``, same exponent length, exponents from :mod:`secrets`), about
        1.6x cheaper with one worker, 1.9x more with two (see :meth:`raw_encrypt`).
        """
        crt_djn = self.crt_djn
        crt_djn.build(n_jobs)
        return fork_map(
            lambda chunk: crt_djn.obfuscators(len(chunk)), [None] * count, n_jobs,
            self._min_items_per_process())

    def _pool_source(self, n_jobs=None):
        """The background worker's obfuscators (CRT tables built first)."""
        crt_djn = self.crt_djn
        crt_djn.build(n_jobs)
        return crt_djn.obfuscators

    def raw_encrypt(self, plaintexts, n_jobs=None, precomputed=True):
        """Encrypt integer plaintexts as the key owner (CRT obfuscators).

        Same result distribution as ``public_key.raw_encrypt(plaintexts)``
        with ``obfuscation="djn"``: ``(1 + m n) h_s**a mod n**2`` with the
        public key's ``h_s`` and a fresh uniform ``a`` of ``8 * exponent_bytes``
        bits from :mod:`secrets`; only the computation of ``h_s**a`` uses the
        factors (:class:`skfed.crypto._obfuscation.CRTDJNObfuscator`).

        Parameters
        ----------
        plaintexts : ndarray of object
            Integers; negative ``m`` stands for ``n + m``.
        n_jobs : int or None
            Workers: forked processes where possible, else threads (see
            Notes); the two tables are built by up to two threads.
        precomputed : bool, default=True
            Use the obfuscators computed ahead by
            :meth:`precompute_obfuscators`, if any (False: compute all).

        Returns
        -------
        ciphertexts : ndarray of object
            ``(1 + m n) s mod n**2`` as mpz, same shape, decryptable by
            :meth:`raw_decrypt` and homomorphic with the public key's.

        Notes
        -----
        Measured on the idle 2-core benchmark machine
        (``benchmarks/bench_crypto.py``, 1000 values per call, best of 2),
        encryptions per second, public DJN path -> this path:

        - 1024 bits: 9230 -> 12004 (n_jobs=1), 10579 -> 12749 (n_jobs=2);
        - 2048 bits: 1785 -> 2943 (n_jobs=1, 1.6x), 3222 -> 4525 (n_jobs=2,
          1.4x, the fork's cost included).

        With more values per call the fork costs less: 5760/s at 2048 bits
        and ``n_jobs=2`` for 6000 values (public path: 2680-3040/s), i.e.
        1.9x over one process. SecureBoost's round on 30,000 x 23 at 2048
        bits (``benchmarks/bench_secureboost.py``, ``n_jobs=2``): 21.5 s ->
        8.7 s, the gradient encryption 17.7 s -> 5.7 s (table build
        included).

        ``n_jobs > 1`` forks worker processes (:func:`~._parallel.fork_map`):
        threads give no speed-up on this path (1.0x measured), processes
        1.9x. Where forking is unavailable it falls back to threads. The
        tables (~51 MB at 2048 bits, ~21 MB at 1024 bits, resident set
        measured; built in 0.30 s / 0.10 s with two threads) are built on
        the first call and kept with the key.
        """
        plaintexts = np.asarray(plaintexts, dtype=object)
        n, nsquare = self.public_key.n, self.public_key.nsquare
        crt_djn = self.crt_djn
        crt_djn.build(n_jobs)

        def combine(chunk, obfuscators):
            # (1 + m n) s = s + n (m s mod n)  (mod n**2), as the public path.
            return [(s + n * (m * s % n)) % nsquare for m, s in zip(chunk, obfuscators)]

        def work(chunk):
            return combine(chunk, crt_djn.obfuscators(len(chunk)))

        flat = plaintexts.ravel().tolist()
        ready = self._take_precomputed(len(flat), precomputed)
        head = combine(flat[:len(ready)], ready)
        return object_array(
            head + fork_map(work, flat[len(ready):], n_jobs,
                            self._min_items_per_process()),
            plaintexts.shape,
        )

    def encrypt(self, values, *, precision=None, n_jobs=None):
        """Encrypt like :meth:`PaillierPublicKey.encrypt`, as the key owner.

        Same encoding and the same ciphertext distribution as the public key's
        ``encrypt`` with ``obfuscation="djn"``; faster (see :meth:`raw_encrypt`).
        Returns an :class:`EncryptedArray` under ``self.public_key``.
        """
        return encrypt_array(self.public_key, lambda m: self.raw_encrypt(m, n_jobs),
                             values, precision)

    def encrypt_packed(self, values, encoder, *, n_jobs=None):
        """Like :meth:`PaillierPublicKey.encrypt_packed`, as the key owner."""
        return encrypt_packed_array(
            self.public_key, lambda m: self.raw_encrypt(m, n_jobs), values, encoder)

    @property
    def plaintext_modulus(self):
        """``n``: decrypted residues are modulo ``n``."""
        return self.public_key.n

    def _h_function(self, x, xsquare):
        g = self.public_key.n + 1
        return gmpy2.invert((gmpy2.powmod(g, x - 1, xsquare) - 1) // x, x)

    @property
    def phe_private_key(self):
        """The same key as a :class:`phe.PaillierPrivateKey`."""
        return phe.PaillierPrivateKey(
            self.public_key.phe_public_key, int(self.p), int(self.q)
        )

    def raw_decrypt(self, ciphertexts, n_jobs=None):
        """Decrypt raw ciphertexts to residues in ``[0, n)`` (CRT).

        Parameters
        ----------
        ciphertexts : ndarray of object
            Raw ciphertexts modulo ``n**2``.
        n_jobs : int or None
            Worker threads.

        Returns
        -------
        residues : ndarray of object (mpz), same shape
        """
        ciphertexts = np.asarray(ciphertexts, dtype=object)
        p, q, psquare, qsquare = self.p, self.q, self.psquare, self.qsquare
        hp, hq, p_inverse = self.hp, self.hq, self.p_inverse
        pm1, qm1 = p - 1, q - 1

        def work(chunk):
            out = []
            for c in chunk:
                mp = (gmpy2.powmod(c, pm1, psquare) - 1) // p * hp % p
                mq = (gmpy2.powmod(c, qm1, qsquare) - 1) // q * hq % q
                out.append(mp + (mq - mp) * p_inverse % q * p)
            return out

        return object_array(
            parallel_map(work, ciphertexts.ravel().tolist(), n_jobs), ciphertexts.shape
        )

    def decrypt(self, encrypted, n_jobs=None):
        """Decrypt an :class:`EncryptedArray`.

        Parameters
        ----------
        encrypted : EncryptedArray
            Encrypted under this key's public key.
        n_jobs : int or None, default=None
            Worker threads.

        Returns
        -------
        values : ndarray
            Float64 (int64 for integer-encoded arrays), same shape; for a
            packed array, shape ``encrypted.shape + (n_slots,)`` with the
            offsets of all summands removed.

        Raises
        ------
        ValueError
            If ``encrypted`` belongs to another key.
        OverflowError
            If a homomorphic computation overflowed the plaintext range.
        """
        return decrypt_array(self, encrypted, n_jobs)
