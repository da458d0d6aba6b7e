"""HyFDCA's privacy contract (:mod:`skfed.linear_model._contract`).

Clean fits of both solvers satisfy the contract; planted leaks (one step of
the protocol monkeypatched to leak, the fit still completing as a real bug
would) and forged messages are flagged by
:func:`~skfed.privacy.check_messages`, naming the message. The row weights
are a secret of kind "weights" owned by every client holding the rows.
"""

import math

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import make_classification
from sklearn.preprocessing import StandardScaler

from skfed.crypto import EncryptedArray
from skfed.federation import record_messages
from skfed.linear_model import HyFDCAClassifier, _paper, _protocol
from skfed.partition import (HorizontalPartition, HybridPartition,
                             VerticalPartition)
from skfed.privacy import check_messages

from ._plants import SMALL, X, Y, plant_squared_norms
from ._plants import fit_recorded as _fit_recorded
from ._plants import found as _found



# -- clean fits and planted leaks of the accelerated solver -------------------

@pytest.mark.parametrize("partition", [
    HybridPartition(2, 2), HorizontalPartition(3), VerticalPartition(3)],
    ids=["hybrid-2x2", "horizontal-3", "vertical-3"])
def test_clean_default_fit_satisfies_the_contract(partition):
    fitted, messages = _fit_recorded(HyFDCAClassifier(partition, **SMALL))
    phases = {m.phase for m in messages}
    assert {"step", "primal weights"} <= phases
    # The objective reports reach the server as one secure sum over the row
    # groups; only with a single row group is there no one to sum with.
    alone = isinstance(partition, VerticalPartition)
    assert ("objective report/alone/upload" in phases) == alone
    assert ("objective report/upload" in phases) != alone
    assert check_messages(fitted, messages, X, Y) == []


def test_clean_ou_fit_satisfies_the_contract():
    # Okamoto-Uchiyama ciphertexts are declared like Paillier's.
    fitted, messages = _fit_recorded(HyFDCAClassifier(
        HybridPartition(2, 2), encryption="ou", max_iter=5, tol=None, **SMALL))
    sent = [m for m in messages if m.phase == "inner products"]
    assert sent and all(type(m.payload[0].public_key).__name__ == "OUPublicKey"
                        for m in sent)
    assert check_messages(fitted, messages, X, Y) == []


def test_clean_partial_participation_satisfies_the_contract():
    fitted, messages = _fit_recorded(HyFDCAClassifier(
        HybridPartition(2, 2), participation=0.5, max_iter=40, tol=None,
        **SMALL))
    assert any(m.phase.endswith("/alone/upload") for m in messages)
    assert check_messages(fitted, messages, X, Y) == []


@pytest.mark.parametrize("encryption", ["paillier", "ou"])
def test_duals_in_plaintext_beside_the_inner_products(monkeypatch, encryption):
    # A client sends its dual variables in plaintext in the slot declared
    # as ciphertexts (the paper encrypts them, skfed never sends them).
    original = _protocol.client_partial_inner_products
    server_sum = _protocol.server_sum_over_row_groups

    def leaky(client):
        return [original(client), client.A.copy()]

    def server_ignores_it(server, parts):
        return server_sum(server, {k: p[0] if isinstance(p, list) else p
                                   for k, p in parts.items()})

    monkeypatch.setattr(_protocol, "client_partial_inner_products", leaky)
    monkeypatch.setattr(_protocol, "server_sum_over_row_groups",
                        server_ignores_it)
    fitted, messages = _fit_recorded(HyFDCAClassifier(
        HybridPartition(2, 2), encryption=encryption, max_iter=3, tol=None,
        **SMALL))
    found = _found(check_messages(fitted, messages, X, Y), "inner products")
    assert "float64 array" in found and "where a ciphertext is declared" in found


