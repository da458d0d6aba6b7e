"""HyFDCA's protocol: one party setup, and the accelerated solver's round.

:class:`Solver` holds what the two solvers share: the party setup
(:meth:`Solver.set_up_parties`: each client's block of the table, dense or
CSR, with the constant column on column group 0; one key pair per row group;
every party's state, with the solver's own choices passed in) and the run
that plays a solver's Algorithm 1 on the started federation and returns a
:class:`Result`. :class:`AcceleratedSolver` is ``solver="accelerated"``;
``solver="paper"`` is :class:`._paper.PaperSolver`.

Every party function here runs on one party's thread (``fed[name].call(fn,
...)``) and sees only that party's private state and the message it
received; what it returns is the message it sends. :class:`Protocol`
strings them into the steps of a round (the point's weights by secure
aggregation, Algorithm 2 SecureInnerProduct, the local dual method with its
direction's weights by secure aggregation, the objective reports by secure
aggregation, the step), and :class:`Participation` is the server's choice
of clients per round; :meth:`AcceleratedSolver.algorithm_1` calls these in
the order of Algorithm 1 of the paper.

Client state (:func:`client_state`): its block ``X`` (its rows ``I_k``
restricted to its columns ``M_k``, plus the intercept column on clients of
column group 0; dense, or CSR for sparse input, every product below then a
sparse product), the labels of its rows as +-1 signs per one-vs-rest task,
its rows' weights ``s`` (ones without ``sample_weight``), the key pair of
its row group (shared by the group's clients), the dual variables of its rows in label direction and per
unit weight (``A = y * alpha / s``, one column per task), the point ``Y`` at which
the round evaluates them (``A`` plus momentum), the margins ``y x^T w`` there,
the squared row norms and the round's dual direction. Every client of a row
group holds the same duals, margins and norms of those rows.

Server state (:func:`server_state`): no data and no dual variable, not even
encrypted. It holds the weights ``w = X^T (y * s * A) / (lambda N)`` (kept
exact by summing the clients' contributions), the per-row-group sums the
clients report, as totals over the row groups only (losses at the last
evaluated ``w``, conjugates at the current duals; :mod:`._reports`),
and the step-size state (line search, momentum, curvature scale).

Encryption: the clients of a row group share one key pair, one per row
group (Paillier or Okamoto-Uchiyama:
the layout reads the key's ``plaintext_bits``); every value they encrypt has
a public bound ``2**exponent`` (agreed at setup and per round), so the
fixed-point encoding keeps :data:`PRECISION_BITS` significant bits below
it, packing several values per plaintext when asked. The time each party
spends on encryption, decryption and ciphertext additions is summed into
the estimator's ``crypto_time_``. The secure sums of weight changes use a
ring encoding whose public bound :func:`weight_change_encoder` derives.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import math
import time
import warnings
from functools import reduce
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

from .._progress import Progress
from ..base import party_seeds
from ..crypto import PackedEncoder, generate_keypair
from ..exceptions import DivergenceError
from ..federation import Local, protocol_rounds
from ..federation import network as _network
from ..federation.secure_sum import RingEncoder, secure_sum
from ._dual import (
    ZERO_MODEL_LOSS,
    _conj_at,
    _line_search,
    _project,
    _sequential_pass,
    dual_step,
)
from ._reports import (client_after_step, client_report, report_bound,
                       round_summary, server_fold_report)

__all__ = ["SERVER", "client_name", "PRECISION_BITS", "crypto_seconds",
           "slots_per_plaintext", "weight_change_encoder", "row_sqnorms",
           "DUAL_CURVATURES", "curvature_exchange",
           "client_blocks", "client_state", "server_state", "Participation",
           "Protocol", "Setup", "Result", "Solver", "AcceleratedSolver"]

SERVER = "server"


def client_name(k):
    return f"client{k}"


# -- encryption: the clients' packed layout, and its timing -------------------

#: significant bits of every fixed-point encryption below its bound: the
#: bound (a power of two) comes from the data, so the precision is relative.
PRECISION_BITS = 40


def slots_per_plaintext(public_key, summands):
    """Values of :data:`PRECISION_BITS` bits packed per plaintext of
    ``public_key`` (Paillier, OU or the plaintext stand-in) such that a sum
    of ``summands`` packed plaintexts never carries from slot to slot (the
    :class:`~skfed.crypto.PackedEncoder` layout: ``PRECISION_BITS + 1 +
    summands.bit_length()`` bits per slot). A 2048-bit key: Paillier 48
    slots for one summand, 47 for two; OU 16 and 15."""
    slot_bits = PRECISION_BITS + 1 + int(summands).bit_length()
    return int(public_key.plaintext_bits) // slot_bits


def _encoding(state, exponent, summands):
    """The fixed-point layout for values of magnitude at most
    ``2**exponent`` of which the server adds up to ``summands``."""
    if state.packing:
        n_slots = slots_per_plaintext(state.private_key.public_key, summands)
        if n_slots >= 2:
            return PackedEncoder([2.0 ** exponent] * n_slots,
                                 max_summands=summands,
                                 precision_bits=PRECISION_BITS)
    return None


def _encrypt(state, values, exponent, summands):
    """Encrypt ``values`` (bounded by ``2**exponent``; the server adds at
    most ``summands`` such arrays): as many values per ciphertext as fit in
    row-major order when packing, else one by one with the shared absolute
    precision ``2**(exponent - PRECISION_BITS)``."""
    start = time.perf_counter()
    values = np.asarray(values, dtype=np.float64)
    key = state.private_key  # the clients own the key pair (CRT encryption)
    encoder = _encoding(state, exponent, summands)
    if encoder is None:
        out = key.encrypt(values, precision=2.0 ** (exponent - PRECISION_BITS),
                          n_jobs=state.n_jobs)
    else:
        n_slots = encoder.n_slots
        flat = np.concatenate([values.ravel(),
                               np.zeros((-values.size) % n_slots)])
        out = key.encrypt_packed(flat.reshape(-1, n_slots), encoder,
                                 n_jobs=state.n_jobs)
    state.crypto_seconds += time.perf_counter() - start
    return out


def _decrypt(state, encrypted, shape):
    """Decrypt into an array of ``shape`` (undoing the packing layout)."""
    start = time.perf_counter()
    out = np.asarray(state.private_key.decrypt(encrypted, n_jobs=state.n_jobs),
                     dtype=np.float64)
    out = out.ravel()[:int(np.prod(shape))]
    state.crypto_seconds += time.perf_counter() - start
    return out.reshape(shape)


def _encrypted_sum(state, arrays):
    start = time.perf_counter()
    out = reduce(lambda a, b: a + b, arrays)
    state.crypto_seconds += time.perf_counter() - start
    return out


def crypto_seconds(state):
    """Seconds this party spent encrypting, decrypting and adding ciphertexts."""
    return state.crypto_seconds


# -- the ring encoding of the secure sums of weight changes --------------------

def weight_change_encoder(loss, lam, n_samples, largest_rows, scale, n_terms,
                          weighted=False):
    """The ring encoding of a secure sum of clients' weight changes.

    A client's part ``X_k^T (y * v) / (lambda N)`` has entries of magnitude
    at most ``n_k 2**scale A / (lambda N)`` where ``|v_i| <= A``: 1 for the
    hinge and logistic duals (in [0, 1]); for the squared hinge's unbounded
    duals the bound that the monotone dual ascent keeps (``a_i <= 2 sqrt(N)``
    since ``D >= D(0) = 0``, margins at most ``2**scale * 3 / sqrt(lambda)``).
    Every quantity is public, so the server decodes with the same encoder.

    ``weighted``: ``n_samples`` is the total weight ``S`` and the part is
    ``X_k^T (y * s * v) / (lambda S)``, whose entries are at most
    ``2**scale sum_i s_i |v_i| / (lambda S)``. The sum is at most ``S`` for
    the hinge and logistic duals; for the squared hinge ``D >= 0`` gives
    ``sum_i s_i u_i <= 2 S`` at every accepted point (Cauchy-Schwarz on
    ``sum s u^2 <= 2 sum s u``), so a momentum shift or a direction moves
    less than ``S (8 + 3 * 2**scale / sqrt(lambda))``. Both bounds need only
    the public ``S``.
    """
    if weighted:
        coefficient = (8.0 + 3.0 * 2.0 ** scale / math.sqrt(lam)
                       if loss == "squared_hinge" else 1.0)
        return RingEncoder.for_bound(2.0 ** scale * coefficient / lam,
                                     n_terms=n_terms)
    if loss == "squared_hinge":
        coefficient = (4.0 * math.sqrt(n_samples) + 1.0
                       + 3.0 * 2.0 ** scale / math.sqrt(lam))
    else:
        coefficient = 1.0
    bound = largest_rows * 2.0 ** scale * coefficient / (lam * n_samples)
    return RingEncoder.for_bound(bound, n_terms=n_terms)


# -- the curvature of the coordinate steps -------------------------------------

#: the values of ``dual_curvature``: which curvature a coordinate's quadratic
#: term uses (see :func:`curvature_exchange` and the estimator's Notes)
DUAL_CURVATURES = ("auto", "mean", "row_norm", "paper")


def curvature_exchange(dual_curvature, whole_rows):
    """What the setup exchanges for the coordinate steps' curvature.

    - ``"mean"``: one public scalar, the mean squared row norm over all
      rows, by one secure sum (:meth:`Protocol.curvature`); every row's
      curvature uses it (times the solver's margin ``kappa``);
    - ``"row_norm"``: each row's ``||x_i||^2``, summed over its row group's
      clients like Algorithm 2 (:meth:`Protocol.squared_norms`), so the
      clients of a row group learn their partners' ``||x_{k',i}||^2``;
    - ``"local"``: each row's ``||x_i||^2`` computed by the client holding
      the whole row: nothing is sent;
    - ``None``: no norm at all (``dual_curvature="paper"``, the printed term
      of the paper's boxes).

    ``"auto"`` is ``"mean"`` where clients hold parts of rows and
    ``"local"`` where they hold whole rows (one column group); so is
    ``"row_norm"`` on whole rows.
    """
    if dual_curvature == "paper":
        return None
    if dual_curvature == "mean":
        return "mean"
    if whole_rows:
        return "local"
    return "row_norm" if dual_curvature == "row_norm" else "mean"


# -- the clients' blocks (dense or CSR) and their rows' norms ---------------

def row_sqnorms(X):
    """``||x_i||^2`` of every row of a dense array or a sparse matrix."""
    if sp.issparse(X):
        return np.asarray(X.multiply(X).sum(axis=1), dtype=np.float64).ravel()
    return np.einsum("ij,ij->i", X, X)


def client_blocks(X, partition, fit_intercept, intercept_scaling):
    """Each client's block, the ids of its rows, and the global weight ids
    of its columns (the constant column travels with column group 0).

    Sparse ``X`` gives CSR blocks: rows are cut from a CSR copy, columns
    from the row cut, so no step builds a dense matrix.
    """
    sparse = sp.issparse(X)
    if sparse:
        X = sp.csr_matrix(X, dtype=np.float64)
    n_features = X.shape[1]
    blocks, rows, columns = {}, {}, {}
    for k in range(partition.n_clients):
        r_idx = partition.client_rows(k)
        c_idx = partition.client_columns(k)
        block = X[r_idx][:, c_idx] if sparse else X[np.ix_(r_idx, c_idx)]
        ids = c_idx
        if fit_intercept and partition.client_cell(k)[1] == 0:
            constant = np.full((len(r_idx), 1), float(intercept_scaling))
            block = (sp.hstack([block, sp.csr_matrix(constant)], format="csr")
                     if sparse else np.hstack([block, constant]))
            ids = np.append(c_idx, n_features)
        if sparse:
            block.sort_indices()
        blocks[k], rows[k], columns[k] = block, r_idx, ids
    return blocks, rows, columns


# -- the parties' states -------------------------------------------------------

def client_state(X, Y, weights, private_key, *, loss, lam, n_samples,
                 whole_rows, local_iterations, seed, n_jobs, packing, n_holders,
                 row_group, audit=False):
    """Private state of one client (a dict the Federation turns into a state).

    ``X`` is dense or CSR. ``weights`` are its rows' weights (``None``: all
    ones), private like the labels. ``seed`` drives the choice and order of
    the coordinates: shared by the clients of a row group when they hold
    parts of rows (they must compute the same step), the client's own when
    it holds whole rows. ``n_samples`` is the total weight ``N`` of the
    average (the number of rows when unweighted; with weights it arrives by
    :func:`client_receive_total_weight`).

    ``audit``: keep, at every receipt of ``primal weights``, the client's
    own duals the received ``w`` is evaluated at (what an attacker among
    the clients holds; :mod:`._attacks` reads them from the fit's
    ``_audit_log``, kept only while messages are recorded).
    """
    n_rows, n_tasks = Y.shape
    zeros = np.zeros((n_rows, n_tasks))
    # The duals are kept per unit weight (see the estimator's Notes): row i
    # moves w by s_i times its dual variable. A column, for broadcasting.
    s = np.ones((n_rows, 1)) if weights is None else np.asarray(
        weights, dtype=np.float64).reshape(-1, 1)
    return {
        "X": X, "Y": Y, "s": s, "private_key": private_key, "loss": loss,
        "lam": lam, "N": n_samples, "whole_rows": whole_rows,
        "row_group": int(row_group),
        "H": n_rows if local_iterations == "auto" else int(local_iterations),
        "rng": np.random.RandomState(seed), "n_jobs": n_jobs,
        "packing": packing, "n_holders": n_holders,
        "A": zeros, "A_prev": zeros.copy(), "point": zeros.copy(),
        "margins": zeros.copy(), "xw": None, "xw_own": None,
        "direction": zeros.copy(),
        "w": np.zeros((X.shape[1], n_tasks)), "sqnorm": None,
        "scale_exponent": None, "crypto_seconds": 0.0,
        # the reporter's sums at its last report (see _reports)
        "loss_sum": np.zeros(n_tasks), "conj_sum": np.zeros(n_tasks),
        "report": None,
        "audit": [] if audit else None,
    }


def server_state(client_rows, client_columns, row_group_of, n_weights,
                 n_tasks, *, loss, lam, n_samples, step_size, tol, grid):
    """State of the data-less server: ids, weights, reports, step control."""
    n_groups = len(set(row_group_of.values()))
    return {
        "client_rows": client_rows, "client_columns": client_columns,
        "row_group_of": row_group_of, "n_groups": n_groups,
        "n_weights": n_weights, "n_tasks": n_tasks, "loss": loss,
        "lam": lam, "N": n_samples, "step_size": step_size, "tol": tol,
        "grid": np.asarray(grid, dtype=float),
        "scale_exponent": None,
        # weights of the accepted duals, and at the round's evaluated point
        "w": np.zeros((n_weights, n_tasks)),
        "w_point": np.zeros((n_weights, n_tasks)),
        "dw": np.zeros((n_weights, n_tasks)),
        "point_version": 0, "verifying": False, "round": 0,
        "verify_wait": n_groups, "next_verify": 0,
        # totals over the row groups (secure sums, see _reports): the
        # loss sums at their last evaluated w, the conjugate sums at the
        # accepted duals; per row group only the version of w its last
        # report refers to (who reported when, public)
        "loss_total": np.zeros(n_tasks), "loss_version": {},
        "conj_total": np.zeros(n_tasks),
        "D": np.zeros(n_tasks),
        # line search; momentum (monotone FISTA) and curvature scale per row
        # group (with partial participation the groups move at different
        # times)
        "beta": np.ones((n_groups, n_tasks)),
        "t_fista": np.ones((n_groups, n_tasks)),
        "mu": np.zeros((n_groups, n_tasks)),
        # published model: the exactly evaluated w of smallest primal value
        "best_w": np.zeros((n_weights, n_tasks)),
        "best_primal": np.full(n_tasks, np.inf),
        "crypto_seconds": 0.0,
    }


# -- setup: the encoding scale, agreed before anything is encrypted -----------

def client_scale_exponent(client):
    """``ceil(log2(max_i ||x_{k,i}||))``: one integer, the binary order of
    magnitude of the client's largest row part (a federated maximum of these
    sets every fixed-point scale)."""
    largest = float(np.sqrt(np.max(row_sqnorms(client.X), initial=0.0)))
    return int(math.ceil(math.log2(largest))) if largest > 0 else -1000


def server_agree_scale(server, exponents):
    server.scale_exponent = int(max(exponents.values()))
    return server.scale_exponent


def client_receive_scale(client, exponent):
    client.scale_exponent = int(exponent)


# -- setup with sample weights: the total weight S, by secure aggregation -----

def client_weight_exponent(client):
    """``ceil(log2(sum_i s_i))`` over the row group's rows (one reporter per
    row group): the public bound of the secure sum of the total weight."""
    total = float(client.s.sum())
    return int(math.ceil(math.log2(total))) if total > 0 else -1000


def server_largest_exponent(server, exponents):
    return int(max(exponents.values()))


def client_weight_sum(client, exponent):
    """The row group's total weight times ``2**-exponent`` (at most 1): its
    share of the secure sum."""
    return np.array([math.ldexp(float(client.s.sum()), -int(exponent))])


def server_set_total_weight(server, scaled, exponent):
    """The decoded sum scaled back: ``N``, the total weight of all rows."""
    server.N = math.ldexp(float(np.asarray(scaled).ravel()[0]), int(exponent))
    return np.array([server.N])


def client_receive_total_weight(client, total):
    """``N``, the total weight of all rows, that the average divides by."""
    client.N = float(np.asarray(total).ravel()[0])


# -- squared norms of the rows (setup, the pattern of SecureInnerProduct) ------
# One client per row group decrypts (see Protocol.squared_norms): its
# partners encrypt their parts, it keeps its own in plaintext.

def client_partial_sqnorms(client):
    """enc(||x_{k,i}||^2) for the client's rows (to the server)."""
    return _encrypt(client, row_sqnorms(client.X), 2 * client.scale_exponent,
                    client.n_holders - 1)


