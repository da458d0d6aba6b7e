"""DSPGD with and without CEM: its maths and the functions each party runs.

The random features drawn from the users' key, the threshold rule, the
stopping rule, and the functions users and server run in an iteration of
DSPGD with CEM (the communication-efficient mechanism, section 4.2) and
without it (section 4.1). Each party function runs on one party's thread,
sees only that party's private state and the message it received, and
returns the party's answer. The drivers in :mod:`skfed.cluster._protocol`
string them together in the order of the paper's Algorithm 1 (and of
section 4.1).

Notation (section 4): user ``m`` holds rows ``X[m]``; in iteration ``t`` it
draws ``A_t[m] = sqrt(2) cos(X[m] omega_t + b_t)`` (``D`` random Fourier
features, appendix A) and keeps ``B_t[m]``, its rows of
``Z_t = B_t B_t^T``. With CEM, ``W_t[m] = [sqrt(eta_t/D) A_t[m],
sqrt(1-eta_t) B_t[m]]`` and ``R_t = W_t W_t^T = (1-eta_t) Z_t + eta_t xi_t``.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import hashlib
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from ..kernel_approximation import RandomFourierBasis
from ._lanczos import server_ritz_pairs

__all__ = [
    "PHASE_ITERATION",
    "PHASE_LANCZOS",
    "PHASE_EIGENPAIRS",
    "PHASE_CONVERGENCE",
    "choose_lambda",
    "lambda_margin",
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
    "server_split_vector",
    "CHANGE_WINDOW",
    "lanczos_seed",
    "embedding_change",
    "server_embedding_change",
    "converged",
    "warn_not_converged",
    "check_finite",
    "user_take_part",
    "derive_seed",
    "feature_seed",
    "oos_seed",
    "user_embedding_overlap",
    "server_select_pairs",
]


#: the stopping rule averages the embedding change over this many iterations
CHANGE_WINDOW = 10


#: Phases of a DSPGD iteration. The names are the same in every iteration
#: (``communication_`` groups by protocol phase, as for the other
#: estimators); each message carries its iteration as ``Message.round``, and
#: the estimator keeps the counts of each iteration in
#: ``communication_by_iteration_``.
PHASE_ITERATION = "dspgd: iteration"      # server -> users: t, eta_t
PHASE_LANCZOS = "dspgd: lanczos"          # Lanczos products (/request, /upload)
PHASE_EIGENPAIRS = "dspgd: eigenpairs"    # server -> users: Ritz pairs
PHASE_CONVERGENCE = "dspgd: convergence"  # masked overlaps of the stopping rule


def lambda_margin(rule, n_features):
    """The relative margin ``rho`` of the threshold rule (``0`` for the paper's).

    ``"auto"``: ``rho = 2 sqrt(2 / D)``, at most 1/2. An eigenvalue
    ``theta`` of the first iteration's estimate ``xi_1 = A_1 A_1^T / D``
    averages ``D`` random features; with near-Gaussian features its
    standard deviation is about ``theta sqrt(2 / D)`` (14% at ``D = 100``).
    """
    if rule == "paper":
        return 0.0
    return min(2.0 * np.sqrt(2.0 / n_features), 0.5)


def choose_lambda(theta, n_lambda, n_components=None, margin=0.0):
    """Section 6.1: lambda is the (k+2)-th eigenvalue of the first iteration.

    With ``margin > 0`` (skfed's ``threshold="auto"``) lambda is also at
    most ``(1 - margin) theta_{s+1}``, ``s = n_components``: the limit ``Z*``
    then keeps the ``(s+1)``-th eigenpair, as the paper's rule intends, even
    when the first iteration's noise puts its ``(k+2)``-th value above the
    true ``(s+1)``-th (or ``s``-th) eigenvalue; otherwise the ``s``-th column
    of ``H`` would follow each iteration's fresh features and never settle.
    ``theta`` must hold at least ``n_lambda > s`` values.
    """
    floor = 1e-9 * max(theta[0], 0.0)
    lam = float(theta[min(n_lambda, len(theta)) - 1])
    if margin > 0 and n_components is not None and len(theta) > n_components:
        lam = min(lam, (1.0 - margin) * float(theta[n_components]))
    return max(lam, floor)


def random_features(X, seed, gamma, n_features, out=None, scale=1.0):
    """``A = sqrt(2) cos(X omega + b)``; ``A A^T / D`` estimates the RBF kernel.

    Filled in place into ``out`` (times ``scale``) when given, by blocks of
    rows: no temporary of the full ``n x D`` size.
    """
    if out is None:
        out = np.empty((X.shape[0], n_features))
    for _ in feature_blocks(X, seed, gamma, n_features, out=out, scale=scale):
        pass
    return out


def feature_blocks(X, seed, gamma, n_features, out=None, scale=1.0):
    """:func:`random_features` by blocks of rows: yields ``(rows, block)``
    (a reused buffer unless ``out`` is given), checked finite."""
    basis = RandomFourierBasis(seed, kernel="rbf", gamma=gamma)
    with np.errstate(invalid="ignore", over="ignore"):
        for rows, block in basis.transform_chunks(
                X, np.arange(n_features), out=out, scale=scale):
            if not np.all(np.isfinite(block)):
                raise ValueError(
                    f"The random features are not finite: gamma={gamma!r} is "
                    "too large for float64 (the directions omega ~ N(0, 2 "
                    "gamma I) overflow). Use a smaller gamma, or scale X.")
            yield rows, block


def derive_seed(key, label, index=0):
    """A 64-bit seed: a PRF (BLAKE2b) of the users' key, a label and an index."""
    digest = hashlib.blake2b(f"{label}:{int(index)}".encode(), key=bytes(key),
                             digest_size=8).digest()
    return int.from_bytes(digest, "big")


def feature_seed(users_key, t):
    """Seed of iteration ``t``'s features: a PRF of the users' key."""
    return derive_seed(users_key, "dspgd features", t)


def oos_seed(users_key):
    """Seed of the out-of-sample map's features (users' key, other label)."""
    return derive_seed(users_key, "out-of-sample features")


def lanczos_seed(base, t):
    """The server's start-vector seed of iteration ``t`` (model randomness)."""
    return int(np.random.SeedSequence([int(base), int(t)]).generate_state(1)[0])


# -- the stopping rule ---------------------------------------------------------

def embedding_change(overlap, values, previous):
    """Relative change ``||H_t H_t^T - H_{t-1} H_{t-1}^T||_F / ||H_t H_t^T||_F``.

    With ``H_t = U_t L_t^{1/2}`` and orthonormal ``U_t``, the traces need
    only the eigenvalue estimates ``L`` and ``C = U_t^T U_{t-1}``:
    ``||L_t||^2 + ||L_{t-1}||^2 - 2 sum_ij L_t,i C_ij^2 L_{t-1},j``.
    """
    now, before = np.asarray(values), np.asarray(previous)
    cross = float(now @ (np.asarray(overlap) ** 2) @ before)
    num = max(float(now @ now) + float(before @ before) - 2.0 * cross, 0.0)
    return float(np.sqrt(num) / max(np.sqrt(float(now @ now)), 1e-300))


def server_embedding_change(state, overlap, values, previous):
    """The server's measure, from the masked sum of the users' overlaps."""
    return embedding_change(overlap, values, previous)


def converged(changes, tol):
    """Whether the mean change over the last :data:`CHANGE_WINDOW` is below tol."""
    return (tol is not None and len(changes) >= CHANGE_WINDOW
            and float(np.mean(changes[-CHANGE_WINDOW:])) < tol)


def warn_not_converged(changes, tol, max_iter, n_features, margin):
    """The ``ConvergenceWarning`` of a fit that reached ``max_iter``."""
    if tol is None:
        return
    recent = changes[-CHANGE_WINDOW:]
    measured = (f"a mean embedding change of {np.mean(recent):.3g} over the "
                f"last {len(recent)} iterations" if recent else
                "no embedding change measured yet")
    hint = ("" if margin > 0 else
            " With threshold='paper', noise in the first iteration can set "
            "lambda above the eigenvalues the embedding needs; "
            "threshold='auto' keeps it below them.")
    warnings.warn(
        f"FederatedKernelKMeans stopped at max_iter={max_iter} with {measured}"
        f" (the rule needs a mean below tol={tol} over {CHANGE_WINDOW}). "
        f"Increase max_iter or n_random_features (now {n_features}), or pass "
        f"tol=None to run exactly max_iter iterations.{hint}",
        ConvergenceWarning)


def check_finite(values, t, gamma):
    """Stop on a non-finite estimate, naming the parameter to change."""
    if not np.all(np.isfinite(values)):
        raise ValueError(
            f"DSPGD produced non-finite values at iteration {t}: the kernel "
            f"width gamma={gamma!r} is extreme for this data. Scale X "
            "(StandardScaler) or choose gamma near 1 / (2 * mean squared "
            "distance between rows).")


# -- DSPGD with CEM (section 4.2) ---------------------------------------------

def user_form_w(state, t, eta):
    """Algorithm 1, lines 7-8: fresh features, then ``W_t[m]``.

    The seed of iteration ``t`` derives from the users' key, so the server
    does not know ``omega_t``.
    """
    D, r = state.n_random_features, state.B.shape[1]
    # One n x (D + r) array, the features written into it block by block:
    # the user's peak memory is W (and U, B), not several copies of A.
    state.W = None
    W = np.empty((state.X.shape[0], D + r))
    random_features(state.X, feature_seed(state.users_key, t), state.gamma, D,
                    out=W[:, :D], scale=np.sqrt(eta / D))
    np.multiply(state.B, np.sqrt(1.0 - eta), out=W[:, D:])
    state.W = W
    return W.shape[1]


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
    previous = getattr(state, "U", None)
    state.U_previous = None if previous is None else previous[:, :state.s]
    state.U = (state.W @ V) / np.sqrt(theta)
    keep = theta > shrink
    state.B = state.U[:, keep] * np.sqrt(theta[keep] - shrink)
    state.W = None  # W_t is not needed any more


def user_embedding_overlap(state):
    """``U_t[m]^T U_{t-1}[m]`` over the top ``s`` columns (s x s floats).

    Summed over users (masked) it gives the server the overlap of two
    successive embeddings, hence their change, and nothing per row.
    """
    s = state.s
    if state.U_previous is None:
        return np.zeros((s, s))
    return state.U[:, :s].T @ state.U_previous


def user_build_h(state, scales):
    """Algorithm 1, line 17: ``H[m] = [sqrt(theta_i + (1-eta_T) lambda) u_i[m]]``."""
    state.H = state.U[:, : len(scales)] * scales


# -- DSPGD without CEM (section 4.1), for the communication comparison --------

def user_draw_features(state, t):
    state.A = random_features(state.X, feature_seed(state.users_key, t),
                              state.gamma,
                              state.n_random_features)


def user_take_part(state, c_part):
    """Step 1 of section 4.1: the user's part ``c_q[m]`` of the vector."""
    state.c_part = np.asarray(c_part)


def user_features_t_times(state):
    """Step 2 of section 4.1: ``A_t[m]^T c_q[m]`` (D floats, masked)."""
    return state.A.T @ state.c_part


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


def server_plain_update(state, theta, vectors, shrink, values):
    """``Z_{t+1}`` on the server: soft-thresholded eigenpairs of ``R_t``.

    Returns the embedding change (``None`` at the first iteration): the
    server holds the eigenvectors over all rows, so it needs no message.
    """
    s = len(values)
    previous = getattr(state, "U", None)
    change = None
    if previous is not None:
        overlap = vectors[:, :s].T @ previous[:, :s]
        change = embedding_change(overlap, values, state.values)
    state.values = np.asarray(values)
    state.U = vectors
    keep = theta > shrink
    state.Z_vectors = vectors[:, keep]
    state.Z_values = theta[keep] - shrink
    return change


def server_rows_of_h(state, scales, user_index):
    """The rows of ``H`` that belong to one user (the server holds all of H)."""
    stop = np.cumsum(state.n_rows)
    start = stop - np.asarray(state.n_rows)
    rows = slice(start[user_index], stop[user_index])
    return state.U[rows, : len(scales)] * scales


def user_receive_h(state, H):
    state.H = np.asarray(H)


def server_split_vector(state, c):
    """Cut ``c`` into the users' parts ``c[m]`` (the server knows n_m)."""
    return np.split(np.asarray(c), np.cumsum(state.n_rows)[:-1])


def server_select_pairs(state, threshold, n_keep, tiny_ratio=1e-9):
    """The Ritz pairs to broadcast: all above ``threshold``, at least ``n_keep``.

    Pairs whose value is not clearly positive are dropped: ``u = W v /
    sqrt(theta)`` would only amplify rounding noise.
    """
    theta, V = server_ritz_pairs(state)
    floor = tiny_ratio * max(theta[0], 0.0) if len(theta) else 0.0
    n = max(int(np.sum(theta > threshold)), int(n_keep))
    n = min(n, int(np.sum(theta > floor)))
    state.stash["all_ritz_values"] = theta
    return theta[:n], V[:, :n]
