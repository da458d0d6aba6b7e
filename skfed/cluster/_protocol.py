"""The protocol of federated kernel k-means: Algorithm 1's driver and party functions.

The data are split by rows: user ``m`` holds ``X[m]``; a server with no data
coordinates. :func:`run_protocol` strings the steps together:

1. setup (:func:`setup`): row counts, the users' key, the kernel width
   (Algorithm 1's inputs, and the ``gamma`` rule of section 6.1);
2. DSPGD with CEM (:func:`dspgd_with_cem`, lines 4-18), or the plain DSPGD of
   section 4.1 (:func:`dspgd_without_cem`), kept for the communication
   comparison; their party functions are in :mod:`._dspgd`, the distributed
   Lanczos of line 10 in :mod:`._lanczos`;
3. the distributed linear k-means of line 19 (:mod:`._coreset`);
4. the out-of-sample map (:func:`out_of_sample_map`);
5. with ``refine``, skfed's Lloyd refinement on the random features of that
   map (:mod:`._refine`), which replaces line 19's labels and centers.

Every sum the server needs over users -- the Lanczos products
``sum_m W_t[m]^T W_t[m] c``, the moments behind the default ``gamma``, the
embedding overlaps of the stopping rule and ``H^T A'`` -- is a secure sum
(:func:`~skfed.federation.secure_sum.secure_sum`): each user's upload is
masked by pairwise ring masks and only the total decodes. Appendix B allows
it: with CEM the distributed Lanczos needs the product ``W_t^T W_t c`` and
nothing per user. :mod:`._contract` declares every message.

Setup. Before DSPGD starts, the server learns how many rows each user holds
and the kernel width ``gamma``, and the users share a key the server does
not know.

- **Row counts** travel in plaintext (the server splits the coreset budget
  by them). A user holding fewer than :data:`MIN_USER_ROWS` rows is refused
  before any party starts.
- **The users' key** seeds every random Fourier feature (``omega_t, b_t`` of
  each iteration and the features of the out-of-sample map). It shapes the
  model, so with ``party_keys="random_state"`` it derives from
  ``random_state`` (reproducible fits; the simulation stands in for a key the
  users agreed on beforehand); with ``party_keys="os"`` the first user draws
  it from its CSPRNG and sends it to the other users, as a deployment would,
  and the server never sees it.
- **The default gamma** is the paper's ``N^2 / (2 sum_ij ||x_i - x_j||^2)``.
  Since ``sum_ij ||x_i - x_j||^2 = 2 N sum_i ||x_i||^2 - 2 ||sum_i x_i||^2``,
  the totals over all users of ``sum x`` and ``sum ||x||^2`` suffice, and
  of ``sum x`` only its norm. Each user rotates its ``sum x`` by an
  orthogonal map ``Q`` drawn from the users' key (a randomised Hadamard
  transform, the same for every user), and the vectors ``(Q sum x,
  sum ||x||^2)`` are summed with pairwise ring masks: the server decodes the
  totals only, and of the mean row only its norm, which is what ``gamma``
  needs. A ring holds fixed-point numbers of one scale, and the data's
  magnitude is not public: the users first secure-sum a one-hot vote for the
  power-of-two bucket of their largest moment (``sqrt(sum ||x||^2)`` in
  place of ``sum ||x||^2``, so that every entry scales like X), and the
  server announces the top bucket ``2**s`` as the common scale (it learns
  how many users fall in each bucket, not which); ``sum ||x||^2`` travels
  divided by ``2**s``, which keeps the estimate of ``gamma`` exact to ring
  precision whatever the units of X.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import hashlib
import secrets

import numpy as np
import scipy.sparse as sp

from .._progress import Progress
from ..federation import CommunicationSummary, protocol_rounds
from ..federation.secure_sum import RingEncoder, secure_sum
from . import _dspgd as dspgd
from ._coreset import distributed_kmeans
from ._dspgd import (PHASE_CONVERGENCE, PHASE_EIGENPAIRS, PHASE_ITERATION,
                     PHASE_LANCZOS, derive_seed)
from ._lanczos import distributed_lanczos, server_collect
from ._refine import lloyd_refinement, user_release_history

__all__ = [
    "MIN_USER_ROWS",
    "SERVER",
    "ScaledRingEncoder",
    "check_user_rows",
    "dspgd_uploads",
    "dspgd_with_cem",
    "dspgd_without_cem",
    "moment_encoder",
    "out_of_sample_map",
    "ring_encoder",
    "run_protocol",
    "server_eigenpairs",
    "setup",
    "shared_rotation",
    "user_embed_and_assign",
    "users_key_from_seed",
]

#: name of the coordinating party
SERVER = "server"

#: a user must hold at least this many rows: every value it sends in
#: plaintext (its row count, the cost of its local k-means, group means) then
#: summarises several rows, and so does its masked share of every sum
MIN_USER_ROWS = 5

# The scale vote: buckets of _BUCKET powers of two covering float64's range.
_LOWEST_EXPONENT, _BUCKET, _N_BUCKETS = -1080, 8, 270


def run_protocol(fed, users, *, gamma, draw_key, communication_efficient,
                 max_iter, tol, n_lambda, n_components, n_random_features,
                 threshold, n_samples, n_clusters, coreset_size, seeds,
                 n_oos_features, verbose, monitor, refine=None):
    """Algorithm 1 from setup to the published map, then (``refine`` not
    None) skfed's Lloyd refinement; returns a dict of results."""
    # Line 1, the inputs: row counts, the users' key, gamma (section 6.1).
    gamma = setup(fed, users, gamma, draw_key=draw_key)
    common = dict(max_iter=max_iter, n_lambda=n_lambda,
                  n_components=n_components,
                  n_random_features=n_random_features,
                  lanczos_seed=seeds["lanczos"],
                  lambda_margin=dspgd.lambda_margin(threshold,
                                                    n_random_features),
                  verbose=verbose, monitor=monitor, n_samples=n_samples)
    # Lines 4-18: DSPGD with CEM, or the plain DSPGD of section 4.1.
    if communication_efficient:
        lam, eigenvalues, trace, changes, per_iteration = dspgd_with_cem(
            fed, users, tol=tol, gamma=gamma, **common)
    else:
        lam, eigenvalues, trace, changes, per_iteration = dspgd_without_cem(
            fed, users, tol=tol, gamma=gamma, **common)
    # Line 19: distributed linear k-means over the rows of H.
    centers = distributed_kmeans(fed, SERVER, users, n_clusters=n_clusters,
                                 coreset_size=coreset_size, seed=seeds["server"])
    # skfed's addition: the published map that lets predict embed new rows.
    embedding_map = out_of_sample_map(fed, users, eigenvalues, n_oos_features,
                                      n_samples)
    refined, alive, moves = None, None, []
    if refine is not None:
        # Not in the paper: Lloyd's k-means on the map's random features,
        # from line 19's labels (the users' labels end as its result).
        refined, alive, moves = lloyd_refinement(
            fed, SERVER, users, n_clusters=n_clusters,
            n_features=n_oos_features, n_samples=n_samples,
            refine=refine)
    labels = fed.gather(fed[u].call(_user_labels) for u in users)
    # Each user's labels at every release of the totals, then its final
    # labels (local records, read by the audit's refinement_differences).
    history = ([h + [np.asarray(lab, dtype=np.int32)] for h, lab in zip(
        fed.gather(fed[u].call(user_release_history) for u in users), labels)]
               if refine is not None else [])
    return dict(gamma=gamma, threshold=lam, eigenvalues=eigenvalues,
                trace=trace, changes=changes, per_iteration=per_iteration,
                centers=centers, refined_centers=refined, refined_alive=alive,
                refine_moves=moves, refine_history=history,
                embedding_map=embedding_map, labels=labels,
                users_key=fed[users[0]].call(user_key).result())