def client_own_sqnorms(client):
    client.sqnorm = row_sqnorms(client.X)


def client_local_sqnorms(client):
    """A client holding whole rows (one column group) needs no one else."""
    client.sqnorm = row_sqnorms(client.X)


def server_sum_over_row_groups(server, parts):
    """Homomorphic sum of encrypted per-row parts over each row group's
    clients; ``parts`` maps client index to its part."""
    by_group = {}
    for k, part in sorted(parts.items()):
        by_group.setdefault(server.row_group_of[k], []).append(part)
    return {r: _encrypted_sum(server, group) for r, group in by_group.items()}


def client_receive_sqnorms(client, enc_sqnorm):
    """The decrypting client: its partners' summed parts plus its own."""
    client.sqnorm = client.sqnorm + _decrypt(client, enc_sqnorm,
                                             (client.X.shape[0],))


def client_sqnorms(client):
    """||x_i||^2 of the client's rows (to its row-group partners)."""
    return client.sqnorm.copy()


def client_set_sqnorms(client, sqnorm):
    client.sqnorm = np.asarray(sqnorm, dtype=np.float64)


# -- the public curvature: the mean squared row norm over all rows -------------

def client_curvature_share(client, n_rows):
    """The client's share of the mean squared row norm over all ``n_rows``
    rows: ``sum_i ||x_{k,i}||^2 / n_rows``, times ``4**-scale`` (every row
    part is below ``2**scale``, so the share is at most 1)."""
    total = float(np.sum(row_sqnorms(client.X)))
    return np.array([math.ldexp(total / n_rows,
                                -2 * int(client.scale_exponent))])


