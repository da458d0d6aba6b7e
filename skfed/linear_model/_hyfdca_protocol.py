"""HyFDCA's party functions: what the server and each client compute.

Every function here runs on one party's thread (``fed[name].call(fn, ...)``)
and sees only that party's private state and the message it received; what it
returns is the message it sends. The driver in :mod:`._hyfdca` strings them
(through the exchanges of :mod:`._hyfdca_exchange`)
together as in Algorithm 1 of the paper.

Client state (set in :func:`client_state`): its block ``X`` (its rows ``I_k``
restricted to its columns ``M_k``, plus the intercept column on clients of
column group 0), the labels of its rows as +-1 signs per one-vs-rest task, the
shared Paillier key pair, its copies of the dual variables ``alpha`` of its
rows and of the primal weights ``w`` of its columns, and the full inner
products ``x_i^T w`` and squared norms ``||x_i||^2`` of its rows.

Server state (set in :func:`server_state`): the public key only, the sample
and feature ids each client holds (known from private set intersection in the
paper), the encrypted global duals ``enc(alpha_0)`` per row group, and the
latest contribution of every client (``w_hat_{0,k}`` and the encrypted partial
inner products ``ip_k``), kept when a client stops participating: these are
the paper's stale variables.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import time
from functools import reduce

import numpy as np
from scipy.special import expit, xlogy

from ..crypto import PackedEncoder

__all__ = [
    "PRECISION",
    "packing_encoder",
    "client_state",
    "server_state",
    "dual_step",
    "loss_values",
    "conjugate_values",
]

#: absolute precision of every fixed-point encryption: one shared exponent,
#: so the server's homomorphic sums never need to align exponents.
PRECISION = 2.0 ** -48

#: packed encryption: |value| <= 2**20 with 60 bits below the bound
PACKED_BOUND = 2.0 ** 20
PACKED_BITS = 60


# -- losses: primal values, dual (conjugate) values, exact 1-D dual steps ----
#
# With a_i = y_i alpha_i (the dual variable in label direction) every loss of
# the paper's family has -l*(-alpha_i) = g(a_i) on a box, and the Algorithm 5
# subproblem for one coordinate is
#     max_d  g(a + d) - d * b - c d^2 / 2,  b = y_i x_i^T w,  c = ||x_i||^2 / (lambda N)
# whose solution a' = a + d is closed form (hinge, squared hinge) or a 1-D
# monotone root (logistic).

def loss_values(loss, margins):
    """``l(m)`` at margins ``m = y x^T w``."""
    if loss == "hinge":
        return np.maximum(0.0, 1.0 - margins)
    if loss == "squared_hinge":
        return 0.5 * np.maximum(0.0, 1.0 - margins) ** 2
    return np.logaddexp(0.0, -margins)


def conjugate_values(loss, a):
    """``g(a) = -l*(-alpha)`` with ``a = y alpha`` (feasible ``a`` only)."""
    if loss == "hinge":
        return a
    if loss == "squared_hinge":
        return a - 0.5 * a ** 2
    return -(xlogy(a, a) + xlogy(1.0 - a, 1.0 - a))


def dual_step(loss, a, b, c):
    """The maximiser ``a'`` of ``g(a') - (a' - a) b - c (a' - a)^2 / 2``."""
    c = np.maximum(c, 1e-12)
    if loss == "hinge":
        # The paper's closed form (section 5), with the ||x_i||^2 that it
        # leaves out: clip(a + lambda N (1 - y x^T w) / ||x||^2, 0, 1).
        return np.clip(a + (1.0 - b) / c, 0.0, 1.0)
    if loss == "squared_hinge":
        return np.maximum(0.0, a + (1.0 - b - a) / (1.0 + c))
    # Logistic: log(a'/(1-a')) + b + c (a' - a) = 0, increasing in a'. Solve
    # for s = logit(a') by Newton steps kept inside a shrinking bracket.
    lo = -b - c * (1.0 - a)
    hi = -b + c * a
    s = np.clip(-b, lo, hi)
    for _ in range(60):
        p = expit(s)
        f = s + b + c * (p - a)
        lo = np.where(f < 0, s, lo)
        hi = np.where(f > 0, s, hi)
        newton = s - f / (1.0 + c * p * (1.0 - p))
        inside = (newton > lo) & (newton < hi)
        s_new = np.where(inside, newton, 0.5 * (lo + hi))
        if np.all(np.abs(s_new - s) <= 1e-13 * (1.0 + np.abs(s))):
            s = s_new
            break
        s = s_new
    return expit(s)


# -- setup -------------------------------------------------------------------

def client_state(X, Y, public_key, private_key, *, loss, lam, n_samples,
                 n_holders, local_iterations, seed, n_jobs, encoder=None):
    """Private state of one client (a dict the Federation turns into a state)."""
    n_rows, n_tasks = Y.shape
    return {
        "X": X, "Y": Y, "public_key": public_key, "private_key": private_key,
        "loss": loss, "lam": lam, "N": n_samples, "n_holders": n_holders,
        "H": min(int(local_iterations), n_rows),
        "rng": np.random.RandomState(seed), "n_jobs": n_jobs,
        "encoder": encoder,
        "alpha": np.zeros((n_rows, n_tasks)),
        "w": np.zeros((X.shape[1], n_tasks)),
        "xw": np.zeros((n_rows, n_tasks)), "sqnorm": None,
        "crypto_seconds": 0.0,
    }


def server_state(public_key, client_rows, client_columns, row_group_of,
                 n_row_groups, n_weights, n_tasks, *, lam, n_samples, n_jobs,
                 encoder=None):
    """Public state of the server: key, ids and the encrypted duals."""
    return {
        "public_key": public_key, "client_rows": client_rows,
        "client_columns": client_columns, "row_group_of": row_group_of,
        "n_row_groups": n_row_groups, "n_weights": n_weights,
        "n_tasks": n_tasks, "lam": lam, "N": n_samples, "n_jobs": n_jobs,
        "encoder": encoder,
        "enc_alpha": None, "w_hat": {}, "ip": {}, "reports": {},
        "w": np.zeros((n_weights, n_tasks)),
        "best_w": np.zeros((n_weights, n_tasks)),
        "best_primal": np.full(n_tasks, np.inf),
        "crypto_seconds": 0.0,
    }


def packing_encoder(key_size, max_summands):
    """The public layout that packs several values into one plaintext.

    Every slot holds a value of magnitude at most ``PACKED_BOUND`` with
    ``PACKED_BITS`` bits below it (absolute precision ``2**-40``), and room for
    ``max_summands`` additions without carries; as many slots as the key's
    plaintext holds.
    """
    n_slots = PackedEncoder.max_slots(key_size, max_summands, PACKED_BITS)
    if n_slots < 2:
        return None
    return PackedEncoder([PACKED_BOUND] * n_slots, max_summands, PACKED_BITS)


def _encrypt(state, values):
    """Encrypt ``values``; with a packing layout, ``n_slots`` values per
    ciphertext in row-major order (zero-padded)."""
    start = time.perf_counter()
    values = np.asarray(values, dtype=np.float64)
    # Clients own the key pair and encrypt through its factorisation (same
    # ciphertext distribution, several times faster); the server only has
    # the public key.
    key = getattr(state, "private_key", None) or state.public_key
    if state.encoder is None:
        out = key.encrypt(values, precision=PRECISION, n_jobs=state.n_jobs)
    else:
        largest = float(np.max(np.abs(values), initial=0.0))
        if largest > PACKED_BOUND:
            raise ValueError(
                f"packing=True encrypts values of magnitude at most 2^20, got "
                f"{largest:.3g}. Scale the features (e.g. StandardScaler) or "
                "pass packing=False.")
        n_slots = state.encoder.n_slots
        flat = np.concatenate([values.ravel(),
                               np.zeros((-values.size) % n_slots)])
        out = key.encrypt_packed(flat.reshape(-1, n_slots), state.encoder,
                                 n_jobs=state.n_jobs)
    state.crypto_seconds += time.perf_counter() - start
    return out


def _decrypt(state, encrypted, shape):
    """Decrypt into an array of ``shape`` (undoing the packing layout)."""
    start = time.perf_counter()
    out = np.asarray(state.private_key.decrypt(encrypted, n_jobs=state.n_jobs),
                     dtype=np.float64)
    if state.encoder is not None:
        out = out.ravel()[:int(np.prod(shape))]
    state.crypto_seconds += time.perf_counter() - start
    return out.reshape(shape)


def _encrypted_sum(state, arrays):
    start = time.perf_counter()
    out = reduce(lambda a, b: a + b, arrays)
    state.crypto_seconds += time.perf_counter() - start
    return out


def server_init_duals(server):
    """alpha^0 = 0, held by the server only in encrypted form, per row group."""
    sizes = {}
    for k, rows in server.client_rows.items():
        sizes[server.row_group_of[k]] = len(rows)
    server.enc_alpha = {r: _encrypt(server, np.zeros((n, server.n_tasks)))
                        for r, n in sorted(sizes.items())}


# -- squared norms of the rows (setup, same pattern as SecureInnerProduct) ---

def client_partial_sqnorms(client):
    """enc(||x_{k,i}||^2) for the client's rows (to the server)."""
    return _encrypt(client, np.einsum("ij,ij->i", client.X, client.X))


