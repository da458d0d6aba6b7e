"""HyFDCAClassifier(solver="paper"): Algorithm 1 as published.

Convergence to liblinear's optimum at the paper's setting (issue 30's
acceptance), section 4.3's cyclic vertical participation, encryption that
does not change the model, the theorems' steps and divergence (the
contract of its phases is tested in ``test_contract.py``).
"""

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, make_classification
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC

from skfed.exceptions import DivergenceError
from skfed.linear_model import HyFDCAClassifier
from skfed.linear_model._paper import (ColumnCycle, paper_local_iterations,
                                      paper_steps)
from skfed.partition import HybridPartition, VerticalPartition

LAM = 1e-2


def _breast_cancer():
    X, y = load_breast_cancer(return_X_y=True)
    return StandardScaler().fit_transform(X), y


def _relative_gap(X, y, coef):
    """(P(w) - P*) / P* of the hinge objective, P* from liblinear."""
    signs = np.where(y == 1, 1.0, -1.0)
    svc = LinearSVC(loss="hinge", C=1.0 / (LAM * len(y)), fit_intercept=False,
                    tol=1e-10, max_iter=1_000_000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        svc.fit(X, signs)

    def primal(w):
        return 0.5 * LAM * w @ w + np.maximum(0, 1 - signs * (X @ w)).mean()
    star = primal(svc.coef_.ravel())
    return (primal(np.ravel(coef)) - star) / star


PAPER = dict(solver="paper", local_iterations=13, alpha=LAM, max_iter=200,
             encryption=None, fit_intercept=False, random_state=0)


# -- acceptance (issue 30) ------------------------------------------------------

@pytest.mark.parametrize("partition", [None, HybridPartition(3, 2)],
                         ids=["default-2x2", "hybrid-3x2"])
def test_paper_solver_reaches_liblinear(partition):
    X, y = _breast_cancer()
    est = HyFDCAClassifier(partition, **PAPER).fit(X, y)
    assert _relative_gap(X, y, est.coef_) <= 5e-2
    assert est.n_iter_ == 200
    assert np.all(np.isnan(est.objective_curve_))  # the paper reports none


def test_cyclic_vertical_participation_reaches_liblinear():
    """Section 4.3: two sets of clients in turn, gamma_t = 1/t, one pass."""
    X, y = _breast_cancer()
    est = HyFDCAClassifier(
        VerticalPartition(4), solver="paper", participation=0.5,
        schedule="cyclic", alpha=LAM, max_iter=1000, encryption=None,
        fit_intercept=False, random_state=0).fit(X, y)
    assert _relative_gap(X, y, est.coef_) <= 1e-2


# -- the paper's steps and sets -------------------------------------------------

def test_theorem_steps():
    X = np.zeros((12, 4))
    vertical = HybridPartition(1, 2).resolve(X)
    gamma, c_k, rule = paper_steps("auto", vertical, 0.5, 12)
    assert rule == "Theorem 4.11"
    assert [gamma(t) for t in (1, 2, 4)] == [1.0, 0.5, 0.25]
    assert c_k(12) == 1.0
    gamma, c_k, rule = paper_steps("auto", HybridPartition(2, 2).resolve(X),
                                   1.0, 12)
    assert (rule, gamma(7), c_k(6)) == ("Theorem 4.4", 1.0, 0.5)
    gamma, c_k, rule = paper_steps(0.3, HybridPartition(3, 1).resolve(X),
                                   0.5, 12)
    assert (rule, gamma(9), c_k(4)) == ("Theorem 4.8", 0.3, 1.0)


def test_column_cycle_sets_take_turns():
    cycle = ColumnCycle(5, 0.4)  # ceil(1/0.4) = 3 sets
    assert cycle.sets == [[0, 1], [2, 3], [4]]
    assert [cycle(t) for t in (1, 2, 3, 4)] == [[0, 1], [2, 3], [4], [0, 1]]
    assert ColumnCycle(4, 0.9).sets == [[0, 1], [2, 3]]  # at least two sets


def test_absent_clients_weights_are_stale():
    """With sets [0] and [1] in turn, a round changes only the weights of
    the columns of the clients present (the others keep their stale
    values), and the first round leaves the absent client's weights at 0."""
    X, y = _breast_cancer()
    kw = dict(solver="paper", participation=0.5, schedule="cyclic",
              encryption=None, fit_intercept=False, random_state=0)
    one = HyFDCAClassifier(VerticalPartition(2), max_iter=1,
                           local_iterations=13, **kw).fit(X, y)
    cols = one.partition_.client_columns(1)
    assert np.all(one.coef_[0, cols] == 0)
    assert np.any(one.coef_[0] != 0)


# -- encryption, divergence, errors ------------------------------------------------

def test_encrypted_fit_equals_plaintext_fit():
    X, y = _breast_cancer()
    kw = dict(PAPER, max_iter=4)
    plain = HyFDCAClassifier(**kw).fit(X, y)
    enc = HyFDCAClassifier(**dict(kw, encryption="paillier", key_size=512))
    enc.fit(X, y)
    np.testing.assert_allclose(enc.coef_, plain.coef_, rtol=0, atol=1e-8)
    assert enc.crypto_time_ > 0


def test_one_pass_per_round_diverges_with_a_clear_error():
    """Issue 30: the literal loop with one pass per round overshoots."""
    X, y = _breast_cancer()
    est = HyFDCAClassifier(solver="paper", alpha=LAM, max_iter=40,
                           local_iterations=len(y),  # capped at one pass
                           encryption=None, fit_intercept=False,
                           random_state=0)
    with pytest.raises(DivergenceError, match="local_iterations"):
        est.fit(X, y)


def test_default_local_iterations():
    """``"auto"``: ceil(sqrt(n_k)) under a constant step, one pass under
    gamma_t = 1/t (Theorem 4.11); an int as given."""
    assert paper_local_iterations("auto", 284, "Theorem 4.4") == 17
    assert paper_local_iterations("auto", 1000, "Theorem 4.8") == 32
    assert paper_local_iterations("auto", 1, "Theorem 4.4") == 1
    assert paper_local_iterations("auto", 142, "Theorem 4.11") == 142
    assert paper_local_iterations(5, 142, "Theorem 4.11") == 5


@pytest.mark.parametrize("n_classes", [2, 3])
def test_paper_solver_defaults_converge(n_classes):
    """With the default ``local_iterations`` the paper's loop converges on
    standardised data (one pass diverged there, issue 30): LinearSVC's
    training accuracy, and for two classes a small primal gap."""
    X, y = make_classification(600, 12, n_informative=6, n_classes=n_classes,
                               random_state=0)
    X = StandardScaler().fit_transform(X)
    est = HyFDCAClassifier(solver="paper", alpha=LAM, max_iter=300,
                           encryption=None, fit_intercept=False,
                           random_state=0).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        svc = LinearSVC(loss="hinge", C=1.0 / (LAM * len(y)),
                        fit_intercept=False, max_iter=100_000).fit(X, y)
    assert est.score(X, y) >= svc.score(X, y) - 0.01
    if n_classes == 2:
        assert _relative_gap(X, y, est.coef_) < 1e-2


def test_cyclic_vertical_unsettled_fit_warns():
    """gamma_t = 1/t overshoots in its first rounds: a short fit warns
    (raise max_iter) instead of calling it a divergence."""
    X, y = _breast_cancer()
    est = HyFDCAClassifier(VerticalPartition(4), solver="paper",
                           participation=0.5, schedule="cyclic", max_iter=10,
                           alpha=LAM, encryption=None, fit_intercept=False,
                           random_state=0)
    with pytest.warns(ConvergenceWarning, match="raise max_iter"):
        est.fit(X, y)


def test_vertical_partial_participation_needs_the_paper_solver():
    X, y = _breast_cancer()
    with pytest.raises(ValueError, match="solver='paper'"):
        HyFDCAClassifier(VerticalPartition(2), participation=0.5,
                         encryption=None).fit(X, y)
    with pytest.raises(ValueError, match="schedule='cyclic'"):
        HyFDCAClassifier(VerticalPartition(2), participation=0.5,
                         solver="paper", encryption=None).fit(X, y)


def test_losses_and_multiclass():
    X, y = make_classification(240, 8, n_informative=5, n_classes=3,
                               random_state=0)
    X = StandardScaler().fit_transform(X)
    with pytest.raises(ValueError, match="Assumption 4.1"):
        HyFDCAClassifier(solver="paper", loss="squared_hinge",
                         encryption=None).fit(X, y)
    for loss in ("hinge", "logistic"):
        est = HyFDCAClassifier(solver="paper", loss=loss, local_iterations=20,
                               max_iter=100, encryption=None, random_state=0)
        assert est.fit(X, y).score(X, y) > 0.55  # chance: 1/3
        assert est.coef_.shape == (3, 8)



def test_paper_solver_reaches_the_weighted_optimum():
    """sample_weight with the paper's loop: the fit approaches the optimum
    of the weighted objective (LinearSVC with the same weights); an
    unweighted fit, which a solver ignoring the weights would give, is
    ten times further from it."""
    X, y = make_classification(600, 12, n_informative=6, random_state=0)
    X = StandardScaler().fit_transform(X)
    s = np.where(y == 1, 4.0, 1.0) * np.random.RandomState(1).uniform(
        0.5, 1.5, len(y))
    signs = np.where(y == 1, 1.0, -1.0)

    def primal(w):
        w = np.ravel(w)
        return (0.5 * LAM * w @ w
                + (s * np.maximum(0, 1 - signs * (X @ w))).sum() / s.sum())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        svc = LinearSVC(loss="hinge", C=1.0 / (LAM * s.sum()),
                        fit_intercept=False, tol=1e-10,
                        max_iter=1_000_000).fit(X, signs, sample_weight=s)
    star = primal(svc.coef_)
    params = dict(solver="paper", alpha=LAM, max_iter=300, encryption=None,
                  fit_intercept=False, random_state=0)
    weighted = HyFDCAClassifier(**params).fit(X, y, sample_weight=s)
    unweighted = HyFDCAClassifier(**params).fit(X, y)
    gap = (primal(weighted.coef_) - star) / star
    assert gap < 5e-3
    assert (primal(unweighted.coef_) - star) / star > 10 * gap
