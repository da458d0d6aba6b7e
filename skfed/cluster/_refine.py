"""skfed's refinement after Algorithm 1: distributed Lloyd on the random features.

Not in the paper. Algorithm 1 ends with a linear k-means on the rows of the
spectral embedding ``H``; where the top eigenvectors of the kernel matrix do
not separate the clusters (the two moons: exact kernel k-means, which is
what ``H`` approaches, reaches NMI 0.78 there) no accuracy of ``H`` helps.
Kernel k-means itself minimises ``sum_i ||phi(x_i) - mu_{c(i)}||^2`` in the
kernel's feature space, and the random Fourier features ``z(x) = a'(x) /
sqrt(D')`` that the users already share for the out-of-sample map
(:func:`~._dspgd.oos_seed`) approximate that space: ``z(x)^T z(x') ~
k(x, x')``. :func:`lloyd_refinement` runs Lloyd's iterations of k-means on
``z``, started from the embedding's labels:

1. every user sums ``z`` of its rows by cluster and counts them (with
   ``sample_weight``, weighted sums and weight totals); the vectors
   ``(sums, counts)`` are summed with pairwise ring masks *to the first
   user*, who decodes the totals and relays them to the other users
   (:func:`release_totals`); every user divides: the centers ``mu_j``
   (``k x D'``) of the clusters in the feature space;
2. every user assigns each of its rows to the nearest center, and the
   users' counts of moved rows are summed, masked, to the server;
3. with ``refine="once"`` (the estimator's default) it stops here, by
   design; otherwise, if at least :data:`MIN_MOVED` rows moved in total,
   the server asks for new totals (step 1) and the loop goes on, and if
   not it stops.

The labels are the users' final assignment to the released centers, so a
training row's label is always its nearest center (``predict`` on the
training rows gives ``labels_``). With no move at all this is Lloyd's fixed
point; with ``1..MIN_MOVED - 1`` moves those rows keep their new labels
while the centers stay as released (at most ``MIN_MOVED - 1`` rows short of
exact Lloyd's last mean update).

Who sees the totals. Two consecutive totals differ by the features of the
rows that moved between them, signed (``+z(x)`` in the new cluster,
``-z(x)`` in the old one); whoever holds both and knows the features' key
solves that small system for the moved rows
(:func:`~._attacks.refinement_differences`). The refinement as first built
summed the totals to the server, and with ``party_keys="random_state"`` the
server knows the key (it derives from ``random_state``): it recovered every
moved row. The totals now go to the users only: the server receives no
upload of them, only the total number of moved rows. The users
hold the key and the totals (they need the centers to assign their rows),
so each user learns the other users' moved rows; the :data:`MIN_MOVED`
gate does not prevent that (the attack separates a few rows as well as
one). Hence the default of one update: a single release has no
difference, and what it tells (the kernel mean of each cluster, the
centers the model publishes) is measured by
:func:`~._attacks.totals_inversion`. See the estimator's Notes for the
numbers.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from ..federation import Local
from ..federation.secure_sum import RingEncoder, secure_sum
from ._dspgd import feature_blocks, oos_seed

__all__ = [
    "MIN_MOVED",
    "PHASE_REFINE_MOVES",
    "PHASE_REFINE_RELAY",
    "PHASE_REFINE_TOTALS",
    "REFINE_MAX_ITER",
    "lloyd_refinement",
    "refine_max_iter",
    "centers_from_totals",
    "release_totals",
    "user_take_totals",
    "totals_encoder",
    "user_release_history",
    "user_assign_features",
    "user_cluster_totals",
    "user_feature_distances",
]

#: new totals are released only when at least this many rows moved
MIN_MOVED = 5

#: ``refine="auto"``: at most this many Lloyd iterations
REFINE_MAX_ITER = 100

PHASE_REFINE_TOTALS = "refine: totals"  # masked (sums of z, counts) by cluster
PHASE_REFINE_MOVES = "refine: moves"    # masked move counts, to the server
PHASE_REFINE_RELAY = "refine: totals/relay"  # decoded totals, first user -> users


def totals_encoder(n_samples):
    """The ring encoding of the totals: ``|z| <= sqrt(2 / D')`` per entry
    and weights of mean one keep every total below ``2 n``."""
    return RingEncoder.for_bound(2.0 * n_samples, margin_bits=3)


def refine_max_iter(refine):
    """The cap on Lloyd iterations of a ``refine`` value (0: no refinement;
    ``"once"``: one center update, by design)."""
    if refine is None:
        return 0
    if refine == "once":
        return 1
    return REFINE_MAX_ITER if refine == "auto" else int(refine)


def _features(state, n_features):
    """``z(x) = a'(x) / sqrt(D')`` of the user's rows, by blocks of rows."""
    scale = 1.0 / np.sqrt(n_features)
    for rows, A in feature_blocks(state.X, oos_seed(state.users_key),
                                  state.gamma, n_features):
        yield rows, A * scale