def server_mean_sqnorm(server, scaled):
    """The decoded sum scaled back: the mean squared row norm over all rows
    (public, one float)."""
    return np.array([math.ldexp(float(np.asarray(scaled).ravel()[0]),
                                2 * int(server.scale_exponent))])


def client_set_curvature(client, mean, kappa):
    """Every row's curvature uses ``kappa`` times the public mean (the
    solver's margin, public too)."""
    value = float(kappa) * float(np.asarray(mean).ravel()[0])
    client.sqnorm = np.full(client.X.shape[0], value)


# -- the round's point: duals plus momentum, and its weights ------------------

def _weighted_rows_product(client, v):
    """``X_k^T (y * s * v)``: the rows' change of ``w`` for a change ``v`` of
    their duals (a sparse product for a CSR block)."""
    return np.asarray(client.X.T @ (client.Y * client.s * v))


def client_extrapolate(client, mu):
    """Move the evaluation point to ``A + mu (A - A_prev)`` (kept feasible;
    ``mu`` per row group and task) and return this client's part of the
    change of ``w``: ``X_k^T (y * delta) / (lambda N)`` (summed securely
    over the clients of its column group)."""
    mu = np.asarray(mu, dtype=float)[client.row_group][None, :]
    point = _project(client.loss, client.A + mu * (client.A - client.A_prev))
    shift = point - client.point
    client.point = point
    return _weighted_rows_product(client, shift) / (client.lam * client.N)