# -- setup: row counts, the users' key, the kernel width -------------------------

def check_user_rows(n_rows, users):
    """Refuse a user holding fewer than :data:`MIN_USER_ROWS` rows."""
    for user, n in zip(users, n_rows):
        if n < MIN_USER_ROWS:
            raise ValueError(
                f"User '{user}' holds {n} row(s); federated kernel k-means "
                f"requires at least MIN_USER_ROWS={MIN_USER_ROWS} rows per "
                "user, so that everything a user sends sums several rows. "
                "Give its rows to another user (sample_party) or use fewer "
                "users.")


def users_key_from_seed(seed):
    """``party_keys="random_state"``: the users' key from a model seed.

    A simulation stand-in for a key agreed beforehand: reproducible, and
    known to whoever knows ``random_state`` (use ``party_keys="os"`` when
    that matters).
    """
    return hashlib.blake2b(f"users key:{int(seed)}".encode(),
                           digest_size=16).digest()


class ScaledRingEncoder(RingEncoder):
    """A :class:`~skfed.federation.secure_sum.RingEncoder` of ``x / 2**shift``.

    Values below ``2**shift`` in magnitude encode with ``frac_bits``
    fractional bits relative to that scale, whatever their absolute size.
    """

    def __init__(self, frac_bits=32, shift=0):
        super().__init__(frac_bits)
        self.shift = int(shift)

    def encode(self, values):
        return super().encode(np.ldexp(np.asarray(values, dtype=float),
                                       -self.shift))

    def decode(self, ring_values):
        return np.ldexp(super().decode(ring_values), self.shift)

    def __repr__(self):
        return f"ScaledRingEncoder(frac_bits={self.frac_bits}, shift={self.shift})"


