"""SecureBoost's row weights stay with the label holder: a planted leak is caught."""

import numpy as np
from sklearn.datasets import make_classification

from skfed.ensemble import SecureBoostClassifier
from skfed.federation import record_messages
from skfed.privacy import check_messages

from ._boost_plants import plant_in_row_ids_slot

X, Y = make_classification(200, 8, random_state=0)
W = np.random.default_rng(0).integers(1, 6, size=Y.size).astype(np.float64)
SMALL = dict(n_estimators=2, max_depth=2, key_size=512, random_state=0)


def _violations():
    with record_messages() as rec:
        fitted = SecureBoostClassifier(**SMALL).fit(X, Y, sample_weight=W)
    return check_messages(fitted, rec.messages, X, Y, sample_weight=W)


def test_clean_weighted_fit():
    assert _violations() == []


def test_weights_in_the_row_ids_slot(monkeypatch):
    # Integers, where integers (row ids) are allowed: only the semantic check
    # against the "weights" secret tells that they are the weights.
    plant_in_row_ids_slot(monkeypatch, lambda state: state.w.astype(np.int64))
    found = " | ".join(v.found for v in _violations() if v.phase == "gradients")
    assert "party0's weights" in found
