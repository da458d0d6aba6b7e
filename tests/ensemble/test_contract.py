"""SecureBoost's privacy contract: planted leaks are caught, clean fits are not.

Each planted-leak test monkeypatches one step of the protocol so that it
leaks, fits while recording, and asserts that ``check_messages`` catches the
leak, naming the message and the secret. Each has a clean counterpart. The
leaked value rides along with the normal message so that the fit still
completes, as a real bug would. The attacks, and leaks only an attack sees,
are in test_attacks.py.
"""

import numpy as np
import pytest
from sklearn.datasets import make_classification, make_regression

from skfed.crypto import EncryptedArray
from skfed.ensemble import SecureBoostClassifier, SecureBoostRegressor
from skfed.ensemble import _grower, _histogram, _protocol
from skfed.federation import record_messages
from skfed.privacy import check_messages

X, Y = make_classification(240, 10, n_informative=5, random_state=0)
SMALL = dict(n_estimators=2, max_depth=3, key_size=512, random_state=0)


def _fit_recorded(estimator, X=X, y=Y, predict=False):
    with record_messages() as rec:
        estimator.fit(X, y)
        if predict:
            estimator.predict(X)
    return estimator, rec.messages


def _found(violations, phase):
    return " | ".join(v.found for v in violations if v.phase == phase)


def plant_in_row_ids_slot(monkeypatch, leak):
    """Make the active party send ``leak(state)`` beside the row ids of its
    gradient message (a slot where integers are allowed), and the passive
    parties read the row ids back, so the fit runs as before.

    Only the semantic check can tell what the planted integers are.
    """
    original_active = _protocol.active_gradients
    original_passive = _protocol.passive_receive_gradients

    def leaky_active(state, *args):
        message = original_active(state, *args)
        if message is None:
            return None
        layout, rows, encrypted = message
        return layout, [rows, leak(state)], encrypted

    def passive(state, layout, rows, encrypted):
        return original_passive(state, layout, rows[0], encrypted)

    monkeypatch.setattr(_protocol, "active_gradients", leaky_active)
    monkeypatch.setattr(_protocol, "passive_receive_gradients", passive)


# -- clean fits ---------------------------------------------------------------

@pytest.mark.parametrize("estimator, data", [
    (SecureBoostClassifier(**SMALL), (X, Y)),
    (SecureBoostClassifier(**{**SMALL, "encryption": None}, subsample=0.8,
                           partition=3, early_stopping=True), (X, Y)),
    (SecureBoostRegressor(**SMALL, subsample=0.8),
     make_regression(200, 6, random_state=0)),
], ids=["default", "plaintext-3-parties-subsample-early-stopping", "regressor"])
def test_clean_fit_and_predict_satisfy_the_contract(estimator, data):
    fitted, messages = _fit_recorded(estimator, *data, predict=True)
    assert {"histogram/sums", "split/answer", "predict/answer"} <= {
        m.phase for m in messages}
    assert check_messages(fitted, messages, *data) == []


# -- planted leaks ------------------------------------------------------------

def test_plaintext_gradients_beside_the_ciphertexts(monkeypatch):
    # The fixed-point gradients go along with the encrypted ones, in the
    # slot declared as ciphertexts.
    original = _protocol.active_gradients

    def leaky(state, *args):
        message = original(state, *args)
        if message is None:
            return None
        layout, rows, encrypted = message
        return layout, rows, encrypted + [state.qg[0]]

    monkeypatch.setattr(_protocol, "active_gradients", leaky)
    fitted, messages = _fit_recorded(SecureBoostClassifier(**SMALL))
    found = _found(check_messages(fitted, messages, X, Y), "gradients")
    assert "int64 array" in found and "where a ciphertext is declared" in found


def test_plaintext_fixed_point_gradients_in_the_row_ids_slot(monkeypatch):
    # Integers, where integers (row ids) are allowed: only the semantic check
    # can tell that they are the gradients, rounded to fixed point.
    plant_in_row_ids_slot(monkeypatch, lambda state: state.qg[0])
    fitted, messages = _fit_recorded(SecureBoostClassifier(**SMALL))
    found = _found(check_messages(fitted, messages, X, Y), "gradients")
    assert "party0's gradients (first-round gradients" in found


def test_sampled_labels_as_int64(monkeypatch):
    # With subsample < 1 the leak is a row subset: it matches the labels of
    # the rows sampled in that round, not the full label vector.
    def sampled_labels(state):
        return state.y[np.flatnonzero(state.position >= 0)].astype(np.int64)

    plant_in_row_ids_slot(monkeypatch, sampled_labels)
    fitted, messages = _fit_recorded(SecureBoostClassifier(**SMALL, subsample=0.7))
    found = _found(check_messages(fitted, messages, X, Y), "gradients")
    assert "labels of the rows sampled in round 1" in found
    assert "labels of the rows sampled in round 2" in found