def moment_encoder(n_users, shift):
    """The ring encoding of the moments, at the scale ``2**shift`` announced."""
    # Every |moment| of a user is below 2**shift; the total of n_users is
    # below n_users * 2**shift, which the ring must hold.
    bits = int(np.ceil(np.log2(max(n_users, 1)))) + 2
    return ScaledRingEncoder(frac_bits=63 - bits, shift=shift)


def user_row_count(state):
    return np.array([state.X.shape[0]], dtype=np.int64)


def server_take_count(state, count):
    state.n_rows.append(int(np.asarray(count).ravel()[0]))


def user_take_scale(state, shift):
    state.moment_scale = int(shift)


def user_draw_key(state):
    # The users' secret: the first user's CSPRNG, never random_state.
    state.users_key = secrets.token_bytes(16)
    return np.frombuffer(state.users_key, dtype=np.uint8).copy()


def user_store_key(state, key):
    state.users_key = np.asarray(key, dtype=np.uint8).tobytes()


def user_key(state):
    # A local read, not a message: the estimator keeps the key for predict,
    # acting for the users (who hold it), never for the server.
    return state.users_key


def _fwht(x):
    """Orthonormal fast Walsh-Hadamard transform (length a power of two)."""
    x = np.array(x, dtype=float)
    h = 1
    while h < len(x):
        x = x.reshape(-1, 2, h)
        x = np.stack([x[:, 0] + x[:, 1], x[:, 0] - x[:, 1]], axis=1).ravel()
        h *= 2
    return x / np.sqrt(len(x))


def shared_rotation(users_key, v):
    """``Q v``: an orthogonal map drawn from the users' key, unknown to the server.

    Three rounds of random signs, a Walsh-Hadamard transform and a random
    permutation, on ``v`` padded with zeros to a power of two: norms are
    kept exactly, directions are scrambled.
    """
    v = np.asarray(v, dtype=float)
    size = 1 << max(len(v) - 1, 0).bit_length()
    rng = np.random.default_rng(derive_seed(users_key, "moment rotation"))
    x = np.concatenate([v, np.zeros(size - len(v))])
    for _ in range(3):
        x = _fwht(x * rng.choice([-1.0, 1.0], size))[rng.permutation(size)]
    return x


def _moments(state):
    X = state.X
    with np.errstate(over="ignore"):
        if sp.issparse(X):
            column_sums = np.asarray(X.sum(axis=0)).ravel()
            squares = float(X.multiply(X).sum())
        else:
            column_sums, squares = X.sum(axis=0), np.einsum("ij,ij->", X, X)
        out = np.concatenate([shared_rotation(state.users_key, column_sums),
                              [squares]])
    if not np.all(np.isfinite(out)):
        raise ValueError(
            "the sums of X overflow float64, so the default gamma cannot be "
            "computed: rescale X (StandardScaler) or pass gamma explicitly.")
    return out


