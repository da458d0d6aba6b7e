"""SecureBoost: planted leaks are detected, clean fits are not flagged.

Each planted-leak test monkeypatches one step of the protocol so that it
leaks, fits while recording, and asserts that the leak is caught: by
``check_messages`` (naming the message and the secret) or by an attack
crossing its threshold. Each has a clean counterpart. The leaked value
rides along with the normal message so that the fit still completes, as a
real bug would.
"""

import numpy as np
import pytest
from sklearn.datasets import make_classification, make_regression

from skfed.crypto import EncryptedArray
from skfed.ensemble import SecureBoostClassifier, SecureBoostRegressor
from skfed.ensemble import _grower, _histogram, _protocol
from skfed.federation import record_messages
from skfed.privacy import audit, check_messages

from ._boost_plants import plant_in_row_ids_slot

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


# -- clean fits ----------------------------------------------------------------

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


def test_clean_fit_deshuffle_at_chance():
    report = audit(SecureBoostClassifier(**{**SMALL, "n_estimators": 3},
                                         partition=3), X, Y)
    rows = report.attacks[report.attacks.attack == "deshuffle"]
    assert len(rows) == 2
    assert np.all(np.abs(rows.value - rows.chance) <= 0.05)
    assert report.violations == []


# -- planted leaks ----------------------------------------------------------------

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


def _seeded_tree_order(state, tree_key):
    """How skfed drew the candidate order before: from random_state."""
    new = state.stash.get("tree_key") != tree_key
    if new:
        rng = np.random.default_rng([state.seed, *tree_key])
        n = state.cand_features.size
        state.stash["tree_key"] = tree_key
        state.stash["order"] = rng.permutation(n)
        state.stash["ids"] = rng.choice(2**62, size=n, replace=False).astype(np.int64)
    return state.stash["order"], state.stash["ids"], new


def test_candidate_ids_from_random_state(monkeypatch):
    monkeypatch.setattr(_histogram, "_tree_order", _seeded_tree_order)
    report = audit(SecureBoostClassifier(**{**SMALL, "n_estimators": 3},
                                         partition=3), X, Y)
    rows = report.attacks[report.attacks.attack == "deshuffle"]
    assert len(rows) == 2
    assert np.all(rows.value >= 0.95) and np.all(rows.chance < 0.05)


# -- leaf purity (paper section 7) --------------------------------------------------

RL = dict(n_estimators=2, max_depth=3, encryption=None, random_state=0,
          active_only_rounds=1)


def _first_tree(report):
    rows = report.attacks[report.attacks.attack == "leaf_purity"]
    return rows[rows.target.str.contains("tree 1")]


def test_rl_secureboost_first_tree_tells_passive_parties_nothing():
    first = _first_tree(audit(SecureBoostClassifier(**RL), X, Y))
    assert len(first) == 1
    assert first.value.iloc[0] == pytest.approx(first.chance.iloc[0])


def test_leaves_of_the_first_tree_sent_to_passive_parties(monkeypatch):
    # RL-SecureBoost's promise broken: after the first tree (grown on the
    # active party's columns only), the active party tells every passive
    # party the instance space of each leaf, in a well-formed message.
    original_finish = _grower.finish_tree
    original_grow = _protocol.grow_tree

    def finish_tree(state, *args):
        tree = state.tree
        state.stash["leaves"] = [node.rows.astype(np.int32)
                                 for i, node in enumerate(tree.nodes)
                                 if tree.tree.children_left[i] < 0]
        return original_finish(state, *args)

    def leaves_of(state):
        return state.stash["leaves"]

    def ignore(state, *args):
        return None

    def grow_tree(fed, active, passives, tree_key, output, *args):
        original_grow(fed, active, passives, tree_key, output, *args)
        if tree_key[0] == 0:
            leaves = fed[active].call(leaves_of, phase="tree").result()
            fed.gather([fed[p].call(ignore, tree_key, output, leaves,
                                    sender=active, phase="histogram/rows")
                        for p in passives])

    monkeypatch.setattr(_grower, "finish_tree", finish_tree)
    monkeypatch.setattr(_protocol, "grow_tree", grow_tree)
    report = audit(SecureBoostClassifier(**RL), X, Y)
    first = _first_tree(report)
    assert report.violations == []  # well-formed: only the attack sees it
    assert first.value.iloc[0] >= first.chance.iloc[0] + 0.2
