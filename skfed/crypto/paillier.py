"""Paillier keys, public and private, working on whole numpy arrays.

Notation (Paillier 1999): ``n = p q``, ``g = n + 1``; a plaintext ``m`` in
``Z_n`` encrypts to ``c = g**m * s mod n**2`` where ``s`` is a random n-th
residue (the *obfuscator*, see :mod:`skfed.crypto._obfuscation`). Because
``g = n + 1``, ``g**m = 1 + m n mod n**2`` needs no exponentiation. Then

- ``E(a) * E(b) = E(a + b)``: homomorphic addition is a modular product;
- ``E(a)**k = E(k a)``: multiplication by a plaintext integer;
- ``E(a) * s' = E(a)`` with a fresh obfuscator ``s'``: re-randomisation.

Decryption uses the Chinese remainder theorem (Paillier 1999, section 7):
``m mod p`` is ``L_p(c**(p-1) mod p**2) h_p mod p`` with
``L_p(x) = (x - 1) / p`` and ``h_p = L_p(g**(p-1) mod p**2)**-1 mod p``;
likewise modulo ``q``; then CRT (:class:`PaillierPrivateKey`). The key owner
also encrypts faster than anyone else, computing the DJN obfuscators modulo
``p**2`` and ``q**2``
(:class:`~skfed.crypto._obfuscation.CRTDJNObfuscator`).

The keys come from :func:`phe.generate_paillier_keypair`, which draws its
primes from the operating system's cryptographic generator. Their size is
checked against skfed's key policy (:mod:`skfed.crypto._key_policy`).

References
----------
Paillier, P. (1999). Public-key cryptosystems based on composite degree
residuosity classes. EUROCRYPT '99, LNCS 1592, 223-238.

Damgard, I., Jurik, M., Nielsen, J. B. (2010). A generalization of Paillier's
public-key system with applications to electronic voting. International
Journal of Information Security 9(6), 371-385.
"""

import functools
import secrets
import threading
import weakref

import gmpy2
import numpy as np
import phe

from ._key_policy import check_key_size
from ._obfuscation import (
    OBFUSCATIONS,
    CRTDJNObfuscator,
    DJNObfuscator,
    standard_obfuscators,
)
from ._ou import (
    OUPrivateKey,
    generate_ou_keys,
    ou_prime_bits,
    ou_public_key,
    ou_subgroup_bits,
)
from ._parallel import fork_map, parallel_map
from ._plaintext import PlaintextPrivateKey, PlaintextPublicKey
from ._precompute import PrecomputingKeyMixin
from ._raw import add_plain, object_array
from ._scheme import (
    SCHEMES,
    PublicKeyMixin,
    decrypt_array,
    encrypt_array,
    encrypt_packed_array,
)

__all__ = [
    "PaillierPrivateKey",
    "PaillierPublicKey",
    "generate_keypair",
]


def generate_keypair(key_size=2048, plaintext=False, scheme="paillier", warn=True):
    """Generate a Paillier (or Okamoto-Uchiyama) key pair for array encryption.

    Parameters
    ----------
    key_size : int, default=2048
        Bit length of the modulus ``n``. 2048 bits is the usual minimum for
        ~112-bit security. Smaller keys warn
        (:class:`~skfed.crypto.InsecureKeyWarning`); below 1024 bits they are
        refused unless ``skfed.set_config(allow_insecure_keys=True)`` (tests
        and teaching only). Each scheme has its own policy
        (:func:`check_key_size`).
    plaintext : bool, default=False
        If True, return :class:`PlaintextPublicKey` / :class:`PlaintextPrivateKey`
        whose ``encrypt`` returns a :class:`PlaintextArray` with the same
        interface as :class:`EncryptedArray` but no encryption at all, so that
        protocol code runs unchanged (for teaching and lossless comparisons).
    scheme : {"paillier", "ou"}, default="paillier"
        ``"paillier"``: Paillier 1999, ``n = p q``, ciphertexts of
        ``2 key_size`` bits. ``"ou"``: Okamoto-Uchiyama 1998 (in the form
        SecretFlow's HEU uses), ``n = p**2 q``, ciphertexts of ``key_size``
        bits, plaintexts below about ``2**(key_size / 3)``; encryption about
        an order of magnitude faster (``benchmarks/bench_crypto.py``). Both
        give arrays with the same interface (:class:`EncryptedArray`).
        With ``plaintext=True`` the scheme only sets the plaintext capacity.
    warn : bool, default=True
        ``False`` skips the :class:`~skfed.crypto.InsecureKeyWarning` (the
        refusal below 1024 bits stays): estimators warn their caller once,
        from ``fit``, and make their keys with ``warn=False``.

    Returns
    -------
    public_key : PaillierPublicKey, OUPublicKey or PlaintextPublicKey
    private_key : PaillierPrivateKey, OUPrivateKey or PlaintextPrivateKey

    Raises
    ------
    ValueError
        For a Paillier key below 1024 bits without the opt-in.

    Warns
    -----
    InsecureKeyWarning
        For a Paillier key below 2048 bits.

    Notes
    -----
    The primes come from the operating system's cryptographic random source
    (through :func:`phe.generate_paillier_keypair`); estimators' ``random_state``
    is never involved, so keys differ between runs by design.

    Examples
    --------
    >>> import numpy as np
    >>> from skfed.crypto import generate_keypair
    >>> public_key, private_key = generate_keypair(key_size=512)
    >>> a = public_key.encrypt(np.array([1.5, -2.0, 3.25]))
    >>> private_key.decrypt((a + a).sum())
    array(5.5)
    """
    if scheme not in SCHEMES:
        raise ValueError(f"scheme must be one of {SCHEMES}, got {scheme!r}.")
    if plaintext:
        # a random identity, as a real key's modulus is (not a secret)
        public_key = PlaintextPublicKey(key_size, scheme=scheme,
                                        identity=secrets.randbits(64))
        return public_key, PlaintextPrivateKey(public_key)
    check_key_size(key_size, stacklevel=3, scheme=scheme, warn=warn)
    if scheme == "ou":
        n, G, H, p, q, t, u = generate_ou_keys(int(key_size),
                                               ou_subgroup_bits(key_size))
        public_key = ou_public_key(n, G, H, ou_prime_bits(key_size))
        return public_key, OUPrivateKey(public_key, p, q, t)
    phe_public, phe_private = phe.generate_paillier_keypair(n_length=int(key_size))
    public_key = public_key_from_n(phe_public.n)
    return public_key, PaillierPrivateKey(public_key, phe_private.p, phe_private.q)


