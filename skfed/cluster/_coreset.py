"""Distributed linear k-means on the rows of ``H`` that never ships a row.

The paper runs "a distributed linear k-means algorithm (Balcan et al.,
2013)" on the rows of ``H = [H[1]; ...; H[M]]``. Balcan, Ehrlich and Liang
build a global coreset in two rounds:

1. every user solves k-means on its own points and reports the cost of that
   local solution; the server splits the coreset budget ``C`` over users in
   proportion to these costs (points far from their local centers matter
   more);
2. every user sends its share of the coreset; the server solves weighted
   k-means on the union, and each user labels its own points with the
   resulting centers.

In their construction a user's share is a sample of its own points plus
its weighted local centers. A sampled point would be a raw row of ``H``:
the embedding of one person's data, from which inner products with every
other row (kernel values) follow. We keep the two rounds and the cost-based
budget, but a user's share is made only of *local means*: the user clusters
its rows into as many groups as its budget allows (the same sensitivity
argument: a user with a high local cost gets more groups and a finer
summary) and sends each group's mean and size. Every group holds at least
``MIN_GROUP`` rows -- smaller groups are merged into the nearest other
group -- so no message is a single row. Why group means suffice: for any
centers ``c``, a group ``g`` of ``n_g`` rows with mean ``mu_g`` and
within-group sum of squares ``SS_g`` costs ``n_g ||mu_g - c||^2 + SS_g`` when
kept together, so the weighted k-means cost of the means plus the local cost
``sum_g SS_g`` bounds the true cost of the centers found on the means; the
cost-proportional budget is what keeps ``sum_g SS_g`` small where it matters.
The labels never leave the users: they come from the broadcast centers.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import threading
import warnings

import numpy as np
from sklearn.cluster import KMeans
from sklearn.exceptions import ConvergenceWarning

__all__ = [
    "MIN_GROUP",
    "check_group_sizes",
    "user_local_cost",
    "server_take_cost",
    "server_allocate",
    "user_summary",
    "server_collect_summary",
    "server_weighted_kmeans",
    "user_assign",
    "distributed_kmeans",
]

#: no summary point averages fewer rows than this (so none is a raw row)
MIN_GROUP = 2


# warnings.catch_warnings swaps the process-wide filter list: two party
# threads doing it at once can restore each other's state and let the
# warning through, so the users' local k-means runs take turns here.
_WARNINGS_LOCK = threading.Lock()


def _kmeans(X, k, seed, sample_weight=None, n_init=1):
    with _WARNINGS_LOCK, warnings.catch_warnings():
        # Few distinct points (tiny or duplicated data) are not an error here.
        warnings.simplefilter("ignore", ConvergenceWarning)
        return KMeans(k, n_init=n_init, random_state=seed).fit(
            X, sample_weight=sample_weight)


def _row_weights(state):
    """The user's row weights (``sample_weight``), or None."""
    return getattr(state, "sample_weight", None)


def _clustering_weights(w):
    # k-means++ cannot draw from all-zero weights: such a user's groups are
    # made unweighted (their sizes, the weight sums, are then 0).
    return None if w is None or not w.sum() > 0 else w


def user_local_cost(state, n_clusters):
    """Round 1: the cost of a local k-means solution on the user's rows of H
    (weighted by the user's row weights, if any)."""
    H = state.H
    k = min(n_clusters, H.shape[0])
    w = _row_weights(state)
    if w is not None and not w.sum() > 0:
        return 0.0  # no weight: no cost to summarise
    return float(_kmeans(H, k, state.kmeans_seed, sample_weight=w).inertia_)


def server_take_cost(state, cost):
    state.stash.setdefault("costs", []).append(float(cost))


