import numpy as np
import pytest

from skfed.federation import Federation, record_messages
from skfed.kernel_approximation import random_offsets, spectral_directions
from skfed.kernel_methods._vertical_features import (
    CoefficientStore,
    excluded_parties,
    federated_decision,
    make_party_states,
    masked_features,
    party_name,
)
from skfed.partition import VerticalPartition


def _setup(q, n=12, d=7, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(n, d))
    y = rng.choice([-1.0, 1.0], size=n)
    part = VerticalPartition(q).resolve(X)
    offset_seeds = [101 + k for k in range(q)]
    states = make_party_states(part, X, y, 5, offset_seeds, "rbf", 0.3)
    return X, y, part, offset_seeds, states


def _central_features(X, ids, names, receiver, offset_seeds):
    z = X @ spectral_directions(5, range(X.shape[1]), ids, "rbf", 0.3)
    if len(names) > 1:
        excl = excluded_parties(5, ids, receiver, names)
        b = np.array([random_offsets(offset_seeds[names.index(e)], [j])[0]
                      for e, j in zip(excl, ids)])
    else:
        b = random_offsets(offset_seeds[0], ids)
    return np.sqrt(2) * np.cos(z + b)


@pytest.mark.parametrize("q", [1, 2, 3, 4])
def test_masked_features_equal_the_central_features(q):
    X, y, part, seeds, states = _setup(q)
    names = [party_name(k) for k in range(q)]
    ids = np.arange(30, 45)
    rows = np.array([0, 3, 5, 11])
    with record_messages() as rec:
        with Federation(states) as fed:
            phi = masked_features(fed, names, "party0", rows, ids, 5).result()
    expected = _central_features(X[rows], ids, names, "party0", seeds)
    np.testing.assert_allclose(phi, expected, atol=1e-10)
    # no message carries a party's unmasked partial product
    for m in rec.messages:
        for k in range(q):
            cols = part.columns(k)
            own = X[rows][:, cols] @ spectral_directions(5, cols, ids, "rbf", 0.3)
            for item in m.payload:
                arr = np.asarray(item)
                if arr.shape[-1:] == (len(ids),) and arr.ndim == 2:
                    assert not np.allclose(arr, own)
                if arr.ndim == 2 and arr.shape[1] == cols.size:
                    assert not np.allclose(arr, X[rows][:, cols])


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
    X, y, part, seeds, _ = _setup(3, n=9)
    names = [party_name(k) for k in range(3)]
    stores = [CoefficientStore(1) for _ in range(3)]
    stores[0].add(np.arange(0, 20), np.linspace(-1, 1, 20))
    stores[2].add(np.arange(20, 26), np.linspace(2, 3, 6))
    states = make_party_states(part, X, None, 5, seeds, "rbf", 0.3, stores=stores)
    with Federation(states) as fed:
        f = federated_decision(fed, names, "party0", len(X), 1, 5)
    expected = (_central_features(X, np.arange(20), names, "party0", seeds)
                @ stores[0].coef
                + _central_features(X, np.arange(20, 26), names, "party2", seeds)
                @ stores[2].coef)
    np.testing.assert_allclose(f, expected, atol=1e-10)
