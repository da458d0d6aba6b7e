"""Okamoto-Uchiyama arrays: homomorphism, overflow, tampering, freshness, pickling."""

import pickle
import secrets
import time

import gmpy2
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import skfed
from skfed.crypto import (
    EncryptedArray,
    InsecureKeyWarning,
    OUPrivateKey,
    OUPublicKey,
    PackedEncoder,
    check_key_size,
    generate_keypair,
    plaintext_bits,
)
from skfed.crypto._ou import ou_subgroup_bits
from skfed.crypto._parallel import fork_available


@pytest.fixture(scope="module")
def ou():
    return generate_keypair(key_size=768, scheme="ou")


def test_key_structure(ou):
    public_key, private_key = ou
    assert isinstance(public_key, OUPublicKey) and isinstance(private_key, OUPrivateKey)
    p, q, t = private_key.p, private_key.q, private_key.t
    assert public_key.n == p * p * q and public_key.key_size == 768
    assert p.bit_length() == 256 == public_key.p_bits and gmpy2.is_prime(q)
    assert (p - 1) % t == 0 and t.bit_length() == ou_subgroup_bits(768) == 128
    # H**t = 1 modulo p**2, G**t has order p there: what decryption relies on.
    assert gmpy2.powmod(public_key.H, t, p * p) == 1
    gt = gmpy2.powmod(public_key.G, t, p * p)
    assert gt != 1 and gmpy2.powmod(gt, p, p * p) == 1
    # The public plaintext bound holds for the secret p.
    assert 2 * public_key.max_int < p
    assert public_key.plaintext_bits == plaintext_bits(768, "ou") == 253
    assert public_key.ciphertext_bytes == 96  # ciphertexts are key_size bits


int_arrays = arrays(np.int64, st.integers(1, 12),
                    elements=st.integers(-2**40, 2**40))


@settings(max_examples=20, deadline=None)
@given(a=int_arrays, k=st.integers(-1000, 1000), seed=st.integers(0, 2**32 - 1))
def test_homomorphism_matches_numpy(ou, a, k, seed):
    public_key, private_key = ou
    rng = np.random.default_rng(seed)
    b = rng.integers(-2**40, 2**40, a.size)
    plain = rng.integers(-50, 50, a.size)
    ea, eb = public_key.encrypt(a), private_key.encrypt(b)  # both paths
    for encrypted, expected in [
        (ea + eb, a + b), (ea - eb, a - b), (ea * k, a * k), (-ea, -a),
        (ea + plain, a + plain), (ea * plain, a * plain), (ea.sum(), a.sum()),
        (ea.rerandomize() + 3, a + 3),
    ]:
        np.testing.assert_array_equal(private_key.decrypt(encrypted), expected)
    ids = rng.integers(-1, 3, a.size)
    expected = np.zeros(3, np.int64)
    np.add.at(expected, ids[ids >= 0], a[ids >= 0])
    np.testing.assert_array_equal(private_key.decrypt(ea.group_sum(ids, 3)), expected)


@settings(max_examples=15, deadline=None)
@given(x=arrays(np.float64, st.integers(1, 10),
                elements=st.one_of(st.just(0.0), st.floats(1e-6, 1e6),
                                   st.floats(-1e6, -1e-6))))
def test_floats_round_trip_and_add(ou, x):
    public_key, private_key = ou
    # 53 bits of the largest magnitude are kept (as for Paillier).
    atol = np.max(np.abs(x)) * 2.0**-52
    np.testing.assert_allclose(private_key.decrypt(public_key.encrypt(x)), x,
                               rtol=0, atol=atol)
    np.testing.assert_allclose(private_key.decrypt(public_key.encrypt(x) * 0.5 - 1.25),
                               x * 0.5 - 1.25, rtol=0, atol=atol + 1e-15)


