"""HyFDCA's attacks (:mod:`skfed.linear_model._attacks`): what the server
can still infer.

``row_reconstruction`` and ``report_inversion`` read private rows off a
planted leak (one step of the protocol monkeypatched to leak, the fit still
completing as a real bug would) and stay above their thresholds on the
clean counterpart. The contract's own tests are in ``test_contract.py``.
"""

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.preprocessing import StandardScaler

from skfed.linear_model import HyFDCAClassifier, _protocol
from skfed.linear_model._attacks import (model_differences, partner_block,
                                        report_inversion, row_reconstruction)
from skfed.partition import (HorizontalPartition, HybridPartition,
                             VerticalPartition)
from skfed.privacy import audit, check_messages

from ._plants import (SMALL, X, Y, plant_squared_norms,
                      restore_plain_reports)
from ._plants import fit_recorded as _fit_recorded
from ._plants import found as _found



def _relative_errors(fitted, messages, X=X, y=Y):
    rows = row_reconstruction(fitted, messages, X, y)
    return np.array([r["value"] for r in rows
                     if r["metric"] == "relative_error"])


# -- row_reconstruction -------------------------------------------------------

@pytest.mark.slow
def test_clean_fits_hide_rows_when_two_clients_contribute():
    # Every column group has two or more clients in every sum the server
    # sees: no estimate comes within half a row's norm of any private row.
    X40, y40 = make_classification(400, 40, n_informative=12, random_state=0)
    X40 = StandardScaler().fit_transform(X40)
    for partition in (HybridPartition(2, 2), HorizontalPartition(3)):
        report = audit(HyFDCAClassifier(partition, **SMALL), X40, y40)
        rows = report.attacks[report.attacks.metric == "relative_error"]
        assert len(rows) == report.estimator.partition_.n_clients
        assert np.all(rows.value >= 0.5), rows
        assert report.violations == []


# -- row_reconstruction on a planted leak -------------------------------------


def _leak_w_hat(monkeypatch):
    """Clients also send the paper's plaintext w_hat_k = X_k^T alpha_k /
    (lambda N), per client, to the server (phase "primal aggregation")."""
    original = _protocol.Protocol.reports

    def w_hat(client):
        return client.X.T @ (client.Y * client.A) / (client.lam * client.N)

    def leaky(self, clients, grid):
        self._to_server("primal aggregation", self._local(clients, w_hat))
        self.server.call(_protocol.server_run,
                         _protocol.server_take,
                         "primal aggregation").result()
        return original(self, clients, grid)

    monkeypatch.setattr(_protocol.Protocol, "reports", leaky)


def test_per_client_w_hat_in_plaintext_gives_rows_away(monkeypatch):
    # Horizontal split, one coordinate per round: the first w_hat_k is
    # y_i x_i / (lambda N), a private row read exactly (lambda N >= ||x||^2).
    _leak_w_hat(monkeypatch)
    fitted, messages = _fit_recorded(HyFDCAClassifier(
        HorizontalPartition(3), alpha=0.1, local_iterations=1, max_iter=5,
        tol=None, **SMALL))
    errors = _relative_errors(fitted, messages)
    assert np.all(errors < 1e-6)
    found = _found(check_messages(fitted, messages, X, Y))
    assert "undeclared phase 'primal aggregation'" in found


def test_without_the_leak_the_same_setting_is_not_read_exactly():
    # Clean counterpart: the same fit sends its weight changes by secure
    # aggregation over the three clients.
    fitted, messages = _fit_recorded(HyFDCAClassifier(
        HorizontalPartition(3), alpha=0.1, local_iterations=1, max_iter=5,
        tol=None, **SMALL))
    assert np.all(_relative_errors(fitted, messages) > 0.1)
    assert check_messages(fitted, messages, X, Y) == []


# -- the objective reports: report_inversion -------------------------------------

# Three row groups of 5 rows, 4 features: a row is 5 unknowns with the
# intercept, a row group 25, all rows 75: 61 reports determine a row group's
# rows, not all of them.
X15, Y15 = make_classification(15, 4, n_informative=3, n_redundant=0,
                               random_state=0)
X15 = StandardScaler().fit_transform(X15)