def server_point_weights(server, shift):
    """``w`` at the round's point: the accepted weights plus the summed
    shift (``None``: the point is the accepted duals). Reports refer to a
    version of ``w``; it changes only when ``w`` does."""
    w_point = server.w if shift is None else server.w + shift
    if not np.array_equal(w_point, server.w_point):
        server.point_version += 1
    server.w_point = w_point


def server_weights_for(server, clients):
    """w restricted to the columns of each client (all it may see), with the
    binary exponent that bounds every part ``x_{k,i}^T w_k`` this round."""
    norm = float(np.max(np.linalg.norm(server.w_point, axis=0), initial=0.0))
    exponent = (server.scale_exponent + int(math.ceil(math.log2(norm)))
                if norm > 0 else -1000)
    return {k: (server.w_point[server.client_columns[k]], exponent)
            for k in clients}


def client_receive_weights(client, w_k, exponent):
    client.w = np.asarray(w_k, dtype=np.float64)
    client.ip_exponent = int(exponent)
    if client.audit is not None:
        # the evaluation point (accelerated) and the duals (paper solver)
        client.audit.append((client.point.copy(), client.A.copy()))


def client_audit_log(client):
    """The duals kept at each ``primal weights`` receipt (``audit``)."""
    return list(client.audit or [])


# -- SecureInnerProduct (Algorithm 2) -----------------------------------------

def client_partial_inner_products(client):
    """ip_{k,i} = enc(x_{k,i}^T w_k) for the client's rows."""
    return _encrypt(client, np.asarray(client.X @ client.w),
                    client.ip_exponent, client.n_holders - 1)


def client_own_inner_products(client):
    """The row group's decrypting client keeps its part ``x_{k,i}^T w_k``
    in plaintext (it adds it to its partners' decrypted sum)."""
    client.xw_own = np.asarray(client.X @ client.w, dtype=np.float64)


def client_receive_inner_products(client, enc_xw):
    """The row group's decrypting client: enc(partners' parts) -> plus its
    own part -> its margins."""
    client_set_inner_products(
        client, _decrypt(client, enc_xw, client.margins.shape) + client.xw_own)


def client_inner_products(client):
    """x_i^T w of the client's rows (to its row-group partners)."""
    return client.xw.copy()


def client_set_inner_products(client, xw):
    client.xw = np.asarray(xw, dtype=np.float64)
    client.margins = client.Y * client.xw


def client_local_inner_products(client):
    """Whole rows on one client: x_i^T w computed locally, nothing sent."""
    client.margins = client.Y * np.asarray(client.X @ client.w)


# -- LocalDualMethod and the direction's weights --------------------------------

