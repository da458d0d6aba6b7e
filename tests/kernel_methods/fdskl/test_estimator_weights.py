"""FDSKL's row and class weights, applied by the label holder only."""

import numpy as np
import pytest
from sklearn.utils.class_weight import compute_sample_weight

from skfed.kernel_methods import FDSKLClassifier, FDSKLRegressor
from skfed.partition import VerticalPartition

from .test_estimator import _binary_data, _central_fdskl

PARAMS = dict(learning_rate=2.0, alpha=0.01, max_iter=12, batch_size=16,
              n_components_per_iter=3, gamma=0.3, random_state=7)


@pytest.mark.parametrize("q, active", [(1, (0,)), (3, (1,)), (3, (0, 2))])
def test_weighted_model_equals_the_centralized_weighted_steps(q, active):
    X, y = _binary_data()
    weight = np.random.RandomState(1).uniform(0.1, 3.0, size=len(y))
    clf = FDSKLClassifier(partition=VerticalPartition(q, active_parties=active),
                          **PARAMS).fit(X, y, sample_weight=weight)
    decision = _central_fdskl(
        X, np.where(y == 1, 1.0, -1.0)[:, None], q, active, 7, "logistic",
        2.0, 0.01, 12, 16, 3, "rbf", 0.3, weight=weight)
    np.testing.assert_allclose(clf.decision_function(X), decision(X)[:, 0],
                               rtol=1e-6, atol=1e-7)
    # The weights do change the model.
    plain = FDSKLClassifier(partition=VerticalPartition(q, active_parties=active),
                            **PARAMS).fit(X, y)
    assert np.abs(plain.decision_function(X) - decision(X)[:, 0]).max() > 1e-3


def test_class_weight_equals_its_sample_weight_and_unit_weights_change_nothing():
    X, y = _binary_data()
    part = VerticalPartition(2)
    plain = FDSKLClassifier(partition=part, **PARAMS).fit(X, y)
    ones = FDSKLClassifier(partition=part, **PARAMS).fit(
        X, y, sample_weight=np.full(len(y), 2.5))
    np.testing.assert_allclose(ones.decision_function(X),
                               plain.decision_function(X), rtol=1e-12)
    balanced = FDSKLClassifier(partition=part, class_weight="balanced",
                               **PARAMS).fit(X, y)
    explicit = FDSKLClassifier(partition=part, **PARAMS).fit(
        X, y, sample_weight=compute_sample_weight("balanced", y))
    np.testing.assert_allclose(balanced.decision_function(X),
                               explicit.decision_function(X), rtol=1e-12)
    as_dict = FDSKLClassifier(partition=part, class_weight={0: 1.0, 1: 5.0},
                              **PARAMS).fit(X, y)
    decision = _central_fdskl(
        X, np.where(y == 1, 1.0, -1.0)[:, None], 2, (0,), 7, "logistic",
        2.0, 0.01, 12, 16, 3, "rbf", 0.3, weight=np.where(y == 1, 5.0, 1.0))
    np.testing.assert_allclose(as_dict.decision_function(X), decision(X)[:, 0],
                               rtol=1e-6, atol=1e-7)


def test_balanced_class_weight_raises_minority_recall():
    rng = np.random.RandomState(0)
    X = rng.normal(size=(300, 4))
    y = (X[:, 0] + 0.5 * X[:, 1] > 1.3).astype(int)  # about 10% positives
    params = dict(max_iter=60, batch_size=32, random_state=0)
    plain = FDSKLClassifier(partition=2, **params).fit(X, y)
    balanced = FDSKLClassifier(partition=2, class_weight="balanced",
                               **params).fit(X, y)
    recall = [np.mean(m.predict(X)[y == 1] == 1) for m in (plain, balanced)]
    assert recall[1] > recall[0]


def test_regressor_weights_and_zero_sum_refused():
    rng = np.random.RandomState(0)
    X = rng.normal(size=(80, 3))
    y = X[:, 0] + 0.1 * rng.normal(size=80)
    weight = rng.uniform(0.5, 2.0, size=80)
    reg = FDSKLRegressor(partition=2, **PARAMS).fit(X, y, sample_weight=weight)
    plain = FDSKLRegressor(partition=2, **PARAMS).fit(X, y)
    assert not np.allclose(reg.predict(X), plain.predict(X))
    assert reg._y_mean == pytest.approx(np.average(y, weights=weight))
    with pytest.raises(ValueError, match="non-zero|positive sum"):
        FDSKLRegressor(partition=2, **PARAMS).fit(X, y, sample_weight=np.zeros(80))
