"""Kernel k-means' DSPGD user functions at scale, in small: their peak
arrays (the sizes themselves are in benchmarks/bench_scale.py)."""

import tracemalloc
from types import SimpleNamespace

import numpy as np

from skfed.cluster import _dspgd


def test_kernel_kmeans_w_is_built_in_place(monkeypatch):
    rng = np.random.RandomState(0)
    n, D, r = 4000, 100, 6
    state = SimpleNamespace(X=rng.normal(size=(n, 5)), B=rng.normal(size=(n, r)),
                            n_random_features=D, gamma=0.2,
                            users_key=b"k" * 32)
    eta = 0.25
    tracemalloc.start()
    _dspgd.user_form_w(state, 3, eta)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    W = state.W
    assert W.shape == (n, D + r)
    # W itself and one block of rows (about 2 million values), not copies
    # of the n x D features
    assert peak < W.nbytes + 9 * 2**21 + 2**20
    A = _dspgd.RandomFourierBasis(_dspgd.feature_seed(state.users_key, 3),
                                  gamma=0.2).transform(state.X, np.arange(D))
    np.testing.assert_allclose(W[:, :D], np.sqrt(eta / D) * A, rtol=1e-12,
                               atol=1e-14)
    np.testing.assert_allclose(W[:, D:], np.sqrt(1 - eta) * state.B)


def test_kernel_kmeans_out_of_sample_moment_by_blocks():
    rng = np.random.RandomState(1)
    n, width = 6000, 1000
    state = SimpleNamespace(X=rng.normal(size=(n, 4)), H=rng.normal(size=(n, 3)),
                            gamma=0.3, users_key=b"u" * 32)
    tracemalloc.start()
    total = _dspgd.user_oos_moment(state, width)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    # one block of features (2^21 values, and its finite check: a byte per
    # value), never the n x width matrix
    assert peak < 9 * 2**21 + 2**20 < 8 * n * width
    A = _dspgd.RandomFourierBasis(_dspgd.oos_seed(state.users_key),
                                  gamma=0.3).transform(state.X, np.arange(width))
    np.testing.assert_allclose(total, state.H.T @ A, rtol=1e-10, atol=1e-8)