def client_direction(client, beta):
    """The client's dual direction at the round's point, and its part of the
    change of ``w`` along it (summed securely per column group).

    Clients holding parts of rows all compute the same direction from what
    the row group shares (margins, norms, labels, duals): exact coordinate
    maximisation against the round's ``w``, the curvature scaled by
    ``beta`` (Algorithm 5, every coordinate of the chosen set at once).
    Clients holding whole rows run exact sequential coordinate ascent on
    their own rows (each step sees the previous ones), as in CoCoA.
    """
    loss, point, lam_n = client.loss, client.point, client.lam * client.N
    beta = np.asarray(beta, dtype=float)[client.row_group]
    n_rows, n_tasks = point.shape
    direction = np.zeros_like(point)
    if client.whole_rows:
        n_passes = -(-client.H // max(n_rows, 1))
        order = np.concatenate([client.rng.permutation(n_rows)
                                for _ in range(n_passes)])[:client.H]
        for j in range(n_tasks):
            direction[:, j] = _sequential_pass(
                loss, client.X, client.Y[:, j], point[:, j],
                client.margins[:, j], client.sqnorm, lam_n, beta[j], order,
                client.s[:, 0])
    else:
        H = min(client.H, n_rows)
        chosen = (np.arange(n_rows) if H >= n_rows else
                  np.sort(client.rng.choice(n_rows, size=H, replace=False)))
        c = (client.s[chosen] * client.sqnorm[chosen, None] / lam_n
             * beta[None, :])
        new = dual_step(loss, point[chosen], client.margins[chosen], c)
        direction[chosen] = new - point[chosen]
    client.direction = direction
    return _weighted_rows_product(client, direction) / lam_n


def client_no_direction(client):
    client.direction = np.zeros_like(client.point)


# -- the server's step: objective, gap, line search, momentum ------------------

def server_step(server, report, frac_bits, groups, dw, partial):
    """Fold the summed report into P and D, test the gap, and choose the
    step along the direction (a line search that never lets the dual fall,
    with monotone FISTA momentum). Returns the decision and the round's
    objective values.

    ``report`` is the secure sum of the reporters' changes over the row
    groups ``groups`` taking part, in a ring of ``frac_bits`` fractional
    bits (:mod:`._reports`); ``dw`` is the
    summed change of ``w`` along the direction (``None`` in a verification
    round).
    """
    lam, N, loss = server.lam, server.N, server.loss
    conj_grid, n_flagged = server_fold_report(server, report, frac_bits,
                                              groups)
    w = server.w_point
    sq = np.sum(w ** 2, axis=0)
    complete = len(server.loss_version) == server.n_groups
    fresh = complete and all(v == server.point_version
                             for v in server.loss_version.values())
    primal = (0.5 * lam * sq + server.loss_total / N if complete
              else np.full(server.n_tasks, np.inf))
    if fresh:
        better = primal < server.best_primal
        server.best_primal = np.where(better, primal, server.best_primal)
        server.best_w[:, better] = w[:, better]
    # The dual at the point: absent groups' duals did not move since their
    # last report, so their conjugate sums are exact. ``conj_grid`` holds
    # the changes from the accepted duals (the line search reads only
    # differences).
    grid = server.grid
    D_point = -0.5 * lam * sq + (server.conj_total + conj_grid[0]) / N
    D_best = np.maximum(server.D, D_point)
    best = np.where(fresh, np.minimum(server.best_primal, primal), primal)
    gap = best - D_best
    reached = bool(server.tol is not None and np.all(
        gap <= server.tol * np.maximum(D_best, 1e-300)) and np.all(D_best > 0))
    out = {"primal": float(np.sum(primal)), "dual": float(np.sum(D_best)),
           # relative to D; undefined (inf) while D <= 0 (the first rounds)
           "gap": (float(np.sum(gap) / np.sum(D_best)) if np.sum(D_best) > 0
                   else float("inf")),
           "stop": False, "step": None, "fresh": fresh,
           "diverged": n_flagged > 0 or not (
               np.all(np.isfinite(sq)) and np.all(np.isfinite(conj_grid))
               and (not complete or np.all(np.isfinite(primal))))}
    if out["diverged"]:
        return out
    if reached and fresh:
        out["stop"] = True
        return out
    # A stale estimate under partial participation: hold still (the duals
    # and w do not move) until every row group has reported on the same w,
    # then decide. After a gap that the exact values did not confirm, wait
    # twice as long as before until the next check.
    server.round += 1
    if server.verifying:
        if not fresh:
            return out
        server.verifying = False
        server.verify_wait *= 2
        server.next_verify = server.round + server.verify_wait
    elif reached and partial and server.round >= server.next_verify:
        server.verifying = True
        return out
    if dw is None:
        return out
    fixed = server.step_size != "auto"
    gammas, values = np.zeros(server.n_tasks), np.zeros(server.n_tasks)
    for j in range(server.n_tasks):
        lin_w = -lam * float(w[:, j] @ dw[:, j])
        quad_w = lam * float(dw[:, j] @ dw[:, j])
        gammas[j], values[j] = _line_search(
            loss, grid, D_point[j], lin_w, quad_w, conj_grid[:, j] / N, fixed)
    accept = np.ones(server.n_tasks, bool) if fixed else values >= server.D
    if not fixed:
        # Monotone FISTA: a step that does not beat the accepted duals is
        # dropped and the momentum restarts; the curvature scale follows the
        # line search (a short step: the direction overshot).
        for r in groups:
            t = server.t_fista[r]
            t_new = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t ** 2))
            server.mu[r] = np.where(accept, (t - 1.0) / t_new, 0.0)
            server.t_fista[r] = np.where(accept, t_new, 1.0)
            server.beta[r] = np.clip(np.where(
                gammas < 0.999, server.beta[r] / np.maximum(gammas, 1e-3),
                0.5 * server.beta[r]), 1e-6, 1e6)
    gammas = np.where(accept, gammas, 0.0)
    server.w = np.where(accept[None, :], w + gammas[None, :] * dw, server.w)
    server.D = np.where(accept, values, server.D)
    # _conj_at is linear in the sums: the total's change is that of the sum
    new = server.conj_total + np.array([
        _conj_at(loss, grid, conj_grid[:, j], gammas[j])
        for j in range(server.n_tasks)])
    server.conj_total = np.where(accept, new, server.conj_total)
    out["step"] = (gammas, accept)
    out["dual"] = float(np.sum(np.maximum(server.D, D_point)))
    out["fallen_to"] = float(np.min(server.D))
    # A float step_size has no safeguard: a dual below the zero model's
    # (which is 0) by more than the scale of the objective is a divergence.
    out["diverged"] = bool(np.any(~np.isfinite(server.D))
                           or np.any(server.D < -ZERO_MODEL_LOSS[loss]))
    return out


def server_next_point(server):
    """The momentum of the next round and the curvature scale, per row group
    and task (public), and whether the server holds still to verify a stale
    gap estimate."""
    mu = np.zeros_like(server.mu) if server.verifying else server.mu
    return mu.copy(), server.beta.copy(), server.verifying


def client_apply_step(client, gammas, accept):
    """Move the duals to ``point + gamma d`` (or keep them: step refused)."""
    gammas = np.asarray(gammas, dtype=float)[None, :]
    accept = np.asarray(accept, dtype=bool)[None, :]
    new = _project(client.loss, client.point + gammas * client.direction)
    client.A_prev = client.A.copy()
    client.A = np.where(accept, new, client.A)
    client_after_step(client, gammas, accept)
    # The next round starts from the accepted duals.
    client.point = client.A.copy()


def client_reset_point(client):
    client.point = client.A.copy()


def server_model(server, best):
    """The published model: per task the exactly evaluated ``w`` of smallest
    primal value (``best``), or the weights of the accepted duals."""
    w = np.where(np.isfinite(server.best_primal)[None, :] & best,
                 server.best_w, server.w)
    return w.copy()


# -- message delivery to the server --------------------------------------------

def server_inbox(server, phase, k, payload):
    """Receive one client's message of ``phase`` (kept until processed)."""
    server.stash.setdefault(phase, {})[k] = payload


def server_take(server, messages):
    """The messages themselves (the reports the server folds in later)."""
    return messages


def server_run(server, fn, phase, *args):
    """Process the messages of ``phase`` received so far with ``fn``."""
    return fn(server, server.stash.pop(phase, {}), *args)


# -- the exchanges: who sends what to whom in each step ----------------------

