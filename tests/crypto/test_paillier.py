"""Encrypted arrays against numpy on the plaintexts."""

import pickle

import gmpy2
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from skfed.crypto import EncryptedArray, PackedEncoder, concatenate, generate_keypair


def _tolerance(encrypted, expected, n_summands=1):
    # Documented precision: each encoded value is within 2**(e-1), a sum of k
    # values within k * 2**(e-1); decoding to float64 adds a relative 2**-53.
    rounding = n_summands * 2.0 ** (encrypted.exponent - 1)
    return rounding + 2.0**-52 * np.abs(expected) + 1e-300


@settings(max_examples=25, deadline=None)
@given(
    hnp.arrays(
        np.float64,
        hnp.array_shapes(min_dims=1, max_dims=2, max_side=4),
        elements=st.floats(-1e15, 1e15, allow_nan=False, allow_subnormal=False),
    ),
    st.sampled_from([None, 1e-6]),
)
def test_float_round_trip(keypair, x, precision):
    public_key, private_key = keypair
    a = public_key.encrypt(x, precision=precision)
    assert a.shape == x.shape
    out = private_key.decrypt(a)
    assert out.dtype == np.float64
    assert np.all(np.abs(out - x) <= _tolerance(a, x))
    total = private_key.decrypt(a.sum())
    rounding = x.size * 2.0 ** (a.exponent - 1)
    assert abs(total - x.sum()) <= rounding + 1e-12 * np.abs(x).sum() + 1e-300


@settings(max_examples=15, deadline=None)
@given(hnp.arrays(np.int64, st.integers(1, 6), elements=st.integers(-(2**62), 2**62)))
def test_int_round_trip_exact(keypair, x):
    public_key, private_key = keypair
    a = public_key.encrypt(x)
    out = private_key.decrypt(a)
    assert out.dtype == np.int64
    np.testing.assert_array_equal(out, x)
    np.testing.assert_array_equal(private_key.decrypt(a * 2 - a), x)


def test_homomorphic_operations_match_numpy(keypair):
    public_key, private_key = keypair
    rng = np.random.default_rng(0)
    x = rng.normal(size=(3, 4)) * 100
    y = rng.normal(size=(3, 4))
    k = rng.integers(-5, 6, size=4)
    a, b = public_key.encrypt(x), public_key.encrypt(y)

    def check(encrypted, expected, rtol=1e-12):
        out = private_key.decrypt(encrypted)
        np.testing.assert_allclose(out, expected, rtol=rtol, atol=1e-9)

    check(a + b, x + y)
    check(a - b, x - y)
    check(-a, -x)
    check(a + y, x + y)
    check(y + a, x + y)
    check(a - 1.5, x - 1.5)
    check(2.0 - a, 2.0 - x)
    check(a * k, x * k)
    check(k * a, x * k)
    check(a * y, x * y)
    check(a * 0.25, x * 0.25)
    check(a / 4, x / 4)
    check(a.sum(), x.sum())
    check(a.sum(axis=0), x.sum(axis=0))
    check(a.sum(axis=1), x.sum(axis=1))
    check(a.reshape(-1), x.reshape(-1))
    assert (a * y).exponent < a.exponent  # multiplying by floats changes the exponent


def test_indexing_and_concatenate(keypair):
    public_key, private_key = keypair
    x = np.arange(12.0).reshape(6, 2) - 3.5
    a = public_key.encrypt(x)
    mask = x[:, 0] > 0
    index = np.array([5, 0, 0, 2])
    for key in (2, slice(1, 4), mask, index, (slice(None), 1), (3, 0)):
        np.testing.assert_array_equal(private_key.decrypt(a[key]), x[key])
    assert len(a) == 6 and a.shape == (6, 2) and a.public_key == public_key
    ints = public_key.encrypt(np.array([[1, 2]]))
    both = concatenate([a, ints])
    expected = np.concatenate([x, [[1, 2]]])
    np.testing.assert_array_equal(private_key.decrypt(both), expected)
    np.testing.assert_array_equal(
        private_key.decrypt(concatenate([a, a], axis=1)), np.concatenate([x, x], axis=1)
    )


@pytest.mark.parametrize("n_jobs", [None, 2])
def test_group_sum_matches_bincount(keypair, n_jobs):
    public_key, private_key = keypair
    rng = np.random.default_rng(1)
    n, n_features, n_groups = 200, 3, 7
    x = rng.normal(size=n)
    ids = rng.integers(-1, n_groups, size=(n, n_features))  # -1: skipped
    a = public_key.encrypt(x)

    hist = a.group_sum(ids, n_groups, n_jobs=n_jobs)
    assert hist.shape == (n_features, n_groups)
    expected = np.zeros((n_features, n_groups))
    for f in range(n_features):
        valid = ids[:, f] >= 0
        expected[f] = np.bincount(ids[valid, f], weights=x[valid], minlength=n_groups)
    np.testing.assert_allclose(private_key.decrypt(hist), expected, atol=1e-12)

    one = a.group_sum(ids[:, 0], n_groups, n_jobs=n_jobs)
    np.testing.assert_allclose(private_key.decrypt(one), expected[0], atol=1e-12)

    # Rows of a 2-D array grouped together (e.g. several classes at once).
    x2 = rng.normal(size=(n, 2))
    out = np.zeros((n_groups, 2))
    valid = ids[:, 1] >= 0
    np.add.at(out, ids[valid, 1], x2[valid])
    grouped = public_key.encrypt(x2).group_sum(ids[:, 1], n_groups, n_jobs=n_jobs)
    np.testing.assert_allclose(private_key.decrypt(grouped), out, atol=1e-12)