def user_cluster_totals(state, n_clusters, n_features):
    """``(sum of z by cluster, rows (or weight) by cluster)``, flattened.

    The labels summed are the user's current ones, which it now releases
    (the next moves are counted from them).
    """
    labels = state.labels
    w = getattr(state, "refine_weight", None)
    sums = np.zeros((n_clusters, n_features))
    for rows, Z in _features(state, n_features):
        weights = None if w is None else w[rows]
        for j in np.unique(labels[rows]):
            mine = labels[rows] == j
            sums[j] += (Z[mine].sum(axis=0) if weights is None
                        else weights[mine] @ Z[mine])
    counts = np.bincount(labels, weights=w, minlength=n_clusters)
    state.released_labels = labels.copy()
    # A local record (no message): the labels of every release, read by the
    # audit's refinement_differences attack (the user's own view, and the
    # truth it is scored against).
    state.__dict__.setdefault("released_history", []).append(
        labels.astype(np.int32))
    return np.concatenate([sums.ravel(), counts.astype(float)])


def user_release_history(state):
    """A local read (no message): the labels of each release of the user."""
    return list(getattr(state, "released_history", []))


def _squared_distances(Z, centers, alive):
    """``||z - mu_j||^2``; clusters that hold no row are never nearest."""
    d = ((Z ** 2).sum(axis=1)[:, None] - 2.0 * Z @ centers.T
         + (centers ** 2).sum(axis=1)[None, :])
    d[:, ~alive] = np.inf
    return d


def user_assign_features(state):
    """Assign every row to its nearest center (of the last released
    totals); the count of rows whose label differs from the last released
    one (masked later)."""
    centers, alive = state.centers, state.alive
    labels = np.empty(state.X.shape[0], dtype=np.int64)
    for rows, Z in _features(state, centers.shape[1]):
        labels[rows] = np.argmin(_squared_distances(Z, centers, alive), axis=1)
    state.labels = labels
    return np.array([float(np.sum(labels != state.released_labels))])


def user_feature_distances(state, centers, n_features, alive):
    """Prediction on a user: ``||z(x) - mu_j||^2`` of its new rows (no
    message); infinite to a cluster that never held a row."""
    centers, alive = np.asarray(centers), np.asarray(alive, dtype=bool)
    dist = np.empty((state.X.shape[0], len(centers)))
    for rows, Z in _features(state, n_features):
        dist[rows] = np.maximum(_squared_distances(Z, centers, alive), 0.0)
    return dist


def centers_from_totals(total, n_clusters, n_features):
    """The centers ``sums / counts`` and which clusters hold rows."""
    total = np.asarray(total, dtype=float)
    sums = total[:n_clusters * n_features].reshape(n_clusters, n_features)
    counts = total[n_clusters * n_features:]
    # An empty cluster's shares all encode 0: its total decodes to exactly 0.
    alive = counts > 0
    centers = np.zeros_like(sums)
    centers[alive] = sums[alive] / counts[alive, None]
    return centers, alive


def user_take_totals(state, total, n_clusters, n_features):
    """A user's centers from the released totals; returned for the model
    (a local read: every user holds the same)."""
    state.centers, state.alive = centers_from_totals(total, n_clusters,
                                                     n_features)
    return state.centers, state.alive


def release_totals(fed, users, *, n_clusters, n_features, encoder):
    """The users' totals, summed with pairwise masks to the first user, who
    relays them to the other users: the server receives none of it.

    Returns the centers and which clusters hold rows (every user holds them).
    """
    first = users[0]
    total = secure_sum(fed, users, first, user_cluster_totals, n_clusters,
                       n_features, phase=PHASE_REFINE_TOTALS,
                       encoder=encoder).result()
    # k and D' are public: each user holds them (Local); the totals travel.
    fed.gather(fed[u].call(user_take_totals, total, Local(n_clusters),
                           Local(n_features), sender=first,
                           phase=PHASE_REFINE_RELAY)
               for u in users[1:])
    return fed[first].call(user_take_totals, Local(total), n_clusters,
                           n_features).result()


def lloyd_refinement(fed, server, users, *, n_clusters, n_features, n_samples,
                     refine):
    """Lloyd's k-means on the users' random features, from their labels.

    ``refine`` is the estimator's value: ``"once"`` is a single center
    update by design (the totals are released once, no warning marks the
    cap); ``"auto"`` or an int caps the updates (:func:`refine_max_iter`)
    and warns at the cap.

    Returns ``(centers, alive, moves)``: the last released centers
    (``n_clusters x n_features``, rows of empty clusters zero), which
    clusters held rows in the last totals, and the decoded number of moved
    rows after each release.
    Each user's ``labels`` end as its rows' nearest centers.
    """
    common = dict(n_clusters=n_clusters, n_features=n_features,
                  encoder=totals_encoder(n_samples))
    moves_encoder = RingEncoder.for_bound(float(n_samples), margin_bits=3)
    centers, alive = release_totals(fed, users, **common)
    max_iter = refine_max_iter(refine)
    moves = []
    for it in range(max_iter):
        moved = secure_sum(fed, users, server, user_assign_features,
                           phase=PHASE_REFINE_MOVES,
                           encoder=moves_encoder).result()
        moves.append(int(round(float(np.asarray(moved).ravel()[0]))))
        if moves[-1] < MIN_MOVED:
            break
        if it == max_iter - 1:
            if refine == "once":
                break
            warnings.warn(
                f"FederatedKernelKMeans' refinement stopped at {max_iter} "
                f"Lloyd iteration(s) with {moves[-1]} rows still moving (it "
                f"stops once fewer than MIN_MOVED={MIN_MOVED} move): the "
                "labels are the nearest of the last centers. Pass a larger "
                "int as refine, or refine=None for the paper's clustering.",
                ConvergenceWarning)
            break
        centers, alive = release_totals(fed, users, **common)
    return np.where(alive[:, None], centers, 0.0), alive, moves