class Participation:
    """Which clients take part in round t (chosen by the server).

    Clients take part with their whole row group (a row group's duals move
    only when all its clients are there). ``"random"``: a uniformly random
    subset of ``round(participation * R)`` of the ``R`` row groups each
    round (section 4.2's random subsets; with one column group, of the
    clients). ``"cyclic"``: the row groups are split into
    ``ceil(1 / participation)`` fixed sets that take turns. This cycles
    *row groups*; it is not section 4.3, whose cyclic sets are the clients
    of a vertical split. ``solver="paper"`` chooses individual clients
    instead (:class:`._paper.ClientParticipation`,
    :class:`._paper.ColumnCycle`).
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

    Each method names who sends what to whom; the party functions it
    calls are the ones above.

    Parameters
    ----------
    fed : Federation
        The started federation of ``setup.states``.
    setup : Setup
        What :meth:`Solver.set_up_parties` produced (the partition, each
        client's weight ids, the public sizes).
    loss : str
    lam : float
        The loss and ``lambda``, public: with ``N`` and the sizes they set
        the fixed-point encoding of the secure sums of weight changes
        (:meth:`ring_encoder`).
    """

    def __init__(self, fed, setup, loss, lam):
        self.fed = fed
        self.server = fed[SERVER]
        partition = setup.partition
        self.whole_rows = partition.n_column_groups == 1
        # Weight ids of each client's columns (the intercept's included).
        self.columns = setup.columns
        self.n_weights = 1 + max(int(np.max(c)) for c in self.columns.values())
        self.n_tasks = setup.n_tasks
        self.loss, self.lam = loss, lam
        self.largest_rows, self.weighted = setup.largest_rows, setup.weighted
        # N of the average: the number of rows, or with weights the total
        # weight, which the clients sum securely at setup (total_weight).
        self.N = setup.n_samples
        self.n_rows = setup.n_samples  # the number of rows, never a weight
        # Public structure (which client holds which cell), known to all.
        self.row_group = {k: partition.client_cell(k)[0]
                          for k in range(partition.n_clients)}
        self.column_group = {k: partition.client_cell(k)[1]
                             for k in range(partition.n_clients)}

    def ring_encoder(self, scale, n_terms):
        """The public fixed-point encoding of a secure sum of ``n_terms``
        clients' weight changes (:func:`weight_change_encoder`)."""
        return weight_change_encoder(self.loss, self.lam, self.N,
                                     self.largest_rows, scale, n_terms,
                                     weighted=self.weighted)

    # -- plumbing ----------------------------------------------------------

    def _local(self, clients, fn, *args):
        """Every client in ``clients`` runs ``fn`` on its own state."""
        return dict(zip(clients, self.fed.gather(
            self.fed[client_name(k)].call(fn, *args) for k in clients)))

    def _to_server(self, phase, messages):
        """Each client sends its message of ``phase`` to the server."""
        self.fed.gather(
            self.server.call(server_inbox, Local(phase), Local(k), message,
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
        sums = self.server.call(server_run, server_sum_over_row_groups,
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
                                                   client_scale_exponent))
        scale = self.server.call(server_run, server_agree_scale,
                                 "setup/scale").result()
        self._from_server("setup/scale", client_receive_scale,
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
            reporters, client_weight_exponent))
        exponent = self.server.call(server_run, server_largest_exponent,
                                    f"{phase}/scale").result()
        name = phase if len(reporters) > 1 else f"{phase}/alone"
        scaled = secure_sum(
            self.fed, [client_name(k) for k in reporters], SERVER,
            client_weight_sum, exponent, phase=name, sender=SERVER,
            encoder=RingEncoder.for_bound(1.0, n_terms=len(reporters))).result()
        total = self.server.call(server_set_total_weight, Local(scaled),
                                 Local(exponent)).result()
        self._from_server(phase, client_receive_total_weight,
                          {k: (total,) for k in clients})
        self.N = float(total[0])
        return self.N

    def curvature(self, clients, kappa):
        """The public curvature, once at setup: the mean squared row norm
        over all rows. The clients sum their shares ``sum_i ||x_{k,i}||^2 /
        n`` securely (scaled by the agreed ``4**-scale``, each at most 1;
        ``n`` the public number of rows, broadcast with the request); the
        server scales the total back and sends the one float to every
        client, which sets every row's curvature to ``kappa`` times it. No
        per-row value leaves a client."""
        names = [client_name(k) for k in clients]
        scaled = secure_sum(
            self.fed, names, SERVER, client_curvature_share, self.n_rows,
            phase="curvature", sender=SERVER,
            encoder=RingEncoder.for_bound(1.0, n_terms=len(names))).result()
        mean = self.server.call(server_mean_sqnorm, Local(scaled)).result()
        self._from_server("curvature", client_set_curvature,
                          {k: (mean, Local(kappa)) for k in clients})
        return float(mean[0])

    def set_up_curvature(self, clients, exchange, kappa):
        """The setup of the coordinate steps' curvature that
        :func:`curvature_exchange` names (``None``: nothing)."""
        if exchange == "mean":
            return self.curvature(clients, kappa)
        if exchange is not None:
            self.squared_norms(clients)
        return None

    def squared_norms(self, clients):
        """||x_i||^2 of every row, once, for the coordinate steps."""
        if self.whole_rows:
            self._local(clients, client_local_sqnorms)
        else:
            self._decrypted_row_sums(
                clients, "squared norms", client_own_sqnorms,
                client_partial_sqnorms, client_receive_sqnorms,
                client_sqnorms, client_set_sqnorms)

    def point_weights(self, clients, mu, scale):
        """The round's point (momentum): the clients' parts of the change of
        ``w`` are summed securely; the server adds the total to ``w``."""
        if mu is None or not np.any(mu > 0):
            self._local(clients, client_reset_point)
            self.server.call(server_point_weights, Local(None)).result()
            return
        shift = self._summed_weights(clients, client_extrapolate, mu,
                                     "point", scale)
        self.server.call(server_point_weights, Local(shift)).result()

    def send_weights(self, clients):
        """Server -> clients: the weights of their own columns (and the
        binary exponent bounding this round's inner-product parts)."""
        weights = self.server.call(server_weights_for, clients).result()
        self._from_server("primal weights", client_receive_weights, weights)

    def secure_inner_product(self, clients):
        """Algorithm 2 (or a local product when clients hold whole rows),
        decrypted by one client per row group (:meth:`_decrypted_row_sums`).
        """
        if self.whole_rows:
            self._local(clients, client_local_inner_products)
            return
        self._decrypted_row_sums(
            clients, "inner products", client_own_inner_products,
            client_partial_inner_products, client_receive_inner_products,
            client_inner_products, client_set_inner_products)

    def local_dual_method(self, clients, beta, scale):
        """Each participant's dual direction; its weights summed securely."""
        return self._summed_weights(clients, client_direction, beta,
                                    "direction", scale)

    def reset_point(self, clients):
        """The clients' evaluation point goes back to their duals."""
        self._local(clients, client_reset_point)

    def no_direction(self, clients):
        self._local(clients, client_no_direction)

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
        self._from_server("step", client_apply_step,
                          {k: (gammas, accept) for k in clients})


