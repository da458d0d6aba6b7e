"""HyFDCAClassifier on sparse input: every client holds its block as CSR
and computes with sparse products (nothing densified), and the model equals
the dense fit's."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_breast_cancer
from sklearn.preprocessing import StandardScaler

from skfed.linear_model import HyFDCAClassifier
from skfed.linear_model import _protocol
from skfed.partition import (HorizontalPartition, HybridPartition,
                             VerticalPartition)

#: sparse and dense products add in different orders; the duals follow
TOL = 1e-7


def _sparse_data():
    """Breast cancer, standardised, small entries set to 0 (~60% zeros)."""
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)[::4]
    X[np.abs(X) < 0.8] = 0.0
    return X, y[::4]


def _assert_same_model(a, b, X):
    scale = np.max(np.abs(a.coef_))
    np.testing.assert_allclose(a.coef_, b.coef_, atol=TOL * scale)
    np.testing.assert_allclose(a.intercept_, b.intercept_, atol=TOL * scale)
    np.testing.assert_array_equal(a.predict(X), b.predict(X))
    np.testing.assert_allclose(a.decision_function(X), b.decision_function(X),
                               atol=TOL * scale * 10)


@pytest.mark.parametrize("partition, container", [
    (HybridPartition(2, 2), sp.csr_matrix),
    (HybridPartition(2, 2), sp.csc_matrix),
    (HybridPartition(2, 2), sp.coo_array),
    (VerticalPartition(3), sp.csr_matrix),
    (HorizontalPartition(3), sp.csc_matrix)],
    ids=["hybrid-csr", "hybrid-csc", "hybrid-coo", "vertical-csr",
         "horizontal-csc"])
def test_sparse_fit_equals_the_dense_fit(partition, container):
    X, y = _sparse_data()
    params = dict(partition=partition, encryption=None, max_iter=25, tol=None,
                  random_state=0)
    dense = HyFDCAClassifier(**params).fit(X, y)
    sparse = HyFDCAClassifier(**params).fit(container(X), y)
    _assert_same_model(sparse, dense, X)
    assert sparse.n_iter_ == dense.n_iter_


def test_encrypted_weighted_sparse_fit_equals_the_dense_fit():
    X, y = _sparse_data()
    s = np.random.RandomState(0).uniform(0.0, 2.0, size=len(y))
    params = dict(partition=HybridPartition(2, 2), key_size=512, max_iter=6,
                  tol=None, random_state=0)
    dense = HyFDCAClassifier(**params).fit(X, y, sample_weight=s)
    sparse = HyFDCAClassifier(**params).fit(sp.csr_matrix(X), y,
                                            sample_weight=s)
    _assert_same_model(sparse, dense, X)


@pytest.mark.parametrize("partition", [HybridPartition(2, 2),
                                       HorizontalPartition(2)],
                         ids=["hybrid", "horizontal"])
def test_clients_hold_csr_blocks_and_nothing_is_densified(monkeypatch,
                                                          partition):
    X, y = _sparse_data()
    blocks = []
    make_state = _protocol.client_state

    def recording(X_k, *args, **kwargs):
        blocks.append(X_k)
        return make_state(X_k, *args, **kwargs)

    def refuse(self, *args, **kwargs):
        raise AssertionError("a sparse matrix was densified during fit")

    monkeypatch.setattr(_protocol, "client_state", recording)
    for cls in (sp.csr_matrix, sp.csc_matrix, sp.coo_matrix, sp.csr_array,
                sp.csc_array):
        monkeypatch.setattr(cls, "toarray", refuse)
        monkeypatch.setattr(cls, "todense", refuse)
    clf = HyFDCAClassifier(partition, encryption=None, max_iter=5, tol=None,
                           random_state=0).fit(sp.csc_matrix(X), y)
    assert len(blocks) == clf.partition_.n_clients
    assert all(sp.issparse(b) and b.format == "csr" for b in blocks)
    # the intercept column travels with column group 0 as a stored column
    assert sum(b.nnz for b in blocks) == np.count_nonzero(X) + len(y)


def test_sparse_input_is_declared_in_the_tags():
    assert HyFDCAClassifier().__sklearn_tags__().input_tags.sparse
