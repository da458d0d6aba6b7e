"""What FDSKL and AVFKAM share: random features of vertically split rows.

A kernel model here is ``f(x) = sum_j alpha_j phi_j(x)`` with random Fourier
features ``phi_j(x) = sqrt(2) cos(omega_j^T x + b_j)``. In a vertical split
no party can compute ``omega_j^T x`` alone. This module provides, on top of
the party runtime:

- :func:`make_party_states`: the private state of each party (its column
  block, its private key, its coefficient store);
- :func:`party_key_mode`, :func:`resolve_party_keys` and :func:`party_key`:
  where each party's private key comes from (see "Keys" below);
- :func:`party_directions` and :func:`party_phases`: a party's own rows of
  ``omega_j`` and its phase of feature ``j``, a pseudo-random function of
  its private key (never of the public seed) and ``j``;
- :func:`masked_features`: ``phi_j(x)`` for chosen rows and features,
  delivered to one receiving party through FDSKL's Algorithm 3 over the ring
  of angles (masked sum over ``T1``, masks removed over a totally
  different ``T2``), so nobody sees another party's ``omega_G^T x_G``;
- :class:`CoefficientStore`: the coefficients a party created, which never
  leave it (model privacy), with lazy multiplicative decay;
- :func:`federated_decision`: ``f(x)`` as the tree sum of every party's
  local ``f^l(x)`` (FDSKL Algorithm 2), for prediction.

The phase ``b_j`` of feature ``j`` is the private phase of the party
``l'_j`` whose value is not masked (FDSKL Lemma 1); ``l'_j`` is a
deterministic function of the public seed and ``j``, so the same feature has
the same phase at training and prediction time. The masks themselves are
fresh uniform ring elements from each party's CSPRNG
(:func:`~skfed.federation.masked_tree_sum`) and cancel exactly: they do not
change the model.

Keys. The paper draws ``omega_j`` from a seed every party knows, so whoever
receives ``omega_j^T x + b`` over many features can solve the linear system
for the other parties' columns (it knows their directions). Here each party
draws its block of ``omega_j`` from its own key, so the receiver knows the
distribution of the other blocks but not the blocks. In a simulation the
keys derive from a given ``random_state`` (reproducible fits; anyone who
knows the seed knows the keys); ``party_keys="os"`` draws them from the
operating system, as a deployment does, and so does the default ``"auto"``
when ``random_state`` is None. The keys are part of each party's share of
the model (:mod:`._export`): prediction needs them.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import secrets
from functools import lru_cache, partial

import numpy as np
import scipy.sparse as sp

from .._privacy_core import Aggregate, Inherent, Masked, Public, Rule
from ..federation import (
    AngleEncoder,
    Local,
    balanced_tree,
    masked_tree_sum,
    totally_different_trees,
    tree_broadcast,
    tree_sum,
)
from ..kernel_approximation import (
    derive_party_key,
    hashed_uniform,
    keyed_directions,
    keyed_phases,
    resolve_gamma,
    variance_from_moments,
)

__all__ = [
    "party_name",
    "PARTY_KEY_MODES",
    "party_key_mode",
    "resolve_party_keys",
    "make_party_states",
    "party_key",
    "party_directions",
    "party_phases",
    "reference_features",
    "federated_gamma",
    "CoefficientStore",
    "excluded_parties",
    "ring_angles",
    "trees_for",
    "masked_features",
    "local_decision",
    "federated_decision",
]

# Rows x features handled in one masked sum at prediction time (memory bound).
_BLOCK_ENTRIES = 2_000_000


#: Angles as elements of Z_{2^32}: a uniform mask there hides an angle
#: perfectly, and 4 bytes per entry keep the masked sums (whose T2 now
#: carries one fresh mask per entry) within the float version's bytes. The
#: resolution, 2 pi / 2^32 = 1.5e-9, is far below what a random feature
#: model can tell apart.
ANGLES = AngleEncoder(bits=32)


#: ring units per radian; the largest ``|units|`` of ring_angles' int64 path
_UNITS_PER_RADIAN = 2.0**32 / (2.0 * np.pi)
_FAST_LIMIT = 2.0**62


def ring_angles(values, scaled=False):
    """Angles as elements of ``Z_{2^32}``: ``ANGLES.encode`` in half the passes.

    ``round(2^32 theta / (2 pi)) mod 2^32`` by a product, a rounding and
    integer casts; it may differ from ``ANGLES.encode`` by one unit (1.5e-9
    rad). Angles too large for int64 go through ``ANGLES.encode``. With
    ``scaled``, ``values`` are already in ring units (``theta`` times
    ``_UNITS_PER_RADIAN``) and are rounded in place.
    """
    units = values if scaled else np.multiply(values, _UNITS_PER_RADIAN)
    if units.size and not (units.max() < _FAST_LIMIT and units.min() > -_FAST_LIMIT):
        if not np.all(np.isfinite(units)):
            raise ValueError(
                "The random features' angles omega.x overflow float64 "
                "(non-finite): the entries of X are too large for the kernel "
                "width gamma. "
                "Rescale X (e.g. StandardScaler) or lower gamma.")
        return ANGLES.encode(units / _UNITS_PER_RADIAN if scaled else values)
    return np.rint(units, out=units).astype(np.int64).astype(np.uint32)


def party_name(k):
    return f"party{k}"


#: values of the estimators' ``party_keys`` parameter
PARTY_KEY_MODES = ("auto", "random_state", "os")


def party_key_mode(mode, random_state):
    """The key source a fit uses: ``"auto"`` resolved.

    ``"auto"`` is ``"os"`` when ``random_state`` is None (the model is not
    reproducible anyway, so nothing is lost by keys nobody can rebuild) and
    ``"random_state"`` otherwise (a seeded fit is reproducible, and whoever
    knows the seed can rebuild every key).
    """
    if mode not in PARTY_KEY_MODES:
        raise ValueError(f"party_keys must be one of {PARTY_KEY_MODES}, got "
                         f"{mode!r}.")
    if mode == "auto":
        return "os" if random_state is None else "random_state"
    return mode


def resolve_party_keys(mode, seeds, random_state=None):
    """The key of every party for a fit (one entry per party).

    Parameters
    ----------
    mode : {"auto", "random_state", "os"}
        ``"random_state"``: derived from ``seeds`` (drawn from the
        estimator's ``random_state``), so a fit is reproducible and whoever
        knows the seed can rebuild every key (simulation). ``"os"``: ``None``
        for every party, which then draws its own key from the operating
        system inside its own thread (deployment; the model changes with
        every fit). ``"auto"``: see :func:`party_key_mode`.

    seeds : list of int
        One seed per party (used in ``"random_state"`` mode).

    random_state : int, RandomState instance or None
        The estimator's, for ``"auto"``.

    Returns
    -------
    list of bytes or None
    """
    if party_key_mode(mode, random_state) == "random_state":
        return [derive_party_key(seed, k) for k, seed in enumerate(seeds)]
    return [None] * len(seeds)


def party_key(state):
    """This party's private key (drawn from the OS on first use if unset)."""
    if state.key is None:
        # party_keys="os": the party's own CSPRNG, in its own thread.
        state.key = secrets.token_bytes(32)
    return state.key


def party_directions(state, feature_ids):
    """This party's rows of ``omega_j`` (its columns, in its own order)."""
    return keyed_directions(party_key(state), len(state.columns), feature_ids,
                            state.kernel, state.gamma)


def party_phases(state, feature_ids):
    """This party's phases of the features, uniform on ``[0, 2 pi)``."""
    return keyed_phases(party_key(state), feature_ids)


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
        """Add ``coef`` to the features ``feature_ids``: new ids are
        appended in order, known ones (a finite pool of features) grow in
        place."""
        coef = np.asarray(coef, dtype=float).reshape(len(feature_ids), self.n_outputs)
        feature_ids = np.asarray(feature_ids, dtype=np.int64)
        if len(self.feature_ids) and feature_ids.min() <= self.feature_ids.max():
            order = np.argsort(self.feature_ids, kind="stable")
            pos = np.searchsorted(self.feature_ids, feature_ids, sorter=order)
            pos = np.minimum(pos, len(order) - 1)
            known = self.feature_ids[order[pos]] == feature_ids
            np.add.at(self._coef, order[pos[known]], coef[known] / self._scale)
            feature_ids, coef = feature_ids[~known], coef[~known]
        self.feature_ids = np.concatenate([self.feature_ids, feature_ids])
        self._coef = np.vstack([self._coef, coef / self._scale])

    def decay(self, factor):
        """Scale every coefficient by ``factor`` in O(1).

        Returns the factor by which :attr:`raw_coef` was multiplied (1.0
        unless the running scale was folded in), so that sums kept in raw
        units (FDSKL's saved partial decisions) can follow.
        """
        self._scale *= factor
        if self._scale < 1e-150:  # fold the scale in before it underflows
            folded = self._scale
            self._coef = self._coef * self._scale
            self._scale = 1.0
            return folded
        return 1.0

    @property
    def raw_coef(self):
        """The coefficients divided by :attr:`scale` (no copy)."""
        return self._coef

    @property
    def scale(self):
        """The running product of the decays since the last fold."""
        return self._scale

    @property
    def coef(self):
        return self._coef * self._scale


def make_party_states(partition, X, y, basis_seed, party_keys, kernel, gamma,
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
        The public seed of the run (every party knows it); it fixes the
        party ``l'_j`` of each feature.

    party_keys : list of (bytes, int or None)
        One private key per party, from which the party draws its block of
        the random directions and its phases. An int is a seed the key is
        derived from (:func:`~skfed.kernel_approximation.derive_party_key`);
        ``None`` lets the party draw its key from the operating system.

    stores : list of CoefficientStore, optional
        Each party's coefficient store (a fitted model's, for prediction).
    """
    states = {}
    for k in range(partition.n_parties):
        columns = partition.columns(k)
        active = k in partition.active_parties
        key = party_keys[k]
        if isinstance(key, (int, np.integer)):  # a seed (else bytes, None or
            # a reference to a key kept at the party's home)
            key = derive_party_key(int(key), k)
        states[party_name(k)] = dict(
            index=k,
            X=_column_block(X, columns),
            columns=columns,
            y=y if (active and y is not None) else None,
            is_active=active,
            basis_seed=int(basis_seed),
            key=key,
            kernel=kernel,
            gamma=gamma,
            store=None if stores is None else stores[k],
        )
    return states


def _column_block(X, columns):
    """A party's columns: a C-ordered array, or CSR for sparse input (its
    products ``X @ omega`` are then sparse products)."""
    if sp.issparse(X):
        return sp.csr_matrix(sp.csc_matrix(X)[:, columns])
    return np.ascontiguousarray(X[:, columns])


def reference_features(X, partition, keys, feature_ids, receiver, basis_seed,
                       kernel, gamma):
    """``phi_j(x)`` as the masked protocol defines it, computed in one place.

    For tests and teaching: it needs every party's columns and key at once,
    which no party has.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    partition : VerticalPartition (resolved)
    keys : list of bytes
        Every party's key (``estimator._party_keys`` after a fit).
    feature_ids : array of int
    receiver : str
        The party that receives the features (it fixes ``l'_j``).
    basis_seed : int
    kernel : str
    gamma : float

    Returns
    -------
    ndarray of shape (n_samples, len(feature_ids))
    """
    feature_ids = np.asarray(feature_ids, dtype=np.int64)
    names = [party_name(k) for k in range(partition.n_parties)]
    z = sum(X[:, partition.columns(k)] @ keyed_directions(
        keys[k], len(partition.columns(k)), feature_ids, kernel, gamma)
        for k in range(partition.n_parties))
    if len(names) == 1:
        phase = keyed_phases(keys[0], feature_ids)
    else:
        excluded = excluded_parties(basis_seed, feature_ids, receiver, names)
        phase = np.empty(len(feature_ids))
        for k, name in enumerate(names):
            here = excluded == name
            phase[here] = keyed_phases(keys[k], feature_ids[here])
    return np.sqrt(2.0) * np.cos(z + phase)


def _party_moments(state):
    # gamma="scale" needs var(X): each party contributes its block's sums.
    X = state.X
    with np.errstate(over="ignore", invalid="ignore"):
        squares = X.multiply(X).sum() if sp.issparse(X) else np.square(X).sum()
        out = np.array([X.sum(), squares, X.shape[0] * X.shape[1], X.shape[1]],
                       dtype=float)
    if not np.all(np.isfinite(out)):
        # gamma='scale' would silently fall back to 1.0 on an inf variance.
        raise ValueError(
            "The sum of squares of X overflows float64, so gamma='scale' "
            "cannot be computed: rescale X (e.g. StandardScaler) or pass "
            "gamma explicitly.")
    return out


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


def _local_projection(state, rows, feature_ids, holder=None):
    # Algorithm 3, lines 2-3: the local share omega_G^T x_G (from this
    # party's private block of omega) and its phase. In a masked sum only
    # the phase of l' (``holder``) counts and the others' shares get fresh
    # ring masks, so l' adds its phase here and every share leaves as ring
    # elements; without ``holder`` (one party) the phase comes apart.
    X = state.X if rows is None else state.X[rows]
    ids = np.asarray(feature_ids, dtype=np.int64)
    cache = state.stash.setdefault("directions", {})
    key = ids.tobytes()
    if key not in cache:
        # Prediction asks for the same feature groups block after block of
        # rows (one group per l').
        if len(cache) >= 8:
            cache.clear()
        cache[key] = (party_directions(state, ids), party_phases(state, ids))
    omega, phase = cache[key]
    value = np.asarray(X @ omega)
    if holder is None:
        return value, phase
    if party_name(state.index) == holder:
        value += phase
    return ring_angles(value), None


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
                                partial(_local_projection, holder=ex), rows,
                                feature_ids[pos], phase=phase, sender=receiver,
                                encoder=ANGLES)
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


# --------------------------------------------------------------------------
# What the messages of these sub-protocols may carry (read by
# skfed.privacy; each algorithm's _contract adds its own rules).

_T1 = ("uniform ring mask (angles in Z_2^32), fresh per row and feature, from "
       "each sender's CSPRNG; l' leads the receiver's only T1 child")
_T2 = "sums of fresh ring masks only (no data)"


def random_features(sizes):
    """The random features a fit may draw: the fitted estimator's
    ``_n_feature_ids`` (FDSKL: its features per step for at most
    ``max_iter`` steps, at most the pool, ``"auto"`` resolved, a diverged
    fit keeping fewer than it sent; AVFKAM: ``n_random_features``)."""
    return int(sizes["est"]._n_feature_ids)


def rows_x_features(sizes):
    """One value per row and random feature."""
    return sizes["rows"] * random_features(sizes)


def rows_x_outputs(sizes):
    """One value per row and output (one output but for multiclass)."""
    classes = getattr(sizes["est"], "classes_", ())
    return sizes["rows"] * (len(classes) if len(classes) > 2 else 1)


def masked_sum_rules(phase, requested=True):
    """Rules of the masked two-tree sums of ``phase`` (Algorithm 3)."""
    rules = [
        Rule(f"{phase}/T1", "party", "party",
             (Masked(_T1, dtype="u", max_size=rows_x_features),),
             note="a T1 partial sum; only the receiver gets one without a mask "
                  "left in it, and it is the result"),
        Rule(f"{phase}/T2", "party", "party",
             (Masked(_T2, dtype="u", max_size=rows_x_features),),
             note="a T2 partial sum of masks; no party can cancel its T1 inputs "
                  "with it (the trees are checked node by node)"),
    ]
    if requested:
        rules.append(Rule(
            f"{phase}/request", "active", "party",
            (Public("row ids (None: every row)", dtype="iu", max_size="rows",
                    query=True),
             Public("feature ids", dtype="iu", max_size=random_features)),
            note="the coefficient holder asks for these rows and features"))
    return rules


def gamma_rules(n_rows):
    return [
        Rule("gamma/moments", "party", "party",
             (Aggregate(n_rows, "sum, sum of squares, entry and column counts "
                        "of the senders' blocks", dtype="f", max_size=4),),
             note="gamma='scale' needs var(X)"),
        Rule("gamma/broadcast", "party", "party",
             (Public("gamma", dtype="f", max_size=1),)),
    ]


F_SUMS = Inherent("partial sums of the local models f^l(x) (zeros from "
                  "passive parties)", exempt=("labels",), dtype="f",
                  max_size=rows_x_outputs)


def predict_rules():
    return masked_sum_rules("predict/features") + [
        Rule("predict/sum", "party", "active", (F_SUMS,),
             note="Algorithm 2: f(x) = sum of f^l(x), to the label holder"),
    ]


def contract_n_rows(estimator):
    # Aggregates span every row the parties hold (the fitted X).
    return max(int(getattr(estimator, "_privacy_n_rows", 2)), 2)