def test_packed_slots_and_overflow_refused(ou):
    public_key, private_key = ou
    encoder = PackedEncoder(bounds=[1.0, 0.25], max_summands=100)
    values = np.random.default_rng(0).uniform(-0.25, 0.25, (100, 2))
    packed = public_key.encrypt_packed(values, encoder)
    np.testing.assert_allclose(private_key.decrypt(packed.sum()), values.sum(axis=0),
                               atol=1e-9)
    # Slots come from the public bound on p (253 bits at 768), not from n.
    assert PackedEncoder.max_slots(768, 100, scheme="ou") == 253 // 56 == 4
    with pytest.raises(ValueError, match="do not fit in a plaintext of this key"):
        public_key.encrypt_packed(np.zeros((1, 5)), PackedEncoder([1.0] * 5, 100))
    private_key.decrypt(public_key.encrypt_packed(np.zeros((1, 4)),
                                                  PackedEncoder([1.0] * 4, 100)))
    # Unpacked: an operation that could leave [-max_int, max_int] is refused...
    half = public_key.max_int // 2 + 1
    big = EncryptedArray(public_key, public_key.raw_encrypt(np.array([half], object)),
                         is_integer=True, mantissa_bound=half)
    with pytest.raises(OverflowError, match="could overflow"):
        big + big
    # ... and once the bound is gone (it never travels), decryption refuses
    # a residue in the gap instead of returning a wrapped value.
    received = pickle.loads(pickle.dumps(big))
    with pytest.raises(OverflowError, match="overflowed"):
        private_key.decrypt(received * 4)
    with pytest.raises(ValueError, match="Values too large"):
        public_key.encrypt(np.array([2.0**300]), precision=1.0)


def test_tampered_ciphertexts_are_detected(ou):
    public_key, private_key = ou
    n, q = public_key.n, private_key.q
    encrypted = public_key.encrypt(np.arange(20))
    flipped = encrypted.ciphertexts.copy()
    flipped[3] = flipped[3] ^ (1 << 100)
    encrypted.ciphertexts = flipped
    with pytest.raises(ValueError, match="Not a valid Okamoto-Uchiyama ciphertext"):
        private_key.decrypt(encrypted)
    # Random numbers, 0, n and beyond, multiples of q: all refused.
    for bad in [secrets.randbelow(int(n)) for _ in range(20)] + [0, n, n + 5, 7 * q]:
        with pytest.raises(ValueError, match="Not a valid"):
            private_key.raw_decrypt(np.array([gmpy2.mpz(bad)], dtype=object))
    # Another key's ciphertext, relabelled as this key's.
    other_public, _ = generate_keypair(key_size=768, scheme="ou")
    foreign = other_public.encrypt(np.arange(5)).ciphertexts % n
    with pytest.raises(ValueError, match="Not a valid"):
        private_key.raw_decrypt(foreign)
    # What cannot be detected: a homomorphic change (malleability).
    c = public_key.encrypt(np.array([5]))
    shifted = c.ciphertexts * public_key.G % n
    assert private_key.raw_decrypt(shifted)[0] == 6


def _assert_fresh(ciphertexts, *earlier):
    """Every ciphertext differs from every other and from all earlier ones."""
    values = [int(c) for c in np.asarray(ciphertexts).ravel().tolist()]
    assert len(set(values)) == len(values), "a ciphertext repeats"
    for old in earlier:
        assert not set(values) & {int(c) for c in np.asarray(old).ravel().tolist()}


def _freshness_checks(public_key, private_key):
    zeros = np.zeros(300, dtype=object)
    zeros[:] = [0] * 300
    a = public_key.raw_encrypt(zeros)
    b = private_key.raw_encrypt(zeros, n_jobs=2)  # forked workers, if any
    _assert_fresh(a)
    _assert_fresh(b, a)
    x = public_key.encrypt(np.ones(50))
    _assert_fresh(x.rerandomize().ciphertexts, x.ciphertexts)
    _assert_fresh(public_key.raw_obfuscators(100) + private_key.raw_obfuscators(100))
    assert not any(private_key.raw_decrypt(b))  # encryptions of 0


@pytest.mark.parametrize("scheme", ["ou", "paillier"])
def test_no_randomness_reuse(ou, keypair, scheme):
    _freshness_checks(*(ou if scheme == "ou" else keypair))