# -- the party setup and the run, shared by both solvers -----------------------

class Setup(NamedTuple):
    """A HyFDCA federation before it starts (:meth:`Solver.set_up_parties`):
    every party's state, and what the driver knows publicly."""

    #: party name -> its initial state
    states: dict
    #: the resolved HybridPartition
    partition: object
    #: client -> global weight ids of its columns (the intercept's last)
    columns: dict
    #: rows of the table (``N`` until a weighted fit sums its weights)
    n_samples: int
    n_features: int
    #: one-vs-rest tasks (columns of the duals and weights)
    n_tasks: int
    #: rows of the largest client (public sizes)
    largest_rows: int
    #: whether the rows carry sample weights
    weighted: bool
    #: the seed of the server's choice of participants
    participation_seed: int
    #: client name -> the private key of its row group, kept for the
    #: attacks' audit log only while messages are recorded (else empty)
    keys: dict


class Result(NamedTuple):
    """What a solver returns; the estimator sets its fitted attributes
    from it (``coef_``, ``intercept_``, ``n_iter_``, ...)."""

    coef: np.ndarray
    intercept: np.ndarray
    n_iter: int
    objective_curve: np.ndarray
    duality_gap: float
    crypto_time: float
    #: while messages are recorded: what the attackers among the clients
    #: hold beyond their messages (:meth:`Solver.run`); else ``None``
    audit_log: object = None


class Solver:
    """What the two solvers of HyFDCA share: the hyper-parameters they read,
    the one party setup, and the run around Algorithm 1.

    A solver is made from the estimator's parameters. :meth:`set_up` makes
    the parties' states (each solver passes its own choices on to
    :meth:`set_up_parties`); :meth:`run` plays the solver's Algorithm 1
    (:meth:`algorithm_1`) on the started federation of those states and
    returns a :class:`Result`; the estimator sets its attributes from it.
    """

    #: ``kappa``: the margin on the public mean curvature
    #: (``dual_curvature="mean"``); 1 where a line search sets the level
    curvature_margin = 1.0

    def __init__(self, *, loss, alpha, max_iter, local_iterations,
                 participation, schedule, step_size, fit_intercept,
                 intercept_scaling, encryption, key_size, n_jobs,
                 random_state, verbose, dual_curvature="auto"):
        self.loss = loss
        self.dual_curvature = dual_curvature
        self.alpha = float(alpha)
        self.max_iter = max_iter
        self.local_iterations = local_iterations
        self.participation = float(participation)
        self.schedule = schedule
        self.step_size = step_size
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.encryption = encryption
        self.key_size = key_size
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose

    def set_up_parties(self, X, Y, weights, partition, *, keyed, packing,
                       participation_seed, client_seeds, local_iterations,
                       tol, grid):
        """The party setup of both solvers: each client's block and rows,
        one key pair per row group (its clients share it), and every
        party's state.

        The solver's own choices come in as arguments: whether the clients
        need a key pair (``keyed``), whether they
        pack their ciphertexts, the seed of the server's choice of
        participants, each client's coordinate seed and ``H`` (lists in
        client order), and the server's ``tol`` and line-search ``grid``.

        While messages are recorded (:func:`~skfed.federation.record_messages`)
        the setup keeps each client's private key and has the clients keep
        their duals at each receipt of ``primal weights``: what an attacker
        among them holds beyond its messages (:meth:`run` returns them as
        ``Result.audit_log``; never otherwise).
        """
        audit = bool(_network._active_recorders)
        n_samples, n_features = X.shape
        K, C = partition.n_clients, partition.n_column_groups
        blocks, rows, columns = client_blocks(
            X, partition, self.fit_intercept, self.intercept_scaling)
        row_group_of = {k: partition.client_cell(k)[0] for k in range(K)}
        # One key pair per row group, shared by its clients; the server never
        # holds one. Every homomorphic sum is over one row group's rows, so
        # a ciphertext of another row group is one its receiver cannot
        # decrypt (and check_messages binds each key to its group's rows).
        keys = {}
        if keyed:
            for r in range(partition.n_row_groups):
                _, keys[r] = generate_keypair(  # fit warned of a small key
                    self.key_size, plaintext=self.encryption is None,
                    scheme=self.encryption or "paillier", warn=False)
        states = {SERVER: server_state(
            rows, columns, row_group_of, n_features + int(self.fit_intercept),
            Y.shape[1], loss=self.loss, lam=self.alpha, n_samples=n_samples,
            step_size=self.step_size, tol=tol, grid=grid)}
        for k in range(K):
            # Row weights go, like the labels, to the clients of the rows.
            states[client_name(k)] = client_state(
                blocks[k], Y[rows[k]],
                None if weights is None else weights[rows[k]],
                keys.get(row_group_of[k]),
                loss=self.loss, lam=self.alpha, n_samples=n_samples,
                whole_rows=C == 1, local_iterations=local_iterations[k],
                seed=client_seeds[k], n_jobs=self.n_jobs, packing=packing,
                n_holders=C, row_group=row_group_of[k], audit=audit)
        audit_keys = ({client_name(k): keys[row_group_of[k]] for k in range(K)
                       if row_group_of[k] in keys} if audit else {})
        return Setup(states, partition, columns, n_samples, n_features,
                     Y.shape[1], max(len(r) for r in rows.values()),
                     weights is not None, participation_seed, audit_keys)

    def run(self, fed, setup, keep=None):
        """Run on the started federation of ``setup.states``; returns a
        :class:`Result`. ``keep(coef, intercept)`` makes the fitted copy a
        :class:`DivergenceError` carries (the last good model)."""
        protocol = Protocol(fed, setup, self.loss, self.alpha)
        if setup.weighted:
            protocol.total_weight(range(setup.partition.n_clients))
        w, curve, n_iter, gap = self.algorithm_1(fed, protocol, setup, keep)
        seconds = fed.gather(fed[name].call(crypto_seconds)
                             for name in fed.party_names)
        coef, intercept = self.model(w, setup.n_features)
        audit_log = None
        if setup.states[client_name(0)]["audit"] is not None:
            # {"keys": {client: its row group's private key},
            #  "duals": {client: [(point, duals) at each primal weights]}}
            names = [client_name(k) for k in range(setup.partition.n_clients)]
            duals = fed.gather(fed[name].call(client_audit_log)
                               for name in names)
            audit_log = {"keys": dict(setup.keys),
                         "duals": dict(zip(names, duals))}
        return Result(coef, intercept, n_iter,
                      np.asarray(curve, dtype=np.float64).reshape(-1, 2), gap,
                      float(sum(seconds)), audit_log)

    def set_up_curvature(self, protocol, clients):
        """The coordinate steps' curvature, once at setup
        (:func:`curvature_exchange` of ``dual_curvature``)."""
        return protocol.set_up_curvature(
            clients, curvature_exchange(self.dual_curvature,
                                        protocol.whole_rows),
            self.curvature_margin)

    def model(self, w, n_features):
        """``(coef, intercept)`` of the weights ``w``: the intercept is
        ``intercept_scaling`` times the constant column's weight."""
        coef = np.ascontiguousarray(w[:n_features].T)
        if self.fit_intercept:
            return coef, self.intercept_scaling * w[n_features]
        return coef, np.zeros(w.shape[1])


