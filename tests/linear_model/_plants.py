"""A planted HyFDCA leak shared by the privacy tests and the benchmark."""

import numpy as np

from skfed.linear_model import _protocol
from skfed.linear_model._dual import conjugate_values, loss_values


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