def _inversion(monkeypatch, plant):
    if plant:
        restore_plain_reports(monkeypatch)
    fitted, messages = _fit_recorded(HyFDCAClassifier(
        HybridPartition(3, 2), encryption=None, max_iter=60, tol=None,
        random_state=0), X15, Y15)
    rows = report_inversion(fitted, messages, X15, Y15)
    errors = np.array([r["value"] for r in rows
                       if r["metric"] == "median_relative_error"])
    labels = np.array([r["value"] for r in rows
                       if r["metric"] == "label_accuracy"])
    return fitted, messages, errors, labels


@pytest.mark.slow
def test_per_group_reports_give_rows_and_labels_away(monkeypatch):
    # Planted: every reporter also sends its group's plaintext report, as
    # before issue 25. The server fits each group's rows from its series.
    fitted, messages, errors, labels = _inversion(monkeypatch, plant=True)
    assert len(errors) == 3
    assert errors.min() < 0.05 and np.median(errors) < 0.35, errors
    assert labels.min() >= 0.8 and labels.max() == 1.0, labels
    violations = check_messages(fitted, messages, X15, Y15)
    assert "undeclared phase 'objective report'" in _found(violations)


@pytest.mark.slow
def test_report_totals_do_not_give_rows_away(monkeypatch):
    fitted, messages, errors, labels = _inversion(monkeypatch, plant=False)
    assert not any(m.phase == "objective report" for m in messages)
    assert np.all(errors >= 0.5), errors
    assert check_messages(fitted, messages, X15, Y15) == []


@pytest.mark.slow
def test_one_row_group_alone_is_an_aggregate_of_its_rows():
    # Cyclic participation, one row group per round: each report is a
    # one-term sum (the group's own), declared as an Aggregate; the attack
    # reads the group's series off it.
    fitted, messages = _fit_recorded(HyFDCAClassifier(
        HybridPartition(3, 2), participation=0.34, schedule="cyclic",
        encryption=None, max_iter=30, tol=None, random_state=0), X15, Y15)
    assert any(m.phase == "objective report/alone/upload" for m in messages)
    assert not any(m.phase == "objective report/upload" for m in messages)
    assert check_messages(fitted, messages, X15, Y15) == []
    rows = report_inversion(fitted, messages, X15, Y15)
    assert {r["victim"] for r in rows} == {
        "client0+client1", "client2+client3", "client4+client5"}


# -- partner_block and model_differences: what a client learns of the others --

def _correlated(n=150):
    """Standardised columns with strong correlations (redundant columns):
    far from the attack's "standardised, uncorrelated" prior."""
    X, y = make_classification(n, 8, n_informative=3, n_redundant=3,
                               random_state=0)
    return StandardScaler().fit_transform(X), y


def _scores(rows, metric, attacker=None):
    return np.array([r["value"] for r in rows if r["metric"] == metric
                     and (attacker is None or r["attacker"] == attacker)])


def _whitened_r2(block):
    """The attack's prior by hand: ``sqrt(n)`` times an orthonormal basis of
    the block's column space, after the best orthogonal map."""
    n = len(block)
    U = np.linalg.svd(block, full_matrices=False)[0]
    U = U[:, :np.linalg.matrix_rank(block)]
    u, _, vt = np.linalg.svd((np.sqrt(n) * U).T @ block, full_matrices=False)
    fit = np.sqrt(n) * U @ (u @ vt)
    ss = np.sum((block - block.mean(axis=0)) ** 2, axis=0)
    keep = ss > 1e-9
    return np.mean(1 - np.sum((fit - block) ** 2, axis=0)[keep] / ss[keep])


def _recorded_partner_fit(X, y, **params):
    est = HyFDCAClassifier(HybridPartition(2, 2), encryption=None,
                           random_state=0, max_iter=25, tol=None, **params)
    fitted, messages = _fit_recorded(est, X, y)
    return fitted, messages, partner_block(fitted, messages, X, y)


