"""Party functions of DSPGD, with and without the communication-efficient
mechanism (CEM), and of the steps around it.

Each function runs on one party's thread, sees only that party's private
state and the message it received, and returns the party's answer. The
driver in :mod:`skfed.cluster._kernel_kmeans` strings them together in the
order of the paper's Algorithm 1.

Notation (section 4): user ``m`` holds rows ``X[m]``; in iteration ``t`` it
draws ``A_t[m] = sqrt(2) cos(X[m] omega_t + b_t)`` (``D`` random Fourier
features, appendix A) and keeps ``B_t[m]``, its rows of
``Z_t = B_t B_t^T``. With CEM, ``W_t[m] = [sqrt(eta_t/D) A_t[m],
sqrt(1-eta_t) B_t[m]]`` and ``R_t = W_t W_t^T = (1-eta_t) Z_t + eta_t xi_t``.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np

from ..kernel_approximation import RandomFourierBasis

__all__ = [
    "SERVER",
    "phase_of",
    "choose_lambda",
    "user_moments",
    "server_gamma",
    "user_set_gamma",
    "random_features",
    "user_form_w",
    "user_gram_product",
    "user_update_from_eigenpairs",
    "user_build_h",
    "user_draw_features",
    "user_features_t_times",
    "user_features_times",
    "server_plain_combine",
    "server_plain_update",
    "server_rows_of_h",
    "user_receive_h",
    "user_oos_moment",
    "server_oos_map",
    "user_receive_map",
    "server_split_vector",
    "server_collect_aux",
    "server_sum_aux",
    "server_row_counts",
    "user_row_count",
    "server_select_pairs",
]


#: name of the coordinating party
SERVER = "server"


def phase_of(t):
    """Phase name of DSPGD iteration ``t`` (zero-padded so phases sort)."""
    return f"dspgd t={t:03d}"


def choose_lambda(theta, n_lambda):
    """Section 6.1: lambda is the (k+2)-th eigenvalue of the first iteration."""
    floor = 1e-9 * max(theta[0], 0.0)
    return max(float(theta[min(n_lambda, len(theta)) - 1]), floor)


# -- setup: the kernel width from per-user sums -------------------------------

def user_moments(state):
    """``(n_m, sum_i x_i, sum_i ||x_i||^2)``: enough for the mean distance."""
    X = state.X
    return np.concatenate([[X.shape[0]], X.sum(axis=0), [np.sum(X * X)]])


def server_gamma(state):
    """Section 6.1: ``gamma = N^2 / (2 sum_ij ||x_i - x_j||^2)``.

    ``sum_ij ||x_i - x_j||^2 = 2 N sum_i ||x_i||^2 - 2 ||sum_i x_i||^2``, so
    the per-user sums suffice and no row leaves its user.
    """
    moments, state.stash["parts"] = state.stash["parts"], []
    total = np.sum(moments, axis=0)
    n, s1, s2 = total[0], total[1:-1], total[-1]
    pair_sum = 2.0 * n * s2 - 2.0 * float(s1 @ s1)
    state.n_rows = [int(m[0]) for m in moments]
    return n * n / (2.0 * pair_sum) if pair_sum > 1e-12 * max(n * s2, 1e-300) else 1.0


def user_set_gamma(state, gamma):
    state.gamma = float(gamma)


def random_features(X, seed, gamma, n_features):
    """``A = sqrt(2) cos(X omega + b)``; ``A A^T / D`` estimates the RBF kernel."""
    basis = RandomFourierBasis(seed, kernel="rbf", gamma=gamma)
    return basis.transform(X, np.arange(n_features))


# -- DSPGD with CEM (section 4.2) ---------------------------------------------

def user_form_w(state, t, eta):
    """Algorithm 1, lines 7-8: fresh features, then ``W_t[m]``.

    The seed of iteration ``t`` is shared by the users only, so the server
    does not know ``omega_t``.
    """
    A = random_features(state.X, state.feature_seeds[t - 1], state.gamma,
                        state.n_random_features)
    state.W = np.hstack([np.sqrt(eta / state.n_random_features) * A,
                         np.sqrt(1.0 - eta) * state.B])
    return state.W.shape[1]


def user_gram_product(state, c):
    """``W_t[m]^T W_t[m] c``: the only upload of a Lanczos step (D + r_t floats)."""
    return state.W.T @ (state.W @ c)


def user_update_from_eigenpairs(state, theta, V, shrink):
    """Algorithm 1, lines 12-13.

    ``u_i[m] = W_t[m] v_i / sqrt(theta_i)`` are the user's rows of the
    eigenvectors of ``R_t``; ``B_{t+1}[m] = [sqrt(theta_i - eta_t lambda)
    u_i[m]]`` over the eigenvalues above the threshold (soft-thresholding,
    the proximal step of the nuclear norm).
    """
    state.U = (state.W @ V) / np.sqrt(theta)
    keep = theta > shrink
    state.B = state.U[:, keep] * np.sqrt(theta[keep] - shrink)
    state.W = None  # W_t is not needed any more


def user_build_h(state, scales):
    """Algorithm 1, line 17: ``H[m] = [sqrt(theta_i + (1-eta_T) lambda) u_i[m]]``."""
    state.H = state.U[:, : len(scales)] * scales


# -- DSPGD without CEM (section 4.1), for the communication comparison --------

def user_draw_features(state, t):
    state.A = random_features(state.X, state.feature_seeds[t - 1], state.gamma,
                              state.n_random_features)


def user_features_t_times(state, c_part):
    """Step 2 of section 4.1: ``A_t[m]^T c_q[m]`` (D floats)."""
    return state.A.T @ c_part


def user_features_times(state, v):
    """Step 4 of section 4.1: ``A_t[m] (A_t^T c_q)`` (n_m floats)."""
    return state.A @ v


def server_plain_combine(eta, n_random_features):
    """The server's ``g = (1-eta) Z_t c + eta/D [A_t[1] A_t^T c; ...]``."""

    def combine(state, parts):
        c = state.stash["lanczos"].vector()
        g = eta / n_random_features * np.concatenate(parts)
        if state.Z_vectors.shape[1]:
            g += (1.0 - eta) * (state.Z_vectors @ (state.Z_values
                                                   * (state.Z_vectors.T @ c)))
        return g

    return combine