def test_passive_bin_indices_to_the_active_party(monkeypatch):
    original_split = _grower.passive_split
    original_node = _grower.split_node

    def leaky_split(state, *args):
        record_id, left = original_split(state, *args)
        return record_id, [left, state.bins.astype(np.int32)]

    def split_node(state, node_id, party, record_id, left, **kwargs):
        return original_node(state, node_id, party, record_id, left[0], **kwargs)

    monkeypatch.setattr(_grower, "passive_split", leaky_split)
    monkeypatch.setattr(_grower, "split_node", split_node)
    fitted, messages = _fit_recorded(SecureBoostClassifier(**SMALL))
    assert sum(len(r) for r in fitted._records[1:]) > 0
    found = _found(check_messages(fitted, messages, X, Y), "split/answer")
    assert "party1's bins (bin indices of party1" in found


def test_histogram_sums_not_rerandomised(monkeypatch):
    # Without fresh obfuscation a packed chunk is a fixed product of the
    # active party's own row ciphertexts: a chunk of empty candidates is the
    # constant 1 and repeats, a one-row sum comes back unchanged. Depth 5
    # makes small nodes, hence such chunks, certain (depth 3: 1 fit in 3),
    # once the passive parties reveal them (min_passive_rows=0, the paper).
    monkeypatch.setattr(EncryptedArray, "rerandomize",
                        lambda self, *args, **kwargs: self)
    fitted, messages = _fit_recorded(SecureBoostClassifier(
        **{**SMALL, "max_depth": 5, "min_passive_rows": 0}))
    found = _found(check_messages(fitted, messages, X, Y), "histogram/sums")
    assert "repeated" in found or "already received" in found


# -- row weights stay with the label holder -----------------------------------

X_W, Y_W = make_classification(200, 8, random_state=0)
W_ROWS = np.random.default_rng(0).integers(1, 6, size=Y_W.size).astype(np.float64)
SMALL_W = dict(n_estimators=2, max_depth=2, key_size=512, random_state=0)


def _violations():
    with record_messages() as rec:
        fitted = SecureBoostClassifier(**SMALL_W).fit(X_W, Y_W, sample_weight=W_ROWS)
    return check_messages(fitted, rec.messages, X_W, Y_W, sample_weight=W_ROWS)


def test_clean_weighted_fit():
    assert _violations() == []


def test_weights_in_the_row_ids_slot(monkeypatch):
    # Integers, where integers (row ids) are allowed: only the semantic check
    # against the "weights" secret tells that they are the weights.
    plant_in_row_ids_slot(monkeypatch, lambda state: state.w.astype(np.int64))
    found = " | ".join(v.found for v in _violations() if v.phase == "gradients")
    assert "party0's weights" in found


# -- min_passive_side: the replay of the side rule ----------------------------

def test_passive_party_ignoring_the_side_bound_is_flagged(monkeypatch):
    # Planted: the passive party sends a mask but flags every candidate, as
    # if it had no side bound; only the replay (bins from the audit log) sees
    # that some revealed sides hold 1 to 15 rows.
    class EverySide(_histogram.SideLedger):
        def walk(self, row_bins, rows, features, *args, mask=None):
            if mask is None:
                return np.ones(features.size, dtype=bool)
            return super().walk(row_bins, rows, features, *args, mask=mask)

    clean, messages = _fit_recorded(SecureBoostClassifier(**SMALL))
    assert check_messages(clean, messages, X, Y) == []
    monkeypatch.setattr(_histogram, "SideLedger", EverySide)
    fitted, messages = _fit_recorded(SecureBoostClassifier(**SMALL))
    masks = [m.payload[2] for m in messages if m.phase == "histogram/sums"]
    assert masks and all(mask.all() for node in masks for mask in node)
    found = _found(check_messages(fitted, messages, X, Y), "histogram/sums")
    assert "with a side (or a gap to the previous threshold) of 1 to 15" in found


def test_side_rule_replayed_only_with_the_passive_bins():
    # The paper's candidate sums under the node rule (min_passive_side=0):
    # flagged with the audit log, node rule only without it.
    fitted, messages = _fit_recorded(SecureBoostClassifier(min_passive_side=0,
                                                           **SMALL))
    flagged = check_messages(fitted, messages, X, Y)
    assert flagged and all(v.phase == "histogram/sums" for v in flagged)
    del fitted._audit_log
    assert check_messages(fitted, messages, X, Y) == []


def test_clean_plaintext_fit_with_row_counts():
    # min_samples_leaf > 1: each row's gradient message also carries a count
    # slot, so a plaintext fit sends 3 values per row, not 2
    fitted, messages = _fit_recorded(SecureBoostClassifier(
        **{**SMALL, "encryption": None}, min_samples_leaf=3))
    assert check_messages(fitted, messages, X, Y) == []