def _degree_one(moments):
    """``(Q sum x, sqrt(sum ||x||^2))``: every entry scales like X itself."""
    return np.concatenate([moments[:-1], [np.sqrt(moments[-1])]])


def user_scale_vote(state):
    """One-hot vote for the power-of-two bucket of the user's largest moment.

    The vote reads ``sqrt(sum ||x||^2)`` beside ``Q sum x`` so that both
    scale like X: the uploaded ``sum ||x||^2`` is divided by the announced
    scale once (:func:`user_moments`), and every entry then sits near the
    top of one fixed-point range, whatever the units of X (data scaled by
    ``1e-20`` used to lose ``sum ||x||^2`` below the ring's resolution).
    """
    largest = float(np.max(np.abs(_degree_one(_moments(state))), initial=0.0))
    exponent = np.frexp(largest)[1] if largest > 0 else _LOWEST_EXPONENT
    bucket = int(np.clip((exponent - _LOWEST_EXPONENT) // _BUCKET, 0,
                         _N_BUCKETS - 1))
    vote = np.zeros(_N_BUCKETS)
    vote[bucket] = 1.0
    return vote


def user_moments(state):
    """``(Q sum_i x_i, 2**-s sum_i ||x_i||^2)`` over the user's rows.

    ``s`` is the announced scale: both parts are then below ``2**s`` and of
    degree one in X (masked later).
    """
    out = _moments(state)
    out[-1] = np.ldexp(out[-1], -state.moment_scale)
    return out


def server_scale(state, votes):
    """The common scale: the top bucket any user voted for (an exponent)."""
    top = int(np.max(np.flatnonzero(np.round(votes) > 0), initial=0))
    state.moment_scale = _LOWEST_EXPONENT + _BUCKET * (top + 1)
    return state.moment_scale


def server_gamma(state, total):
    """Section 6.1: ``gamma = N^2 / (2 sum_ij ||x_i - x_j||^2)`` from totals.

    ``total = (Q sum_i x_i, 2**-s sum_i ||x_i||^2)`` at the announced scale
    ``s``; ``Q`` keeps the norm.
    """
    n = float(sum(state.n_rows))
    s1, s2 = total[:-1], float(np.ldexp(total[-1], state.moment_scale))
    pair_sum = 2.0 * n * s2 - 2.0 * float(s1 @ s1)
    if s2 == 0.0:
        return 1.0  # every row is zero: any width gives the same clustering
    if pair_sum <= 1e-9 * n * s2:
        # The spread is lost to rounding beside the rows' common offset (or
        # is zero): a width from it would be arbitrary, so stop.
        raise ValueError(
            "the rows of X are identical, or differ by less than 1e-9 of "
            "their magnitude, so the default gamma (the paper's mean-distance "
            "rule) cannot be computed: center X (StandardScaler) or pass "
            "gamma explicitly.")
    return n * n / (2.0 * pair_sum)


def user_set_gamma(state, gamma):
    state.gamma = float(gamma)


def _exchange_key(fed, users):
    """``party_keys="os"``: the first user sends its fresh key to the others."""
    key = fed[users[0]].call(user_draw_key).result()
    fed.gather(fed[u].call(user_store_key, key, sender=users[0],
                           phase="setup: users' key") for u in users[1:])