def server_allocate(state, coreset_size, n_clusters):
    """Split the coreset budget over users in proportion to their costs.

    Each user gets at least ``n_clusters`` summary points and at most one per
    ``MIN_GROUP`` of its rows (the server knows the row counts from setup).
    """
    costs = np.asarray(state.stash.pop("costs"), dtype=float)
    n_rows = np.asarray(state.n_rows)
    share = costs / costs.sum() if costs.sum() > 0 else n_rows / n_rows.sum()
    budget = np.maximum(np.round(coreset_size * share).astype(int), n_clusters)
    budget = np.minimum(budget, n_rows // MIN_GROUP)
    state.stash["summaries"] = []
    if budget.sum() < n_clusters:
        raise ValueError(
            f"The users' rows can be summarised by only {int(budget.sum())} "
            f"group means of at least {MIN_GROUP} rows each, fewer than "
            f"n_clusters={n_clusters}: no user may send a raw row of the "
            "embedding. Use fewer clusters, fewer users or more rows."
        )
    return budget


def _merge_small_groups(H, labels, n_groups):
    """Give the rows of groups smaller than MIN_GROUP to the nearest group."""
    while True:
        counts = np.bincount(labels, minlength=n_groups)
        small = np.flatnonzero((counts > 0) & (counts < MIN_GROUP))
        live = np.flatnonzero(counts >= MIN_GROUP)
        if not len(small) or not len(live):
            return labels
        g = small[0]
        means = np.array([H[labels == j].mean(axis=0) for j in live])
        rows = np.flatnonzero(labels == g)
        d = ((H[rows, None, :] - means[None]) ** 2).sum(axis=-1)
        labels[rows] = live[np.argmin(d, axis=1)]


def user_summary(state, budget):
    """Round 2: group means and sizes (each group has >= MIN_GROUP rows).

    With row weights the size of a group is the sum of its rows' weights,
    and the groups come from a weighted local k-means; the mean stays the
    plain mean of the group's rows, so that a weight concentrated on one
    row never makes a summary point that row.
    """
    H = state.H
    width = H.shape[1]
    w = _row_weights(state)
    # Row counts travel as integers, weight sums as floats: the privacy
    # contract checks whole counts against MIN_GROUP (check_group_sizes).
    size_dtype = np.int64 if w is None else np.float64
    if budget < 1:
        return np.empty((0, width)), np.empty(0, dtype=size_dtype)
    labels = _kmeans(H, int(budget), state.kmeans_seed,
                     sample_weight=_clustering_weights(w)).labels_.copy()
    labels = _merge_small_groups(H, labels, int(budget))
    groups = np.unique(labels)
    means = np.array([H[labels == g].mean(axis=0) for g in groups])
    counts = np.array([np.sum(labels == g) if w is None else w[labels == g].sum()
                       for g in groups], dtype=size_dtype)
    return means, counts


def check_group_sizes(sizes):
    """The privacy contract's check of a summary's group sizes.

    Whole-number sizes (row counts, unweighted fits) must all be at least
    ``MIN_GROUP``: a smaller group's mean is close to a row of ``H``. Sizes
    that are floats are weight sums (``sample_weight``), which say nothing
    checkable about row counts; there the merge above
    (:func:`_merge_small_groups`) is what keeps every group at
    ``MIN_GROUP`` rows or more.

    Returns
    -------
    problem : str or None
    """
    sizes = np.asarray(sizes)
    if sizes.dtype.kind not in "iu" or not sizes.size:
        return None
    small = int(np.sum(sizes < MIN_GROUP))
    if small:
        return (f"{small} group mean(s) of fewer than MIN_GROUP={MIN_GROUP} "
                f"rows (smallest: {int(sizes.min())})")
    return None


def server_collect_summary(state, means, counts):
    state.stash["summaries"].append((np.asarray(means), np.asarray(counts)))


def server_weighted_kmeans(state, n_clusters, seed, n_init):
    """Weighted k-means on the union of the summaries: the global centers."""
    summaries, state.stash["summaries"] = state.stash["summaries"], []
    points = np.vstack([m for m, _ in summaries])
    weights = np.concatenate([c for _, c in summaries])
    km = _kmeans(points, n_clusters, seed, sample_weight=weights, n_init=n_init)
    return km.cluster_centers_


def user_assign(state, centers):
    """Each user labels its own rows with the nearest broadcast center."""
    state.centers = np.asarray(centers)
    d = ((state.H[:, None, :] - state.centers[None]) ** 2).sum(axis=-1)
    state.labels = np.argmin(d, axis=1)


def distributed_kmeans(fed, server, users, *, n_clusters, coreset_size, seed,
                       n_init=10):
    """Run the two coreset rounds and the labelling; return the centers.

    Phases: ``"kmeans: local costs"`` (one float per user),
    ``"kmeans: budgets"`` (one int to each user), ``"kmeans: coreset"``
    (group means and sizes), ``"kmeans: centers"`` (the broadcast).
    """
    # Round 1: users report the cost of a local solution; the server
    # allocates the budget in proportion (Balcan et al.'s sensitivity split).
    costs = fed.gather(fed[u].call(user_local_cost, n_clusters) for u in users)
    fed.gather(fed[server].call(server_take_cost, cost, sender=u,
                                phase="kmeans: local costs")
               for u, cost in zip(users, costs))
    budgets = fed[server].call(server_allocate, coreset_size,
                               n_clusters).result()
    if np.shape(budgets) != (len(users),):  # zip would drop users silently
        raise ValueError(f"The server allocated {np.shape(budgets)} budgets "
                         f"for {len(users)} users.")
    # Round 2: each user receives its budget and sends its group means.
    summaries = fed.gather(
        fed[u].call(user_summary, int(b), sender=server, phase="kmeans: budgets")
        for u, b in zip(users, budgets))
    fed.gather(fed[server].call(server_collect_summary, means, counts, sender=u,
                                phase="kmeans: coreset")
               for u, (means, counts) in zip(users, summaries))
    centers = fed[server].call(server_weighted_kmeans, n_clusters, seed,
                               n_init).result()
    # The server broadcasts the centers; labels stay with their users.
    fed.gather(fed[u].call(user_assign, centers, sender=server,
                           phase="kmeans: centers") for u in users)
    return centers
