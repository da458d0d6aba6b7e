"""SecureBoost's scores and early stopping, as HistGradientBoosting's."""

import numpy as np
import pytest
from sklearn.datasets import make_classification, make_regression
from sklearn.metrics import balanced_accuracy_score, log_loss, r2_score

from skfed.ensemble import SecureBoostClassifier, SecureBoostRegressor
from skfed.ensemble._sampling import training_rows

X, Y = make_classification(600, 10, n_informative=5, weights=[0.8], flip_y=0.1,
                           random_state=0)


def _validation_rows(model, y):
    train = training_rows(model, y.size, y)
    return np.setdiff1d(np.arange(y.size), train)


def test_validation_score_is_the_scorer_on_the_held_out_rows():
    clf = SecureBoostClassifier(n_estimators=6, early_stopping=True,
                                n_iter_no_change=50, scoring="balanced_accuracy",
                                encryption=None, random_state=0).fit(X, Y)
    assert clf.validation_score_.shape == (clf.n_iter_ + 1,) == (7,)
    val = _validation_rows(clf, Y)
    assert val.size == 60
    expected = [balanced_accuracy_score(Y[val], p)
                for p in clf.staged_predict(X[val])]
    np.testing.assert_allclose(clf.validation_score_[1:], expected)
    assert clf.validation_score_[0] == 0.5  # the baseline predicts one class


def test_loss_scores_and_sample_weight():
    w = np.random.default_rng(0).uniform(0.5, 2.0, size=Y.size)
    clf = SecureBoostClassifier(n_estimators=4, early_stopping=False,
                                encryption=None, random_state=0)
    clf.fit(X, Y, sample_weight=w)
    assert clf.validation_score_.size == 0
    expected = [-log_loss(Y, p, sample_weight=w) for p in
                clf.staged_predict_proba(X)]
    np.testing.assert_allclose(clf.train_score_[1:], expected, rtol=1e-10)
    assert np.all(np.diff(clf.train_score_) > 0)


def test_regressor_scorer_on_training_rows():
    X_r, y_r = make_regression(300, 5, noise=10.0, random_state=0)
    reg = SecureBoostRegressor(n_estimators=3, scoring="r2", early_stopping=False,
                               encryption=None, random_state=0).fit(X_r, y_r)
    assert reg.train_score_[0] == pytest.approx(0.0, abs=1e-12)  # the mean
    assert reg.train_score_[-1] == pytest.approx(r2_score(y_r, reg.predict(X_r)))


def test_early_stopping_on_training_scores_without_a_validation_split():
    clf = SecureBoostClassifier(n_estimators=100, early_stopping=True,
                                validation_fraction=None, n_iter_no_change=2,
                                scoring="accuracy", encryption=None,
                                random_state=0).fit(X, Y)
    assert clf.n_iter_ < 100 and clf.validation_score_.size == 0
    # No held-out rows: no federated prediction during fit.
    assert not any(p.startswith("predict") for p in clf.communication_.by_phase)
    best = clf.train_score_[-3]
    assert not np.any(clf.train_score_[-2:] > best + clf.tol)


def test_verbose_prints_the_score(capsys):
    SecureBoostClassifier(n_estimators=2, early_stopping=True, scoring="roc_auc",
                          encryption=None, random_state=0, verbose=1).fit(X, Y)
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 2
    assert "train score 0." in lines[0] and "validation score 0." in lines[0]
