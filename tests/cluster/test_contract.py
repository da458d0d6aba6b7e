"""The privacy contract of federated kernel k-means, held against clean and
leaky fits.

Each leak is planted with a monkeypatch and must be caught by
``check_messages``; the clean fits keep the contract.
"""

import numpy as np
import pytest

import skfed.cluster._coreset as coreset
import skfed.cluster._protocol as protocol
import skfed.cluster._refine as refine
from skfed.cluster import FederatedKernelKMeans
from skfed.federation import record_messages
from skfed.privacy import audit, check_messages

from ._plants import (X_raw, X_std, _plaintext_sums, _totals_to_the_server,
                      estimator, fit_recorded)


# -- the clean protocol -------------------------------------------------------------

def test_clean_fit_on_raw_data_keeps_the_contract():
    # Far from the origin the decoded total (a rotated sum of rows: the mean
    # row's norm in a direction the server does not know) can land near some
    # rows by chance, so only the contract is asserted here.
    report = audit(FederatedKernelKMeans(3, partition=2, random_state=0), X_raw)
    assert report.violations == []


def test_predict_sends_nothing():
    est = estimator().fit(X_std)
    with record_messages() as rec:
        est.predict(X_std[:20])
    assert rec.messages == []


# -- planted leaks ------------------------------------------------------------------

def test_per_user_gram_products_are_caught(monkeypatch):
    # W_t[m]^T W_t[m] c per user, not summed: plaintext where masks are due.
    monkeypatch.setattr(protocol, "secure_sum",
                        _plaintext_sums(protocol.secure_sum, False))
    est = estimator()
    messages = fit_recorded(est, X_std)
    phases = {v.phase for v in check_messages(est, messages, X_std)}
    assert "dspgd: lanczos/upload" in phases and "oos: embedding map/upload" in phases


def test_user_with_too_few_rows_is_refused_before_any_message():
    owners = np.r_[np.zeros(3, int), np.ones(72, int), np.full(75, 2)]
    with record_messages() as rec, pytest.raises(ValueError, match="user0"):
        estimator().fit(X_std, sample_party=owners)
    assert rec.messages == []


def _summary_phase(violations):
    return [v for v in violations if v.phase == "kmeans: coreset"]


def test_group_means_of_single_rows_are_caught(monkeypatch):
    # Planted: the merge of groups under MIN_GROUP rows is skipped and the
    # budget is raised so that local k-means leaves one-row groups, whose
    # means are rows of H. The contract checks the whole-number sizes.
    monkeypatch.setattr(coreset, "_merge_small_groups",
                        lambda H, labels, n_groups: labels)
    monkeypatch.setattr(coreset, "MIN_GROUP", 1)  # lets the budget reach n_rows
    est = estimator(coreset_size=150)
    messages = fit_recorded(est, X_std)
    monkeypatch.setattr(coreset, "MIN_GROUP", 2)  # the contract's threshold
    sizes = np.concatenate([m.payload[1] for m in messages
                            if m.phase == "kmeans: coreset"])
    assert sizes.dtype.kind == "i" and sizes.min() == 1
    found = _summary_phase(check_messages(est, messages, X_std))
    assert found and "fewer than MIN_GROUP=2 rows" in found[0].found


def test_clean_summaries_send_whole_row_counts_of_at_least_min_group():
    est = estimator(coreset_size=150)
    messages = fit_recorded(est, X_std)
    sizes = np.concatenate([m.payload[1] for m in messages
                            if m.phase == "kmeans: coreset"])
    assert sizes.dtype.kind == "i" and sizes.min() >= coreset.MIN_GROUP
    assert _summary_phase(check_messages(est, messages, X_std)) == []
    # A size edited below MIN_GROUP in the record is a violation.
    edited = list(messages)
    index = next(i for i, m in enumerate(edited) if m.phase == "kmeans: coreset")
    means, counts = edited[index].payload
    counts = counts.copy()
    counts[0] = 1
    edited[index] = edited[index]._replace(payload=(means, counts))
    assert _summary_phase(check_messages(est, edited, X_std))


def test_weighted_summaries_send_weight_sums():
    w = np.linspace(0.5, 2.0, len(X_std))
    est = estimator()
    messages = fit_recorded(est, X_std, sample_weight=w)
    sizes = [m.payload[1] for m in messages if m.phase == "kmeans: coreset"]
    assert sizes and all(s.dtype.kind == "f" for s in sizes)
    assert check_messages(est, messages, X_std) == []


# -- the refinement (skfed's Lloyd on the map's random features) ----------------------

def test_refinement_messages_keep_the_contract():
    est = estimator(refine="auto")
    messages = fit_recorded(est, X_std)
    phases = {m.phase for m in messages}
    assert {"refine: totals/upload", "refine: totals/relay",
            "refine: moves/upload"} <= phases
    # The server receives the masked move counts and nothing else of it.
    assert {m.phase for m in messages if m.receiver == "server"
            and m.phase.startswith("refine")} == {"refine: moves/upload"}
    assert not any(m.sender == "server" and m.phase.startswith("refine")
                   for m in messages)
    assert check_messages(est, messages, X_std) == []
    paper = estimator(refine=None)
    messages = fit_recorded(paper, X_std)
    assert not any(m.phase.startswith("refine") for m in messages)
    assert check_messages(paper, messages, X_std) == []


def test_plaintext_refinement_totals_are_caught(monkeypatch):
    # Per-user cluster sums of z(x) in plaintext where masks are due.
    monkeypatch.setattr(refine, "secure_sum",
                        _plaintext_sums(refine.secure_sum, False))
    est = estimator(refine="auto")
    messages = fit_recorded(est, X_std)
    phases = {v.phase for v in check_messages(est, messages, X_std)}
    assert "refine: totals/upload" in phases


def test_refinement_totals_to_the_server_are_caught(monkeypatch):
    # The refinement as first built: the server decoded the totals (and its
    # consecutive totals gave away the moved rows, see test_attacks.py).
    monkeypatch.setattr(refine, "release_totals", _totals_to_the_server)
    est = estimator(refine="auto")
    messages = fit_recorded(est, X_std)
    found = {(v.phase, v.sender, v.receiver)
             for v in check_messages(est, messages, X_std)}
    assert ("refine: totals/upload", "user1", "server") in found
    assert ("refine: totals/relay", "server", "user0") in found