def test_the_rows_norms_give_a_partners_block_away_the_mean_does_not():
    # dual_curvature="row_norm": the partners' squared norms fix the metric
    # of the column space the margins span: the Gram matrix and the block
    # up to a rotation, exactly. The default's public mean leaves only the
    # column space: the attack falls back on its whitened prior, which on
    # correlated columns is far from the block (the same number as the
    # prior computed by hand); with d known rows the column space is exact.
    X, y = _correlated()
    fitted, messages, rows = _recorded_partner_fit(X, y,
                                                   dual_curvature="row_norm")
    assert len(rows) == 4 * 3  # 4 attackers, one partner each, 3 metrics
    assert np.all(_scores(rows, "gram_error") < 1e-8)
    assert np.all(_scores(rows, "r2_rotation") > 0.999)
    fitted, messages, rows = _recorded_partner_fit(X, y)
    assert np.all(_scores(rows, "gram_error") > 0.1)
    assert np.all(_scores(rows, "known_rows_r2") > 0.999)
    part = fitted.partition_
    for r in rows:
        if r["metric"] != "r2_rotation":
            continue
        a, p = int(r["attacker"][6:]), int(r["victim"][6:])
        cols = part.client_columns(p)
        truth = X[np.ix_(part.client_rows(a), cols)]
        if part.client_cell(p)[1] == 0:  # the intercept's column
            truth = np.hstack([truth, np.ones((len(truth), 1))])
        assert r["value"] == pytest.approx(_whitened_r2(truth), abs=1e-6)
        assert r["value"] < 0.9
        assert r["chance"] == 0.0


def test_planted_squared_norms_beside_the_mean_give_the_block_away_again(
        monkeypatch):
    # The default fit plus the rows' squared norms sent at setup (as
    # "row_norm" does): the attack reads them and rebuilds the block.
    plant_squared_norms(monkeypatch)
    X, y = _correlated()
    _, _, rows = _recorded_partner_fit(X, y)
    assert np.all(_scores(rows, "r2_rotation") > 0.999)


def test_a_vertical_split_gives_the_gram_matrix_after_width_plus_one_rounds():
    # One row group: the client knows every dual, so the margins X_p w_p =
    # X_p X_p^T v_t with v_t known give the partners' Gram matrix, with or
    # without norms: exact after one round more than the block's width.
    X, y = _correlated()
    est = HyFDCAClassifier(VerticalPartition(2), encryption=None,
                           random_state=0, max_iter=20, tol=None)
    fitted, messages = _fit_recorded(est, X, y)
    rows = partner_block(fitted, messages, X, y)
    assert np.all(_scores(rows, "gram_error") < 1e-8)
    widths = {"client0": 4, "client1": 5}  # the partner's columns
    for r in rows:
        if r["metric"] == "rounds_to_exact_gram":
            assert r["value"] <= widths[r["attacker"]] + 1


def test_model_differences_read_rows_with_one_coordinate_per_round():
    # Horizontal split, one coordinate per client and round: the change of
    # w minus the client's own is often one other client's row in
    # direction; random combinations of that client's rows never are.
    est = HyFDCAClassifier(HorizontalPartition(2), encryption=None,
                           local_iterations=1, max_iter=30, tol=None,
                           random_state=0)
    fitted, messages = _fit_recorded(est, X, Y)
    rows = model_differences(fitted, messages, X, Y)
    assert len(rows) == 2 * 3
    share = [r for r in rows if r["metric"] == "share_on_a_row"]
    assert all(r["value"] > 0.1 and r["chance"] == 0.0 for r in share)
    best = [r for r in rows if r["metric"] == "direction_error"]
    assert all(r["value"] < 1e-6 < r["chance"] for r in best)
    assert partner_block(fitted, messages, X, Y) == []


def test_the_audit_log_exists_only_while_recording():
    # Keys (one per row group, shared by its clients) and each client's
    # duals at every primal weights receipt, kept only while recorded.
    X, y = _correlated()
    est = HyFDCAClassifier(HybridPartition(2, 2), encryption=None,
                           max_iter=3, tol=None, random_state=0)
    fitted, _ = _fit_recorded(est, X, y)
    keys = fitted._audit_log["keys"]
    assert sorted(keys) == [f"client{k}" for k in range(4)]
    assert keys["client0"] is keys["client1"]
    assert keys["client0"] is not keys["client2"]
    duals = fitted._audit_log["duals"]["client3"]
    assert len(duals) == 4 and duals[0][0].shape == (75, 1)
    assert not hasattr(est.fit(X, y), "_audit_log")
    with pytest.raises(ValueError, match="record_messages"):
        partner_block(est, [], X, y)


def test_audit_runs_the_client_attacks():
    X, y = _correlated(100)
    report = audit(HyFDCAClassifier(HybridPartition(2, 2), max_iter=15,
                                    tol=None, **SMALL), X, y)
    found = report.attacks[report.attacks.attack == "partner_block"]
    assert set(found.metric) == {"gram_error", "r2_rotation",
                                 "known_rows_r2"}
    assert np.all(found[found.metric == "known_rows_r2"].value > 0.999)
