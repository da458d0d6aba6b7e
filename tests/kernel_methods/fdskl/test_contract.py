"""Planted leak of FDSKL's row weights (held by the label holder only).

The weights are a secret of kind "weights" owned by the label holder; a fit
that sends them to another party must be flagged by
:func:`~skfed.privacy.check_messages`, the clean fit must not be.
"""

import numpy as np

from skfed.federation import record_messages
from skfed.kernel_methods import FDSKLClassifier
from skfed.partition import VerticalPartition
from skfed.privacy import check_messages

PARAMS = dict(learning_rate=2.0, alpha=0.01, max_iter=12, batch_size=16,
              n_components_per_iter=3, gamma=0.3, random_state=7)


def _binary_data(n=60, d=5, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(n, d))
    y = (X[:, 0] * X[:, 1] + 0.3 * X[:, 2] > 0).astype(int)
    return X, y


def _fit_recorded(X, y, weight, leak=None):
    clf = FDSKLClassifier(partition=VerticalPartition(3, active_parties=(1,)),
                          **PARAMS)
    with record_messages() as rec:
        clf.fit(X, y, sample_weight=weight)
    return clf, rec.messages


def test_weights_never_leave_the_label_holder():
    X, y = _binary_data()
    weight = np.random.RandomState(1).uniform(0.1, 3.0, size=len(y))
    clf, messages = _fit_recorded(X, y, weight)
    secrets = clf._privacy_secrets(X, y, sample_weight=weight)
    assert ("party1", "weights") in {(s.owner, s.kind) for s in secrets}
    assert not check_messages(clf, messages, X, y, sample_weight=weight)


def test_planted_weight_leak_is_detected(monkeypatch):
    # The label holder sends its weights down the decay broadcast (a float
    # element, where one value is declared): the size bound sees it, and
    # only the "weights" secret can tell what it is.
    from skfed.kernel_methods._fdskl import _protocol as fdskl_protocol

    X, y = _binary_data()
    weight = np.random.RandomState(1).uniform(0.1, 3.0, size=len(y))
    broadcast, decay = fdskl_protocol.tree_broadcast, fdskl_protocol._party_decay

    def leaky(fed, tree, value, fn, phase=None):
        if phase != "step/decay":
            return broadcast(fed, tree, value, fn, phase=phase)
        return broadcast(fed, tree, weight.copy(),
                         lambda state, _: decay(state, value), phase=phase)

    monkeypatch.setattr(fdskl_protocol, "tree_broadcast", leaky)
    clf, messages = _fit_recorded(X, y, weight)
    found = check_messages(clf, messages, X, y, sample_weight=weight)
    assert found and {v.phase for v in found} == {"step/decay"}
    assert all(v.sender == "party1" or v.receiver != "party1" for v in found)
    assert any("party1's weights" in v.found for v in found)
    without = check_messages(clf, messages, X, y)
    assert without and all("where at most 1" in v.found for v in without)
