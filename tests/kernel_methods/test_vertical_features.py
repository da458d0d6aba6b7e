"""The shared vertical random features: masked two-tree sums, party keys,
the coefficient store and its ring encoding, sparse blocks."""

import numpy as np
import pytest
import scipy.sparse as sp

from skfed.federation import Federation, record_messages
from skfed.kernel_approximation import derive_party_key, keyed_directions
from skfed.kernel_methods import (
    AVFKAMRanker,
    FDSKLClassifier,
    FDSKLRegressor,
    _vertical_features,
)
from skfed.kernel_methods._vertical_features import (
    ANGLES,
    CoefficientStore,
    federated_decision,
    make_party_states,
    masked_features,
    party_name,
    reference_features,
    resolve_party_keys,
    ring_angles,
)
from skfed.partition import VerticalPartition


def _setup(q, n=12, d=7, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(n, d))
    y = rng.choice([-1.0, 1.0], size=n)
    part = VerticalPartition(q).resolve(X)
    keys = resolve_party_keys("random_state", [101 + k for k in range(q)])
    states = make_party_states(part, X, y, 5, keys, "rbf", 0.3)
    return X, y, part, keys, states


@pytest.mark.parametrize("q", [1, 2, 3, 4])
def test_masked_features_equal_the_reference_features(q):
    X, y, part, keys, states = _setup(q)
    names = [party_name(k) for k in range(q)]
    ids = np.arange(30, 45)
    rows = np.array([0, 3, 5, 11])
    with record_messages() as rec:
        with Federation(states) as fed:
            phi = masked_features(fed, names, "party0", rows, ids, 5).result()
    expected = reference_features(X[rows], part, keys, ids, "party0", 5, "rbf", 0.3)
    np.testing.assert_allclose(phi, expected, atol=1e-8)
    # Every masked-sum payload is a ring element (uint32 angles), none carries a
    # party's partial product or raw column.
    for m in rec.messages:
        if m.phase.endswith(("/T1", "/T2")):
            (payload,) = m.payload
            assert payload.dtype == np.uint32
        for k in range(q):
            cols = part.columns(k)
            own = X[rows][:, cols] @ keyed_directions(keys[k], len(cols), ids,
                                                      "rbf", 0.3)
            for item in m.payload:
                arr = np.asarray(item, dtype=float) if item is not None else None
                if arr is not None and arr.ndim == 2 and arr.shape == own.shape:
                    assert not np.allclose(arr, own)


def test_integer_seeds_and_keys_give_the_same_states():
    X, y, part, keys, _ = _setup(3)
    from_seeds = make_party_states(part, X, y, 5, [101, 102, 103], "rbf", 0.3)
    assert [s["key"] for s in from_seeds.values()] == keys
    assert keys[0] == derive_party_key(101, 0) and len(set(keys)) == 3
    assert resolve_party_keys("os", [1, 2]) == [None, None]
    with pytest.raises(ValueError, match="party_keys"):
        resolve_party_keys("seed", [1])


def test_os_keys_are_drawn_by_each_party_and_differ_between_runs():
    X, y, part, _, _ = _setup(3)
    names = [party_name(k) for k in range(3)]
    ids, rows = np.arange(10), np.arange(6)
    outs, keys = [], []
    for _ in range(2):
        states = make_party_states(part, X, y, 5, [None] * 3, "rbf", 0.3)
        with Federation(states) as fed:
            outs.append(masked_features(fed, names, "party0", rows, ids,
                                        5).result())
            keys.append(fed.gather(fed[p].call(lambda s: s.key) for p in names))
    assert all(isinstance(k, bytes) and len(k) == 32 for k in keys[0])
    assert keys[0] != keys[1]
    assert not np.allclose(outs[0], outs[1])
    np.testing.assert_allclose(
        outs[1], reference_features(X[rows], part, keys[1], ids, "party0", 5,
                                    "rbf", 0.3), atol=1e-8)


def test_masked_payloads_are_fresh_per_row_and_per_run():
    # The old masks were one offset per feature for every row: masked
    # values of two rows then differ by omega_G^T (x_i - x_k)_G. Ring masks
    # are fresh per entry, and per run, while the result does not change.
    X, y, part, keys, _ = _setup(3, n=40)
    names = [party_name(k) for k in range(3)]
    ids = np.arange(8)
    runs = []
    for _ in range(2):
        states = make_party_states(part, X, y, 5, keys, "rbf", 0.3)
        with record_messages() as rec:
            with Federation(states) as fed:
                phi = masked_features(fed, names, "party0", None, ids, 5).result()
        runs.append((phi, [m.payload[0] for m in rec.messages
                           if m.phase.endswith("/T1")]))
    np.testing.assert_array_equal(runs[0][0], runs[1][0])
    for a, b in zip(runs[0][1], runs[1][1]):
        assert not np.any(a == b)
    # The row differences of a masked column are spread over the whole ring
    # (a constant offset would make them the small unmasked differences).
    first = runs[0][1][0].astype(np.float64) / 2.0**32
    spread = np.abs(np.diff(first, axis=0))
    assert np.median(spread) > 0.1