# One live PaillierPublicKey per modulus, so that arrays unpickled by a party
# share its key object (and its DJN table, 16 MB at 2048 bits). Weak values: a
# key is dropped, table included, once no array or party refers to it.
_public_keys = weakref.WeakValueDictionary()
_public_keys_lock = threading.Lock()


def public_key_from_n(n):
    """The :class:`PaillierPublicKey` of modulus ``n``, shared while alive."""
    n = int(n)
    with _public_keys_lock:
        key = _public_keys.get(n)
        if key is None:
            key = PaillierPublicKey(n)
            _public_keys[n] = key
        return key


class PaillierPublicKey(PublicKeyMixin):
    """Paillier public key working on numpy arrays.

    Parameters
    ----------
    n : int
        The public modulus.

    Attributes
    ----------
    n, nsquare : mpz
        ``n`` and ``n**2``.
    ciphertext_modulus : mpz
        ``n**2``: ciphertexts multiply modulo it.
    max_int : int
        Largest magnitude of an encoded integer, ``n // 3 - 1``; plaintexts in
        ``(max_int, n - max_int)`` are treated as overflow on decryption.
    plaintext_bits : int
        Packed plaintexts below ``2**plaintext_bits`` always fit: ``key_size - 3``.
    key_size : int
        Bit length of ``n``.
    ciphertext_bytes : int
        Serialised size of one ciphertext, ``ceil(bitlen(n**2) / 8)``.
    """

    scheme = "paillier"

    def __init__(self, n):
        self.n = gmpy2.mpz(n)
        self.nsquare = self.n * self.n
        self.ciphertext_modulus = self.nsquare
        self.max_int = int(self.n // 3 - 1)
        self.key_size = int(self.n.bit_length())
        self.plaintext_bits = self.key_size - 3
        self.ciphertext_bytes = (int(self.nsquare.bit_length()) + 7) // 8
        self._djn = None
        self._lock = threading.Lock()

    def __repr__(self):
        fingerprint = hex(hash(self) & 0xFFFFFFFF)
        return f"<PaillierPublicKey {self.key_size} bits {fingerprint}>"

    def __eq__(self, other):
        return isinstance(other, PaillierPublicKey) and self.n == other.n

    def __hash__(self):
        return hash(int(self.n))

    def __reduce__(self):
        # Only n travels; the receiver rebuilds (and caches) everything else.
        return (public_key_from_n, (int(self.n),))

    def __message_size__(self):
        """A public key travels as ``n``: one scalar, ``ceil(key_size / 8)`` bytes."""
        return (1, 0, (self.key_size + 7) // 8)

    @property
    def phe_public_key(self):
        """The same key as a :class:`phe.PaillierPublicKey`."""
        return phe.PaillierPublicKey(int(self.n))

    @property
    def djn(self):
        """The key's :class:`DJNObfuscator` (table built on first use)."""
        if self._djn is None:
            with self._lock:
                if self._djn is None:
                    self._djn = DJNObfuscator(self.n)
        return self._djn

    def raw_add_plain(self, ciphertexts, mantissas):
        """``E(a) * (1 + m n) mod n**2`` elementwise: adds plaintext mantissas."""
        return add_plain(ciphertexts, mantissas, self.n, self.nsquare)

    def _obfuscator_source(self, obfuscation):
        """Function ``count -> list of fresh obfuscators`` for ``obfuscation``.

        ``"djn"`` (or None): ``h_s**a`` with a short random ``a`` from a
        fixed-base table (DJN 2010), secure under DCR plus a short-exponent
        indistinguishability assumption; ~15x cheaper at 2048 bits.
        ``"standard"``: ``r**n`` with uniform ``r`` (Paillier 1999), secure
        under DCR alone.
        """
        if obfuscation in ("djn", None):
            djn = self.djn
            djn.table  # built here, once, rather than waited for by every worker
            return djn.obfuscators
        if obfuscation == "standard":
            return functools.partial(standard_obfuscators, self.n, self.nsquare)
        raise ValueError(
            f"obfuscation must be one of {OBFUSCATIONS}, got {obfuscation!r}."
        )

    def raw_encrypt(self, plaintexts, obfuscation="djn", n_jobs=None):
        """Encrypt integer plaintexts (signed Python ints, ``|m| <= max_int``).

        Parameters
        ----------
        plaintexts : ndarray of object
            Integers; negative ``m`` stands for ``n + m``.
        obfuscation : {"djn", "standard"}, default="djn"
            See :meth:`_obfuscator_source`.
        n_jobs : int or None
            Worker threads.

        Returns
        -------
        ciphertexts : ndarray of object
            ``(1 + m n) s mod n**2`` as mpz, same shape.
        """
        plaintexts = np.asarray(plaintexts, dtype=object)
        n, nsquare = self.n, self.nsquare
        source = self._obfuscator_source(obfuscation)

        def work(chunk):
            obfuscators = source(len(chunk))
            # (1 + m n) s = s + n (m s mod n)  (mod n**2): one product mod n
            # instead of one mod n**2.
            return [(s + n * (m * s % n)) % nsquare for m, s in zip(chunk, obfuscators)]

        # DJN: table products (short, keep the GIL); standard: one long powmod each.
        return object_array(
            parallel_map(work, plaintexts.ravel().tolist(), n_jobs,
                         release_gil=obfuscation == "standard"),
            plaintexts.shape,
        )

    def encrypt(self, values, *, precision=None, obfuscation="djn", n_jobs=None):
        """Encrypt a numpy array of floats or integers.

        Parameters
        ----------
        values : array-like of float or int
            Values to encrypt (any shape). NaN and infinities are refused.
        precision : float or None, default=None
            Absolute precision of the fixed-point encoding (float input only):
            the shared exponent is ``floor(log2(precision))``. ``None`` keeps
            53 significant bits of the largest magnitude.
        obfuscation : {"djn", "standard"}, default="djn"
            See :meth:`_obfuscator_source`.
        n_jobs : int or None, default=None
            Worker threads; None means 1, -1 all cores.

        Returns
        -------
        encrypted : EncryptedArray

        Raises
        ------
        ValueError
            On NaN/inf, or values too large for the key at this precision
            (the message names the largest encodable magnitude).

        Notes
        -----
        Integer arrays are encoded exactly (exponent 0) and decrypt to int64.
        Float arrays share one exponent ``e``; each value is rounded to a
        multiple of ``2**e`` (absolute error <= ``2**(e-1)``; with
        ``precision=None`` this is <= ``max|x| * 2**-53``), and a homomorphic
        sum of ``k`` values has absolute error <= ``k * 2**(e-1)``, i.e.
        relative error <= ``k * 2**-53`` of ``max|x|`` by default.

        The exponent is sent with the ciphertexts. With ``precision=None`` it
        is chosen from the data and so reveals the order of magnitude of
        ``max|x|`` (as python-paillier's per-number exponents do); protocol
        code that must hide it passes a fixed ``precision``.
        """
        return encrypt_array(
            self, lambda m: self.raw_encrypt(m, obfuscation, n_jobs), values, precision)

    def encrypt_packed(self, values, encoder, *, obfuscation="djn", n_jobs=None):
        """Encrypt ``values[..., j]`` packed into the slots of one plaintext.

        Parameters
        ----------
        values : array-like of float, shape (..., encoder.n_slots)
            Values within the encoder's bounds.
        encoder : PackedEncoder
            Slot layout (bounds, ``max_summands``, precision).
        obfuscation : {"djn", "standard"}, default="djn"
            See :meth:`_obfuscator_source`.
        n_jobs : int or None, default=None
            Worker threads.

        Returns
        -------
        encrypted : EncryptedArray, shape ``values.shape[:-1]``
            A packed array: it tracks the number of summands of each element
            so that :meth:`PaillierPrivateKey.decrypt` can remove the offsets
            and return shape ``(..., n_slots)``.
        """
        return encrypt_packed_array(
            self, lambda m: self.raw_encrypt(m, obfuscation, n_jobs), values, encoder)


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
