"""HyFDCA ``solver="paper"``: Algorithm 1 of Overman, Blum and Klabjan.

:class:`PaperSolver` makes its parties with the setup both solvers share
(:meth:`._protocol.Solver.set_up_parties`: the same clients' blocks, key
pair and party states; it adds the paper's own state) and its
:meth:`~PaperSolver.algorithm_1` reads as the paper's box;
:class:`ClientParticipation` and :class:`ColumnCycle` choose Algorithm 1's
``K^t`` client by client (at random, or section 4.3's cyclic sets). The
reading of the paper, where it is ambiguous, is in the estimator's Notes.

The party functions below run on one party's thread and see only that
party's state and the message it received; what one returns is the message
it sends. What differs from the accelerated solver's parties
(:mod:`._protocol`, whose setup, curvature exchange and Algorithm 2 parts
are reused unchanged):

- the server holds the global duals ``alpha_0``, **encrypted** under the key
  pair the clients share (one ciphertext per row and task, kept per row
  group), and adds the clients' encrypted, scaled changes to them
  homomorphically (:func:`server_add_duals`); it never decrypts anything;
- a client's local method is Algorithm 3 (the one-dimensional maximiser
  on its segment of length ``c_k gamma_t``) or, with
  ``step_size="algorithm_5"``, Algorithm 5 (the whole maximiser)
  (:func:`client_local_dual_method`);
- a client's part of ``w`` (Algorithm 4's ``w_hat_k``) goes to the server as
  the change since its last upload, summed over its column group by secure
  aggregation (:func:`client_primal_part`);
- the server keeps each client's last encrypted inner-product parts, so the
  parts of absent clients (section 4.3) enter the sum stale
  (:func:`server_store_inner_products`).

The duals live, as in the accelerated solver, in label direction and per
unit weight (``a_i = y_i alpha_i / s_i``): hinge and logistic duals in
[0, 1].
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import time
import warnings
from functools import reduce

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from .._progress import Progress
from ..base import party_seeds
from ..exceptions import DivergenceError
from ..federation import Local, protocol_rounds
from . import _protocol as P
from ._dual import ZERO_MODEL_LOSS, dual_step
from ._protocol import DUAL_CURVATURES, SERVER, Solver, client_name

__all__ = ["PaperSolver", "ColumnCycle", "ClientParticipation",
           "cyclic_sets", "paper_steps", "covering_theorem",
           "paper_local_iterations", "paper_client_state", "local_curvature",
           "client_local_dual_method", "server_add_duals",
           "client_receive_duals", "client_primal_part", "server_add_weights",
           "server_store_inner_products", "client_receive_own_inner_products",
           "server_weight_norm"]


class ColumnCycle:
    """Cyclic participation of individual clients: the clients are split
    into ``C = ceil(1 / participation)`` fixed sets (at least 2, at most the
    number of clients) that take part in turn, ``B_1, ..., B_C, B_1, ...``.

    On a vertical split this is section 4.3's Assumption 4.10, which needs
    ``C`` sets of equal size (``Q mod C = 0``); the estimator refuses a
    vertical split whose clients do not divide evenly
    (:func:`._estimator.check_participation`). On a split with more than
    one row group no theorem covers cyclic participation; the sets are as
    equal as the count allows."""

    all = False

    def __init__(self, n_clients, participation):
        n_sets = cyclic_sets(n_clients, participation)
        self.sets = [list(map(int, s)) for s in
                     np.array_split(np.arange(n_clients), n_sets)]

    def __call__(self, t):
        return self.sets[(t - 1) % len(self.sets)]


def cyclic_sets(n_clients, participation):
    """``C`` of :class:`ColumnCycle`: ``ceil(1 / participation)``, at least
    two (Assumption 4.10's ``C >= 2``), at most ``n_clients``."""
    return min(n_clients, max(2, int(np.ceil(1.0 / participation - 1e-9))))


class ClientParticipation:
    """Random participation of individual clients (Algorithm 1's ``K^t``):
    each round ``round(participation * K)`` of the ``K`` clients (at least
    one), drawn uniformly without replacement, so every client is equally
    likely (Assumption 4.7; a fixed size never leaves a round empty).

    Unlike :class:`._protocol.Participation`, which moves whole row groups
    (the accelerated solver), a client takes part without its row group's
    other clients: the absent ones send nothing that round, their duals,
    weights and stored inner-product parts stay stale (sections 4.2-4.3).
    On a horizontal split (one client per row group) the two draw the same
    subsets from the same seed."""

    def __init__(self, n_clients, participation, seed):
        self.n_clients = n_clients
        self.size = max(1, int(round(participation * n_clients)))
        self.rng = np.random.RandomState(seed)
        self.all = participation >= 1.0 or self.size >= n_clients

    def __call__(self, t):
        if self.all:
            return list(range(self.n_clients))
        return sorted(map(int, self.rng.choice(self.n_clients, self.size,
                                               replace=False)))


def paper_steps(step_size, partition, participation, n_samples):
    """``(gamma(t), c_k(rows), rule)`` of the setting (section 4).

    ``step_size="auto"``: the steps of the theorem that covers the setting,
    ``gamma_t = 1/t`` and ``c_k = 1`` for cyclic vertical participation
    (Theorem 4.11); ``gamma_t = 1`` and ``c_k = 1`` for a horizontal split
    (Theorem 4.8, all or random subsets of clients); ``gamma_t = 1`` and
    ``c_k = N_k / N`` otherwise (Theorem 4.4). A float ``step_size``
    replaces ``gamma_t`` (any value > 0: ``c_k gamma_t`` above 1 only lets
    Algorithm 3's segment reach past ``u_i``, which the dual box clips).
    ``"algorithm_5"``: Algorithm 5, the whole one-dimensional step
    (``c_k gamma_t = 1`` for every client, ``gamma_t = 1``), rule
    ``"Algorithm 5"``; :func:`covering_theorem` says which theorem, if any,
    covers it.
    """
    cyclic_vertical = partition.n_row_groups == 1 and participation < 1
    if step_size == "algorithm_5":
        rule = "Algorithm 5"
    elif cyclic_vertical:
        rule = "Theorem 4.11"
    elif partition.n_column_groups == 1:
        rule = "Theorem 4.8"
    else:
        rule = "Theorem 4.4"
    if step_size not in ("auto", "algorithm_5"):
        def gamma(t):
            return float(step_size)
    elif rule == "Theorem 4.11":
        def gamma(t):
            return 1.0 / t
    else:
        def gamma(t):
            return 1.0

    def c_k(n_rows):
        return n_rows / n_samples if rule == "Theorem 4.4" else 1.0
    return gamma, c_k, rule


def covering_theorem(step_size, partition, participation,
                     schedule="random"):
    """The theorem of section 4 whose steps and setting a fit matches, or
    ``None`` (the steps then come from the nearest theorem, without its
    guarantee).

    - horizontal split (one column group), ``gamma_t = 1`` and ``c_k = 1``
      (``"auto"``, ``1.0`` or ``"algorithm_5"``, which coincide there),
      all clients or random subsets: Theorem 4.8 (all clients: ``P = K``);
      cyclic sets of clients: none;
    - vertical split, cyclic sets of clients, ``"auto"`` (``gamma_t =
      1/t``): Theorem 4.11; any constant step: none;
    - vertical split, all clients, ``gamma_t = 1`` (``c_k = N_k/N = 1``, so
      ``"algorithm_5"`` too): Theorem 4.4/4.5;
    - hybrid grid, all clients, ``"auto"`` or ``1.0`` (``c_k = N_k/N``):
      Theorem 4.4/4.5; ``"algorithm_5"`` (``c_k gamma_t = 1``, the paper's
      experiments): none;
    - hybrid grid, clients missing: none (section 4.2: "problems still
      exist for convergence proofs").

    Every theorem also needs ``H <= N`` (``P H <= N`` for Theorem 4.8),
    which Algorithm 3's ``H <= N_k`` implies, and Lipschitz losses
    (Assumption 4.1). Theorem 4.8 assumes ``N/K`` rows per client
    (Assumption 4.6) and Theorem 4.11 equal cyclic sets (Assumption 4.10).
    """
    R, C = partition.n_row_groups, partition.n_column_groups
    gamma_one = step_size in ("auto", "algorithm_5") or (
        not isinstance(step_size, str) and float(step_size) == 1.0)
    if C == 1:
        if participation < 1 and schedule == "cyclic":
            return None
        return "Theorem 4.8" if gamma_one else None
    if R == 1 and participation < 1:
        return "Theorem 4.11" if step_size == "auto" else None
    if participation < 1:
        return None
    if R == 1:
        return "Theorem 4.4" if gamma_one else None
    return "Theorem 4.4" if gamma_one and step_size != "algorithm_5" else None


def paper_local_iterations(local_iterations, n_rows, rule):
    """``H`` of a client with ``n_rows`` rows: an int as given (the
    estimator has checked ``H <= n_rows``, Algorithm 3's draw without
    replacement); ``"auto"`` is one pass under Theorem 4.11 (``gamma_t =
    1/t``, whose shrinking step settles after the first rounds) and
    ``ceil(sqrt(n_rows))`` under a constant ``gamma_t`` (Theorems 4.4 and
    4.8, Algorithm 5).

    The paper tunes ``H`` per data set and gives no default. All ``H``
    coordinates move against the same ``w`` with the constant step, so a
    whole pass overshoots where rows are correlated: on breast cancer
    (2 x 2), a 600-row and a 3-class 600-row ``make_classification`` it
    diverged, as on wine and a 2,000-row table, while ``ceil(sqrt(n_rows))``
    (10 to 32 there) matched ``LinearSVC``'s training accuracy on all five,
    with relative primal gaps of 4e-5 to 1.7e-3 after 1,000 rounds on the
    binary ones (``benchmarks/bench_hyfdca_paper_h.py``). It is our default,
    not the paper's.
    """
    if local_iterations != "auto":
        return int(local_iterations)
    if rule == "Theorem 4.11":
        return int(n_rows)
    return min(int(n_rows), max(1, int(np.ceil(np.sqrt(n_rows)))))


# -- the parties' functions -----------------------------------------------------

#: absolute precision of the encrypted duals' fixed-point encoding (the
#: duals of the hinge and logistic losses lie in [0, 1])
DUAL_PRECISION = 2.0 ** -44


def paper_client_state(state, *, c_k, algorithm, dual_curvature):
    """Add the paper solver's keys to a client state of
    :func:`._protocol.client_state`: ``c_k`` of Algorithm 3, the local
    method (``algorithm``: 3 or 5), the curvature of its quadratic term
    (``dual_curvature``, :func:`local_curvature`) and the duals at its last
    upload of ``w_hat_k``."""
    if dual_curvature not in DUAL_CURVATURES:
        raise ValueError(f"unknown dual_curvature {dual_curvature!r}")
    state = dict(state)
    state["c_k"] = float(c_k)
    state["algorithm"] = int(algorithm)
    state["dual_curvature"] = dual_curvature
    state["A_sent"] = state["A"].copy()
    return state


def local_curvature(client, chosen):
    """``q`` of the chosen rows' subproblem ``g(a + d) - d b - q d^2 / 2``
    (``d`` the move of ``a_i``, per unit weight, in label direction).

    - ``"auto"`` (skfed's default), ``"mean"`` and ``"row_norm"`` (each a
      deviation from both boxes): ``s_i q_i / (lambda N)`` with the
      ``q_i`` the setup set (:func:`._protocol.curvature_exchange`):
      ``kappa = 2`` times the public mean squared row norm over all rows
      (``"mean"``, and ``"auto"`` where clients hold parts of rows), or
      the exact ``||x_i||^2`` (``"row_norm"``, which sends a row group's
      clients their partners' squared norms; ``"auto"`` on whole rows,
      computed locally).
    - ``"paper"``: the printed term of the box that runs, which needs no
      norm. Algorithm 3's ``gamma_t^2 / (2 lambda) (s c_k (u - alpha))^2``
      is ``d^2 / (2 lambda)`` in the move: ``q = s_i / lambda``. Algorithm
      5's ``lambda N / 2 (delta / (lambda N))^2``: ``q = s_i / (lambda N)``,
      the exact curvature of a unit-norm row.
    """
    s = client.s[chosen]
    if client.dual_curvature != "paper":
        return s * client.sqnorm[chosen, None] / (client.lam * client.N)
    if client.algorithm == 5:
        return s / (client.lam * client.N)
    return s / client.lam


def _timed(state, fn, *args, **kwargs):
    start = time.perf_counter()
    out = fn(*args, **kwargs)
    state.crypto_seconds += time.perf_counter() - start
    return out


def _sum(state, parts):
    """Homomorphic sum of ``parts``; a single part is re-randomised (the
    server never echoes a client's own ciphertext back)."""
    if len(parts) == 1:
        return _timed(state, parts[0].rerandomize)
    return _timed(state, reduce, lambda x, y: x + y, parts)


def _subgradient_dual(loss, margins):
    """``u`` of Algorithm 3 in label direction: ``-l'(m)`` at the margin
    (for the hinge, 1 below margin 1 and 0 above)."""
    if loss == "hinge":
        return (margins < 1.0).astype(float)
    if loss == "squared_hinge":
        return np.maximum(0.0, 1.0 - margins)
    return 1.0 / (1.0 + np.exp(np.clip(margins, -700, 700)))


# -- LocalDualMethod (Algorithms 3 and 5) ---------------------------------------

def client_local_dual_method(client, gamma):
    """Algorithm 3 or 5 on ``H`` of the client's rows drawn without
    replacement (``H <= N_k``, checked by the estimator).

    Each chosen coordinate takes the maximiser of its one-dimensional dual
    subproblem (curvature :func:`local_curvature`). Algorithm 3 restricts it
    to the segment from ``a_i`` towards ``u_i`` of length ``c_k gamma_t``;
    Algorithm 5 (``client.algorithm == 5``) takes it whole, the box's
    ``c_k gamma_t = 1`` for every client whatever its rows (for the hinge
    the two coincide when ``c_k gamma_t = 1``). The message is
    ``enc(gamma_t / |B_n| * delta alpha)`` for **every** row of the client
    (zeros for the rows not chosen: the server does not learn which were),
    ``|B_n|`` the number of clients holding the row.
    """
    A, n_rows = client.A, client.A.shape[0]
    H = client.H
    chosen = (np.arange(n_rows) if H >= n_rows else
              np.sort(client.rng.choice(n_rows, size=H, replace=False)))
    a, m = A[chosen], client.margins[chosen]
    best = dual_step(client.loss, a, m, local_curvature(client, chosen))
    if client.algorithm == 5:
        # Algorithm 5 in Algorithm 1 with gamma_t = 1: the move itself.
        moved = best
    else:
        end = a + client.c_k * float(gamma) * (
            _subgradient_dual(client.loss, m) - a)
        moved = np.clip(best, np.minimum(a, end), np.maximum(a, end))
    change = np.zeros_like(A)
    # gamma_t / |B_n| * delta alpha, delta alpha = s c_k (u - a) = moved / gamma
    change[chosen] = (moved - a) / client.n_holders
    if not np.all(np.isfinite(change)):
        raise FloatingPointError("non-finite dual step")
    key = client.private_key
    return _timed(client, key.encrypt, change, precision=DUAL_PRECISION,
                  n_jobs=client.n_jobs)


def server_add_duals(server, changes):
    """``enc(alpha_0,n) += sum_{b in B_n} enc(gamma_t/|B_n| delta alpha_b,n)``:
    homomorphic sums per row group (``changes`` maps client index to its
    message); returns the encrypted duals of each row group."""
    by_group = {}
    for k, change in sorted(changes.items()):
        by_group.setdefault(server.row_group_of[k], []).append(change)
    for r, parts in by_group.items():
        if r in server.enc_duals:
            parts = [server.enc_duals[r]] + parts
        server.enc_duals[r] = _sum(server, parts)
    return dict(server.enc_duals)


def client_receive_duals(client, enc_duals):
    """Decrypt ``enc(alpha_0)`` of the client's rows: its duals."""
    client.A = np.asarray(_timed(client, client.private_key.decrypt, enc_duals,
                                 n_jobs=client.n_jobs),
                          dtype=np.float64).reshape(client.A.shape)


# -- PrimalAggregation (Algorithm 4) ---------------------------------------------

def client_primal_part(client, _=None):
    """The change of the client's ``w_hat_k / (lambda N)`` since its last
    upload: ``X_k^T (y * s * (A - A_sent)) / (lambda N)`` (summed over the
    column group by secure aggregation)."""
    diff = client.A - client.A_sent
    client.A_sent = client.A.copy()
    return np.asarray(client.X.T @ (client.Y * client.s * diff)) / (
        client.lam * client.N)


def server_add_weights(server, total):
    """``w_0 = 1/(lambda N) sum_k w_hat_0,k``: the summed change added; the
    weights the next inner products use are these."""
    server.w = server.w + total
    server.w_point = server.w
    return bool(np.all(np.isfinite(server.w)))


def server_weight_norm(server):
    """``lambda/2 ||w||^2`` per task (the server's own ``w``)."""
    return 0.5 * server.lam * np.sum(server.w ** 2, axis=0)


# -- SecureInnerProduct (Algorithm 2) with the stale parts of absent clients ---

def server_store_inner_products(server, parts):
    """Keep each sender's latest ``ip_{k,i}``; return per row group the
    homomorphic sum over **all** its clients' latest parts (an absent
    client's part is its last one, section 4.3; never sent: 0, as
    ``w_k = 0`` then)."""
    server.ip_store.update(parts)
    by_group = {}
    for k, part in sorted(server.ip_store.items()):
        by_group.setdefault(server.row_group_of[k], []).append(part)
    return {r: _sum(server, group) for r, group in by_group.items()}


def client_receive_own_inner_products(client, enc_xw):
    """Every client decrypts ``enc(x_i^T w)`` of its rows (Algorithm 2)."""
    xw = np.asarray(_timed(client, client.private_key.decrypt, enc_xw,
                           n_jobs=client.n_jobs), dtype=np.float64)
    client.xw = xw.reshape(client.margins.shape)
    client.margins = client.Y * client.xw


# -- the driver ----------------------------------------------------------------

class PaperSolver(Solver):
    """``solver="paper"``: Algorithm 1 as published (the second part of the
    class Notes). It reads no ``tol`` (every round runs) and packs nothing.

    ``dual_curvature`` selects :func:`local_curvature`; the public mean
    curvature carries the margin ``kappa = 2`` (:attr:`curvature_margin`,
    ours: the constant ``gamma_t`` has no line search to set the level, and
    the plain mean overshoots on rows of large norm).
    ``step_size="algorithm_5"`` runs Algorithm 5 as the local method.
    """

    curvature_margin = 2.0

    def __init__(self, **params):
        super().__init__(**params)
        if self.loss == "squared_hinge":
            raise ValueError(
                "solver='paper' needs an L-Lipschitz loss (the paper's "
                "Assumption 4.1: its theorems bound the steps with L, and the "
                "duals stay in [0, 1]); the squared hinge is not. Use "
                "loss='hinge' (the paper's) or 'logistic', or "
                "solver='accelerated'.")

    def set_up(self, X, Y, weights, partition):
        K = partition.n_clients
        n_rows = [len(partition.client_rows(k)) for k in range(K)]
        seeds = party_seeds(self.random_state, 1 + K)
        _, c_k, rule = paper_steps(self.step_size, partition,
                                   self.participation, X.shape[0])
        # The duals are encrypted even when clients hold whole rows: a key
        # pair always. Each client draws its own coordinates (Algorithm 3).
        setup = self.set_up_parties(
            X, Y, weights, partition, keyed=True, packing=False,
            participation_seed=seeds[0], client_seeds=seeds[1:],
            local_iterations=[paper_local_iterations(
                self.local_iterations, n, rule) for n in n_rows],
            tol=None, grid=np.zeros(1))
        # The paper's own state: the server's encrypted duals and each
        # client's latest inner-product parts; each client's c_k and its
        # duals at its last upload of w_hat_k.
        setup.states[SERVER].update(enc_duals={}, ip_store={})
        for k in range(K):
            setup.states[client_name(k)] = paper_client_state(
                setup.states[client_name(k)], c_k=c_k(n_rows[k]),
                algorithm=5 if rule == "Algorithm 5" else 3,
                dual_curvature=self.dual_curvature)
        return setup

    def algorithm_1(self, fed, protocol, setup, keep=None):
        """Algorithm 1 (HyFDCA), round by round as in the box. The loop
        evaluates no objective: the curve and the gap are NaN."""
        server = fed[SERVER]
        partition = setup.partition
        everyone = list(range(partition.n_clients))
        # K^t: individual clients (Algorithm 1), drawn at random or in
        # cyclic sets; a client takes part without its row group's others.
        if self.participation < 1 and self.schedule == "cyclic":
            participants = ColumnCycle(partition.n_clients,
                                       self.participation)
        else:
            participants = ClientParticipation(
                partition.n_clients, self.participation,
                setup.participation_seed)
        cyclic_vertical = (partition.n_row_groups == 1
                           and self.participation < 1)
        gamma, _, _ = paper_steps(self.step_size, partition,
                                  self.participation, setup.n_samples)
        scale = protocol.agree_scale(everyone)
        # The steps' curvature, once (the public mean, or the rows' norms);
        # the boxes' printed terms need none, and then none is sent.
        self.set_up_curvature(protocol, everyone)
        previous = set()
        # Every round runs (no tol) and the duals are encrypted even on whole
        # rows: an encrypted fit's first line tells the wait (issue 28).
        progress = Progress("HyFDCA (paper)", self.max_iter, self.verbose,
                            fed=fed, estimate=self.encryption is not None)
        t, regs = 0, []
        for t in protocol_rounds(range(1, self.max_iter + 1)):
            clients = participants(t)  # K^t
            # K-bar^t, the clients that need enc(alpha_0) and a fresh
            # PrimalAggregation: the box prints {k in K^t, k not in
            # K-bar^{t-1}}, a typo for K^{t-1} (read literally it re-syncs
            # every other round clients that are up to date; both readings
            # give the same iterates, only the messages differ).
            arrivals = [k for k in clients if k not in previous]
            # Send enc(alpha_0^t) to the arrivals; PrimalAggregation(K-bar^t).
            if arrivals and t > 1:
                send_duals(protocol, arrivals)
                primal_aggregation(protocol, arrivals, scale)
            # SecureInnerProduct(K^t).
            secure_inner_product(protocol, clients)
            # LocalDualMethod on every client of K^t; enc(gamma/|B_n| d alpha).
            g = gamma(t)
            protocol._to_server("duals", protocol._local(
                clients, client_local_dual_method, g))
            # The server adds them to enc(alpha_0), sends enc(alpha_0^t) to
            # K^t, which decrypt; PrimalAggregation(K^t).
            send_duals(protocol, clients, add=True)
            finite = primal_aggregation(protocol, clients, scale)
            # The second SecureInnerProduct: only where an absent client's
            # part is used later (cyclic vertical); otherwise it is the next
            # round's first (omitted in the paper's experiments too).
            if cyclic_vertical:
                secure_inner_product(protocol, clients)
            previous = set(clients)
            regs.append(float(np.max(
                server.call(server_weight_norm).result())))
            progress.report(t, f"gamma_t {g:.3g} ({len(clients)} clients)",
                            last=t == self.max_iter or not finite)
            if not finite:
                raise self._divergence(t, "non-finite weights")
        # A w whose regulariser alone exceeds the zero model's objective is
        # worse than w = 0. Any such w in the second half of the rounds: the
        # fixed step overshoots and oscillates (issue 30: relative loss 644
        # with one pass per round); early rounds may overshoot and recover.
        late = max(regs[len(regs) // 2:], default=0.0)
        if late > ZERO_MODEL_LOSS[self.loss]:
            what = (f"lambda/2 ||w||^2 reached {late:.3g} in the last half of "
                    "the rounds, above the zero model's objective "
                    f"{ZERO_MODEL_LOSS[self.loss]:.3g}")
            if not cyclic_vertical or self.step_size != "auto":
                raise self._divergence(t, what)
            # gamma_t = 1/t shrinks: its first rounds overshoot, then it
            # settles (Theorem 4.11); an unfinished fit, not a divergence.
            warnings.warn(
                f"HyFDCA (solver='paper', cyclic vertical participation) is "
                f"not settled after {t} rounds: {what}. gamma_t = 1/t "
                "overshoots in its first rounds; raise max_iter.",
                ConvergenceWarning)
        w = server.call(P.server_model, False).result()
        return w, np.full((t, 2), np.nan), t, float("nan")

    def _divergence(self, t, what):
        return DivergenceError(
            f"HyFDCA (solver='paper') diverged at round {t}: {what}. The "
            f"paper's fixed step (gamma_t, step_size={self.step_size!r}) with "
            f"local_iterations={self.local_iterations!r} coordinates per "
            "client and round overshoots; lower local_iterations (the paper "
            "tunes H per data set), pass a smaller float step_size, "
            "or use solver='accelerated' (a line search that cannot diverge).",
            round=t)


def send_duals(protocol, clients, add=False):
    """Server -> each client of ``clients``: ``enc(alpha_0)`` of its rows
    (after adding the round's changes when ``add``); the client decrypts."""
    phase = "duals"
    fn = server_add_duals if add else (lambda s, _: dict(s.enc_duals))
    enc = protocol.server.call(P.server_run, fn, phase).result()
    # (a row group that never moved has alpha_0 = 0: nothing to send)
    protocol._from_server(phase, client_receive_duals,
                          {k: (enc[protocol.row_group[k]],) for k in clients
                           if protocol.row_group[k] in enc})


def primal_aggregation(protocol, clients, scale):
    """Algorithm 4: the clients' changes of ``w_hat_k``, summed securely per
    column group; the server updates ``w`` and sends each participant the
    weights of its columns (with Algorithm 2's next round)."""
    total = protocol._summed_weights(clients, client_primal_part, None,
                                     "primal aggregation", scale)
    return protocol.server.call(server_add_weights, Local(total)).result()


def secure_inner_product(protocol, clients):
    """Algorithm 2 for ``clients``: the server sends them the weights of
    their columns; each encrypts its parts; the server sums every client's
    latest parts per row and each client decrypts its rows' sums (one row
    group on one client: computed locally)."""
    protocol.send_weights(clients)
    if protocol.whole_rows:
        protocol._local(clients, P.client_local_inner_products)
        return
    phase = "inner products"
    protocol._to_server(phase, protocol._local(
        clients, P.client_partial_inner_products))
    sums = protocol.server.call(P.server_run, server_store_inner_products,
                                phase).result()
    protocol._from_server(phase, client_receive_own_inner_products,
                          {k: (sums[protocol.row_group[k]],) for k in clients})
