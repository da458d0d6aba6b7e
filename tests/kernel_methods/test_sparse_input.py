"""Sparse input (CSR/CSC) for FDSKL and AVFKAM: each party holds its column
block as a CSR matrix and the model equals the dense fit's."""

import numpy as np
import pytest
import scipy.sparse as sp

from skfed.kernel_methods import (
    AVFKAMRanker,
    FDSKLClassifier,
    FDSKLRegressor,
    _vertical_features,
)


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
