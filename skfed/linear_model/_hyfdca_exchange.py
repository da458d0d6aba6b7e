"""HyFDCA's message exchanges: who sends what to whom in each step.

:class:`Protocol` strings the party functions of :mod:`._hyfdca_protocol`
into the paper's steps (sending the duals, Algorithm 2 SecureInnerProduct,
Algorithm 4 PrimalAggregation, the local dual method's encrypted updates);
:class:`Participation` is the server's choice of clients per round. The
estimator's ``_algorithm_1`` calls these in the order of Algorithm 1.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np

from ..federation import Local
from . import _hyfdca_protocol as P

__all__ = ["SERVER", "client_name", "Participation", "Protocol"]

SERVER = "server"


def client_name(k):
    return f"client{k}"


class Participation:
    """Which clients take part in round t (chosen by the server).

    ``"random"``: a uniformly random subset of ``round(participation * K)``
    clients each round (section 4.2). ``"cyclic"``: the clients are split into
    ``ceil(1 / participation)`` fixed sets that take turns (section 4.3).
    """

    def __init__(self, n_clients, participation, schedule, seed):
        self.n_clients = n_clients
        self.size = max(1, int(round(participation * n_clients)))
        self.schedule = schedule
        self.rng = np.random.RandomState(seed)
        n_sets = min(n_clients, int(np.ceil(1.0 / participation - 1e-9)))
        self.sets = [s.tolist() for s in
                     np.array_split(np.arange(n_clients), max(n_sets, 1))]
        # Every client in every round (e.g. participation=0.9 of 4 clients).
        self.all = participation >= 1.0 or (
            len(self.sets) == 1 if schedule == "cyclic"
            else self.size >= n_clients)

    def __call__(self, t):
        if self.all:
            return list(range(self.n_clients))
        if self.schedule == "cyclic":
            return self.sets[(t - 1) % len(self.sets)]
        return sorted(self.rng.choice(self.n_clients, self.size,
                                      replace=False).tolist())



class Protocol:
    """The message exchanges of Algorithms 1, 2 and 4 between the parties.

    Each method names who sends what to whom; party functions are in
    :mod:`._hyfdca_protocol`.
    """

    def __init__(self, fed, whole_rows, row_group_of):
        self.fed = fed
        self.server = fed[SERVER]
        self.whole_rows = whole_rows
        # Public structure (which client holds which row group), known to all.
        self.row_group = row_group_of

    def _local(self, clients, fn, *args):
        """Every client in ``clients`` runs ``fn`` on its own state."""
        return dict(zip(clients, self.fed.gather(
            self.fed[client_name(k)].call(fn, *args) for k in clients)))

    def _to_server(self, phase, messages):
        """Each client sends its message of ``phase`` to the server."""
        self.fed.gather(
            self.server.call(P.server_inbox, Local(phase), Local(k), message,
                             sender=client_name(k), phase=phase)
            for k, message in messages.items())

    def _from_server(self, phase, fn, messages):
        """The server sends each client its message (``messages[k]``)."""
        self.fed.gather(
            self.fed[client_name(k)].call(fn, message, sender=SERVER,
                                          phase=phase)
            for k, message in messages.items())

    def _row_sums(self, clients, partial_fn, sum_fn, receive_fn, phase):
        """Encrypted per-row parts, added by the server over each row group,
        then returned to the clients of that row group (Algorithm 2's shape).
        """
        self._to_server(phase, self._local(clients, partial_fn))
        sums = self.server.call(P.server_run, sum_fn, phase).result()
        self._from_server(phase, receive_fn,
                          {k: sums[self.row_group[k]] for k in clients})

    def squared_norms(self, clients):
        """||x_i||^2 of every row, once, for the coordinate steps."""
        if self.whole_rows:
            self._local(clients, P.client_local_sqnorms)
        else:
            self._row_sums(clients, P.client_partial_sqnorms,
                           P.server_sum_over_row_groups,
                           P.client_receive_sqnorms, "squared norms")

    def send_duals(self, clients):
        """Server -> clients: enc(alpha_0) of their rows; they decrypt."""
        duals = self.server.call(P.server_duals_for, clients).result()
        self._from_server("send duals", P.client_receive_duals, duals)

    def primal_aggregation(self, senders, receivers):
        """Algorithm 4: w_hat_k from ``senders``, w_0 to ``receivers``."""
        self._to_server("primal aggregation",
                        self._local(senders, P.client_local_primal))
        self.server.call(P.server_run, P.server_primal_aggregation,
                         "primal aggregation").result()
        weights = self.server.call(P.server_weights_for, receivers).result()
        self._from_server("primal weights", P.client_receive_weights, weights)

    def secure_inner_product(self, clients):
        """Algorithm 2 (or a local product when clients hold whole rows)."""
        if self.whole_rows:
            self._local(clients, P.client_local_inner_products)
        else:
            self._row_sums(clients, P.client_partial_inner_products,
                           P.server_inner_products,
                           P.client_receive_inner_products, "inner products")

    def objective(self, clients):
        """One participant per row group reports its loss/conjugate sums."""
        reporters = {}
        for k in clients:
            reporters.setdefault(self.row_group[k], k)
        self._to_server("objective report", self._local(
            list(reporters.values()), P.client_objective_report))
        return self.server.call(P.server_run, P.server_objective,
                                "objective report").result()

    def local_dual_method(self, clients, gamma):
        """Algorithm 5 on each participant; encrypted updates to the server."""
        updates = dict(zip(clients, self.fed.gather(
            self.fed[client_name(k)].call(P.client_local_dual, gamma,
                                          sender=SERVER, phase="step size")
            for k in clients)))
        self._to_server("dual updates", updates)