def test_rerandomize_and_fresh_obfuscation(keypair):
    public_key, private_key = keypair
    x = np.array([1.0, 1.0, -2.5, 0.0])
    a = public_key.encrypt(x)
    b = a.rerandomize()
    old, new = a.ciphertexts.tolist(), b.ciphertexts.tolist()
    assert all(c != d for c, d in zip(old, new))
    assert len(set(old)) == len(old)  # equal plaintexts, different ciphertexts
    np.testing.assert_array_equal(private_key.decrypt(b), x)
    again = public_key.encrypt(x)
    assert all(c != d for c, d in zip(old, again.ciphertexts.tolist()))


@pytest.mark.parametrize("obfuscation", ["djn", "standard"])
def test_obfuscations_decrypt(keypair, obfuscation):
    public_key, private_key = keypair
    x = np.linspace(-3, 3, 7)
    a = public_key.encrypt(x, obfuscation=obfuscation, n_jobs=2)
    np.testing.assert_allclose(private_key.decrypt(a, n_jobs=2), x)
    b = a.rerandomize(obfuscation=obfuscation)
    np.testing.assert_allclose(private_key.decrypt(b), x)
    with pytest.raises(ValueError, match="obfuscation"):
        public_key.encrypt(x, obfuscation="none")


def test_djn_table_is_fixed_base_powers(keypair):
    public_key, _ = keypair
    djn = public_key.djn
    nsquare = public_key.nsquare
    for i, d in [(0, 1), (0, 255), (3, 7), (djn.exponent_bytes - 1, 200)]:
        assert djn.table[i][d] == gmpy2.powmod(djn.h_s, d << (8 * i), nsquare)
    # An obfuscator is an n-th residue, i.e. a ciphertext of 0.
    _, private_key = keypair
    s = djn.obfuscators(1)[0]
    assert private_key.raw_decrypt(np.array([s], dtype=object))[0] == 0


def test_pickle_is_raw_integers(keypair):
    public_key, private_key = keypair
    x = np.arange(50.0)
    a = public_key.encrypt(x)
    n_scalars, n_ciphertexts, n_bytes = a.__message_size__()
    assert (n_scalars, n_ciphertexts) == (0, 50)
    assert n_bytes == 50 * public_key.ciphertext_bytes == 50 * 128
    data = pickle.dumps(a)
    assert n_bytes <= len(data) <= n_bytes + 500
    b = pickle.loads(data)
    assert b.public_key == public_key and b.exponent == a.exponent
    np.testing.assert_array_equal(private_key.decrypt(b + a), 2 * x)
    assert pickle.loads(pickle.dumps(public_key)) is public_key  # cached by n


