"""DSPGD: the threshold lambda, the eigenvalue estimates and the stopping
rule."""

import tracemalloc
from types import SimpleNamespace

import numpy as np
import pytest
from sklearn.metrics.pairwise import rbf_kernel

from skfed.cluster import FederatedKernelKMeans
from skfed.cluster import _dspgd
from skfed.cluster._dspgd import CHANGE_WINDOW, feature_seed
from skfed.federation import record_messages
from skfed.kernel_approximation import RandomFourierBasis

from .conftest import users_key


def test_eigenvalues_approach_the_kernel_spectrum(blobs):
    X, _ = blobs
    km = FederatedKernelKMeans(4, max_iter=20, tol=None, random_state=0).fit(X)
    top = np.sort(np.linalg.eigvalsh(rbf_kernel(X, gamma=km.gamma_)))[::-1][:4]
    np.testing.assert_allclose(km.eigenvalues_, top, rtol=0.15)


def first_iteration_spectrum(X, estimator, n_users):
    """Eigenvalues of xi_1 = A_1 A_1^T / D, the first iteration's estimate."""
    D = estimator.n_random_features_
    seed = feature_seed(users_key(estimator.random_state, n_users), 1)
    A = RandomFourierBasis(seed, gamma=estimator.gamma_).transform(X, range(D))
    return np.sort(np.linalg.eigvalsh(A @ A.T / D))[::-1]


def test_lambda_is_the_k_plus_2_th_eigenvalue_of_the_first_iteration(blobs, fitted):
    # Blobs: the paper's (k+2)-th value lies below the cap of
    # threshold="auto", so both rules give it.
    X, _ = blobs
    xi_1 = first_iteration_spectrum(X, fitted, 3)
    assert fitted.threshold_ == pytest.approx(xi_1[4 + 1], rel=1e-6)
    paper = FederatedKernelKMeans(4, partition=3, random_state=0,
                                  threshold="paper", max_iter=1, tol=None)
    assert paper.fit(X).threshold_ == pytest.approx(xi_1[4 + 1], rel=1e-6)


@pytest.mark.parametrize("threshold", ["auto", "paper"])
def test_auto_threshold_stays_below_the_next_eigenvalue(circles, threshold):
    # Circles (gamma=5, seed 2): the first iteration's fourth eigenvalue is
    # above its third one times (1 - rho), so "auto" caps lambda there;
    # the first Lanczos run then converges every Ritz value above the cap
    # (appendix B), and Z_2 keeps exactly those pairs.
    X, _ = circles
    km = FederatedKernelKMeans(2, gamma=5.0, partition=2, random_state=2,
                               threshold=threshold, max_iter=1, tol=None
                               ).fit(X)
    xi_1 = first_iteration_spectrum(X, km, 2)
    rho = min(2 * np.sqrt(2 / km.n_random_features_), 0.5)
    expected = xi_1[3] if threshold == "paper" else (1 - rho) * xi_1[2]
    assert (1 - rho) * xi_1[2] < xi_1[3]  # the cap binds on this draw
    assert km.threshold_ == pytest.approx(expected, rel=1e-6)
    assert km.ranks_[0] == np.sum(xi_1 > km.threshold_ * (1 + 1e-9))
    np.testing.assert_allclose(km.eigenvalues_, xi_1[:2], rtol=1e-6)


def test_choose_lambda_by_hand():
    theta = np.array([10.0, 8.0, 7.5, 7.0, 6.0, 3.0])
    assert _dspgd.choose_lambda(theta, 4) == 7.0
    assert _dspgd.choose_lambda(theta, 4, 2, margin=0.2) == 0.8 * 7.5
    assert _dspgd.choose_lambda(theta, 4, 2, margin=0.05) == 7.0
    assert _dspgd.lambda_margin("paper", 100) == 0.0
    assert _dspgd.lambda_margin("auto", 200) == pytest.approx(0.2)
    assert _dspgd.lambda_margin("auto", 12) == 0.5


# -- convergence ----------------------------------------------------------------

def test_tol_stops_on_the_embedding_change(fitted):
    assert CHANGE_WINDOW < fitted.n_iter_ < fitted.max_iter
    changes = fitted.embedding_changes_
    assert len(changes) == fitted.n_iter_ - 1 and np.all(changes >= 0)
    assert changes[-CHANGE_WINDOW:].mean() < fitted.tol
    assert changes[-CHANGE_WINDOW - 1:-1].mean() >= fitted.tol


def test_tol_none_runs_max_iter_without_measuring(blobs):
    with record_messages() as rec:
        km = FederatedKernelKMeans(4, max_iter=5, tol=None, random_state=0
                                   ).fit(blobs[0])
    assert km.n_iter_ == 5 and len(km.embedding_changes_) == 0
    assert not any(m.phase.startswith("convergence") for m in rec.messages)


def test_nonfinite_eigenvalues_stop_the_fit(blobs, monkeypatch):
    def broken(state, threshold, n_keep):
        return np.full(n_keep, np.nan), np.zeros((1, n_keep))

    monkeypatch.setattr(_dspgd, "server_select_pairs", broken)
    with pytest.raises(ValueError, match="non-finite values at iteration 1.*gamma"):
        FederatedKernelKMeans(4, random_state=0).fit(blobs[0])


# -- memory: W is built in place -----------------------------------------------

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
