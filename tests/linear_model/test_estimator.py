"""HyFDCAClassifier (:mod:`skfed.linear_model._estimator`): convergence to
the centralised optimum with defaults, the step safeguard, encryption that
does not change the result, partitions and participation, the sklearn
plumbing, sample weights (the weighted objective's optimum against
liblinear and L-BFGS, integer weights as repeated rows, zero weights as
removed rows) and sparse input (the model equals the dense fit's). What
the parties send is tested in ``test_protocol.py``."""

import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize
from sklearn import config_context
from sklearn.datasets import load_breast_cancer, load_iris
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC
from sklearn.utils._param_validation import InvalidParameterError

from skfed.exceptions import DivergenceError
from skfed.federation import record_messages
from skfed.linear_model import HyFDCAClassifier
from skfed.linear_model._dual import loss_values
from skfed.partition import (HorizontalPartition, HybridPartition,
                             VerticalPartition)


# -- data and centralised references ---------------------------------------

def _breast_cancer():
    X, y = load_breast_cancer(return_X_y=True)
    return StandardScaler().fit_transform(X), y


def _small():
    X, y = _breast_cancer()
    return X[::4], y[::4]


def primal(w, X, y, lam, loss="hinge", b=0.0):
    signs = np.where(y == np.unique(y)[1], 1.0, -1.0)
    return 0.5 * lam * (w @ w + b * b) + loss_values(
        loss, signs * (X @ w + b)).mean()


def model_primal(clf, X, y, loss="hinge"):
    return primal(clf.coef_.ravel(), X, y, clf.alpha, loss,
                  float(clf.intercept_[0]))


def hinge_optimum(X, y, lam, fit_intercept=True):
    """P* of the hinge objective from liblinear at a tight tolerance (the
    intercept a regularised constant column, ``C = 1 / (lambda N)``)."""
    svc = LinearSVC(loss="hinge", C=1.0 / (lam * len(y)),
                    fit_intercept=fit_intercept, intercept_scaling=1.0,
                    tol=1e-10, max_iter=200_000).fit(X, y)
    return primal(svc.coef_.ravel(), X, y, lam,
                  b=float(svc.intercept_[0]) if fit_intercept else 0.0), svc


def smooth_optimum(X, y, lam, loss):
    """P* of a smooth loss (squared hinge, logistic) with a regularised
    intercept column, by L-BFGS on the primal."""
    Z = np.hstack([X, np.ones((len(X), 1))])
    signs = np.where(y == np.unique(y)[1], 1.0, -1.0)

    def f(w):
        m = signs * (Z @ w)
        if loss == "logistic":
            g = -signs / (1.0 + np.exp(m))
        else:
            g = -signs * np.maximum(0.0, 1.0 - m)
        return (0.5 * lam * w @ w + loss_values(loss, m).mean(),
                lam * w + Z.T @ g / len(y))

    res = minimize(f, np.zeros(Z.shape[1]), jac=True, method="L-BFGS-B",
                   options=dict(gtol=1e-12, ftol=1e-15, maxiter=10_000))
    return res.fun


# -- convergence with defaults --------------------------------------------------