def test_errors(keypair, other_keypair):
    public_key, private_key = keypair
    other_public, other_private = other_keypair
    a = public_key.encrypt(np.array([1.0, 2.0]))
    b = other_public.encrypt(np.array([1.0, 2.0]))
    with pytest.raises(ValueError, match="different public keys"):
        a + b
    with pytest.raises(ValueError, match="different public key"):
        other_private.decrypt(a)
    with pytest.raises(ValueError, match="largest magnitude encodable"):
        public_key.encrypt(np.array([1e150]), precision=1e-10)
    for bad in (np.nan, np.inf):
        with pytest.raises(ValueError, match="NaN or infinite"):
            public_key.encrypt(np.array([1.0, bad]))
    with pytest.raises(TypeError, match="multiply two ciphertexts"):
        a * a
    with pytest.raises(TypeError):
        public_key.encrypt(np.array(["a"]))
    # Operations that could leave the plaintext range fail at once...
    with pytest.raises(OverflowError, match="could overflow"):
        public_key.encrypt(np.array([3])) * (public_key.max_int // 2)
    with pytest.raises(OverflowError, match="could overflow"):
        public_key.encrypt(np.array([1e-150])) + public_key.encrypt(np.array([1e150]))
    # ...and a plaintext in the overflow gap is refused on decryption.
    gap = public_key.raw_encrypt(np.array([public_key.max_int + 5], dtype=object))
    with pytest.raises(OverflowError, match="overflowed"):
        private_key.decrypt(EncryptedArray(public_key, gap))
    with pytest.raises(ValueError, match="n_groups"):
        a.group_sum(np.array([0, 5]), 3)


def test_packed_operations(keypair):
    public_key, private_key = keypair
    rng = np.random.default_rng(2)
    n = 60
    g = rng.uniform(-1, 1, n)
    h = rng.uniform(0, 0.25, n)
    values = np.column_stack([g, h])
    encoder = PackedEncoder([1.0, 0.25], max_summands=n)
    packed = public_key.encrypt_packed(values, encoder)
    assert packed.shape == (n,) and isinstance(packed, EncryptedArray)
    tol = n * 2.0**-47
    np.testing.assert_allclose(private_key.decrypt(packed), values, atol=2.0**-48)
    total = private_key.decrypt(packed.sum())
    np.testing.assert_allclose(total, values.sum(0), atol=tol)

    ids = rng.integers(0, 4, size=(n, 3))
    hist = packed.group_sum(ids, 4)
    assert hist.shape == (3, 4)
    expected = np.zeros((3, 4, 2))
    for f in range(3):
        np.add.at(expected[f], ids[:, f], values)
    np.testing.assert_allclose(private_key.decrypt(hist), expected, atol=tol)

    # Histogram subtraction: parent minus left child gives the right child.
    left = ids[:, 0] < 2
    parent = packed.sum()
    right = parent - packed[left].sum()
    expected_right = values[~left].sum(0)
    np.testing.assert_allclose(private_key.decrypt(right), expected_right, atol=tol)
    with pytest.raises(ValueError, match="subset"):
        packed[left].sum() - parent

    both = concatenate([packed[:10], packed[10:]]) + packed
    doubled = private_key.decrypt(both.rerandomize())
    np.testing.assert_allclose(doubled, 2 * values, atol=tol)
    with pytest.raises(TypeError):
        packed + 1.0
    with pytest.raises(TypeError):
        packed * 0.5
    with pytest.raises(OverflowError, match="max_summands"):
        private_key.decrypt(packed * (n + 1))


def test_packed_million_summands(keypair):
    public_key, private_key = keypair
    # Worst-case values summed 10**6 times: emulated by multiplying by a
    # plaintext count (which also multiplies the tracked count), plus a real
    # addition on top.
    encoder = PackedEncoder([1.0, 0.25, 8.0], max_summands=10**6)
    values = np.array([[1.0, -0.25, 8.0], [-1.0, 0.25, -8.0]])
    packed = public_key.encrypt_packed(values, encoder)
    big = packed * np.array([10**6 - 1, 10**6 - 1]) + packed
    np.testing.assert_allclose(private_key.decrypt(big), 10**6 * values, rtol=1e-12)


def test_small_keys_refuse_too_many_slots():
    public_key, _ = generate_keypair(key_size=256)
    encoder = PackedEncoder(np.ones(4), max_summands=10**6)
    with pytest.raises(ValueError, match="do not fit"):
        public_key.encrypt_packed(np.zeros((1, 4)), encoder)


def test_n_jobs_values(keypair):
    from skfed.crypto._parallel import effective_n_jobs

    public_key, private_key = keypair
    assert effective_n_jobs(None) == 1
    assert effective_n_jobs(-1) >= 1
    with pytest.raises(ValueError, match="n_jobs"):
        effective_n_jobs(0)
    x = np.arange(40.0)
    a = public_key.encrypt(x, n_jobs=-1)
    np.testing.assert_array_equal(private_key.decrypt(a, n_jobs=-1), x)
    assert private_key.decrypt(a.sum(n_jobs=2)) == x.sum()


def test_exponents_do_not_depend_on_private_plaintexts(keypair):
    # The exponent travels in the clear with the ciphertexts: after an
    # operation with a party's private plaintext it must not reveal anything
    # about that plaintext's magnitude.
    public_key, private_key = keypair
    a = public_key.encrypt(np.array([1.0, -2.0]), precision=2.0**-30)
    factors = (np.array([1e-9, 3.0]), np.array([0.5, 0.25]), np.array([1e6, -7.0]))
    assert {(a * k).exponent for k in factors} == {a.exponent - 53}
    added = {(a + k).exponent for k in (np.array([1e-9, 3.0]), np.array([0.5, 8.0]))}
    assert added == {min(a.exponent, -53)}
    np.testing.assert_allclose(
        private_key.decrypt(a * np.array([1e-9, 3.0]) + 1e6), [1e6 + 1e-9, 1e6 - 6.0]
    )


def test_magnitude_bound_stays_local(keypair):
    public_key, _ = keypair
    a = public_key.encrypt(np.array([3.0, 5.0]), precision=1.0)
    assert a.mantissa_bound == 5
    assert a.rerandomize().mantissa_bound is None
    assert pickle.loads(pickle.dumps(a)).mantissa_bound is None


def test_concurrent_parties_share_a_key():
    # Two party threads encrypting with a fresh key race for its DJN table.
    from concurrent.futures import ThreadPoolExecutor

    public_key, private_key = generate_keypair(key_size=256)
    x = np.arange(30.0)
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda _: public_key.encrypt(x, n_jobs=2), range(4)))
    for encrypted in results:
        np.testing.assert_array_equal(private_key.decrypt(encrypted), x)