@pytest.mark.parametrize("scheme", ["ou", "paillier"])
def test_planted_randomness_reuse_is_caught(ou, keypair, scheme, monkeypatch):
    """A mutation that repeats the random exponents fails the checks above.

    Every obfuscator of both schemes (public and key-owner paths) reads its
    exponent from ``secrets.token_bytes``; a constant one is the planted reuse.
    """
    monkeypatch.setattr(secrets, "token_bytes", lambda k: b"\x07" * k)
    with pytest.raises(AssertionError, match="repeats"):
        _freshness_checks(*(ou if scheme == "ou" else keypair))


def test_ciphertexts_are_g_to_the_m_times_h_to_the_r(ou):
    """The fixed-base tables compute exactly G**m and H**r modulo n."""
    public_key, _ = ou
    n, G, H = int(public_key.n), int(public_key.G), int(public_key.H)
    raw = secrets.token_bytes(3 * 32)
    exponents = [int.from_bytes(raw[32 * k:32 * (k + 1)], "little") for k in range(3)]
    assert public_key._h_table.powers_from_bytes(raw, 32) == [
        pow(H, r, n) for r in exponents]
    m = [5, -7, public_key.max_int, 0]
    assert public_key.raw_plain_powers(m) == [pow(G, v, n) for v in m]


@pytest.mark.skipif(not fork_available(), reason="needs fork")
def test_precomputed_obfuscators_are_used_once():
    public_key, private_key = generate_keypair(key_size=768, scheme="ou")
    n = int(public_key.n)
    assert private_key.precompute_obfuscators(100, min_count=0, nice=0, n_jobs=2)
    pool = private_key._pool
    deadline = time.monotonic() + 60
    while len(pool) < 100 and time.monotonic() < deadline:
        time.sleep(0.02)
    ready = [int(s) for s in pool._ready]
    assert len(ready) == 100
    plaintexts = np.arange(-60, 90, dtype=object)
    ciphertexts = private_key.raw_encrypt(plaintexts)
    assert len(pool) == 0
    assert [int(r) for r in private_key.raw_decrypt(ciphertexts)] == [
        int(m) % int(private_key.p) for m in plaintexts]
    used = [int(c) * pow(int(public_key.G), -int(m), n) % n
            for c, m in zip(ciphertexts, plaintexts)]
    assert used[:100] == ready and len(set(used)) == 150
    assert "_pool" not in pickle.loads(pickle.dumps(private_key)).__dict__
    private_key.stop_precomputing()


def test_pickling_and_message_size(ou):
    public_key, private_key = ou
    x = np.arange(40.0) - 7.5
    a = public_key.encrypt(x)
    assert a.__message_size__() == (0, 40, 40 * 96)
    data = pickle.dumps(a)
    assert 40 * 96 <= len(data) <= 40 * 96 + 700
    b = pickle.loads(data)
    assert b.public_key is public_key  # one live key per parameters
    np.testing.assert_array_equal(private_key.decrypt(a + b), 2 * x)
    assert public_key.__message_size__() == (4, 0, 3 * 96 + 8)
    clone = pickle.loads(pickle.dumps(private_key))
    np.testing.assert_array_equal(clone.decrypt(clone.encrypt(x)), x)
    assert OUPublicKey(public_key.n, public_key.G, public_key.H, 256) == public_key


def test_schemes_do_not_mix(ou, keypair):
    public_key, _ = ou
    paillier_public, paillier_private = keypair
    with pytest.raises(ValueError, match="different public keys"):
        public_key.encrypt(np.ones(2)) + paillier_public.encrypt(np.ones(2))
    with pytest.raises(ValueError, match="different public key"):
        paillier_private.decrypt(public_key.encrypt(np.ones(2)))
    with pytest.raises(ValueError, match="scheme must be one of"):
        generate_keypair(512, scheme="rsa")
    with pytest.raises(ValueError, match="obfuscation must be one of"):
        public_key.encrypt(np.ones(2), obfuscation="none")
    # "standard" (r uniform below n) decrypts too.
    _, private_key = ou
    x = np.arange(4)
    np.testing.assert_array_equal(
        private_key.decrypt(public_key.encrypt(x, obfuscation="standard")), x)


