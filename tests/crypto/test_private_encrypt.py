"""Key-owner (CRT) encryption: same ciphertexts' distribution, normal decryption."""

import pickle
import secrets

import gmpy2
import numpy as np
import pytest

from skfed.crypto import PackedEncoder, generate_keypair, paillier
from skfed.crypto._obfuscation import CRTDJNObfuscator
from skfed.crypto._parallel import fork_map, parallel_map


@pytest.fixture(autouse=True)
def fork_small_batches(monkeypatch):
    # Test keys are small: fork from 100 values per process, as at 2048 bits.
    monkeypatch.setattr(paillier, "_MIN_ITEMS_PER_PROCESS_2048", 100 // 16)


def _public_table_obfuscator(djn, raw):
    # What the public path's table computes for the exponent bytes ``raw``.
    table = djn.table
    acc = table[0][raw[0]]
    for row, d in zip(table[1:], raw[1:]):
        acc = acc * row[d] % djn.nsquare
    return acc


@pytest.mark.parametrize("window_bits", [5, 8, 10])
def test_obfuscators_are_h_s_to_the_drawn_exponent(keypair, window_bits):
    public_key, private_key = keypair
    djn = public_key.djn
    crt = CRTDJNObfuscator(djn, private_key.p, private_key.q, window_bits)
    # Same base and same exponent length as the public key's DJN obfuscator.
    assert crt.h_s == djn.h_s
    assert crt.exponent_bits == 8 * djn.exponent_bytes
    n_bytes = djn.exponent_bytes
    raw = secrets.token_bytes(6 * n_bytes)
    # Extreme exponents too: 0, all ones (every digit at its maximum).
    raw += bytes(n_bytes) + b"\xff" * n_bytes
    obfuscators = crt.obfuscators_from_bytes(raw)
    assert len(obfuscators) == 8
    for k, s in enumerate(obfuscators):
        chunk = raw[k * n_bytes:(k + 1) * n_bytes]
        a = int.from_bytes(chunk, "little")
        assert s == gmpy2.powmod(djn.h_s, a, djn.nsquare)
        # Exactly what the public path gives for the same random bytes.
        assert s == _public_table_obfuscator(djn, chunk)


def test_obfuscators_are_fresh(keypair):
    public_key, private_key = keypair
    obfuscators = private_key.raw_obfuscators(200)
    assert len({int(s) for s in obfuscators}) == 200
    assert all(gmpy2.gcd(s, public_key.n) == 1 for s in obfuscators)
    # Encryptions of 0 are the obfuscators: n-th residues, decrypting to 0,
    # all different.
    zeros = np.zeros(300, dtype=object)
    zeros[:] = [0] * 300
    c = private_key.raw_encrypt(zeros, n_jobs=2)  # two forked processes
    assert len({int(x) for x in c.tolist()}) == 300
    assert all(int(r) == 0 for r in private_key.raw_decrypt(c).tolist())
    twice = private_key.raw_encrypt(zeros)
    assert not set(map(int, c.tolist())) & set(map(int, twice.tolist()))


@pytest.mark.parametrize("n_jobs", [None, 2])
def test_raw_encrypt_decrypts_with_the_private_key(keypair, n_jobs):
    public_key, private_key = keypair
    n = int(public_key.n)
    m = np.empty((100, 3), dtype=object)
    values = [secrets.randbelow(2 * public_key.max_int) - public_key.max_int
              for _ in range(m.size)]
    m.ravel()[:] = values
    c = private_key.raw_encrypt(m, n_jobs=n_jobs)
    assert c.shape == m.shape
    residues = private_key.raw_decrypt(c)
    assert [int(r) for r in residues.ravel().tolist()] == [v % n for v in values]
    # Homomorphic with the public path's ciphertexts.
    d = public_key.raw_encrypt(m)
    total = private_key.raw_decrypt(c * d % public_key.nsquare)
    assert [int(r) for r in total.ravel().tolist()] == [2 * v % n for v in values]


def test_encrypt_and_encrypt_packed_match_public_path(keypair):
    public_key, private_key = keypair
    x = np.random.default_rng(0).normal(size=(5, 4))
    a = private_key.encrypt(x, n_jobs=2)
    b = public_key.encrypt(x)
    assert a.public_key == public_key and a.exponent == b.exponent
    np.testing.assert_array_equal(private_key.decrypt(a), private_key.decrypt(b))
    np.testing.assert_array_equal(private_key.decrypt(a + b),
                                  2 * private_key.decrypt(b))
    k = np.arange(-3, 4)
    np.testing.assert_array_equal(private_key.decrypt(private_key.encrypt(k)), k)

    encoder = PackedEncoder(bounds=[1.0, 0.5], max_summands=8)
    pairs = np.array([[0.5, 0.25], [-1.0, 0.125], [0.75, -0.5]])
    packed = private_key.encrypt_packed(pairs, encoder)
    np.testing.assert_allclose(private_key.decrypt(packed), pairs, atol=1e-9)
    np.testing.assert_allclose(private_key.decrypt(packed.sum()), pairs.sum(axis=0),
                               atol=1e-9)


def test_private_key_pickles_after_use(keypair):
    public_key, private_key = keypair
    private_key.raw_obfuscators(2)
    clone = pickle.loads(pickle.dumps(private_key))
    assert clone.p == private_key.p and clone.public_key == public_key
    c = clone.encrypt(np.array([1.5, -2.0]))
    np.testing.assert_array_equal(private_key.decrypt(c), [1.5, -2.0])


def test_plaintext_private_key_encrypts_like_its_public_key():
    public_key, private_key = generate_keypair(512, plaintext=True)
    x = np.array([[1.5, -2.0], [0.25, 3.0]])
    a, b = private_key.encrypt(x), public_key.encrypt(x)
    np.testing.assert_array_equal(a.values, b.values)
    np.testing.assert_array_equal(private_key.decrypt(a + b), 2 * x)
    encoder = PackedEncoder(bounds=[4.0, 4.0], max_summands=4)
    packed = private_key.encrypt_packed(x, encoder)
    np.testing.assert_array_equal(private_key.decrypt(packed.sum()), x.sum(axis=0))


def test_fork_map_matches_parallel_map():
    items = list(range(100))

    def square(chunk):
        return [i * i for i in chunk]

    expected = parallel_map(square, items, 1)
    assert fork_map(square, items, n_jobs=2, min_items_per_job=1) == expected
    assert fork_map(square, items, n_jobs=2) == expected
    assert fork_map(square, items[:3], n_jobs=2, min_items_per_job=1) == [0, 1, 4]


def test_encrypt_pairs_with_private_key_is_lossless(keypair):
    from skfed.ensemble._packing import GradientLayout

    public_key, private_key = keypair
    layout = GradientLayout(300, public_key.key_size)
    rng = np.random.default_rng(1)
    qg = rng.integers(-(2**20), 2**20, size=300)
    qh = rng.integers(0, 2**20, size=300)
    a = layout.encrypt_pairs(public_key, qg, qh, 2, private_key)
    b = layout.encrypt_pairs(public_key, qg, qh)
    np.testing.assert_array_equal(private_key.decrypt(a), private_key.decrypt(b))


def test_raw_encrypt_forks_workers(keypair, monkeypatch):
    from skfed.crypto import _parallel

    public_key, private_key = keypair
    calls = []
    real = _parallel.ProcessPoolExecutor

    def spy(*args, **kwargs):
        calls.append(kwargs.get("max_workers"))
        return real(*args, **kwargs)

    monkeypatch.setattr(_parallel, "ProcessPoolExecutor", spy)
    m = np.empty(300, dtype=object)
    m[:] = list(range(300))
    c = private_key.raw_encrypt(m, n_jobs=2)
    assert calls == [2]
    assert [int(r) for r in private_key.raw_decrypt(c).tolist()] == list(range(300))
