"""Okamoto-Uchiyama keys, public and private, working on whole numpy arrays.

Notation (Okamoto and Uchiyama 1998, with the acceleration of Coron,
Naccache and Paillier 1999, as SecretFlow's HEU implements it): ``n = p**2 q``
with primes ``p`` of ``k = key_size // 3`` bits and ``q`` of about as many
(drawn so that ``n`` has exactly ``key_size`` bits), ``p - 1 = t u`` with a prime ``t`` of ``2 kappa`` bits
(``kappa`` the key's security level). Public: ``n``, ``G = g**u mod n`` and
``H = g'**(n u) mod n`` for random ``g``, ``g'``; the plaintext space is
``Z_p``, ``p`` secret. A plaintext ``m`` encrypts to

    ``c = G**m * H**r mod n``

with a fresh random ``r`` (the *obfuscator* is ``H**r``). Modulo ``p**2``,
``H**t = 1`` and ``G**t`` has order ``p``, so the key owner decrypts with the
short exponent ``t``: ``m = L(c**t mod p**2) / L(G**t mod p**2) mod p`` with
``L(x) = (x - 1) / p`` (:class:`OUPrivateKey`): one exponentiation with a
``2 kappa``-bit exponent modulo ``p**2`` (a third of the modulus), where
Paillier's CRT decryption needs two with half-size exponents modulo ``p**2``
and ``q**2``. Then

- ``E(a) * E(b) = E(a + b)`` modulo ``n``: homomorphic addition;
- ``E(a)**k = E(k a)``; ``E(a) * G**m = E(a + m)``;
- ``E(a) * H**r'`` with a fresh ``r'``: re-randomisation.

A ciphertext is ``key_size`` bits (Paillier's: ``2 key_size``), and ``G**m``,
``H**r`` are fixed-base exponentiations with short exponents (``m`` is a
few hundred bits at most, ``r`` 256 bits): one encryption costs about 46
products modulo ``n`` for a 110-bit plaintext, against Paillier-DJN's 128
modulo ``n**2``.

Plaintext range. ``p`` is secret, but ``p >= 2**(k - 1)`` is public, so
signed plaintexts ``|m| <= max_int = 2**(k - 1) // 3 - 1`` are accepted:
``m`` and ``p + m`` are the same residue, and a decrypted residue in
``(max_int, p - max_int)`` can only come from an overflow and is reported
as one, as for Paillier. Packing (:class:`~skfed.crypto.PackedEncoder`)
derives its slots from this public bound (``plaintext_bits``).

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

Security: see :mod:`skfed.crypto._key_policy` (OU is one-way if factoring
``n = p**2 q`` is hard and semantically secure under the p-subgroup
assumption) and the ``obfuscation`` notes of ``OUPublicKey._obfuscator_source``.

References
----------
Okamoto, T., Uchiyama, S. (1998). A new public-key cryptosystem as secure
as factoring. EUROCRYPT '98, LNCS 1403, 308-318.

Coron, J.-S., Naccache, D., Paillier, P. (1999). Accelerating
Okamoto-Uchiyama public-key cryptosystem. Electronics Letters 35(4), 291-292.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import secrets
import threading
import weakref

import gmpy2
import numpy as np

from ._fixed_base import FixedBase
from ._ou_crt import CRT_MIN_BITS, OUCRTEncryptor
from ._parallel import fork_map, parallel_map
from ._precompute import PrecomputingKeyMixin
from ._raw import elementwise, object_array
from ._scheme import (
    PublicKeyMixin,
    decrypt_array,
    encrypt_array,
    encrypt_packed_array,
)

__all__ = ["OUPublicKey", "OUPrivateKey", "ou_public_key", "ou_prime_bits",
           "ou_subgroup_bits", "OU_OBFUSCATIONS"]

OU_OBFUSCATIONS = ("short", "standard")
#: Length of the random exponent ``r`` of ``H**r`` ("short" obfuscation).
RANDOM_BITS = 256
_RANDOM_BYTES = RANDOM_BITS // 8
#: Digit width of the fixed-base tables of ``H`` (see OUPublicKey).
H_WINDOW_BITS = 10


def ou_prime_bits(key_size):
    """Bits of ``p`` (public: ``key_size // 3``) for a ``key_size``-bit OU key."""
    return int(key_size) // 3


def _random_prime(bits):
    """A random prime of exactly ``bits`` bits from :mod:`secrets`."""
    while True:
        candidate = gmpy2.next_prime(secrets.randbits(bits) | (1 << (bits - 1)))
        if candidate.bit_length() == bits:
            return candidate


def generate_ou_primes(key_size, t_bits):
    """Secret ``(p, q, t, u)``: ``n = p**2 q`` of ``key_size`` bits, ``p = t u + 1``."""
    p_bits = ou_prime_bits(key_size)
    t = _random_prime(t_bits)
    u_bits = p_bits - t_bits
    while True:
        u = gmpy2.mpz(secrets.randbits(u_bits) | (1 << (u_bits - 1)))
        p = t * u + 1
        if p.bit_length() == p_bits and gmpy2.is_prime(p, 40):
            break
    # q uniform-ish in [2**(k-1) / p**2, 2**k / p**2): n has exactly k bits.
    low = ((1 << (key_size - 1)) + p * p - 1) // (p * p)
    high = ((1 << key_size) - 1) // (p * p)
    while True:
        q = gmpy2.next_prime(low + secrets.randbelow(int(high - low)))
        if q <= high and q != p:
            return p, q, t, u


def _random_unit(n):
    while True:
        x = gmpy2.mpz(secrets.randbelow(int(n) - 2) + 2)
        if gmpy2.gcd(x, n) == 1:
            return x


def generate_ou_keys(key_size, t_bits):
    """``(n, G, H, p, q, t, u)`` of a fresh OU key (Coron-Naccache-Paillier form)."""
    p, q, t, u = generate_ou_primes(key_size, t_bits)
    n = p * p * q
    psquare = p * p
    while True:
        g = _random_unit(n)
        # L(g**(p-1) mod p**2) must be a unit mod p: G**t then has order p.
        gp = gmpy2.powmod(g, p - 1, psquare)
        if ((gp - 1) // p) % p != 0:
            break
    G = gmpy2.powmod(g, u, n)
    H = gmpy2.powmod(_random_unit(n), n * u, n)
    return n, G, H, p, q, t, u


# One live OUPublicKey per (n, G, H), as for Paillier (shared tables).
_public_keys = weakref.WeakValueDictionary()
_public_keys_lock = threading.Lock()


def ou_public_key(n, G, H, p_bits):
    """The :class:`OUPublicKey` with these parameters, shared while alive."""
    params = (int(n), int(G), int(H), int(p_bits))
    with _public_keys_lock:
        key = _public_keys.get(params)
        if key is None:
            key = OUPublicKey(*params)
            _public_keys[params] = key
        return key


class OUPublicKey(PublicKeyMixin):
    """Okamoto-Uchiyama public key working on numpy arrays.

    Same interface as :class:`~skfed.crypto.PaillierPublicKey`: ``encrypt``,
    ``encrypt_packed``, ``raw_encrypt``, ``raw_obfuscators``, and the
    :class:`~skfed.crypto.EncryptedArray` operations on what they return.

    Parameters
    ----------
    n, G, H : int
        The public parameters (see the module docstring).
    p_bits : int
        Public bit length of the secret prime ``p`` (``key_size // 3``).

    Attributes
    ----------
    key_size : int
        Bit length of ``n``.
    max_int : int
        Largest magnitude of a plaintext, ``2**(p_bits - 1) // 3 - 1``.
    plaintext_bits : int
        Packed plaintexts below ``2**plaintext_bits`` in magnitude always
        fit: ``p_bits - 3``.
    ciphertext_modulus : mpz
        ``n``: ciphertexts multiply modulo ``n``.
    ciphertext_bytes : int
        Serialised size of one ciphertext, ``ceil(key_size / 8)``.
    """

    scheme = "ou"

    def __init__(self, n, G, H, p_bits):
        self.n = gmpy2.mpz(n)
        self.G, self.H = gmpy2.mpz(G), gmpy2.mpz(H)
        self.p_bits = int(p_bits)
        self.key_size = int(self.n.bit_length())
        self.max_int = (1 << (self.p_bits - 1)) // 3 - 1
        self.plaintext_bits = self.p_bits - 3
        self.ciphertext_modulus = self.n
        self.ciphertext_bytes = (self.key_size + 7) // 8
        self._g_table = FixedBase(self.G, self.n, self.p_bits)
        self._g_inverse_table = FixedBase(gmpy2.invert(self.G, self.n), self.n,
                                          self.p_bits)
        # 10-bit windows for H: 26 products per obfuscator instead of 32
        # (measured 22,300 against 18,900 per CPU second at 2048 bits; 6.8 MB,
        # built in 0.16 s); G keeps 8 bits, its table spans all of p's bits.
        self._h_table = FixedBase(self.H, self.n, RANDOM_BITS, H_WINDOW_BITS)

    def __repr__(self):
        fingerprint = hex(hash(self) & 0xFFFFFFFF)
        return f"<OUPublicKey {self.key_size} bits {fingerprint}>"

    def __eq__(self, other):
        return (isinstance(other, OUPublicKey) and self.n == other.n
                and self.G == other.G and self.H == other.H)

    def __hash__(self):
        return hash((int(self.n), int(self.G), int(self.H)))

    def __reduce__(self):
        return (ou_public_key, (int(self.n), int(self.G), int(self.H), self.p_bits))

    def __message_size__(self):
        """A public key travels as ``n``, ``G``, ``H`` (and ``p_bits``)."""
        return (4, 0, 3 * self.ciphertext_bytes + 8)

    # -- raw operations (used by EncryptedArray) --------------------------

    def raw_plain_powers(self, mantissas):
        """``G**m mod n`` for signed integers ``m`` (``|m| <= max_int``), a list."""
        mantissas = [int(m) for m in mantissas]
        positive = [m if m >= 0 else 0 for m in mantissas]
        out = self._g_table.powers(positive)
        if any(m < 0 for m in mantissas):
            negative_at = [i for i, m in enumerate(mantissas) if m < 0]
            inverse = self._g_inverse_table.powers([-mantissas[i] for i in negative_at])
            for i, value in zip(negative_at, inverse):
                out[i] = value
        return out

    def raw_add_plain(self, ciphertexts, mantissas):
        """``E(a) * G**m mod n`` elementwise (numpy broadcasting)."""
        ciphertexts, mantissas = np.broadcast_arrays(
            np.asarray(ciphertexts, dtype=object), np.asarray(mantissas, dtype=object))
        powers = object_array(self.raw_plain_powers(mantissas.ravel().tolist()),
                              mantissas.shape)
        n = self.n
        return elementwise(lambda c, s: c * s % n, ciphertexts, powers)

    def _obfuscator_source(self, obfuscation):
        """Function ``count -> list`` of fresh obfuscators ``H**r mod n``.

        Parameters
        ----------
        obfuscation : {"short", "standard"} or None
            ``"short"`` (None; ``"djn"`` is read the same way, so that
            scheme-agnostic code may pass Paillier's default): ``r`` of 256
            bits from :mod:`secrets`, one product modulo ``n`` per 10-bit
            digit of ``r`` from a fixed-base table (26 at any key size). Generic attacks on a short
            exponent (baby-step giant-step, Pollard's lambda) cost
            ``2**128``; the short exponent is indistinguishable from a
            full one under the same kind of assumption as Paillier-DJN's.
            HEU uses 110 bits at 2048 bits, which those attacks would
            search in ``2**55`` steps; we do not follow it there.
            ``"standard"``: ``r`` uniform in ``[0, n)`` (Okamoto-Uchiyama
            1998), one full exponentiation each.
        """
        if obfuscation in (None, "short", "djn"):
            table = self._h_table
            table.table  # built once here, not waited for by every worker
            return lambda count: table.random_powers(count, _RANDOM_BYTES)
        if obfuscation == "standard":
            n, H = self.n, self.H
            return lambda count: [gmpy2.powmod(H, secrets.randbelow(int(n)), n)
                                  for _ in range(count)]
        raise ValueError(
            f"obfuscation must be one of {OU_OBFUSCATIONS} for an OU key, "
            f"got {obfuscation!r}.")

    def raw_encrypt(self, plaintexts, obfuscation=None, n_jobs=None):
        """Encrypt signed integer plaintexts (``|m| <= max_int``) to ``G**m H**r mod n``."""
        plaintexts = np.asarray(plaintexts, dtype=object)
        source = self._obfuscator_source(obfuscation)
        return object_array(
            parallel_map(lambda chunk: self._encrypt_chunk(chunk, source(len(chunk))),
                         plaintexts.ravel().tolist(), n_jobs,
                         release_gil=obfuscation == "standard"),
            plaintexts.shape)

    def build_tables(self):
        """Build the fixed-base tables now (before forking workers, say)."""
        for table in (self._g_table, self._g_inverse_table, self._h_table):
            table.table
        return self

    def _encrypt_chunk(self, chunk, obfuscators):
        """``G**m * s mod n`` for the plaintexts and obfuscators given."""
        if not chunk:
            return []
        n = self.n
        return [gm * s % n for gm, s in zip(self.raw_plain_powers(chunk), obfuscators)]

    def encrypt(self, values, *, precision=None, obfuscation=None, n_jobs=None):
        """Encrypt a numpy array of floats or integers.

        Same encoding, arguments and result as
        :meth:`PaillierPublicKey.encrypt` (``obfuscation``: see
        :meth:`_obfuscator_source`); the values must fit ``max_int`` at the
        chosen precision (about ``2**(key_size / 3)``).
        """
        return encrypt_array(
            self, lambda m: self.raw_encrypt(m, obfuscation, n_jobs), values, precision)

    def encrypt_packed(self, values, encoder, *, obfuscation=None, n_jobs=None):
        """Encrypt ``values[..., j]`` packed into slots, as :meth:`PaillierPublicKey.encrypt_packed`."""
        return encrypt_packed_array(
            self, lambda m: self.raw_encrypt(m, obfuscation, n_jobs), values, encoder)


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
                                         self.t, _RANDOM_BYTES)
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