def test_ou_key_policy():
    with skfed.config_context(allow_insecure_keys=False):
        with pytest.raises(ValueError, match="512-bit Okamoto-Uchiyama modulus"):
            generate_keypair(512, scheme="ou")
        with pytest.warns(InsecureKeyWarning, match="1024-bit Okamoto-Uchiyama key"):
            assert check_key_size(1024, scheme="ou") == 1024
        assert check_key_size(2048, scheme="ou") == 2048


def test_plaintext_mode_checks_ou_capacity():
    """Plaintext keys of the OU scheme refuse what a real OU key would."""
    public_key, _ = generate_keypair(768, plaintext=True, scheme="ou")
    assert public_key.plaintext_bits == 253
    assert public_key.max_int == (1 << 255) // 3 - 1
    assert public_key != generate_keypair(768, plaintext=True)[0]
    with pytest.raises(ValueError, match="do not fit"):
        public_key.encrypt_packed(np.zeros((1, 5)), PackedEncoder([1.0] * 5, 100))


# -- the key owner's CRT path for long (packed) plaintexts ---------------------

@pytest.fixture(scope="module")
def ou1024():
    # p of 341 bits: plaintexts up to ~2**338, above CRT_MIN_BITS.
    return generate_keypair(key_size=1024, scheme="ou")


def test_crt_encryption_is_the_public_ciphertext(ou1024):
    """Modulo p**2 and q with reduced exponents: the same G**m H**r mod n."""
    from skfed.crypto._ou_crt import CRT_MIN_BITS

    public_key, private_key = ou1024
    assert public_key.max_int.bit_length() > CRT_MIN_BITS
    m = [0, 1, -1, public_key.max_int, -public_key.max_int] + [
        secrets.randbits(300) - (1 << 299) for _ in range(20)]
    raw = secrets.token_bytes(len(m) * 32)
    obfuscators = public_key._h_table.powers_from_bytes(raw, 32)
    assert private_key._crt().encrypt_from_bytes(m, raw) == (
        public_key._encrypt_chunk(m, obfuscators))


def _long(values):
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def test_long_plaintexts_take_the_crt_path(ou1024, monkeypatch):
    public_key, private_key = ou1024
    crt = private_key._crt()
    calls = []
    original = crt.encrypt
    monkeypatch.setattr(crt, "encrypt",
                        lambda chunk: calls.append(len(chunk)) or original(chunk))
    m = _long([(1 << 299) + k for k in range(20)]
              + [-(1 << 299) - k for k in range(20)])
    c = private_key.raw_encrypt(m)
    assert calls == [40]
    p = int(private_key.p)
    assert [int(r) for r in private_key.raw_decrypt(c)] == [int(v) % p for v in m]
    _assert_fresh(c)
    # Short plaintexts keep the public tables (as fast there).
    private_key.raw_encrypt(np.arange(-5, 5, dtype=object))
    assert calls == [40]
    # Packed arrays round-trip through it.
    encoder = PackedEncoder([1.0] * 6, max_summands=2, precision_bits=48)
    values = np.linspace(-1, 1, 24).reshape(4, 6)
    packed = private_key.encrypt_packed(values, encoder)
    assert calls == [40, 4]
    np.testing.assert_allclose(private_key.decrypt(packed + packed), 2 * values,
                               atol=1e-12)
    assert "_crt_encryptor" not in pickle.loads(pickle.dumps(private_key)).__dict__


def test_crt_path_randomness_is_fresh_and_planted_reuse_caught(ou1024,
                                                               monkeypatch):
    _, private_key = ou1024
    m = _long([1 << 299] * 200)
    _assert_fresh(private_key.raw_encrypt(m), private_key.raw_encrypt(m))
    monkeypatch.setattr(secrets, "token_bytes", lambda k: b"\x07" * k)
    with pytest.raises(AssertionError, match="repeats"):
        _assert_fresh(private_key.raw_encrypt(m))
