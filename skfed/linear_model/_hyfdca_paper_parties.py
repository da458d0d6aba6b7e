"""HyFDCA ``solver="paper"``: the party functions of Algorithm 1 as published.

Every function runs on one party's thread and sees only that party's state
and the message it received; what it returns is the message it sends. The
driver :func:`._paper.algorithm_1` strings them together.

What differs from the accelerated solver's parties (:mod:`._protocol`,
whose setup, squared norms and Algorithm 2 parts are reused unchanged):

- the server holds the global duals ``alpha_0``, **encrypted** under the key
  pair the clients share (one ciphertext per row and task, kept per row
  group), and adds the clients' encrypted, scaled changes to them
  homomorphically (:func:`server_add_duals`); it never decrypts anything;
- a client's local method is Algorithm 3 with the exact one-dimensional
  maximiser of Algorithm 5 (:func:`client_local_dual_method`);
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
from functools import reduce

import numpy as np

from ._dual import dual_step

__all__ = ["paper_client_state", "client_local_dual_method",
           "server_add_duals", "client_receive_duals", "client_primal_part",
           "server_add_weights", "server_store_inner_products",
           "client_receive_own_inner_products", "server_weight_norm"]

#: absolute precision of the encrypted duals' fixed-point encoding (the
#: duals of the hinge and logistic losses lie in [0, 1])
DUAL_PRECISION = 2.0 ** -44


def paper_client_state(state, *, c_k):
    """Add the paper solver's keys to a client state of
    :func:`._protocol.client_state`: ``c_k`` of Algorithm 3 and the
    duals at its last upload of ``w_hat_k``."""
    state = dict(state)
    state["c_k"] = float(c_k)
    state["A_sent"] = state["A"].copy()
    return state


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
    """Algorithm 3 on ``H`` of the client's rows drawn without replacement.

    Each chosen coordinate moves to the maximiser of its dual subproblem
    (Algorithm 5, with ``||x_i||^2``) restricted to Algorithm 3's segment
    from ``a_i`` towards ``u_i`` of length ``c_k gamma_t`` (for the hinge
    with ``c_k gamma_t = 1`` this is Algorithm 5's closed form). The message
    is ``enc(gamma_t / |B_n| * delta alpha)`` for **every** row of the
    client (zeros for the rows not chosen: the server does not learn which
    were), ``|B_n|`` the number of clients holding the row.
    """
    A, n_rows = client.A, client.A.shape[0]
    H = min(client.H, n_rows)
    chosen = (np.arange(n_rows) if H >= n_rows else
              np.sort(client.rng.choice(n_rows, size=H, replace=False)))
    a, m = A[chosen], client.margins[chosen]
    q = client.s[chosen] * client.sqnorm[chosen, None] / (client.lam * client.N)
    best = dual_step(client.loss, a, m, q)
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
