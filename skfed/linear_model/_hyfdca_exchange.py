"""HyFDCA's message exchanges: who sends what to whom in each step.

:class:`Protocol` strings the party functions of :mod:`._protocol`
into the steps of a round (the point's weights by secure aggregation,
Algorithm 2 SecureInnerProduct, the local dual method with its direction's
weights by secure aggregation, the objective reports by secure aggregation,
the step);
:class:`Participation` is the server's choice of clients per round. The
estimator's ``_algorithm_1`` calls these in the order of Algorithm 1.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import copy

import numpy as np

from ..exceptions import DivergenceError
from ..federation import Local
from ..federation.secure_sum import RingEncoder, secure_sum
from . import _protocol as P
from ._reports import client_report, report_bound

__all__ = ["SERVER", "client_name", "Participation", "Protocol",
           "divergence_error"]

SERVER = "server"


def client_name(k):
    return f"client{k}"


class Participation:
    """Which clients take part in round t (chosen by the server).

    Clients take part with their whole row group (a row group's duals move
    only when all its clients are there). ``"random"``: a uniformly random
    subset of ``round(participation * R)`` of the ``R`` row groups each
    round (section 4.2's random subsets; with one column group, of the
    clients). ``"cyclic"``: the row groups are split into
    ``ceil(1 / participation)`` fixed sets that take turns. This cycles
    *row groups*; it is not section 4.3, whose cyclic sets are the clients
    of a vertical split (:class:`._paper.ColumnCycle`,
    ``solver="paper"``).
    """

    def __init__(self, partition, participation, schedule, seed):
        self.n_clients = partition.n_clients
        n_groups = partition.n_row_groups
        self.groups = [partition.clients_of_row_group(r)
                       for r in range(n_groups)]
        self.size = max(1, int(round(participation * n_groups)))
        self.schedule = schedule
        self.rng = np.random.RandomState(seed)
        n_sets = min(n_groups, int(np.ceil(1.0 / participation - 1e-9)))
        self.sets = [sorted(k for r in rows for k in self.groups[int(r)])
                     for rows in np.array_split(np.arange(n_groups),
                                                max(n_sets, 1))]
        # Every client in every round (e.g. participation=0.9 of 4 groups).
        self.all = participation >= 1.0 or (
            len(self.sets) == 1 if schedule == "cyclic"
            else self.size >= n_groups)

    def __call__(self, t):
        if self.all:
            return list(range(self.n_clients))
        if self.schedule == "cyclic":
            return self.sets[(t - 1) % len(self.sets)]
        chosen = self.rng.choice(len(self.groups), self.size, replace=False)
        return sorted(k for r in chosen for k in self.groups[int(r)])


class Protocol:
    """The message exchanges of one HyFDCA round between the parties.

    Each method names who sends what to whom; party functions are in
    :mod:`._protocol`.

    Parameters
    ----------
    fed : Federation
    partition : HybridPartition (resolved)
    columns : dict
        Client index -> weight ids of its columns.
    n_tasks : int
        One-vs-rest tasks (columns of the duals and weights).
    ring_encoder : callable
        ``ring_encoder(scale, n_terms) -> RingEncoder``: the public
        fixed-point encoding of a secure sum of weight changes.
    """

    def __init__(self, fed, partition, columns, n_tasks, ring_encoder):
        self.fed = fed
        self.server = fed[SERVER]
        self.whole_rows = partition.n_column_groups == 1
        self.ring_encoder = ring_encoder
        # Weight ids of each client's columns (the intercept's included).
        self.columns = columns
        self.n_weights = 1 + max(int(np.max(c)) for c in columns.values())
        self.n_tasks = n_tasks
        # Public structure (which client holds which cell), known to all.
        self.row_group = {k: partition.client_cell(k)[0]
                          for k in range(partition.n_clients)}
        self.column_group = {k: partition.client_cell(k)[1]
                             for k in range(partition.n_clients)}

    # -- plumbing ----------------------------------------------------------

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
        """The server sends each client its message (a tuple of arguments)."""
        self.fed.gather(
            self.fed[client_name(k)].call(fn, *message, sender=SERVER,
                                          phase=phase)
            for k, message in messages.items())

    def _decrypted_row_sums(self, clients, phase, own_fn, partial_fn,
                            receive_fn, share_fn, set_fn):
        """Per-row sums over each row group's clients (Algorithm 2's shape).

        One client per row group (the first taking part) decrypts: its
        partners send their encrypted parts (``partial_fn``) to the server,
        which adds them per row group and returns the sum to the decryptor
        only; the decryptor adds its own part (``own_fn``, never encrypted)
        and sends the result to its partners (``"<phase>/shared"``). Every
        client of a row group learns the sums, as when each decrypted them
        in the paper, and the decryptor its partners' total, which it could
        subtract from the full sum anyway; the row group pays one
        decryption instead of one per client and one encryption fewer
        (three quarters of an encrypted fit's CPU went to decryptions).
        """
        decryptors = self._reporters(clients)
        senders = [k for k in clients if k not in decryptors.values()]
        own = [self.fed[client_name(k)].call(own_fn)
               for k in decryptors.values()]
        self._to_server(phase, self._local(senders, partial_fn))
        self.fed.gather(own)
        sums = self.server.call(P.server_run, P.server_sum_over_row_groups,
                                phase).result()
        self._from_server(phase, receive_fn,
                          {k: (sums[r],) for r, k in decryptors.items()})
        shared = {r: self.fed[client_name(k)].call(share_fn)
                  for r, k in decryptors.items()}
        self.fed.gather(
            self.fed[client_name(j)].call(
                set_fn, shared[self.row_group[j]].result(),
                sender=client_name(decryptors[self.row_group[j]]),
                phase=f"{phase}/shared")
            for j in senders)

    def _summed_weights(self, clients, fn, argument, phase, scale):
        """Secure aggregation of the clients' parts of a change of ``w``:
        the server learns one total per column group (the sum over the row
        groups taking part), never a single client's part when two or more
        clients hold the column group's rows this round."""
        n_weights, n_tasks = self.n_weights, self.n_tasks
        total = np.zeros((n_weights, n_tasks))
        by_column = {}
        for k in clients:
            by_column.setdefault(self.column_group[k], []).append(k)
        for c, members in sorted(by_column.items()):
            encoder = self.ring_encoder(scale, len(members))
            # A column group with one client this round has nothing to hide
            # its part in: its own phase, declared as such in the contract.
            name = phase if len(members) > 1 else f"{phase}/alone"
            part = secure_sum(
                self.fed, [client_name(k) for k in members], SERVER, fn,
                argument, phase=name, encoder=encoder, sender=SERVER).result()
            columns = self.columns[members[0]]
            total[columns] += np.asarray(part).reshape(len(columns), n_tasks)
        return total

    # -- the steps ------------------------------------------------------------

    def agree_scale(self, clients):
        """A federated maximum of the clients' largest row-part norms (as a
        binary exponent), agreed before anything is encrypted or encoded."""
        self._to_server("setup/scale", self._local(clients,
                                                   P.client_scale_exponent))
        scale = self.server.call(P.server_run, P.server_agree_scale,
                                 "setup/scale").result()
        self._from_server("setup/scale", P.client_receive_scale,
                          {k: (scale,) for k in clients})
        return scale

    def total_weight(self, clients):
        """With sample weights: the total weight ``S`` of all rows, which
        the objective's average divides by. One client per row group sends
        the binary exponent of its group's total (the server keeps the
        largest, ``e``, and sends it back with the request); they sum
        ``2**-e`` times their totals securely (every share below 1, so any
        magnitude keeps full precision); the server scales the sum back and
        sends ``S`` to every client. The weights themselves never leave the
        clients holding their rows."""
        reporters = sorted(self._reporters(clients).values())
        phase = "setup/weights"
        self._to_server(f"{phase}/scale", self._local(
            reporters, P.client_weight_exponent))
        exponent = self.server.call(P.server_run, P.server_largest_exponent,
                                    f"{phase}/scale").result()
        name = phase if len(reporters) > 1 else f"{phase}/alone"
        scaled = secure_sum(
            self.fed, [client_name(k) for k in reporters], SERVER,
            P.client_weight_sum, exponent, phase=name, sender=SERVER,
            encoder=RingEncoder.for_bound(1.0, n_terms=len(reporters))).result()
        total = self.server.call(P.server_set_total_weight, Local(scaled),
                                 Local(exponent)).result()
        self._from_server(phase, P.client_receive_total_weight,
                          {k: (total,) for k in clients})
        return float(total[0])

    def squared_norms(self, clients):
        """||x_i||^2 of every row, once, for the coordinate steps."""
        if self.whole_rows:
            self._local(clients, P.client_local_sqnorms)
        else:
            self._decrypted_row_sums(
                clients, "squared norms", P.client_own_sqnorms,
                P.client_partial_sqnorms, P.client_receive_sqnorms,
                P.client_sqnorms, P.client_set_sqnorms)

    def point_weights(self, clients, mu, scale):
        """The round's point (momentum): the clients' parts of the change of
        ``w`` are summed securely; the server adds the total to ``w``."""
        if mu is None or not np.any(mu > 0):
            self._local(clients, P.client_reset_point)
            self.server.call(P.server_point_weights, Local(None)).result()
            return
        shift = self._summed_weights(clients, P.client_extrapolate, mu,
                                     "point", scale)
        self.server.call(P.server_point_weights, Local(shift)).result()

    def send_weights(self, clients):
        """Server -> clients: the weights of their own columns (and the
        binary exponent bounding this round's inner-product parts)."""
        weights = self.server.call(P.server_weights_for, clients).result()
        self._from_server("primal weights", P.client_receive_weights, weights)

    def secure_inner_product(self, clients):
        """Algorithm 2 (or a local product when clients hold whole rows),
        decrypted by one client per row group (:meth:`_decrypted_row_sums`).
        """
        if self.whole_rows:
            self._local(clients, P.client_local_inner_products)
            return
        self._decrypted_row_sums(
            clients, "inner products", P.client_own_inner_products,
            P.client_partial_inner_products, P.client_receive_inner_products,
            P.client_inner_products, P.client_set_inner_products)

    def local_dual_method(self, clients, beta, scale):
        """Each participant's dual direction; its weights summed securely."""
        return self._summed_weights(clients, P.client_direction, beta,
                                    "direction", scale)

    def reset_point(self, clients):
        """The clients' evaluation point goes back to their duals."""
        self._local(clients, P.client_reset_point)

    def no_direction(self, clients):
        self._local(clients, P.client_no_direction)

    def _reporters(self, clients):
        """Row group -> its first client among ``clients``."""
        reporters = {}
        for k in clients:
            reporters.setdefault(self.row_group[k], k)
        return reporters

    def reports(self, clients, grid):
        """The row groups' objective reports, summed securely: the first
        participant of each row group shares the changes of its group's
        loss and conjugate sums (:mod:`._reports`); the server
        learns their total over the row groups taking part, and which row
        groups those are. With one row group taking part the sum has one
        term (its own phase, declared as such in the contract)."""
        reporters = self._reporters(clients)
        groups = sorted(reporters)
        bound = self.server.call(report_bound).result()
        members = [client_name(reporters[r]) for r in groups]
        name = "objective report" if len(members) > 1 else (
            "objective report/alone")
        encoder = RingEncoder.for_bound(bound, n_terms=len(members))
        total = secure_sum(
            self.fed, members, SERVER, client_report, grid, bound,
            encoder.frac_bits, phase=name, encoder=encoder,
            sender=SERVER).result()
        return total, encoder.frac_bits, groups

    def apply_step(self, clients, gammas, accept):
        """Server -> participants: the step length (and whether the step is
        taken) per task; they move their duals."""
        self._from_server("step", P.client_apply_step,
                          {k: (gammas, accept) for k in clients})


def divergence_error(est, server, t, out):
    """The error a diverging fixed step raises, with the last good model."""
    kept = copy.copy(est)
    try:
        w = server.call(P.server_model, True).result()
        n = est.n_features_in_
        kept.coef_ = np.ascontiguousarray(w[:n].T)
        kept.intercept_ = (est.intercept_scaling * w[n] if est.fit_intercept
                           else np.zeros(w.shape[1]))
    except Exception:  # pragma: no cover - the error below matters more
        kept = None
    return DivergenceError(
        f"HyFDCA diverged at round {t}: the dual objective fell to "
        f"{out.get('fallen_to', float('nan')):.3g} (the zero model's is 0) "
        "with the fixed "
        f"step_size={est.step_size}; use step_size='auto' (a line search "
        "that never lets it fall) or a smaller step_size. The last good "
        "model is kept in this error's `estimator` attribute.",
        estimator=kept, round=t)
