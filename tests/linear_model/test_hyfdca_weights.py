"""HyFDCAClassifier with sample_weight: the weighted objective's optimum
(against liblinear and a numpy/L-BFGS solver of the same weighted primal),
integer weights as repeated rows, zero weights as removed rows, encryption,
the total weight's secure sum, validation and metadata routing."""

import numpy as np
import pytest
from scipy.optimize import minimize
from sklearn import config_context
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import KFold, cross_val_score
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC

from skfed.federation import record_messages
from skfed.linear_model import HyFDCAClassifier
from skfed.linear_model._dual import loss_values
from skfed.partition import (HorizontalPartition, HybridPartition,
                             VerticalPartition)

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


@pytest.mark.parametrize("partition, alone", [
    (HybridPartition(3, 2), False), (VerticalPartition(2), True)])
def test_the_total_weight_is_summed_securely_and_sent_to_every_client(
        partition, alone):
    X, y = _data()
    s = _weights(len(y), seed=6)
    with record_messages() as rec:
        clf = HyFDCAClassifier(partition, encryption=None, max_iter=2,
                               tol=None, random_state=0).fit(
                                   X, y, sample_weight=s)
    n_clients = clf.partition_.n_clients
    n_groups = clf.partition_.n_row_groups
    sent = [m for m in rec.messages if m.phase == "setup/weights"]
    assert len(sent) == n_clients
    for m in sent:  # S, and nothing else, to every client
        np.testing.assert_allclose(m.payload[0], [s.sum()], rtol=1e-12)
    scales = [m for m in rec.messages if m.phase == "setup/weights/scale"]
    assert len(scales) == n_groups
    uploads = [m for m in rec.messages if m.phase.startswith("setup/weights")
               and m.phase.endswith("upload")]
    assert len(uploads) == n_groups
    assert all(m.phase.endswith("alone/upload") == alone for m in uploads)
    assert all(m.payload[0].dtype == np.uint64 for m in uploads)
    # Without weights there is no such step.
    with record_messages() as rec:
        HyFDCAClassifier(partition, encryption=None, max_iter=2, tol=None,
                         random_state=0).fit(X, y)
    assert not any(m.phase.startswith("setup/weights") for m in rec.messages)


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
