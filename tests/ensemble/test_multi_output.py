"""SecureBoost multiclass with one multi-output tree per round (multi_mode)."""

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

from skfed.ensemble import SecureBoostClassifier
from skfed.federation import record_messages
from skfed.privacy import check_messages

X, Y = load_digits(return_X_y=True)


def _trees(model):
    return [(k, t.children_left.tolist(), t.owner.tolist(), t.record.tolist(),
             t.value.tolist()) for k, t in model._trees]


def test_packed_classes_are_lossless_and_one_tree_per_round():
    # 512-bit keys hold 4 of the 10 (h, g) pairs: three ciphertexts per row.
    params = dict(n_estimators=2, max_depth=2, multi_mode="multi_output",
                  min_samples_leaf=3, random_state=0)
    with record_messages() as rec:
        secure = SecureBoostClassifier(key_size=512, **params).fit(X[:300], Y[:300])
    plain = SecureBoostClassifier(encryption=None, **params).fit(X[:300], Y[:300])
    assert _trees(secure) == _trees(plain) and secure._records == plain._records
    np.testing.assert_array_equal(secure.predict_proba(X[300:400]),
                                  plain.predict_proba(X[300:400]))
    gradients = [m for m in rec.messages if m.phase == "gradients"]
    assert len(gradients) == 2
    layouts, _, encrypted = gradients[0].payload
    assert layouts.shape == (3, 3) and [e.size for e in encrypted] == [300] * 3
    assert check_messages(secure, rec.messages, X[:300], Y[:300]) == []
    # One tree per round, kept per class with the same splits.
    assert secure.n_iter_ == 2 and len(secure._trees) == 20
    for r in range(2):
        shapes = {(tuple(t.children_left), tuple(t.record))
                  for _, t in secure._trees[10 * r:10 * (r + 1)]}
        assert len(shapes) == 1
    # Each split is recorded once by its owner.
    n_splits = sum(int((t.children_left >= 0).sum())
                   for _, t in secure._trees[::10])
    assert sum(len(r) for r in secure._records) == n_splits


def test_multi_output_accuracy_close_to_one_tree_per_class():
    X_train, X_test, y_train, y_test = train_test_split(X, Y, test_size=0.3,
                                                        random_state=0, stratify=Y)
    common = dict(n_estimators=10, encryption=None, random_state=0)
    per_class = SecureBoostClassifier(max_depth=3, **common).fit(X_train, y_train)
    multi = SecureBoostClassifier(max_depth=5, multi_mode="multi_output",
                                  **common).fit(X_train, y_train)
    assert multi.score(X_test, y_test) >= per_class.score(X_test, y_test) - 0.01
    consolidated = multi.consolidate()
    np.testing.assert_array_equal(consolidated.predict_proba(X_test),
                                  multi.predict_proba(X_test))
