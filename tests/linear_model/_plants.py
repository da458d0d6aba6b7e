"""A planted HyFDCA leak shared by the privacy tests and the benchmark, and
the recorded fits those tests share."""

import numpy as np
from sklearn.datasets import make_classification
from sklearn.preprocessing import StandardScaler

from skfed.federation import record_messages
from skfed.linear_model import _protocol
from skfed.linear_model._dual import conjugate_values, loss_values


X, Y = make_classification(300, 12, n_informative=6, random_state=0)
X = StandardScaler().fit_transform(X)
SMALL = dict(key_size=512, random_state=0)


def fit_recorded(estimator, X=X, y=Y):
    with record_messages() as rec:
        estimator.fit(X, y)
    return estimator, rec.messages


def found(violations, phase=None):
    return " | ".join(v.found for v in violations
                      if phase is None or v.phase == phase)


def _plain_report(client, grid):
    """The per-row-group report of the protocol before issue 25: the loss
    sum at the round's point, the conjugate sums along the direction."""
    losses = (client.s * loss_values(client.loss, client.margins)).sum(axis=0)
    conj = np.stack([(client.s * conjugate_values(
        client.loss, client.point + s * client.direction)).sum(axis=0)
        for s in grid])
    return np.vstack([losses[None, :], conj])


def restore_plain_reports(monkeypatch):
    """Each row group's reporter also sends its plaintext report (phase
    ``"objective report"``, as before the reports were summed securely);
    the fit runs on the secure sums as before."""
    original = _protocol.Protocol.reports

    def leaky_reports(self, clients, grid):
        out = original(self, clients, grid)
        reporters = list(self._reporters(clients).values())
        self._to_server("objective report",
                        self._local(reporters, _plain_report, grid))
        return out

    monkeypatch.setattr(_protocol.Protocol, "reports", leaky_reports)


def plant_squared_norms(monkeypatch):
    """Every fit also runs the setup exchange of the rows' squared norms
    (``dual_curvature="row_norm"``'s route: each client of a row group
    learns its partners' norms) right after agreeing on the scale; the
    curvature the fit uses is its own setting's."""
    agree = _protocol.Protocol.agree_scale

    def leaky(self, clients):
        scale = agree(self, clients)
        self.squared_norms(clients)
        return scale

    monkeypatch.setattr(_protocol.Protocol, "agree_scale", leaky)