def setup(fed, users, gamma, *, draw_key):
    """Row counts, the users' key and the kernel width; returns ``gamma``.

    Phases: ``"setup: row counts"``, ``"setup: users' key"`` (with
    ``draw_key``), ``"setup: scale/*"`` and ``"setup: moments/*"`` (secure
    sums, default gamma only) and ``"setup: gamma"`` (the broadcast).
    """
    counts = fed.gather(fed[u].call(user_row_count) for u in users)
    fed.gather(fed[SERVER].call(server_take_count, c, sender=u,
                                phase="setup: row counts")
               for u, c in zip(users, counts))
    if draw_key:
        _exchange_key(fed, users)
    if gamma is None:
        votes = secure_sum(fed, users, SERVER, user_scale_vote,
                           phase="setup: scale",
                           encoder=RingEncoder(frac_bits=8)).result()
        shift = fed[SERVER].call(server_scale, votes).result()
        encoder = moment_encoder(len(users), shift)
        fed.gather(fed[u].call(user_take_scale, shift, sender=SERVER,
                               phase="setup: scale") for u in users)
        total = secure_sum(fed, users, SERVER, user_moments,
                           phase="setup: moments", encoder=encoder).result()
        gamma = fed[SERVER].call(server_gamma, total).result()
    fed.gather(fed[u].call(user_set_gamma, gamma, sender=SERVER,
                           phase="setup: gamma") for u in users)
    return float(gamma)


# -- DSPGD with CEM (Algorithm 1, lines 4-18) ------------------------------------

def ring_encoder(bound):
    """Fixed point for sums whose total is at most ``bound`` in magnitude."""
    return RingEncoder.for_bound(bound, margin_bits=3)


def dspgd_with_cem(fed, users, *, max_iter, tol, n_lambda, n_components,
                   n_random_features, n_samples, lanczos_seed, gamma,
                   lambda_margin, verbose, monitor):
    """Algorithm 1, lines 4-18, with the stopping rule.

    Returns ``(lambda, eigenvalues of H's columns, trace, changes,
    per_iteration)``; ``trace`` holds ``(Q_t, r_{t+1})`` per iteration and
    ``per_iteration`` the message counts of each iteration.
    """
    s = n_components
    fed.gather(fed[u].call(_set_state, "s", s) for u in users)
    gram = ring_encoder(2.0 * n_samples)
    overlap_encoder = ring_encoder(1.0)
    lam, trace, changes, previous = None, [], [], None
    per_iteration, counted = [], fed.summary()
    progress = Progress("FederatedKernelKMeans", max_iter, verbose, fed=fed,
                        unit="iteration")
    for t in protocol_rounds(range(1, max_iter + 1)):
        eta = 1.0 / t
        # Lines 6-9: every user draws A_t[m] and forms W_t[m] (the server only
        # announces the iteration).
        dims = fed.gather(fed[u].call(dspgd.user_form_w, t, eta, sender=SERVER,
                                      phase=PHASE_ITERATION) for u in users)

        # Line 10: DLA on W_t^T W_t = sum_m W_t[m]^T W_t[m] (D + r_t square):
        # the server broadcasts c and receives only the masked sum of the
        # users' W_t[m]^T W_t[m] c (appendix B needs nothing per user).
        def matvec(c):
            total = secure_sum(fed, users, SERVER, dspgd.user_gram_product, c,
                               phase=PHASE_LANCZOS, encoder=gram,
                               sender=SERVER)
            fed[SERVER].call(server_collect, total.result()).result()

        q, lam, shrink, theta, V = server_eigenpairs(
            fed, dims[0], matvec, t=t, lam=lam, eta=eta, n_lambda=n_lambda,
            s=s, seed=lanczos_seed, gamma=gamma, margin=lambda_margin)
        # Lines 11-14: the server broadcasts the eigenpairs; each user forms
        # its rows of the eigenvectors and of B_{t+1} (soft threshold).
        fed.gather(fed[u].call(dspgd.user_update_from_eigenpairs, theta, V,
                               shrink, sender=SERVER, phase=PHASE_EIGENPAIRS)
                   for u in users)
        rank = int(np.sum(theta > shrink))
        trace.append((q, rank))
        values = theta[:s] + (1.0 - eta) * lam
        if monitor is not None:
            monitor(t, theta + (1.0 - eta) * lam,
                    fed.gather(fed[u].call(_evaluation_only_rows) for u in users))
        if previous is not None and tol is not None:
            # Stopping rule: the change of the embedding's Gram matrix,
            # from the masked sum of the users' s x s overlaps.
            overlap = secure_sum(fed, users, SERVER, dspgd.user_embedding_overlap,
                                 phase=PHASE_CONVERGENCE,
                                 encoder=overlap_encoder).result()
            change = fed[SERVER].call(dspgd.server_embedding_change, overlap,
                                      values, previous).result()
            dspgd.check_finite([change], t, gamma)
            changes.append(change)
        progress.report(
            t, (f"embedding change {changes[-1]:.2e}" if changes else
                "embedding change n/a") + f" ({q} Lanczos steps, rank {rank})",
            last=dspgd.converged(changes, tol))
        previous = values
        counts, counted = iteration_counts(fed, counted)
        per_iteration.append(counts)
        if dspgd.converged(changes, tol):
            break
    else:
        dspgd.warn_not_converged(changes, tol, max_iter, n_random_features,
                                 lambda_margin)
    # Lines 16-18: each user builds its rows of H.
    scales = np.sqrt(values)
    fed.gather(fed[u].call(dspgd.user_build_h, scales, sender=SERVER,
                           phase="dspgd: build H") for u in users)
    return lam, values, trace, changes, per_iteration


