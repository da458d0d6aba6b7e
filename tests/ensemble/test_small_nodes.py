"""``min_passive_rows`` on a small table: the caller is told (issue 35).

With the default (64) a passive party sends no candidate sums for a node of
fewer gradient rows, so on a small table only the label holder's columns
split and the model is silently a one-party model. The fit now warns,
naming the parameter and what it protects, when a passive party was left
out at the root of a tree or for most of the fit (nodes holding more than
half of the rows searched for a split).
"""

import sys
import warnings

import numpy as np
import pytest
from sklearn.datasets import make_classification, make_regression

from skfed.ensemble import SecureBoostClassifier, SecureBoostRegressor

FAST = dict(encryption=None, n_estimators=5, random_state=0)


def _fit_recording(model, X, y):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        line = sys._getframe().f_lineno + 1
        model.fit(X, y)
    return [w for w in caught if "min_passive_rows" in str(w.message)], line


@pytest.mark.parametrize("Estimator, make", [
    (SecureBoostRegressor, make_regression),
    (SecureBoostClassifier, make_classification)])
def test_a_40_row_table_warns_naming_min_passive_rows(Estimator, make):
    X, y = make(n_samples=40, n_features=4, random_state=0)
    model = Estimator(**FAST)
    caught, line = _fit_recording(model, X, y)
    assert len(caught) == 1
    warning = caught[0]
    assert warning.category is UserWarning
    text = str(warning.message)
    assert "min_passive_rows=64" in text
    assert "party1: the root of 5 of 5 trees" in text
    assert "subset-sum" in text and "protects" in text
    assert (warning.filename, warning.lineno) == (__file__, line)
    # and it is true: no passive column splits anywhere
    assert model.feature_importances_[2:].sum() == 0


def test_most_rows_withheld_below_the_root_warns_too():
    # 100 rows: each root is revealed, but its children and grandchildren
    # (under 64 rows, or leaving a sibling under 64) hold 66% of the rows
    # searched for a split.
    X, y = make_regression(n_samples=100, n_features=4, random_state=0)
    caught, _ = _fit_recording(SecureBoostRegressor(**FAST), X, y)
    assert len(caught) == 1
    assert "party1: the root of 0 of 5 trees" in str(caught[0].message)


@pytest.mark.parametrize("n_rows, params", [
    (2000, {}),                       # a large table, default settings
    (40, {"min_passive_rows": 0}),    # the paper's protocol
    (40, {"min_passive_rows": None}),
])
def test_no_warning_when_the_passive_parties_take_part(n_rows, params):
    X, y = make_regression(n_samples=n_rows, n_features=4, random_state=0)
    model = SecureBoostRegressor(**FAST, **params)
    caught, _ = _fit_recording(model, X, y)
    assert caught == []
    assert model.feature_importances_[2:].sum() > 0


def test_three_parties_name_each_left_out_party():
    X, y = make_classification(n_samples=60, n_features=6, random_state=0)
    caught, _ = _fit_recording(
        SecureBoostClassifier(partition=3, **FAST), X, y)
    text = str(caught[0].message)
    assert "party1: the root of 5 of 5" in text
    assert "party2: the root of 5 of 5" in text