def client_local_sqnorms(client):
    """A client holding whole rows (one column group) needs no one else."""
    client.sqnorm = np.einsum("ij,ij->i", client.X, client.X)


def server_sum_over_row_groups(server, parts):
    """Homomorphic sum of encrypted per-row parts over each row group's clients.

    ``parts`` maps client index to its encrypted part; returns row group ->
    the sum over its clients.
    """
    by_group = {}
    for k, part in sorted(parts.items()):
        by_group.setdefault(server.row_group_of[k], []).append(part)
    return {r: _encrypted_sum(server, group) for r, group in by_group.items()}


def client_receive_sqnorms(client, enc_sqnorm):
    client.sqnorm = _decrypt(client, enc_sqnorm, (client.X.shape[0],))


# -- sending the global duals ------------------------------------------------

def server_duals_for(server, clients):
    """enc(alpha_0) restricted to the rows of each client in ``clients``."""
    return {k: server.enc_alpha[server.row_group_of[k]] for k in clients}


def client_receive_duals(client, enc_alpha):
    client.alpha = _decrypt(client, enc_alpha, client.alpha.shape)


# -- PrimalAggregation (Algorithm 4) ------------------------------------------

def client_local_primal(client):
    """w_hat_{k,m} = sum_{i in I_k} alpha_i x_{k,i,m}, for m in M_k."""
    return client.X.T @ client.alpha