def server_eigenpairs(fed, dim, matvec, *, t, lam, eta, n_lambda, s, seed,
                      gamma, margin=0.0, combine=None):
    """Line 10 of Algorithm 1 and the pairs kept: DLA, then the eigenpairs
    above the soft threshold ``eta lambda``, on the server.

    On the first iteration (``lam`` None) DLA runs to ``n_lambda`` pairs
    and ``lambda`` is chosen from them (section 6.1, with ``margin`` as in
    :func:`~._dspgd.choose_lambda`); if that puts ``lambda`` below the
    ``n_lambda``-th value, the same run continues until every Ritz value
    above ``lambda`` has converged too. Afterwards only pairs above the
    threshold are needed. At least ``s`` pairs are kept every iteration, so
    ``H`` can be built whenever the stopping rule fires.

    Returns
    -------
    n_steps, lam, shrink, theta, V
        Lanczos steps, ``lambda``, the threshold ``eta lambda`` and the kept
        eigenpairs.
    """
    first = lam is None
    n_steps = distributed_lanczos(
        fed, SERVER, dim, matvec,
        threshold=np.inf if first else eta * lam,
        n_min=n_lambda if first else s, seed=dspgd.lanczos_seed(seed, t),
        combine=combine)
    if first:
        theta_all = fed[SERVER].call(dspgd.server_select_pairs, np.inf,
                                     n_lambda).result()[0]
        lam = dspgd.choose_lambda(theta_all, n_lambda, s, margin)
        if lam < theta_all[-1]:
            # Appendix B: every eigenvalue above the threshold must converge.
            n_steps = distributed_lanczos(
                fed, SERVER, dim, matvec, threshold=lam, n_min=n_lambda,
                seed=None, combine=combine, resume=True)
    shrink = eta * lam
    theta, V = fed[SERVER].call(dspgd.server_select_pairs, shrink, s).result()
    dspgd.check_finite(theta, t, gamma)
    return n_steps, lam, shrink, theta, V


def iteration_counts(fed, before):
    """Messages of one iteration: ``(counts since before, counts now)``.

    ``before`` and the counts are :class:`CommunicationSummary` of the whole
    run so far; the driver waits for every call of an iteration before the
    next starts, so the difference is exactly that iteration's messages.
    """
    now = fed.summary()
    return now - before, now


def _set_state(state, name, value):
    setattr(state, name, value)


def _evaluation_only_rows(state):
    # Not a protocol message: the benchmark's recovery-error curve reads the
    # users' eigenvector rows (without CEM, the server's eigenvectors)
    # through this local call.
    return state.U


# -- DSPGD without CEM (section 4.1), for the communication comparison ----------