def test_coefficient_store_decay_is_lazy_and_exact():
    store = CoefficientStore(n_outputs=2)
    store.add([1, 2], [[1.0, 2.0], [3.0, 4.0]])
    store.decay(0.5)
    store.add([3], [[10.0, 10.0]])
    store.decay(0.1)
    np.testing.assert_allclose(store.coef, [[0.05, 0.1], [0.15, 0.2], [1.0, 1.0]])
    for _ in range(400):
        store.decay(0.1)
    assert np.all(np.isfinite(store.coef))


def test_federated_decision_is_the_sum_of_local_models():
    X, y, part, keys, _ = _setup(3, n=9)
    names = [party_name(k) for k in range(3)]
    stores = [CoefficientStore(1) for _ in range(3)]
    stores[0].add(np.arange(0, 20), np.linspace(-1, 1, 20))
    stores[2].add(np.arange(20, 26), np.linspace(2, 3, 6))
    states = make_party_states(part, X, None, 5, keys, "rbf", 0.3, stores=stores)
    with Federation(states) as fed:
        f = federated_decision(fed, names, "party0", len(X), 1, 5)
    expected = (reference_features(X, part, keys, np.arange(20), "party0", 5,
                                   "rbf", 0.3) @ stores[0].coef
                + reference_features(X, part, keys, np.arange(20, 26), "party2",
                                     5, "rbf", 0.3) @ stores[2].coef)
    np.testing.assert_allclose(f, expected, atol=1e-8)


# The fast ring encoding of angles and the raw units of the coefficient store.

def _ring_distance(a, b):
    d = (a.astype(np.int64) - b.astype(np.int64)) % 2**32
    return np.minimum(d, 2**32 - d)


def test_ring_angles_match_the_encoder_within_one_unit():
    rng = np.random.RandomState(0)
    values = np.concatenate([rng.normal(scale=30, size=100_000),
                             [0.0, -0.0, np.pi, -np.pi, 2 * np.pi, -1e-12, 1e6]])
    fast = ring_angles(values)
    assert fast.dtype == np.uint32
    assert _ring_distance(fast, ANGLES.encode(values)).max() <= 1
    # sums of encodings decode to sums of angles (what the masked sum needs)
    a, b = values[:1000], values[1000:2000]
    with np.errstate(over="ignore"):
        total = ring_angles(a) + ring_angles(b)
    np.testing.assert_allclose(np.cos(ANGLES.decode(total)), np.cos(a + b),
                               atol=1e-8)


def test_ring_angles_fall_back_for_huge_angles_and_refuse_non_finite():
    huge = np.array([3e18, -7e17, 1.0])
    np.testing.assert_array_equal(ring_angles(huge), ANGLES.encode(huge))
    with pytest.raises(ValueError, match="non-finite"):
        ring_angles(np.array([1.0, np.inf]))
    assert ring_angles(np.empty(0)).shape == (0,)


def test_store_reports_its_fold_so_raw_sums_can_follow():
    store = CoefficientStore(n_outputs=1)
    store.add([0, 1], [[1.0], [2.0]])
    phi = np.array([[0.5, -1.0]])
    saved = phi @ store.raw_coef           # a sum kept in raw units
    folds = 1.0
    for _ in range(400):
        folds *= store.decay(0.3)
    assert folds != 1.0                   # the scale was folded in at least once
    np.testing.assert_allclose(store.raw_coef * store.scale, store.coef)
    # the saved sum times the folds and the running scale is f(x) now
    np.testing.assert_allclose(saved * folds * store.scale, phi @ store.coef,
                               rtol=1e-12)


# Sparse input (CSR/CSC) for FDSKL and AVFKAM: each party holds its column
# block as a CSR matrix and the model equals the dense fit's.

def _sparse_data(n=120, d=8, density=0.3, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(n, d)) * (rng.rand(n, d) < density)
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    return X, y


ESTIMATORS = [
    lambda: FDSKLClassifier(partition=3, max_iter=20, batch_size=16,
                            random_state=0),
    lambda: FDSKLRegressor(partition=2, max_iter=20, batch_size=16,
                           random_state=0),
    lambda: AVFKAMRanker(partition=3, max_iter=50, n_random_features=50,
                         batch_size=16, features_per_step=8, random_state=0),
]


@pytest.mark.parametrize("make", ESTIMATORS)
@pytest.mark.parametrize("fmt", ["csr", "csc"])
def test_sparse_fit_equals_the_dense_fit(make, fmt, monkeypatch):
    X, y = _sparse_data()
    blocks = []
    column_block = _vertical_features._column_block

    def spy(X, columns):
        out = column_block(X, columns)
        blocks.append(out)
        return out

    monkeypatch.setattr(_vertical_features, "_column_block", spy)
    dense = make().fit(X, y)
    n_dense = len(blocks)
    Xs = sp.csr_matrix(X) if fmt == "csr" else sp.csc_matrix(X)
    sparse = make().fit(Xs, y)
    # Every party got its block as a CSR matrix (not densified).
    assert blocks[n_dense:] and all(sp.issparse(b) and b.format == "csr"
                                    for b in blocks[n_dense:])
    score = "predict" if isinstance(dense, FDSKLRegressor) else "decision_function"
    expected = getattr(dense, score)(X)
    # The masked sums add angles in Z_{2^32}; a sparse product only
    # reassociates the same sums.
    np.testing.assert_allclose(getattr(sparse, score)(Xs), expected,
                               rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(getattr(sparse, score)(X), expected,
                               rtol=1e-6, atol=1e-7)
    assert sparse.gamma_ == pytest.approx(dense.gamma_, rel=1e-12)