def server_primal_aggregation(server, contributions):
    """Update the stored w_hat_{0,k}, then w_0 = sum_k w_hat_{0,k} / (lambda N).

    ``contributions`` maps client index to its fresh ``w_hat_k``; the clients
    that did not send keep their last (possibly stale) contribution.
    """
    server.w_hat.update(contributions)
    w = np.zeros((server.n_weights, server.n_tasks))
    for k, w_hat in sorted(server.w_hat.items()):
        w[server.client_columns[k]] += w_hat
    w /= server.lam * server.N
    server.w = w
    return w


def server_weights_for(server, clients):
    """w_0 restricted to the columns of each client (all it may see)."""
    return {k: server.w[server.client_columns[k]] for k in clients}


def client_receive_weights(client, w_k):
    client.w = np.asarray(w_k, dtype=np.float64)


# -- SecureInnerProduct (Algorithm 2) -----------------------------------------

def client_partial_inner_products(client):
    """ip_{k,i} = enc(x_{k,i}^T w_k) for the client's rows."""
    return _encrypt(client, client.X @ client.w)


def server_inner_products(server, partials):
    """enc(x_i^T w) = sum over the clients b in B_i of ip_{b,i}, per row group.

    ``partials`` holds the fresh parts of the participating clients; the
    others' last parts are reused (stale, as in the paper). Returns row
    group -> encrypted inner products, for the row groups of the senders.
    """
    server.ip.update(partials)
    wanted = {server.row_group_of[k] for k in partials}
    return {r: s for r, s in server_sum_over_row_groups(server, server.ip).items()
            if r in wanted}