def dspgd_without_cem(fed, users, *, max_iter, tol, n_lambda, n_components,
                      lanczos_seed, n_random_features, n_samples, gamma,
                      lambda_margin, verbose, monitor):
    """Section 4.1: Lanczos on the n x n matrix R_t; Z_t lives on the server.

    Kept so that the paper's communication comparison (Figure 2, Theorem 2)
    can be reproduced: the Lanczos iterations run on ``R_t = (1 - eta_t) Z_t
    + eta_t A_t A_t^T / D`` and ``Z_t`` (its eigenvectors over all rows)
    lives on the server. Per Lanczos step user ``m`` uploads ``A_t[m]^T
    c_q[m]`` (``D`` floats, masked: the server needs only their sum) and
    ``A_t[m] A_t^T c_q`` (``n_m`` floats, one per row: the server
    concatenates them, so they cannot be summed away), so the uploads grow
    with the number of rows. The server holds the eigenvectors, hence
    ``H``, and measures the embedding change of the stopping rule itself.

    Returns ``(lambda, eigenvalues of H's columns, trace, changes,
    per_iteration)`` as :func:`dspgd_with_cem` does.
    """
    s = n_components
    fed[SERVER].call(_server_init_plain, n_samples).result()
    encoder = RingEncoder.for_bound(2.0 * n_samples, margin_bits=3)
    lam, trace, changes = None, [], []
    per_iteration, counted = [], fed.summary()
    phase = PHASE_LANCZOS
    for t in protocol_rounds(range(1, max_iter + 1)):
        eta = 1.0 / t
        fed.gather(fed[u].call(dspgd.user_draw_features, t, sender=SERVER,
                               phase=PHASE_ITERATION) for u in users)

        def matvec(c):
            # 1) the server sends c[m] to user m; 2) users upload A_t[m]^T c[m],
            # masked, and the server decodes the sum A_t^T c; 3) the server
            # broadcasts it; 4) users upload A_t[m] A_t^T c (one value per
            # row); 5) the server concatenates (in combine), adds (1-eta) Z_t c.
            pieces = fed[SERVER].call(dspgd.server_split_vector, c).result()
            fed.gather(fed[u].call(dspgd.user_take_part, p, sender=SERVER,
                                   phase=phase)
                       for u, p in zip(users, pieces))
            atc = secure_sum(fed, users, SERVER, dspgd.user_features_t_times,
                             phase=phase, encoder=encoder).result()
            rows = fed.gather(fed[u].call(dspgd.user_features_times, atc,
                                          sender=SERVER, phase=phase)
                              for u in users)
            fed.gather(fed[SERVER].call(server_collect, r, sender=u,
                                        phase=f"{phase}/rows")
                       for u, r in zip(users, rows))

        q, lam, shrink, theta, V = server_eigenpairs(
            fed, n_samples, matvec, t=t, lam=lam, eta=eta, n_lambda=n_lambda,
            s=s, seed=lanczos_seed, gamma=gamma, margin=lambda_margin,
            combine=dspgd.server_plain_combine(eta, n_random_features))
        values = theta[:s] + (1.0 - eta) * lam
        change = fed[SERVER].call(dspgd.server_plain_update, theta, V, shrink,
                                  values).result()
        if change is not None:
            changes.append(change)
        rank = int(np.sum(theta > shrink))
        trace.append((q, rank))
        if verbose:
            print(f"[FederatedKernelKMeans] t={t}: {q} Lanczos steps, "
                  f"dimension {n_samples}, rank {rank}")
        if monitor is not None:
            monitor(t, theta + (1.0 - eta) * lam,
                    [fed[SERVER].call(_evaluation_only_rows).result()])
        counts, counted = iteration_counts(fed, counted)
        per_iteration.append(counts)
        if dspgd.converged(changes, tol):
            break
    else:
        dspgd.warn_not_converged(changes, tol, max_iter, n_random_features,
                                 lambda_margin)
    # The server holds H; each user receives its own rows of it.
    scales = np.sqrt(values)
    for m, u in enumerate(users):
        H_m = fed[SERVER].call(dspgd.server_rows_of_h, scales, m).result()
        fed[u].call(dspgd.user_receive_h, H_m, sender=SERVER,
                    phase="dspgd: rows of H").result()
    return lam, values, trace, changes, per_iteration