def server_plain_update(state, theta, vectors, shrink):
    """``Z_{t+1}`` on the server: soft-thresholded eigenpairs of ``R_t``."""
    state.U = vectors
    keep = theta > shrink
    state.Z_vectors = vectors[:, keep]
    state.Z_values = theta[keep] - shrink


def server_rows_of_h(state, scales, user_index):
    """The rows of ``H`` that belong to one user (the server holds all of H)."""
    stop = np.cumsum(state.n_rows)
    start = stop - np.asarray(state.n_rows)
    rows = slice(start[user_index], stop[user_index])
    return state.U[rows, : len(scales)] * scales


def user_receive_h(state, H):
    state.H = np.asarray(H)


# -- out-of-sample embedding map ------------------------------------------------

def user_oos_moment(state, n_features):
    """``H[m]^T A'[m]`` (s x D' floats) with features from a fresh seed.

    Summed over users it is ``H^T A'``; since ``A' A'^T / D' ~ K``, the map
    ``P = Lambda^{-1} H^T A' / D'`` sends a new row's features ``a'(x)`` to
    ``Lambda^{-1} H^T k_x``, the Nystrom extension of the embedding.
    """
    A = random_features(state.X, state.oos_seed, state.gamma, n_features)
    return state.H.T @ A


def server_oos_map(state, eigenvalues, n_features):
    parts, state.stash["parts"] = state.stash["parts"], []
    total = np.sum(parts, axis=0)
    return total / (np.asarray(eigenvalues)[:, None] * n_features)


def user_receive_map(state, embedding_map):
    state.embedding_map = np.asarray(embedding_map)


def server_split_vector(state, c):
    """Cut ``c`` into the users' parts ``c[m]`` (the server knows n_m)."""
    return np.split(np.asarray(c), np.cumsum(state.n_rows)[:-1])


def server_collect_aux(state, part):
    state.stash.setdefault("aux", []).append(np.asarray(part, dtype=float))


def server_sum_aux(state):
    """``A_t^T c = sum_m A_t[m]^T c[m]`` (to be broadcast)."""
    parts = state.stash.pop("aux")
    return np.sum(parts, axis=0)


def server_row_counts(state):
    counts, state.stash["parts"] = state.stash["parts"], []
    state.n_rows = [int(np.asarray(c).ravel()[0]) for c in counts]


def user_row_count(state):
    return np.array([state.X.shape[0]])


def server_select_pairs(state, threshold, n_keep, tiny_ratio=1e-9):
    """The Ritz pairs to broadcast: all above ``threshold``, at least ``n_keep``.

    Pairs whose value is not clearly positive are dropped: ``u = W v /
    sqrt(theta)`` would only amplify rounding noise.
    """
    from ._lanczos import server_ritz_pairs

    theta, V = server_ritz_pairs(state)
    floor = tiny_ratio * max(theta[0], 0.0) if len(theta) else 0.0
    n = max(int(np.sum(theta > threshold)), int(n_keep))
    n = min(n, int(np.sum(theta > floor)))
    state.stash["all_ritz_values"] = theta
    return theta[:n], V[:, :n]