def client_receive_inner_products(client, enc_xw):
    client.xw = _decrypt(client, enc_xw, client.xw.shape)


def client_local_inner_products(client):
    """Whole rows on one client: x_i^T w computed locally, nothing sent."""
    client.xw = client.X @ client.w


# -- objective report (our addition, for objective_curve_ and tol) ------------

def client_objective_report(client):
    """Sums over the client's rows of l(y x^T w) and of -l*(-alpha): 2 scalars
    per task, computable only by a holder of the rows' labels."""
    margins = client.Y * client.xw
    a = client.Y * client.alpha
    return np.stack([loss_values(client.loss, margins).sum(axis=0),
                     conjugate_values(client.loss, a).sum(axis=0)])


def server_objective(server, reports):
    """Primal and dual objectives from ||w||^2 and the row groups' reports.

    The server also keeps, per one-vs-rest task, the weights with the
    smallest primal value seen so far: the published model (for the hinge
    loss the primal value of w(alpha_t) is not monotone in t).
    """
    for k, report in reports.items():
        server.reports[server.row_group_of[k]] = report
    total = sum(server.reports.values())
    sq = np.sum(server.w ** 2, axis=0)
    lam, N = server.lam, server.N
    primal = 0.5 * lam * sq + total[0] / N
    dual = -0.5 * lam * sq + total[1] / N
    better = primal < server.best_primal
    server.best_primal = np.where(better, primal, server.best_primal)
    server.best_w[:, better] = server.w[:, better]
    return float(np.sum(primal)), float(np.sum(dual))


# -- LocalDualMethod (Algorithm 5) and the server's averaging -----------------

def client_local_dual(client, gamma):
    """H coordinate maximisations of Algorithm 5 against the round's w_0.

    Returns ``enc(gamma / |B_n| * delta_alpha_k)`` for all the client's rows
    (zeros outside the chosen set, so the server cannot tell which rows
    were chosen).
    """
    n_rows = client.X.shape[0]
    chosen = client.rng.choice(n_rows, size=client.H, replace=False)
    Y = client.Y[chosen]
    a = Y * client.alpha[chosen]
    b = Y * client.xw[chosen]
    c = (client.sqnorm[chosen] / (client.lam * client.N))[:, None]
    a_new = dual_step(client.loss, a, b, c)
    delta = np.zeros_like(client.alpha)
    delta[chosen] = Y * (a_new - a)
    return _encrypt(client, (gamma / client.n_holders) * delta)


def server_average_duals(server, updates, *_):
    """enc(alpha_0,n) += sum_{b in B_n} enc(gamma / |B_n| delta_alpha_{b,n})."""
    by_group = {}
    for k, update in sorted(updates.items()):
        by_group.setdefault(server.row_group_of[k], []).append(update)
    for r, parts in by_group.items():
        server.enc_alpha[r] = _encrypted_sum(server, [server.enc_alpha[r]] + parts)


def crypto_seconds(state):
    """Seconds this party spent encrypting, decrypting and adding ciphertexts."""
    return state.crypto_seconds


def server_model(server, best):
    """The published model: per task, the w_0 of smallest reported primal
    (``best``, when every report is fresh), or the last w_0."""
    return (server.best_w if best else server.w).copy()


# -- message delivery to the server --------------------------------------------

def server_inbox(server, phase, k, payload):
    """Receive one client's message of ``phase`` (kept until processed)."""
    server.stash.setdefault(phase, {})[k] = payload


def server_run(server, fn, phase, *args):
    """Process the messages of ``phase`` received so far with ``fn``."""
    return fn(server, server.stash.pop(phase, {}), *args)