def test_forged_messages_are_reported():
    fitted, messages = _fit_recorded(HyFDCAClassifier(
        HybridPartition(2, 2), max_iter=3, tol=None, **SMALL))
    part = fitted.partition_
    reporter = next(m.sender for m in messages
                    if m.phase == "objective report/upload")
    rows = part.client_rows(int(reporter[len("client"):]))
    labels = (Y[rows] == 1).astype(float)  # the reporter's labels
    raw = X[np.ix_(part.client_rows(1), part.client_columns(1))]
    i = next(i for i, m in enumerate(messages)
             if m.phase == "objective report/upload")
    j = next(i for i, m in enumerate(messages) if m.phase == "step")
    report = messages[i]
    forged = list(messages)
    # An extra element holding the labels, one holding client1's columns
    # (sent to client2, which does not hold them), and an unknown phase.
    forged[i] = report._replace(payload=report.payload + (labels,))
    forged[j] = messages[j]._replace(receiver="client2",
                                     payload=messages[j].payload + (raw,))
    forged.append(report._replace(phase="gossip"))
    violations = check_messages(fitted, forged, X, Y)
    by_index = {v.index: v.found for v in violations}
    assert "payload element" in by_index[i]
    assert "payload element" in by_index[j]
    assert "undeclared phase 'gossip'" in by_index[len(forged) - 1]
    # The semantic check names the labels and the raw column themselves
    # when they ride inside a declared element (the report's upload is
    # masked: here the labels ride on its request to the other row group).
    forged[i] = report
    q = next(i for i, m in enumerate(messages)
             if m.phase == "objective report/request"
             and m.receiver != reporter)
    request = messages[q]
    forged[q] = request._replace(payload=(
        (request.payload[0], labels),) + request.payload[1:])
    step = messages[j]
    forged[j] = step._replace(receiver="client2", payload=(
        (step.payload[0], raw[:, 0]),) + step.payload[1:])
    violations = check_messages(fitted, forged, X, Y)
    assert f"{reporter}'s labels" in _found(violations,
                                            "objective report/request")
    assert "client1's columns" in _found(violations, "step")


# -- the row weights ----------------------------------------------------------

XW, YW = make_classification(120, 8, n_informative=5, random_state=0)
XW = StandardScaler().fit_transform(XW)
WEIGHT = np.random.RandomState(1).randint(1, 5, size=len(YW)).astype(float)


def _fit_weighted(X=XW):
    clf = HyFDCAClassifier(HybridPartition(2, 2), max_iter=3, tol=None,
                           key_size=512, random_state=0)
    with record_messages() as rec:
        clf.fit(X, YW, sample_weight=WEIGHT)
    return clf, rec.messages


def test_clean_weighted_fit_keeps_the_weights_with_their_rows():
    for data in (XW, sp.csr_matrix(XW)):
        clf, messages = _fit_weighted(data)
        secrets = clf._privacy_secrets(data, YW, sample_weight=WEIGHT)
        owners = {s.owner for s in secrets if s.kind == "weights"}
        assert owners == {f"client{k}" for k in range(4)}
        assert any(m.phase == "setup/weights/upload" for m in messages)
        assert check_messages(clf, messages, data, YW,
                              sample_weight=WEIGHT) == []


def test_planted_weight_leak_is_detected(monkeypatch):
    # Each row group's reporter sends its rows' weights in place of the
    # exponent of their total (integers, where one value is declared); the
    # server takes the exponent from them and the fit goes on. The size
    # bound sees it; only the "weights" secret tells what it is.
    def leaky(client):
        return client.s[:, 0].astype(np.int64)

    def server_reads_them(server, shares):
        return max(int(math.ceil(math.log2(v.sum()))) for v in shares.values())

    monkeypatch.setattr(_protocol, "client_weight_exponent", leaky)
    monkeypatch.setattr(_protocol, "server_largest_exponent",
                        server_reads_them)
    clf, messages = _fit_weighted()
    found = check_messages(clf, messages, XW, YW, sample_weight=WEIGHT)
    assert found and {v.phase for v in found} == {"setup/weights/scale"}
    assert all(v.receiver == "server" for v in found)
    assert any("'s weights" in v.found for v in found)
    # without the weights secret only the size bound (one exponent) sees it
    without = check_messages(clf, messages, XW, YW)
    assert without and all("where at most 1" in v.found for v in without)


# -- solver="paper": its phases (paper_rules) ---------------------------------

XS, YS = make_classification(120, 8, n_informative=5, random_state=0)
XS = StandardScaler().fit_transform(XS)
PAPER_SMALL = dict(solver="paper", local_iterations=6, max_iter=3,
                   key_size=512, random_state=0)


@pytest.mark.parametrize("partition, extra", [
    (HybridPartition(2, 2), {}),
    (VerticalPartition(2), dict(participation=0.5, schedule="cyclic")),
    (HorizontalPartition(3), {})],
    ids=["hybrid-2x2", "vertical-cyclic", "horizontal-3"])
def test_paper_messages_satisfy_the_contract(partition, extra):
    est = HyFDCAClassifier(partition, **PAPER_SMALL, **extra)
    with record_messages() as rec:
        est.fit(XS, YS)
    assert check_messages(est, rec.messages, XS, YS) == []
    duals = [m for m in rec.messages if m.phase == "duals"]
    assert duals and all(isinstance(m.payload[0], EncryptedArray)
                         for m in duals)
    # The server only ever sees ciphertexts of the duals, and nothing of
    # the accelerated round (no reports, no steps).
    phases = {m.phase for m in rec.messages}
    assert not phases & {"step", "objective report", "direction"}