def _server_init_plain(state, n_samples):
    state.Z_vectors = np.zeros((n_samples, 0))
    state.Z_values = np.zeros(0)


# -- out-of-sample map, labels, prediction ----------------------------------------

def user_oos_moment(state, n_features):
    """``H[m]^T A'[m]`` (s x D' floats) with features from a fresh seed.

    Summed over users it is ``H^T A'``; since ``A' A'^T / D' ~ K``, the map
    ``P = Lambda^{-1} H^T A' / D'`` sends a new row's features ``a'(x)`` to
    ``Lambda^{-1} H^T k_x``, the Nystrom extension of the embedding.
    """
    total = np.zeros((state.H.shape[1], n_features))
    for rows, A in dspgd.feature_blocks(state.X, dspgd.oos_seed(state.users_key),
                                        state.gamma, n_features):
        total += state.H[rows].T @ A
    return total


def server_oos_map(state, total, eigenvalues, n_features):
    """``P = Lambda^{-1} H^T A' / D'`` from the (securely summed) total."""
    return np.asarray(total) / (np.asarray(eigenvalues)[:, None] * n_features)


def user_receive_map(state, embedding_map):
    state.embedding_map = np.asarray(embedding_map)


def out_of_sample_map(fed, users, eigenvalues, n_features, n_samples):
    """Users' ``H[m]^T A'[m]`` summed with masks; the server publishes ``P``."""
    phase = "oos: embedding map"
    total = secure_sum(fed, users, SERVER, user_oos_moment, n_features,
                       phase=phase, encoder=ring_encoder(2.0 * n_samples))
    P = fed[SERVER].call(server_oos_map, total.result(), eigenvalues,
                         n_features).result()
    if np.shape(P) != np.shape(total.result()):  # would predict wrongly
        raise ValueError(f"The server's embedding map has shape {np.shape(P)}, "
                         f"expected {np.shape(total.result())}.")
    fed.gather(fed[u].call(user_receive_map, P, sender=SERVER, phase=phase)
               for u in users)
    return P


def _user_labels(state):
    # The output of the protocol: each user's own labels, handed to its owner.
    return state.labels


def user_embed_and_assign(state, embedding_map, centers):
    """Prediction on a user: embed its new rows; squared distances to every
    published center (the nearest is the row's cluster)."""
    dist = np.empty((state.X.shape[0], len(centers)))
    # By blocks of rows: the new rows' features never exist all at once.
    for rows, A in dspgd.feature_blocks(state.X, dspgd.oos_seed(state.users_key),
                                        state.gamma, embedding_map.shape[1]):
        E = A @ embedding_map.T
        dist[rows] = ((E[:, None, :] - centers[None]) ** 2).sum(axis=-1)
    return dist


# -- the paper's measure of communication ----------------------------------------

def dspgd_uploads(estimator):
    """Floats each user uploaded in each DSPGD iteration (the paper's measure).

    Parameters
    ----------
    estimator : FederatedKernelKMeans or list of CommunicationSummary
        A fitted estimator (its ``communication_by_iteration_`` is read), or
        that list itself.

    Returns
    -------
    uploads : dict
        ``{t: {user: n_floats}}``: scalars sent by each user to the server in
        the Lanczos phase of DSPGD iteration ``t`` (``"dspgd:
        lanczos/upload"``, the masked products; with
        ``communication_efficient=False`` also ``"dspgd: lanczos/rows"``,
        the per-row products).
    """
    per_iteration = getattr(estimator, "communication_by_iteration_",
                            estimator)
    if isinstance(per_iteration, CommunicationSummary):
        raise TypeError(
            "dspgd_uploads needs the fitted FederatedKernelKMeans (or its "
            "communication_by_iteration_), not communication_: that one "
            "groups the messages by protocol phase, over all iterations.")
    out = {}
    for t, summary in enumerate(per_iteration, start=1):
        out[t] = {}
        for sender, receiver, phase, _, scalars, _, _ in summary.records:
            if receiver == SERVER and phase.startswith(PHASE_LANCZOS + "/"):
                out[t][sender] = out[t].get(sender, 0) + scalars
    return out