def test_defaults_reach_the_centralised_optimum_without_warning():
    # Defaults: 2x2 grid, alpha=1e-2, one local pass, line search, tol=1e-3.
    X, y = _breast_cancer()
    p_star, svc = hinge_optimum(X, y, 1e-2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        clf = HyFDCAClassifier(encryption=None, random_state=0).fit(X, y)
    assert clf.n_iter_ < 300
    assert (model_primal(clf, X, y) - p_star) / p_star <= 1e-3
    # The server's certificate: P - D <= tol * D bounds the suboptimality.
    P, D = clf.objective_curve_[-1]
    assert 0 <= P - D <= 1e-3 * D and clf.duality_gap_ <= 1e-3
    assert np.mean(clf.predict(X) == svc.predict(X)) >= 0.99


@pytest.mark.parametrize("kwargs", [
    dict(partition=HybridPartition(3, 2)),
    dict(partition=HorizontalPartition(3)),
    dict(partition=VerticalPartition(3)),
    dict(partition=[[0, 1, 2, 3, 4], list(range(5, 30))]),
    dict(partition=HybridPartition(2, 2), local_iterations=40),
    dict(partition=HorizontalPartition(3), local_iterations=300),
])
def test_every_split_reaches_the_optimum(kwargs):
    X, y = _breast_cancer()
    p_star, _ = hinge_optimum(X, y, 1e-2, fit_intercept=False)
    clf = HyFDCAClassifier(fit_intercept=False, encryption=None,
                           random_state=0, **kwargs).fit(X, y)
    assert (model_primal(clf, X, y) - p_star) / p_star <= 1e-3


@pytest.mark.parametrize("partition, schedule", [
    (HybridPartition(2, 2), "random"), (HybridPartition(2, 2), "cyclic"),
    (HorizontalPartition(4), "random")])
def test_partial_participation_converges(partition, schedule):
    X, y = _breast_cancer()
    p_star, _ = hinge_optimum(X, y, 1e-2)
    clf = HyFDCAClassifier(partition, participation=0.5, schedule=schedule,
                           max_iter=3000, encryption=None,
                           random_state=0).fit(X, y)
    assert clf.n_iter_ < 3000
    assert (model_primal(clf, X, y) - p_star) / p_star <= 1e-3


@pytest.mark.parametrize("loss", ["squared_hinge", "logistic"])
def test_smooth_losses_reach_their_optimum(loss):
    X, y = _breast_cancer()
    p_star = smooth_optimum(X, y, 1e-2, loss)
    clf = HyFDCAClassifier(loss=loss, encryption=None,
                           random_state=0).fit(X, y)
    assert (model_primal(clf, X, y, loss) - p_star) / p_star <= 1e-3


def test_intercept_matches_liblinear_with_regularised_intercept():
    X, y = _breast_cancer()
    p_star, svc = hinge_optimum(X, y, 1e-2)
    clf = HyFDCAClassifier(tol=1e-5, encryption=None, random_state=0).fit(X, y)
    assert (model_primal(clf, X, y) - p_star) / p_star < 1e-5
    assert clf.intercept_[0] == pytest.approx(svc.intercept_[0], abs=0.02)


def test_multiclass_one_vs_rest():
    X, y = load_iris(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    lam = 0.05
    clf = HyFDCAClassifier(HybridPartition(2, 2, split="random", random_state=0),
                           alpha=lam, encryption=None, random_state=0).fit(X, y)
    assert clf.coef_.shape == (3, 4) and clf.intercept_.shape == (3,)
    for j in range(3):  # each task is the binary problem "class j vs rest"
        yj = (y == j).astype(int)
        p_star, _ = hinge_optimum(X, yj, lam)
        p = primal(clf.coef_[j], X, yj, lam, b=clf.intercept_[j])
        assert (p - p_star) / p_star < 2e-3
    assert clf.score(X, y) > 0.8


def test_tol_none_runs_max_iter_and_a_looser_tol_stops_sooner():
    X, y = _small()
    full = HyFDCAClassifier(max_iter=25, tol=None, encryption=None,
                            random_state=0).fit(X, y)
    assert full.n_iter_ == 25 and full.objective_curve_.shape == (25, 2)
    loose = HyFDCAClassifier(tol=1e-1, encryption=None, random_state=0).fit(X, y)
    tight = HyFDCAClassifier(tol=1e-4, encryption=None, random_state=0).fit(X, y)
    assert loose.n_iter_ < tight.n_iter_
    assert loose.duality_gap_ <= 1e-1 and tight.duality_gap_ <= 1e-4


def test_not_converging_warns_and_names_max_iter():
    X, y = _breast_cancer()
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        HyFDCAClassifier(max_iter=3, encryption=None, random_state=0).fit(X, y)


def test_the_dual_never_falls_with_the_line_search():
    X, y = _breast_cancer()
    clf = HyFDCAClassifier(alpha=1e-3, max_iter=60, tol=None, encryption=None,
                           random_state=0).fit(X, y)
    dual = clf.objective_curve_[:, 1]
    assert np.all(np.diff(dual) >= -1e-12)
    assert np.all(clf.objective_curve_[:, 0] >= dual - 1e-12)


def test_a_fixed_step_that_diverges_ends_in_a_clear_error():
    # The paper's constant step with every coordinate of every row moved at
    # once overshoots on correlated columns: an error naming step_size, and
    # a finite last good model; never NaN.
    X, y = _breast_cancer()
    clf = HyFDCAClassifier(step_size=1.0, encryption=None, random_state=0)
    with pytest.raises(DivergenceError, match="step_size") as info:
        clf.fit(X, y)
    assert isinstance(info.value, FloatingPointError)
    assert not hasattr(clf, "coef_")
    kept = info.value.estimator
    assert np.all(np.isfinite(kept.coef_))
    assert np.all(np.isfinite(kept.decision_function(X)))


def test_a_small_fixed_step_with_few_coordinates_still_works():
    # The paper's setting: gamma = 1 with a few coordinates per client.
    X, y = _small()
    clf = HyFDCAClassifier(step_size=1.0, local_iterations=2, max_iter=200,
                           tol=None, encryption=None, random_state=0).fit(X, y)
    assert clf.score(X, y) > 0.9


# -- encoding and encryption ------------------------------------------------------

# OU at 1024 bits packs 8 slots (336 bits): the key owner's CRT path.
@pytest.mark.parametrize("encryption, key_size", [
    ("paillier", 512), ("ou", 512), ("ou", 1024)])
@pytest.mark.parametrize("packing", [True, False])
@pytest.mark.parametrize("factor", [1.0, 1e8])
def test_encryption_does_not_change_the_result(packing, factor, encryption,
                                               key_size):
    # The fixed-point scale comes from the data: features multiplied by 1e8
    # are encoded as well as standardised ones.
    X, y = load_iris(return_X_y=True)
    X, y = factor * StandardScaler().fit_transform(X)[:60], y[:60]
    params = dict(partition=HybridPartition(2, 2, split="random", random_state=0),
                  max_iter=8, tol=None, random_state=0)
    plain = HyFDCAClassifier(encryption=None, packing=packing, **params).fit(X, y)
    secure = HyFDCAClassifier(packing=packing, encryption=encryption,
                              key_size=key_size, **params).fit(X, y)
    scale = np.max(np.abs(plain.coef_))
    np.testing.assert_allclose(secure.coef_, plain.coef_, atol=1e-8 * scale)
    np.testing.assert_allclose(secure.objective_curve_, plain.objective_curve_,
                               rtol=1e-8)
    assert secure.crypto_time_ > 0


def test_data_that_cannot_be_encoded_fails_before_any_party_starts():
    X, y = _small()
    with record_messages() as rec:
        with pytest.raises(ValueError, match="rescale the features"):
            HyFDCAClassifier(key_size=512).fit(1e200 * X, y)
    assert rec.messages == []


# -- participation ------------------------------------------------------------------


def test_partial_participation_on_a_vertical_split_needs_the_paper_solver():
    X, y = _small()
    with pytest.raises(ValueError,
                       match="participation=0.5 on a split with one row group.*"
                             "needs solver='paper'"):
        HyFDCAClassifier(VerticalPartition(2), participation=0.5,
                         encryption=None).fit(X, y)


# -- the values only the paper solver reads (issue 40) -----------------------------

@pytest.mark.parametrize("params, match", [
    (dict(step_size=2.0), "step_size=2.0 needs solver='paper'"),
    (dict(step_size="algorithm_5"), "'algorithm_5' needs solver='paper'"),
    (dict(dual_curvature="paper"), "dual_curvature='paper' needs solver"),
])
def test_paper_only_values_are_refused_by_the_accelerated_solver(params,
                                                                 match):
    X, y = _small()
    with record_messages() as rec:
        with pytest.raises(ValueError, match=match):
            HyFDCAClassifier(encryption=None, **params).fit(X, y)
    assert rec.messages == []


@pytest.mark.parametrize("params", [
    dict(step_size=0.0), dict(step_size=-1.0), dict(step_size="paper"),
    dict(dual_curvature="exact"), dict(dual_curvature=None)])
def test_bad_step_size_and_curvature_are_invalid_parameters(params):
    X, y = _small()
    est = HyFDCAClassifier(solver="paper", encryption=None, **params)
    with pytest.raises(InvalidParameterError):
        est.fit(X, y)


def test_paper_solver_takes_steps_above_one():
    X, y = _small()
    est = HyFDCAClassifier(solver="paper", step_size=2.0, max_iter=3,
                           local_iterations=5, encryption=None)
    assert est.fit(X, y).n_iter_ == 3


# -- sklearn plumbing ---------------------------------------------------------------

def test_deterministic_and_pickles():
    X, y = _small()
    a = HyFDCAClassifier(max_iter=30, tol=None, encryption=None,
                         participation=0.5, random_state=3).fit(X, y)
    b = HyFDCAClassifier(max_iter=30, tol=None, encryption=None,
                         participation=0.5, random_state=3).fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    c = pickle.loads(pickle.dumps(a))
    np.testing.assert_array_equal(c.predict(X), a.predict(X))
    assert c.communication_ == a.communication_


def test_dataframe_with_named_column_groups_and_pipeline():
    X, y = _small()
    df = pd.DataFrame(X[:, :4], columns=["a", "b", "c", "d"])
    clf = HyFDCAClassifier(HybridPartition(2, [["a", "c"], ["b", "d"]]),
                           encryption=None, random_state=0).fit(df, y)
    assert clf.partition_.client_columns(1).tolist() == [1, 3]
    assert clf.feature_names_in_.tolist() == ["a", "b", "c", "d"]
    pipe = make_pipeline(StandardScaler(), HyFDCAClassifier(
        encryption=None, random_state=0))
    assert pipe.fit(X, y).score(X, y) > 0.9


def test_sample_party_metadata_sets_row_groups_and_routes():
    X, y = _small()
    groups = np.arange(len(y)) % 3
    clf = HyFDCAClassifier(HybridPartition(3, 2), max_iter=30, tol=None,
                           encryption=None, random_state=0)
    clf.fit(X, y, sample_party=groups)
    np.testing.assert_array_equal(clf.partition_.owners, groups)
    assert cross_val_score(clf, X, y, cv=3).mean() > 0.9  # rule-based split
    with config_context(enable_metadata_routing=True):
        routed = HyFDCAClassifier(HybridPartition(3, 2), max_iter=30, tol=None,
                                  encryption=None,
                                  random_state=0).set_fit_request(
                                      sample_party=True)
        scores = cross_val_score(routed, X, y, cv=3,
                                 params={"sample_party": groups})
        assert scores.mean() > 0.9
        search = GridSearchCV(routed, {"alpha": [1e-2, 1e-1]}, cv=2)
        search.fit(X, y, sample_party=groups)
        assert search.best_params_["alpha"] in (1e-2, 1e-1)


@pytest.mark.parametrize("partition, sample_party, match", [
    (3, None, "HybridPartition"),
    (HybridPartition(2, [[0, 1], [1, 2]]), None, "more than one group"),
    (HybridPartition(2, [[0, 1]]), None, "in no group"),
    (HybridPartition(200, 2), None, "Cannot split"),
    (HybridPartition(2, 2), "mixed", "must sort together"),
    (HybridPartition(2, 2), "short", "one party per row"),
    (HybridPartition(3, 2), "zeros", "hold.*no rows"),
    (VerticalPartition(2), "zeros", "partition is vertical"),
    (VerticalPartition("a"), None, "must be None, a number of parties"),
])
def test_bad_partitions_give_clear_errors(partition, sample_party, match):
    X, y = _small()
    n = len(y)
    sample_party = {None: None,
                    "mixed": np.array(["a", 1] * (n // 2) + ["a"] * (n % 2),
                                      dtype=object),
                    "short": np.zeros(n - 1, dtype=int),
                    "zeros": np.zeros(n, dtype=int)}[sample_party]
    clf = HyFDCAClassifier(partition, encryption=None, max_iter=2)
    with pytest.raises(ValueError, match=match):
        clf.fit(X[:, :3], y, sample_party=sample_party)


def test_single_class_is_refused():
    X, _ = _small()
    with pytest.raises(ValueError, match="class"):
        HyFDCAClassifier(encryption=None).fit(X, np.zeros(len(X)))


# -- sample weights -----------------------------------------------------------

TIGHT = dict(encryption=None, tol=1e-6, max_iter=3000, random_state=0)


def _data():
    X, y = load_breast_cancer(return_X_y=True)
    return StandardScaler().fit_transform(X)[::4], y[::4]


def _weights(n, seed=0):
    return np.random.RandomState(seed).uniform(0.2, 3.0, size=n)


def weighted_primal(w, b, X, y, s, lam, loss):
    """lambda/2 (||w||^2 + b^2) + 1/S sum_i s_i l(y_i (x_i^T w + b))."""
    signs = np.where(y == np.unique(y)[1], 1.0, -1.0)
    return (0.5 * lam * (w @ w + b * b)
            + np.sum(s * loss_values(loss, signs * (X @ w + b))) / np.sum(s))


def _model_primal(clf, X, y, s, loss="hinge"):
    return weighted_primal(clf.coef_.ravel(), float(clf.intercept_[0]), X, y,
                           s, clf.alpha, loss)


def test_weighted_hinge_reaches_liblinears_weighted_optimum():
    # Same objective: LinearSVC(C = 1 / (lambda S)) with the same weights
    # and a regularised intercept column (intercept_scaling=1).
    X, y = _data()
    s = _weights(len(y))
    lam = 1e-2
    clf = HyFDCAClassifier(HybridPartition(2, 2), alpha=lam, **TIGHT).fit(
        X, y, sample_weight=s)
    svc = LinearSVC(loss="hinge", C=1.0 / (lam * s.sum()), tol=1e-10,
                    max_iter=200_000).fit(X, y, sample_weight=s)
    reference = weighted_primal(svc.coef_.ravel(), float(svc.intercept_[0]),
                                X, y, s, lam, "hinge")
    ours = _model_primal(clf, X, y, s)
    assert ours <= reference * (1 + 1e-6)
    # Strong convexity: ||w - w*||^2 <= 2 (P(w) - P*) / lambda.
    np.testing.assert_allclose(clf.coef_, svc.coef_, atol=2e-3)
    # The weights matter: the unweighted optimum is worse on this objective.
    plain = HyFDCAClassifier(HybridPartition(2, 2), alpha=lam, **TIGHT).fit(X, y)
    assert _model_primal(plain, X, y, s) > ours * (1 + 1e-3)


@pytest.mark.parametrize("loss", ["logistic", "squared_hinge"])
def test_weighted_smooth_losses_reach_the_weighted_primal_optimum(loss):
    X, y = _data()
    s = _weights(len(y), seed=1)
    lam = 1e-2
    Z = np.hstack([X, np.ones((len(X), 1))])
    signs = np.where(y == 1, 1.0, -1.0)

    def f(w):  # the weighted primal and its gradient, centralised
        m = signs * (Z @ w)
        g = (-signs / (1.0 + np.exp(m)) if loss == "logistic"
             else -signs * np.maximum(0.0, 1.0 - m))
        return (0.5 * lam * w @ w + np.sum(s * loss_values(loss, m)) / s.sum(),
                lam * w + Z.T @ (s * g) / s.sum())

    res = minimize(f, np.zeros(Z.shape[1]), jac=True, method="L-BFGS-B",
                   options=dict(gtol=1e-12, ftol=1e-15, maxiter=10_000))
    clf = HyFDCAClassifier(VerticalPartition(2), loss=loss, alpha=lam,
                           **{**TIGHT, "tol": 1e-5}).fit(X, y, sample_weight=s)
    ours = _model_primal(clf, X, y, s, loss)
    assert abs(ours - res.fun) <= 1e-5 * res.fun
    # Strong convexity: ||w - w*||^2 <= 2 (P(w) - P*) / lambda for both
    # solutions, with P* at most the smaller of their values (a hair below,
    # for L-BFGS's own rounding).
    low = min(ours, res.fun) - 1e-12 * res.fun
    radius = np.sqrt(2 * (ours - low) / lam) + np.sqrt(2 * (res.fun - low) / lam)
    delta = np.append(clf.coef_.ravel(), clf.intercept_) - res.x
    assert np.linalg.norm(delta) <= radius


@pytest.mark.parametrize("partition", [HybridPartition(2, 2),
                                       HorizontalPartition(3)],
                         ids=["hybrid", "horizontal"])
def test_integer_weights_equal_repeated_rows(partition):
    X, y = _data()
    k = np.random.RandomState(2).randint(1, 4, size=len(y))
    weighted = HyFDCAClassifier(partition, alpha=0.1, **TIGHT).fit(
        X, y, sample_weight=k)
    repeated = HyFDCAClassifier(partition, alpha=0.1, **TIGHT).fit(
        np.repeat(X, k, axis=0), np.repeat(y, k))
    np.testing.assert_allclose(weighted.coef_, repeated.coef_, atol=1e-4)
    np.testing.assert_allclose(weighted.intercept_, repeated.intercept_,
                               atol=1e-4)
    np.testing.assert_array_equal(weighted.predict(X), repeated.predict(X))


def test_zero_weights_equal_removed_rows():
    X, y = _data()
    keep = np.random.RandomState(3).uniform(size=len(y)) < 0.7
    s = np.where(keep, _weights(len(y), seed=4), 0.0)
    weighted = HyFDCAClassifier(HybridPartition(2, 2), alpha=0.1, **TIGHT).fit(
        X, y, sample_weight=s)
    removed = HyFDCAClassifier(HybridPartition(2, 2), alpha=0.1, **TIGHT).fit(
        X[keep], y[keep], sample_weight=s[keep])
    np.testing.assert_allclose(weighted.coef_, removed.coef_, atol=1e-4)
    np.testing.assert_allclose(weighted.intercept_, removed.intercept_,
                               atol=1e-4)


def test_unit_weights_are_the_unweighted_fit():
    X, y = _data()
    params = dict(partition=HybridPartition(2, 2), encryption=None,
                  max_iter=20, tol=None, random_state=0)
    plain = HyFDCAClassifier(**params).fit(X, y)
    ones = HyFDCAClassifier(**params).fit(X, y, sample_weight=np.ones(len(y)))
    # Same iterates; only the ring encoding of the secure sums differs.
    np.testing.assert_allclose(ones.coef_, plain.coef_, atol=1e-8)
    np.testing.assert_allclose(ones.objective_curve_, plain.objective_curve_,
                               rtol=1e-8)


def test_encrypted_weighted_fit_equals_the_plaintext_one():
    X, y = _data()
    s = _weights(len(y), seed=5)
    params = dict(partition=HybridPartition(2, 2), max_iter=6, tol=None,
                  random_state=0)
    plain = HyFDCAClassifier(encryption=None, **params).fit(
        X, y, sample_weight=s)
    secure = HyFDCAClassifier(key_size=512, **params).fit(
        X, y, sample_weight=s)
    np.testing.assert_allclose(secure.coef_, plain.coef_,
                               atol=1e-8 * np.max(np.abs(plain.coef_)))


@pytest.mark.parametrize("weight, match", [
    ("negative", "Negative values"), ("zeros", "non-zero"),
    ("short", "shape")])
def test_bad_weights_are_refused(weight, match):
    X, y = _data()
    n = len(y)
    weight = {"negative": -np.ones(n), "zeros": np.zeros(n),
              "short": np.ones(n - 1)}[weight]
    with pytest.raises(ValueError, match=match):
        HyFDCAClassifier(encryption=None, max_iter=2).fit(
            X, y, sample_weight=weight)


def test_sample_weight_is_routed_by_metadata_routing():
    X, y = _data()
    s = _weights(len(y), seed=7)
    cv = KFold(2)
    params = dict(partition=HybridPartition(2, 2), encryption=None,
                  max_iter=30, tol=None, random_state=0)
    expected = [HyFDCAClassifier(**params).fit(
        X[train], y[train], sample_weight=s[train]).score(X[test], y[test])
        for train, test in cv.split(X)]
    with config_context(enable_metadata_routing=True):
        routed = HyFDCAClassifier(**params).set_fit_request(
            sample_weight=True).set_score_request(sample_weight=False)
        scores = cross_val_score(routed, X, y, cv=cv,
                                 params={"sample_weight": s})
    np.testing.assert_allclose(scores, expected)


# -- sparse input -------------------------------------------------------------

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


def test_sparse_input_is_declared_in_the_tags():
    assert HyFDCAClassifier().__sklearn_tags__().input_tags.sparse