def test_accelerated_contract_refuses_the_duals_phase():
    est = HyFDCAClassifier(HybridPartition(2, 2), **PAPER_SMALL)
    with record_messages() as rec:
        est.fit(XS, YS)
    est.set_params(solver="accelerated")
    assert any(v.phase == "duals"
               for v in check_messages(est, rec.messages, XS, YS))


def test_planted_leak_one_dual_in_the_clear_is_flagged(monkeypatch):
    """A client that sends one of its duals in the clear beside its
    ciphertexts is caught by check_messages."""
    send, add = _paper.client_local_dual_method, _paper.server_add_duals

    def leaky_send(client, gamma):
        return send(client, gamma), np.array([client.A[0, 0] + 0.5])

    def strip(server, changes):
        return add(server, {k: v[0] for k, v in changes.items()})

    monkeypatch.setattr(_paper, "client_local_dual_method", leaky_send)
    monkeypatch.setattr(_paper, "server_add_duals", strip)
    est = HyFDCAClassifier(HybridPartition(2, 2), **PAPER_SMALL)
    with record_messages() as rec:
        est.fit(XS, YS)
    found = [v for v in check_messages(est, rec.messages, XS, YS)
             if v.phase == "duals"]
    assert found, "a dual in the clear must be flagged"


# -- the paper's printed curvature sends no squared norm (issue 40) -------------

def test_printed_curvature_fit_has_no_squared_norm_phase():
    """``dual_curvature="paper"``: no ``squared norms`` message, and the
    contract declares none (clean fit: no violation)."""
    est = HyFDCAClassifier(HybridPartition(2, 2), dual_curvature="paper",
                           fit_intercept=False, **PAPER_SMALL)
    X1 = XS / np.linalg.norm(XS, axis=1, keepdims=True)
    with record_messages() as rec:
        est.fit(X1, YS)
    assert not [m for m in rec.messages if m.phase.startswith("squared")]
    assert check_messages(est, rec.messages, X1, YS) == []
    assert not [r for r in est._privacy_contract().rules
                if r.phase.startswith("squared")]


def test_planted_squared_norms_under_the_printed_curvature_are_flagged(
        monkeypatch):
    """A paper-curvature fit that still runs the setup exchange of squared
    norms (as the row-norm default does) is flagged: the phase is not in
    its contract."""
    plant_squared_norms(monkeypatch)
    est = HyFDCAClassifier(HybridPartition(2, 2), dual_curvature="paper",
                           fit_intercept=False, **PAPER_SMALL)
    X1 = XS / np.linalg.norm(XS, axis=1, keepdims=True)
    with record_messages() as rec:
        est.fit(X1, YS)
    found = [v for v in check_messages(est, rec.messages, X1, YS)
             if v.phase.startswith("squared norms")]
    assert found, "squared norms sent under dual_curvature='paper'"


# -- the public mean curvature sends no per-row norm (issue 37) -----------------

@pytest.mark.parametrize("solver", ["accelerated", "paper"])
def test_squared_norms_planted_beside_the_mean_curvature_are_flagged(
        monkeypatch, solver):
    """The default (``"auto"``: the public mean where rows are split) has no
    ``squared norms`` phase: a fit that still sends the rows' norms (the
    route that fixes the partners' metric) is flagged, while the honest
    default fit and a ``"row_norm"`` fit are clean."""
    kw = dict(PAPER_SMALL) if solver == "paper" else dict(
        max_iter=3, tol=None, **SMALL)
    for dual_curvature in ("auto", "row_norm"):
        fitted, messages = _fit_recorded(HyFDCAClassifier(
            HybridPartition(2, 2), dual_curvature=dual_curvature, **kw))
        assert check_messages(fitted, messages, X, Y) == []
    plant_squared_norms(monkeypatch)
    fitted, messages = _fit_recorded(HyFDCAClassifier(HybridPartition(2, 2),
                                                      **kw))
    found = _found(check_messages(fitted, messages, X, Y))
    assert "undeclared phase 'squared norms/shared'" in found


def test_clients_taking_part_one_by_one_satisfy_the_contract():
    """Per-client participation on a hybrid grid: a column group with one
    client present sends its w_hat_k change alone (declared)."""
    est = HyFDCAClassifier(HybridPartition(2, 2), participation=0.5,
                           **dict(PAPER_SMALL, max_iter=12))
    with record_messages() as rec:
        est.fit(XS, YS)
    assert check_messages(est, rec.messages, XS, YS) == []
    assert any(m.phase == "primal aggregation/alone/upload"
               for m in rec.messages)
