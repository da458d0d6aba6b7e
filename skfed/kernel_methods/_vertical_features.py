"""What FDSKL and AVFKAM share: random features of vertically split rows.

A kernel model here is ``f(x) = sum_j alpha_j phi_j(x)`` with random Fourier
features ``phi_j(x) = sqrt(2) cos(omega_j^T x + b_j)``. In a vertical split
no party can compute ``omega_j^T x`` alone. This module provides, on top of
the party runtime:

- :func:`make_party_states`: the private state of each party (its column
  block, its private offset seed, its coefficient store);
- :func:`masked_features`: ``phi_j(x)`` for chosen rows and features,
  delivered to one receiving party through FDSKL's Algorithm 3 (masked sum
  over ``T1``, offsets removed over a totally different ``T2``), so nobody
  sees another party's ``omega_G^T x_G``;
- :class:`CoefficientStore`: the coefficients a party created, which never
  leave it (model privacy), with lazy multiplicative decay;
- :func:`federated_decision`: ``f(x)`` as the tree sum of every party's
  local ``f^l(x)`` (FDSKL Algorithm 2), for prediction.

The phase ``b_j`` of feature ``j`` is the private offset of the party
``l'_j`` whose offset is not removed (FDSKL Lemma 1). ``l'_j`` is a
deterministic function of the public seed and ``j``, so the same feature has
the same phase at training and prediction time. A consequence: the model
depends on the column split through these phases, whose distribution
(uniform on ``[0, 2 pi)``) does not.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

from functools import lru_cache

import numpy as np

from ..federation import (
    Local,
    balanced_tree,
    masked_tree_sum,
    totally_different_trees,
    tree_broadcast,
    tree_sum,
)
from ..kernel_approximation import (
    hashed_uniform,
    random_offsets,
    resolve_gamma,
    spectral_directions,
    variance_from_moments,
)

__all__ = [
    "party_name",
    "make_party_states",
    "federated_gamma",
    "CoefficientStore",
    "excluded_parties",
    "trees_for",
    "masked_features",
    "local_decision",
    "federated_decision",
]

# Rows x features handled in one masked sum at prediction time (memory bound).
_BLOCK_ENTRIES = 2_000_000


def party_name(k):
    return f"party{k}"


class CoefficientStore:
    """The coefficients one party created, with their feature ids.

    ``coef`` has one row per feature and one column per output (class). The
    decay ``alpha <- (1 - gamma lambda) alpha`` of every earlier coefficient
    is kept as one running ``scale`` so it costs O(1) per iteration.
    """

    def __init__(self, n_outputs=1):
        self.n_outputs = n_outputs
        self.feature_ids = np.empty(0, dtype=np.int64)
        self._coef = np.empty((0, n_outputs))
        self._scale = 1.0

    def __len__(self):
        return len(self.feature_ids)

    def add(self, feature_ids, coef):
        coef = np.asarray(coef, dtype=float).reshape(len(feature_ids), self.n_outputs)
        self.feature_ids = np.concatenate([self.feature_ids,
                                           np.asarray(feature_ids, dtype=np.int64)])
        self._coef = np.vstack([self._coef, coef / self._scale])

    def decay(self, factor):
        self._scale *= factor
        if self._scale < 1e-150:  # fold the scale in before it underflows
            self._coef = self._coef * self._scale
            self._scale = 1.0

    @property
    def coef(self):
        return self._coef * self._scale


def make_party_states(partition, X, y, basis_seed, offset_seeds, kernel, gamma,
                      stores=None):
    """Private state of every party of a vertical partition.

    Parameters
    ----------
    partition : VerticalPartition (resolved)

    X : ndarray of shape (n_samples, n_features)
        Only each party's column block is put in its state.

    y : ndarray or None
        Given to the active parties only.

    basis_seed : int
        The public seed of the random directions (every party knows it).

    offset_seeds : list of int
        One private seed per party for its masking offsets ``b^l``.

    stores : list of CoefficientStore, optional
        Each party's coefficient store (a fitted model's, for prediction).
    """
    states = {}
    for k in range(partition.n_parties):
        columns = partition.columns(k)
        active = k in partition.active_parties
        states[party_name(k)] = dict(
            index=k,
            X=np.ascontiguousarray(X[:, columns]),
            columns=columns,
            y=y if (active and y is not None) else None,
            is_active=active,
            basis_seed=int(basis_seed),
            offset_seed=int(offset_seeds[k]),
            kernel=kernel,
            gamma=gamma,
            store=None if stores is None else stores[k],
        )
    return states


def _party_moments(state):
    # gamma="scale" needs var(X): each party contributes its block's sums.
    X = state.X
    return np.array([X.sum(), np.square(X).sum(), X.size, X.shape[1]], dtype=float)


def _party_set_gamma(state, gamma):
    state.gamma = float(gamma)


def federated_gamma(fed, names, root, gamma):
    """Resolve ``gamma`` and give it to every party.

    ``'scale'`` (1 / (n_features var(X)), as in sklearn's SVC) comes from
    each party's sums over its own block, tree-summed to ``root``; nothing
    but four numbers per party moves.
    """
    tree = balanced_tree([root] + [p for p in names if p != root])
    if isinstance(gamma, str):
        moments = {p: fed[p].call(_party_moments) for p in names}
        total = tree_sum(fed, tree, moments, phase="gamma/moments")
        total = total.result() if hasattr(total, "result") else total
        variance = variance_from_moments(total[0], total[1], total[2])
        gamma = resolve_gamma(gamma, int(total[3]), variance)
    fed.gather(tree_broadcast(fed, tree, float(gamma), _party_set_gamma,
                              phase="gamma/broadcast").values())
    return float(gamma)


def excluded_parties(basis_seed, feature_ids, receiver, names):
    """``l'_j`` for every feature: a public, seeded choice among non-receivers."""
    others = [p for p in names if p != receiver]
    if not others:
        raise ValueError("Masked feature evaluation needs at least two parties.")
    u = hashed_uniform(basis_seed, [names.index(receiver)], feature_ids, stream=3)[0]
    return np.asarray(others, dtype=object)[(u * len(others)).astype(int)]


@lru_cache(maxsize=256)
def _cached_trees(names, receiver, excluded):
    return totally_different_trees(list(names), receiver, excluded, random_state=0)


def trees_for(names, receiver, excluded):
    """The (T1, T2) pair used for one (receiver, excluded party)."""
    return _cached_trees(tuple(names), receiver, excluded)


def _local_projection(state, rows, feature_ids):
    # Algorithm 3, lines 2-3: the local share omega_G^T x_G and offset b^l.
    X = state.X if rows is None else state.X[rows]
    omega = spectral_directions(state.basis_seed, state.columns, feature_ids,
                                state.kernel, state.gamma)
    return X @ omega, random_offsets(state.offset_seed, feature_ids)


def _to_features(state, parts, positions, n_features):
    # Algorithm 1, line 8: phi from omega^T x + b, in the caller's column order.
    n_rows = parts[0].shape[0]
    z = np.empty((n_rows, n_features))
    for part, pos in zip(parts, positions):
        z[:, pos] = part
    return np.sqrt(2.0) * np.cos(z)


def masked_features(fed, names, receiver, rows, feature_ids, basis_seed,
                    phase="features"):
    """``phi_j(x_i)`` for the given rows and features, held by ``receiver``.

    Parameters
    ----------
    fed : Federation
    names : list of str
        All parties, in order.
    receiver : str
        The party that learns the features (it created, or will create, the
        coefficients of these features).
    rows : array of int or None
        Rows of every party's ``X`` block (``None``: all rows).
    feature_ids : array of int
    basis_seed : int
        Public seed; fixes ``l'_j`` for each feature.

    Returns
    -------
    PartyFuture
        An array of shape (n_rows, n_features) held by ``receiver``.
    """
    feature_ids = np.asarray(feature_ids, dtype=np.int64)
    if len(names) == 1:
        # One party holds every column: nothing to mask.
        return fed[receiver].call(_single_party_features, rows, feature_ids)
    excluded = excluded_parties(basis_seed, feature_ids, receiver, names)
    parts, positions = [], []
    for ex in dict.fromkeys(excluded):  # first-seen order: deterministic
        pos = np.flatnonzero(excluded == ex)
        # The receiver asks every party for these rows and features.
        total = masked_tree_sum(fed, trees_for(names, receiver, ex),
                                _local_projection, rows, feature_ids[pos],
                                phase=phase, sender=receiver)
        parts.append(total.result())
        positions.append(pos)
    return fed[receiver].call(_to_features, Local(parts), Local(positions),
                              Local(len(feature_ids)))


def _single_party_features(state, rows, feature_ids):
    value, offset = _local_projection(state, rows, feature_ids)
    return np.sqrt(2.0) * np.cos(value + offset)


def local_decision(state, features):
    """``f^l(x)`` (FDSKL Algorithm 2): this party's coefficients times phi."""
    return features @ state.store.coef


def _store_ids(state):
    return None if state.store is None else state.store.feature_ids


def _zeros(state, n_rows, n_outputs):
    return np.zeros((n_rows, n_outputs))


def federated_decision(fed, names, receiver, n_rows, n_outputs, basis_seed,
                       phase="predict"):
    """``f(x)`` for every row of the parties' current ``X`` blocks.

    Each party with coefficients gets the features of its own coefficients
    by masked sums, computes its ``f^l(x)``, and the ``f^l`` are tree-summed
    to ``receiver`` (FDSKL Algorithm 2 and Algorithm 1, line 7).

    Returns
    -------
    ndarray of shape (n_rows, n_outputs)
        The scores, as received by ``receiver``.
    """
    # Which features each party created is public (the seeds i were sent
    # to every worker in Algorithm 1, line 3); the coefficients are not.
    ids = dict(zip(names, fed.gather(fed[p].call(_store_ids) for p in names)))
    owners = [p for p in names if ids[p] is not None and len(ids[p])]
    out = np.zeros((n_rows, n_outputs))
    if not owners:
        return out
    step = max(1, _BLOCK_ENTRIES // max(len(v) for p, v in ids.items() if p in owners))
    for start in range(0, n_rows, step):
        rows = np.arange(start, min(start + step, n_rows))
        local = {}
        for p in names:
            if p in owners:
                phi = masked_features(fed, names, p, rows, ids[p], basis_seed,
                                      phase=f"{phase}/features")
                local[p] = fed[p].call(local_decision, Local(phi.result()))
            else:
                local[p] = fed[p].call(_zeros, len(rows), n_outputs)
        total = tree_sum(fed, balanced_tree([receiver] + [p for p in names
                                                          if p != receiver]),
                         local, phase=f"{phase}/sum")
        out[start:start + len(rows)] = total.result() if hasattr(total, "result") \
            else total
    return out
