"""SecureBoost with sample_weight and class_weight (held by the label holder)."""

import numpy as np
import pytest
from sklearn.datasets import make_classification, make_regression
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.metrics import balanced_accuracy_score
from sklearn.model_selection import train_test_split
from threadpoolctl import threadpool_limits

from skfed.ensemble import SecureBoostClassifier, SecureBoostRegressor
from skfed.federation import record_messages
from skfed.privacy import check_messages


def _trees(model):
    return [(k, t.children_left.tolist(), t.owner.tolist(), t.record.tolist(),
             t.value.tolist()) for k, t in model._trees]


def _coarse(X):
    # Few distinct values per column: the bins do not depend on repetitions.
    return np.round(X * 2) / 2


@pytest.mark.parametrize("Estimator", [SecureBoostClassifier, SecureBoostRegressor])
def test_integer_weights_equal_repeated_rows_exactly(Estimator):
    if Estimator is SecureBoostClassifier:
        X, y = make_classification(120, 6, n_classes=3, n_informative=4,
                                   random_state=0)
    else:
        X, y = make_regression(120, 6, noise=5.0, random_state=0)
    X = _coarse(X)
    w = np.random.default_rng(0).integers(1, 4, size=y.size)
    # min_passive_rows counts rows (what the subset-sum attack searches),
    # not weights: repeated rows reveal more nodes. The paper's protocol
    # (0) has no such count.
    params = dict(n_estimators=4, encryption=None, random_state=0,
                  min_passive_rows=0)
    weighted = Estimator(**params).fit(X, y, sample_weight=w)
    repeated = Estimator(**params).fit(np.repeat(X, w, axis=0), np.repeat(y, w))
    method = "predict_proba" if Estimator is SecureBoostClassifier else "predict"
    # Same splits (fixed-point sums of w * q equal the repeated rows' sums);
    # the baseline's mean may differ in the last bit (summation order).
    structure = [(t.children_left.tolist(), t.record.tolist())
                 for model in (weighted, repeated) for _, t in model._trees]
    half = len(structure) // 2
    assert structure[:half] == structure[half:]
    # (The side unseen NaN would take follows the larger child by row count,
    # which the owner decides without the weights: not compared.)
    assert ([[r[:2] for r in records] for records in weighted._records]
            == [[r[:2] for r in records] for records in repeated._records])
    np.testing.assert_allclose(getattr(weighted, method)(X),
                               getattr(repeated, method)(X), rtol=1e-12)
    unweighted = Estimator(**params).fit(X, y)
    assert not np.array_equal(getattr(weighted, method)(X),
                              getattr(unweighted, method)(X))


def test_weighted_federated_fit_equals_a_centralized_rerun():
    # One party holding every column runs no protocol at all: the centralized
    # booster. With the paper's protocol (min_passive_rows=0), two and three
    # parties with the same weights build the same trees.
    X, y = make_classification(300, 8, weights=[0.8], random_state=1)
    w = np.random.default_rng(1).uniform(0.2, 3.0, size=y.size)
    params = dict(n_estimators=4, max_depth=3, encryption=None, random_state=0,
                  class_weight="balanced", min_passive_rows=0)
    central = SecureBoostClassifier(partition=1, **params).fit(X, y, sample_weight=w)
    for partition in (2, 3):
        fed = SecureBoostClassifier(partition=partition, **params).fit(
            X, y, sample_weight=w)
        np.testing.assert_array_equal(fed.predict_proba(X), central.predict_proba(X))
        np.testing.assert_array_equal(fed.train_score_, central.train_score_)


def test_weighted_paillier_and_plaintext_are_bit_identical_and_weights_stay():
    X, y = make_classification(200, 8, weights=[0.8], random_state=2)
    w = np.random.default_rng(2).uniform(0.5, 2.0, size=y.size)
    params = dict(n_estimators=2, max_depth=2, subsample=0.8, random_state=0,
                  class_weight={0: 1.0, 1: 3.0})
    with record_messages() as rec:
        secure = SecureBoostClassifier(key_size=512, **params).fit(
            X, y, sample_weight=w)
    plain = SecureBoostClassifier(encryption=None, **params).fit(X, y, sample_weight=w)
    assert _trees(secure) == _trees(plain) and secure._records == plain._records
    np.testing.assert_array_equal(secure.predict_proba(X), plain.predict_proba(X))
    # The contract holds, and the weights are among the secrets checked.
    assert check_messages(secure, rec.messages, X, y, sample_weight=w) == []
    kinds = [s.kind for s in secure._privacy_secrets(X, y, sample_weight=w)]
    assert "weights" in kinds


def test_class_weight_dict_names_original_labels():
    X, y = make_classification(200, 6, weights=[0.8], random_state=3)
    labels = np.array(["no", "yes"])[y]
    params = dict(n_estimators=3, encryption=None, random_state=0)
    by_dict = SecureBoostClassifier(class_weight={"no": 1.0, "yes": 4.0}, **params)
    by_weight = SecureBoostClassifier(**params)
    by_dict.fit(X, labels)
    by_weight.fit(X, labels, sample_weight=np.where(y == 1, 4.0, 1.0))
    np.testing.assert_array_equal(by_dict.predict_proba(X), by_weight.predict_proba(X))


def test_balanced_class_weight_on_an_imbalanced_table():
    X, y = make_classification(2000, 12, n_informative=6, weights=[0.93],
                               flip_y=0.02, random_state=0)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.5,
                                                        random_state=0, stratify=y)
    same = dict(learning_rate=0.3, max_depth=3, max_bins=32, early_stopping=False)
    ours = dict(n_estimators=20, min_samples_leaf=20, reg_lambda=0.0,
                encryption=None, random_state=0, **same)
    plain = SecureBoostClassifier(**ours).fit(X_train, y_train)
    balanced = SecureBoostClassifier(class_weight="balanced", **ours).fit(
        X_train, y_train)
    with threadpool_limits(1):
        hgb = HistGradientBoostingClassifier(max_iter=20, class_weight="balanced",
                                             **same).fit(X_train, y_train)
    score = {name: balanced_accuracy_score(y_test, model.predict(X_test))
             for name, model in [("plain", plain), ("balanced", balanced),
                                 ("hgb", hgb)]}
    assert score["balanced"] > score["plain"] + 0.05, score
    assert score["balanced"] >= score["hgb"] - 0.01, score


def test_bad_weights():
    X, y = make_classification(50, 4, random_state=0)
    with pytest.raises(ValueError, match="Negative"):
        SecureBoostClassifier(encryption=None).fit(X, y, sample_weight=-np.ones(50))
    with pytest.raises(ValueError):
        SecureBoostClassifier(encryption=None, class_weight="nope").fit(X, y)
    with pytest.raises(ValueError, match="Divide sample_weight"):
        SecureBoostClassifier(encryption=None).fit(X, y, sample_weight=np.full(50, 1e9))