class AcceleratedSolver(Solver):
    """``solver="accelerated"``: Algorithm 1 with the round of the class
    Notes (the duals stay on the clients; the server steps by line search
    with momentum and stops at ``tol``).

    Parameters beyond :class:`Solver`'s: ``tol``, ``packing`` and the line
    search's step lengths ``grid`` (:func:`._dual.line_search_grid`).
    """

    def __init__(self, *, tol, packing, grid, **params):
        super().__init__(**params)
        self.tol = tol
        self.packing = packing
        self.grid = grid

    def set_up(self, X, Y, weights, partition):
        K, R = partition.n_clients, partition.n_row_groups
        whole_rows = partition.n_column_groups == 1
        seeds = party_seeds(self.random_state, 1 + R + K)
        group_seeds, own_seeds = seeds[1:1 + R], seeds[1 + R:]
        # Parts of rows: the row group's clients share the coordinate
        # choice (they compute the same step). Whole rows: the client's own.
        client_seeds = [own_seeds[k] if whole_rows
                        else group_seeds[partition.client_cell(k)[0]]
                        for k in range(K)]
        # Whole rows need no encryption at all: no key then.
        return self.set_up_parties(
            X, Y, weights, partition, keyed=not whole_rows, packing=self.packing,
            participation_seed=seeds[0], client_seeds=client_seeds,
            local_iterations=[self.local_iterations] * K, tol=self.tol,
            grid=self.grid)

    def algorithm_1(self, fed, protocol, setup, keep=None):
        """Algorithm 1 (HyFDCA), with the round of the class Notes."""
        server = fed[SERVER]
        partition, grid = setup.partition, self.grid
        participants = Participation(partition, self.participation,
                                     self.schedule, setup.participation_seed)
        everyone = list(range(partition.n_clients))
        C = partition.n_column_groups
        partial = not participants.all
        # Setup: the fixed-point scale, then the steps' curvature.
        scale = protocol.agree_scale(everyone)
        self.set_up_curvature(protocol, everyone)
        curve, converged, gap, t = [], False, float("inf"), 0
        # Encrypted rounds are slow: the first line tells the wait (a bound).
        progress = Progress("HyFDCA", self.max_iter, self.verbose, fed=fed,
                            estimate=self.encryption is not None and C > 1
                            and ("at most" if self.tol is not None else True))
        for t in protocol_rounds(range(1, self.max_iter + 1)):
            # Server: who takes part; a row group moves with all its clients.
            clients = participants(t)
            present = set(clients)
            groups = sorted({r for r in range(partition.n_row_groups)
                             if all(r * C + c in present for c in range(C))})
            active = [k for k in clients if protocol.row_group[k] in groups]
            if not active:
                curve.append(curve[-1] if curve else (np.nan, 0.0))
                continue
            mu, beta, verifying = server.call(server_next_point).result()
            # The round's point (momentum) and its weights, summed securely.
            protocol.point_weights(active, mu if self.step_size == "auto"
                                   else None, scale)
            protocol.send_weights(active)
            # SecureInnerProduct: x_i^T w at the point, for the active rows.
            protocol.secure_inner_product(active)
            # Clients: LocalDualMethod; the direction's weights, securely.
            if verifying:
                protocol.no_direction(active)
                dw = None
            else:
                dw = protocol.local_dual_method(active, beta, scale)
            reports = protocol.reports(active, grid)
            # Server: P, D and the gap; the step by line search.
            out = server.call(server_step, *map(Local, reports), Local(dw),
                              Local(partial)).result()
            curve.append((out["primal"], out["dual"]))
            gap = out["gap"]
            progress.report(t, round_summary(out, len(clients)),
                            last=bool(out["stop"] or out["diverged"]))
            if out["diverged"]:
                raise self._divergence(server, setup, t, out, keep)
            if out["stop"]:
                converged = True
                break
            if out["step"] is not None:
                protocol.apply_step(active, *out["step"])
            else:  # no step this round: the duals stay where they are
                protocol.reset_point(active)
        if not converged and participants.all:
            # The second SecureInnerProduct of Algorithm 1, once: the last
            # step's w is evaluated too (it may be the best, or converged).
            protocol.point_weights(everyone, None, scale)
            protocol.send_weights(everyone)
            protocol.secure_inner_product(everyone)
            protocol.no_direction(everyone)
            reports = protocol.reports(everyone, grid)
            out = server.call(server_step, *map(Local, reports),
                              Local(None), Local(False)).result()
            gap, converged = out["gap"], out["stop"]
        if not converged and self.tol is not None:
            warnings.warn(
                f"HyFDCA did not reach a relative duality gap of {self.tol} "
                f"in {self.max_iter} rounds (gap {gap:.3g}). Raise max_iter, "
                "or loosen tol; standardised features (StandardScaler) and a "
                "larger alpha converge in fewer rounds.", ConvergenceWarning)
        w = server.call(server_model, True).result()
        return w, curve, t, gap

    def _divergence(self, server, setup, t, out, keep):
        """The error a diverging fixed step raises, with the last good model
        (in a fitted copy of the estimator that ``keep`` makes)."""
        kept = None
        if keep is not None:
            try:
                w = server.call(server_model, True).result()
                kept = keep(*self.model(w, setup.n_features))
            except Exception:  # pragma: no cover - the error below matters more
                kept = None
        return DivergenceError(
            f"HyFDCA diverged at round {t}: the dual objective fell to "
            f"{out.get('fallen_to', float('nan')):.3g} (the zero model's is 0) "
            "with the fixed "
            f"step_size={self.step_size}; use step_size='auto' (a line search "
            "that never lets it fall) or a smaller step_size. The last good "
            "model is kept in this error's `estimator` attribute.",
            estimator=kept, round=t)
