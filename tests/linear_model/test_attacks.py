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
from skfed.linear_model._attacks import report_inversion, row_reconstruction
from skfed.partition import HorizontalPartition, HybridPartition
from skfed.privacy import audit, check_messages

from ._plants import SMALL, X, Y, restore_plain_reports
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
