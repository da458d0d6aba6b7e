"""Attacks on FDSKL and AVFKAM: what a party can infer from the masked sums.

Every party receives, in the masked two-tree sums of Algorithm 3, partial
sums of ``omega_G^T x_G`` (plus masks and phases) over groups of other
parties; the receiver of a sum ends with ``omega_j^T x_i + b_j``. The attacks
assemble, for every party, the *views* it can form from what it received:

- the receiver: its ``T1`` input minus its ``T2`` inputs, i.e. the result
  without its own share, ``sum over the other parties of omega_G^T x_G + b``;
- an intermediate node: each ``T1`` input alone, each minus each ``T2``
  input, and all ``T1`` inputs minus all ``T2`` inputs.

A view is a set of observations ``(row i, feature j, value v_ij)`` that
would satisfy ``v_ij = x_{i,V}^T omega_{j,V} + c_j (mod 2 pi)`` if nothing
masked it, ``V`` being the columns of the parties the view covers and
``c_j`` a constant per feature (a phase, or an offset reused on every row).
Ring values (``uint32``/``uint64``) are read as angles; float values (the
float protocol before ring masks) as plain numbers.

Which sums a run sent is the algorithm's: each estimator's
``_privacy_masked_sums`` lays them out as :class:`MaskedSum` (FDSKL's
training sums, replayed from the public history by
:mod:`skfed.kernel_methods._fdskl._attacks`; AVFKAM's preprocessing sums,
:mod:`skfed.kernel_methods._avfkam._attacks`, by :func:`requested_sums`):
which rows and features each entry stands for, and which party sent which
partial sum to whom. All of it is public to the parties (the row and feature
ids are broadcast, the trees and ``l'_j`` follow from the public seed, the
message sizes are seen by their receivers).

Attacks (each scored only against the victims' true columns):

``column_reconstruction``
    The paper's inference attack (its Definition 6): least squares for the
    victim rows and the per-feature constants, given the directions
    ``omega_{j,V}`` the attacker can compute: from the public seed, and from
    its own key (:func:`direction_guesses`); the attacker keeps the guess
    that fits best, and weights its reconstruction by the share of the
    values that guess explains beyond chance (a guess that explains nothing
    is no better than the prior mean, which is all that knowing the
    distribution of the directions allows). Angles are unwrapped
    iteratively. Metric: ``r2 = 1 - SSE / SST`` of each reconstructed column
    against the true one, both centred (the attacker cannot know a common
    shift); scale and sign are the attacker's, never fitted on the truth.
    Predicting the mean scores 0 (the ``chance`` column).
``column_reconstruction_known_seed``
    The same, by an attacker who also knows ``random_state`` (public in the
    threat model): with keys derived from it (``party_keys="random_state"``,
    or the default ``"auto"`` with a seed) it derives every party's key and
    solves exactly; with OS keys it learns nothing more. The other attacks
    never use the directions, so they score the same in both settings.
``column_reconstruction_known_rows``
    The attacker also knows ``k`` rows of the victims' columns (a bank knows
    some customers): least squares estimates each feature's directions and
    constant from the known rows, then every other row. Metric: ``r2`` as
    above, on the rows it did not know.
``distance_reconstruction``
    ``mean_j cos(v_ij - v_kj)`` estimates the kernel ``k(x_i, x_k)`` of the
    view's columns (random Fourier features), hence their pairwise
    distances: Spearman correlation between the estimated kernel and minus
    the true distances. Expected to stay high for the receiver: the kernel of
    the shared rows is what kernel learning computes.
``distance_mds``
    The kernel estimate as distances, and classical MDS: the victims'
    block up to a rigid motion, scored with an oracle rotation (an upper
    bound) and without side information (see below).

For every (attacker, victim, target) the table keeps the attacker's best
view, an upper bound on what it could do with the views listed above.

Least squares. The column attacks model a view's values as ``v_ij = x_i .
omega_j + c_j`` (modulo ``2 pi`` for ring values) and solve for the rows
``x`` and the per-feature constants ``c`` by alternating least squares,
unwrapping angles around the current fit, when every row observes every
feature (dense) or not (sparse); and they weigh a fit against the values'
spread around their constants alone.

Distances and MDS: the other parties' block from the kernel, without any
known row. A party that receives ``v_ij = omega_{j,V}^T x_{i,V} + c_j (mod
2 pi)`` over many random features (the receiver of the masked sums, by
design) can estimate the kernel of the view's columns between any two rows,
``k(x_i, x_k) ~ mean_j cos(v_ij - v_kj)`` (the constants cancel), hence
their distances with the public ``gamma_``: ``||x_i - x_k||^2 = -log k /
gamma`` for the RBF kernel (``(-log k / gamma)^2``, an L1 distance read as
Euclidean, for the Laplacian). Classical multidimensional scaling then
returns the rows of the victims' block up to a rigid motion (rotation,
reflection, shift), in as many dimensions as the victims have columns
(public: the partition). Two scores, as separate rows of the table:

- ``r2`` after the best rotation (orthogonal Procrustes against the truth):
  an upper bound, the attacker does not know that rotation;
- ``abs_corr``: no side information. FastICA unmixes the embedding into
  independent components (columns of real tables are rarely Gaussian, so
  the rotation is partly identifiable); each victim column is scored by its
  best ``|corr|`` over the components (the choice of component uses the
  truth, so this too is optimistic). ``chance`` is the same score for a
  Gaussian embedding that knows nothing.

With ``n_known`` rows of the victims' columns the attacker fits the rigid
motion itself (orthogonal Procrustes on the known rows) and is scored
``r2`` on the other rows: the known-rows curve of
``benchmarks/bench_kernel_attacks.py``.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import functools
import numbers
import warnings
from dataclasses import dataclass, field

import numpy as np
from scipy.stats import spearmanr
from sklearn.decomposition import FastICA
from threadpoolctl import threadpool_limits

from .._privacy_core import attack_row
from ..base import party_seeds
from ..federation import child_sets
from ..kernel_approximation import keyed_directions, spectral_directions
from ._vertical_features import (
    excluded_parties,
    party_name,
    resolve_party_keys,
    trees_for,
)

__all__ = [
    "MaskedSum",
    "message_chunks",
    "requested_sums",
    "masked_sum_instances",
    "kernel_views",
    "direction_guesses",
    "column_reconstruction",
    "column_reconstruction_known_rows",
    "column_reconstruction_known_seed",
    "distance_reconstruction",
    "distance_mds",
    "kernel_from_angles",
    "classical_mds",
    "procrustes_rotation",
    "KERNEL_ATTACKS",
    "blocks_row_order",
    "secrets_in_row_order",
]


# --------------------------------------------------------------------------
# The masked sums of a recorded run

@dataclass
class MaskedSum:
    """One masked two-tree sum of a recorded fit.

    Attributes
    ----------
    receiver : str
        The party that gets the result (the owner of the features).
    excluded : str or None
        The party ``l'`` whose value is not masked (``None``: one party).
    trees : tuple
        ``(T1, T2)``.
    rows, features : ndarray of int
        For each entry of a payload (flattened row-major), its row (in the
        parties' row order) and its feature id.
    t1, t2 : list of Message
        The ``T1`` and ``T2`` messages, in the order they were sent.
    """

    receiver: str
    excluded: object
    trees: tuple
    rows: np.ndarray
    features: np.ndarray
    t1: list = field(default_factory=list)
    t2: list = field(default_factory=list)


def _names(estimator):
    return [party_name(k) for k in range(estimator.partition_.n_parties)]


def message_chunks(messages, phase, size):
    """The messages of ``phase`` in groups of ``size`` (one group per sum)."""
    stream = [m for m in messages if m.phase == phase]
    return [stream[i:i + size] for i in range(0, len(stream), size)] if size else []


def requested_sums(estimator, messages, prefix, n_rows):
    """Masked sums started by a request (``masked_features``) in the phases
    ``prefix`` (AVFKAM's ``"preprocess"``, or a prediction's
    ``"predict/features"``). Each request carries ``(rows, ids)`` to every
    other party."""
    names = _names(estimator)
    q = len(names)
    if q == 1:
        return []
    requests = message_chunks(messages, f"{prefix}/request", q - 1)
    t1s = message_chunks(messages, f"{prefix}/T1", q - 1)
    t2s = message_chunks(messages, f"{prefix}/T2", q - 2)
    out = []
    for k, group in enumerate(requests):
        receiver = group[0].sender
        rows, ids = group[0].payload[:2]
        rows = np.arange(n_rows) if rows is None else np.asarray(rows)
        ids = np.asarray(ids, dtype=np.int64)
        excluded = str(excluded_parties(estimator._basis_seed, ids[:1], receiver,
                                        names)[0])
        grid_rows = np.repeat(rows, len(ids))
        grid_ids = np.tile(ids, len(rows))
        out.append(MaskedSum(receiver, excluded, trees_for(names, receiver, excluded),
                             grid_rows, grid_ids, t1s[k] if k < len(t1s) else [],
                             t2s[k] if q > 2 and k < len(t2s) else []))
    return out


def masked_sum_instances(estimator, messages, n_rows):
    """Every masked two-tree sum of a recorded FDSKL or AVFKAM run.

    Parameters
    ----------
    estimator : fitted FDSKL or AVFKAM estimator
    messages : list of Message
        A recorded fit (and, possibly, predictions).
    n_rows : int
        Rows of the fitted ``X`` (``rows=None`` in a request means all).

    Returns
    -------
    list of MaskedSum
        As the estimator's ``_privacy_masked_sums`` lays them out.
    """
    return estimator._privacy_masked_sums(messages, n_rows)


# --------------------------------------------------------------------------
# What an attacker can compute as another party's directions

def keys_from_random_state(estimator):
    """The keys ``party_keys="random_state"`` derives, as anyone who knows an
    integer ``random_state`` can (None otherwise)."""
    if not isinstance(estimator.random_state, numbers.Integral):
        return None
    q = estimator.partition_.n_parties
    return resolve_party_keys("random_state",
                              party_seeds(estimator.random_state, 2 + q)[2:])


def direction_guesses(estimator, attacker, victim, feature_ids,
                      knows_random_state=False):
    """What ``attacker`` can compute as ``victim``'s block of ``omega``.

    The paper's public seed (what every party could draw before the blocks
    came from private keys) and the attacker's own key (what it would be if
    keys were shared). Neither is the victim's block unless the protocol
    leaks it. With ``knows_random_state``, also the block from the key
    ``random_state`` gives the victim: exactly the victim's in a fit with
    ``party_keys="random_state"``.
    """
    partition = estimator.partition_
    names = _names(estimator)
    columns = partition.columns(names.index(victim))
    kernel, gamma = estimator.kernel, estimator.gamma_
    guesses = [("public seed", spectral_directions(
        estimator._basis_seed, columns, feature_ids, kernel, gamma))]
    keys = getattr(estimator, "_party_keys", None)
    if keys is not None:
        guesses.append(("own key", keyed_directions(
            keys[names.index(attacker)], len(columns), feature_ids, kernel,
            gamma)))
    derived = keys_from_random_state(estimator) if knows_random_state else None
    if derived is not None:
        guesses.append(("random_state", keyed_directions(
            derived[names.index(victim)], len(columns), feature_ids, kernel,
            gamma)))
    return guesses


# --------------------------------------------------------------------------
# Least squares: rows and constants from angles

_TWO_PI = 2.0 * np.pi


def _wrap(a):
    return (a + np.pi) % _TWO_PI - np.pi


def _row_sums(values, r, n_rows):
    """Sum of ``values`` (obs x ...) per row; ``r`` sorted, every row present."""
    starts = np.searchsorted(r, np.arange(n_rows))
    return np.add.reduceat(values, starts, axis=0)


def _row_grams(A, r, n_rows, ridge=1e-6):
    """``A_r^T A_r + ridge I`` for every row (``r`` sorted)."""
    d = A.shape[1]
    bounds = np.searchsorted(r, np.arange(n_rows + 1))
    G = np.empty((n_rows, d, d))
    for i in range(n_rows):
        block = A[bounds[i]:bounds[i + 1]]
        G[i] = block.T @ block
    return G + ridge * np.eye(d)


def _solve_rows(A, r, target, n_rows):
    """Per row, least squares of ``target`` on the directions ``A`` (obs x d);
    ``r`` sorted and covering ``range(n_rows)``."""
    G = _row_grams(A, r, n_rows)
    h = _row_sums(A * target[:, None], r, n_rows)
    return np.linalg.solve(G, h[:, :, None])[:, :, 0]


def _fit_dense(omega, V, circular, n_iter, x=None):
    # Every row observes every feature: V = X omega + 1 c^T in matrix form.
    pinv = np.linalg.pinv(omega)  # F x d
    if x is None:
        x = np.zeros((V.shape[0], omega.shape[0]))
        c = np.angle(np.exp(1j * V).mean(axis=0)) if circular else V.mean(axis=0)
    else:
        R = V - x @ omega
        c = np.angle(np.exp(1j * R).mean(axis=0)) if circular else R.mean(axis=0)
    for _ in range(n_iter):
        pred = x @ omega + c
        target = pred + (_wrap(V - pred) if circular else V - pred)
        x = (target - c) @ pinv
        c = (target - x @ omega).mean(axis=0)
    pred = x @ omega + c
    resid = _wrap(V - pred) if circular else V - pred
    return x, c, float(np.mean(resid**2))


def _fit_sparse(A, r, f, v, n_rows, n_feats, circular, n_iter, x=None):
    G_inv = np.linalg.inv(_row_grams(A, r, n_rows))
    count = np.maximum(np.bincount(f, None, n_feats), 1)
    if x is None:
        x = np.zeros((n_rows, A.shape[1]))
    resid0 = v - np.einsum("od,od->o", x[r], A)
    if circular:
        c = np.angle(np.bincount(f, np.cos(resid0), n_feats)
                     + 1j * np.bincount(f, np.sin(resid0), n_feats))
    else:
        c = np.bincount(f, resid0, n_feats) / count
    for _ in range(n_iter):
        pred = np.einsum("od,od->o", x[r], A) + c[f]
        resid = _wrap(v - pred) if circular else v - pred
        target = pred + resid
        h = _row_sums(A * (target - c[f])[:, None], r, n_rows)
        x = np.einsum("rde,re->rd", G_inv, h)
        c = c + np.bincount(f, target - np.einsum("od,od->o", x[r], A) - c[f],
                            n_feats) / count
    pred = np.einsum("od,od->o", x[r], A) + c[f]
    resid = _wrap(v - pred) if circular else v - pred
    return x, c, float(np.mean(resid**2))


def _fit_rows_and_constants(omega, r, f, v, n_rows, circular, n_iter=12):
    """``v = x_r . omega_f + c_f`` (mod 2 pi) by alternating least squares,
    angles unwrapped around the current fit. A first pass uses only the
    features of shortest direction (whose values rarely wrap); the second
    refines on every feature. Returns ``x``, ``c`` and the mean square of
    the (wrapped) residuals."""
    d, n_feats = omega.shape
    dense = len(v) == n_rows * n_feats
    if dense:
        V = np.empty((n_rows, n_feats))
        V[r, f] = v
    x = None
    if circular:
        norms = np.linalg.norm(omega, axis=0)
        short = norms <= np.quantile(norms, 0.3)
        if short.sum() >= 2 * d:
            if dense:
                x = _fit_dense(omega[:, short], V[:, short], True, n_iter)[0]
            else:
                keep = short[f]
                sub = np.cumsum(short) - 1
                rows_seen = np.bincount(r[keep], None, n_rows) > 0
                if rows_seen.all():
                    x = _fit_sparse(omega.T[f[keep]], r[keep], sub[f[keep]],
                                    v[keep], n_rows, int(short.sum()), True,
                                    n_iter)[0]
    if dense:
        return _fit_dense(omega, V, circular, n_iter, x)
    return _fit_sparse(omega.T[f], r, f, v, n_rows, n_feats, circular, n_iter, x)


def _null_residual(f, v, n_feats, circular):
    """Mean square of the values around their per-feature constant."""
    if circular:
        c = np.angle(np.bincount(f, np.cos(v), n_feats)
                     + 1j * np.bincount(f, np.sin(v), n_feats))
        return float(np.mean(_wrap(v - c[f]) ** 2))
    c = np.bincount(f, v, n_feats) / np.maximum(np.bincount(f, None, n_feats), 1)
    return float(np.mean((v - c[f]) ** 2))


def _confidence(resid, null, d, per_row):
    """How far the guessed directions explain the values beyond chance.

    ``d`` directions fitted to ``per_row`` values of a row explain a share
    ``d / per_row`` of anything by chance. A guess that explains no more is
    no better than any draw from the spectral measure, and an attacker who
    knows only that measure can do no better than the prior mean: the
    likelihood of the values does not change if the unknown rows and
    directions are rotated together. The attacker weights its
    reconstruction by the explained share beyond chance (1 when its
    directions are the victim's, about 0 when they are not).
    """
    explained = 1.0 - resid / max(null, 1e-300)
    by_chance = min(d / max(per_row, 1.0), 1.0)
    if by_chance >= 1.0:
        return 0.0
    return float(np.clip((explained - by_chance) / (1.0 - by_chance), 0.0, 1.0))


# --------------------------------------------------------------------------
# Views and the attacks on them

#: features used per view (the most observed ones), to bound the work: when
#: every row observes every feature (AVFKAM, prediction), and otherwise
MAX_FEATURES = 600
MAX_FEATURES_SPARSE = 400
#: rows below which a column's score is not reported
MIN_ROWS = 20
#: row pairs sampled for the distance attack
N_PAIRS = 3000


@dataclass
class View:
    """What one party can assemble: observations of one group of parties."""

    attacker: str
    kind: str
    victims: tuple
    rows: np.ndarray
    features: np.ndarray
    values: np.ndarray
    circular: bool


def _decode(payload):
    """Ring values as angles, floats as they are."""
    arr = np.asarray(payload)
    if arr.dtype == np.uint32:
        return arr.astype(np.float64).ravel() * (_TWO_PI * 2.0**-32), True
    if arr.dtype == np.uint64:
        return (arr >> np.uint64(11)).astype(np.float64).ravel() * (
            _TWO_PI * 2.0**-53), True
    return np.asarray(arr, dtype=np.float64).ravel(), False


def _combine(parts, signs):
    """``sum sign * part`` in the parts' own arithmetic (ring or float)."""
    arrays = [np.asarray(p) for p in parts]
    total = np.zeros_like(arrays[0])
    with np.errstate(over="ignore"):
        for a, s in zip(arrays, signs):
            total = total + a if s > 0 else total - a
    return total


def _set_containing(sets, party):
    for s in sets:
        if party in s:
            return s
    return frozenset([party])


def kernel_views(estimator, messages, n_rows):
    """Every view of every party, merged over the masked sums of a run.

    Parameters
    ----------
    estimator : fitted FDSKL or AVFKAM estimator
    messages : list of Message
    n_rows : int
        Rows of the fitted ``X``.

    Returns
    -------
    list of View
    """
    pieces = {}

    def add(attacker, kind, victims, inst, payload):
        values, circular = _decode(payload)
        if values.size != inst.rows.size or values.size == 0:
            return
        key = (attacker, kind, tuple(sorted(victims)))
        pieces.setdefault(key, []).append((inst.rows, inst.features, values,
                                           circular))

    for inst in masked_sum_instances(estimator, messages, n_rows):
        t1, t2 = inst.trees
        s_of = child_sets(t1)
        everyone = set(s_of)
        for party in everyone:
            got1 = [m for m in inst.t1 if m.receiver == party]
            got2 = [m for m in inst.t2 if m.receiver == party]
            if not got1 and not got2:
                continue
            if party == inst.receiver:
                add(party, "result", everyone - {party}, inst,
                    _combine([m.payload[0] for m in got1 + got2],
                             [1] * len(got1) + [-1] * len(got2)))
                continue
            sets1 = [_set_containing(s_of[party], m.sender) for m in got1]
            for m, s in zip(got1, sets1):
                add(party, "T1", s, inst, m.payload[0])
                for m2 in got2:
                    add(party, "T1-T2", s, inst,
                        _combine([m.payload[0], m2.payload[0]], [1, -1]))
            if len(got1) + len(got2) > 2 and got1:
                add(party, "all T1 - all T2", frozenset().union(*sets1), inst,
                    _combine([m.payload[0] for m in got1 + got2],
                             [1] * len(got1) + [-1] * len(got2)))
    views = []
    for (attacker, kind, victims), parts in pieces.items():
        views.append(View(attacker, kind, victims,
                          np.concatenate([p[0] for p in parts]),
                          np.concatenate([p[1] for p in parts]),
                          np.concatenate([p[2] for p in parts]),
                          parts[0][3]))
    return views


def _select(view, cap=None):
    """The view restricted to its most observed features (at most ``cap``;
    default by whether every row observes every feature), with compact
    indices, observations sorted by row."""
    feats, counts = np.unique(view.features, return_counts=True)
    if cap is None:
        complete = np.all(counts == len(np.unique(view.rows)))
        cap = MAX_FEATURES if complete else MAX_FEATURES_SPARSE
    keep = feats[np.argsort(-counts, kind="stable")[:cap]]
    mask = np.isin(view.features, keep)
    rows_u, r = np.unique(view.rows[mask], return_inverse=True)
    feats_u, f = np.unique(view.features[mask], return_inverse=True)
    order = np.argsort(r, kind="stable")
    return rows_u, r[order], feats_u, f[order], view.values[mask][order]


def _victim_columns(estimator, victims):
    partition = estimator.partition_
    out = []
    for k in range(partition.n_parties):
        if party_name(k) in victims:
            out.extend((party_name(k), int(c)) for c in partition.columns(k))
    return out


def _r2(estimate, truth):
    """``1 - SSE / SST`` of the attacker's reconstruction, both centred.

    Only the mean is removed (least squares on masked values fixes a column
    up to a common shift); scale and sign are the attacker's own, never
    fitted on the truth: a reconstruction that is merely correlated with the
    column, as any linear mixture of correlated columns is, scores no more
    than ``2 rho - 1``. Predicting the mean scores 0.
    """
    e, t = estimate - estimate.mean(), truth - truth.mean()
    sst = float(np.sum(t**2))
    return 0.0 if sst < 1e-300 else 1.0 - float(np.sum((e - t) ** 2)) / sst


def _truth_rows(estimator, X, rows):
    """Rows of the caller's ``X`` for the parties' row ids."""
    order = getattr(estimator, "_privacy_row_order", None)
    order = np.arange(len(X)) if order is None else order(len(X))
    return np.asarray(X, dtype=float)[order[rows]]


def _guesses(estimator, attacker, victims, feature_ids, knows_random_state=False):
    """Candidate direction blocks (d_V x F) for the victims' columns."""
    per_party = [direction_guesses(estimator, attacker, party_name(k),
                                   feature_ids, knows_random_state)
                 for k in range(estimator.partition_.n_parties)
                 if party_name(k) in victims]
    labels = [g[0] for g in per_party[0]]
    return [(label, np.vstack([dict(g)[label] for g in per_party]))
            for label in labels]


def _best(rows, key, value):
    if key not in rows or value > rows[key]:
        rows[key] = value


def _emit(name, best, chance):
    return [attack_row(name, attacker, victim, target, "r2", value, chance)
            for (attacker, victim, target), value in sorted(best.items())]


def _one_blas_thread(attack):
    # Small least-squares problems: threads only add contention.
    @functools.wraps(attack)
    def run(*args, **kwargs):
        with threadpool_limits(limits=1, user_api="blas"):
            return attack(*args, **kwargs)
    return run


def _views_for(estimator, messages, X):
    return kernel_views(estimator, messages, len(X))


@_one_blas_thread
def column_reconstruction(estimator, messages, X, y=None,
                          knows_random_state=False, estimates=None,
                          **fit_params):
    """Least squares for the victims' columns with the directions the
    attacker can compute (see the module docstring). Metric ``r2``.

    ``knows_random_state=True`` also gives the attacker the estimator's
    ``random_state`` (an integer): with ``party_keys="random_state"`` it then
    derives every party's key, which is why deployments use ``"os"``.
    ``estimates``, a dict, receives the best reconstruction of every table
    key as ``(rows, estimate, truth)`` (for plots).
    """
    best, chance = {}, {}
    for view in _views_for(estimator, messages, X):
        rows_u, r, feats_u, f, v = _select(view)
        cols = _victim_columns(estimator, view.victims)
        if len(rows_u) < MIN_ROWS or not cols:
            continue
        fits = []
        for label, omega in _guesses(estimator, view.attacker, view.victims,
                                     feats_u, knows_random_state):
            x, _, resid = _fit_rows_and_constants(omega, r, f, v, len(rows_u),
                                                  view.circular)
            fits.append((resid, label, x))
        resid, _, x = min(fits, key=lambda t: t[0])
        x = x * _confidence(resid, _null_residual(f, v, len(feats_u),
                                                  view.circular),
                            len(cols), len(v) / len(rows_u))
        truth = _truth_rows(estimator, X, rows_u)
        for a, (victim, col) in enumerate(cols):
            key = (view.attacker, victim, f"column {col}")
            score = _r2(x[:, a], truth[:, col])
            if estimates is not None and score > best.get(key, -np.inf):
                estimates[key] = (rows_u, x[:, a], truth[:, col])
            _best(best, key, score)
            chance[key] = 0.0
    return [attack_row("column_reconstruction", *key, "r2", value, chance[key])
            for key, value in sorted(best.items())]


column_reconstruction.attack_name = "column_reconstruction"


def column_reconstruction_known_seed(estimator, messages, X, y=None,
                                     **fit_params):
    """:func:`column_reconstruction` by an attacker who also knows
    ``random_state``, which the threat model counts as public: the audit's
    row for keys derived from the seed (``party_keys="random_state"``, or
    ``"auto"`` with a seed). With OS keys it is the attack without the
    seed."""
    rows = column_reconstruction(estimator, messages, X, y,
                                 knows_random_state=True, **fit_params)
    for row in rows:
        row["attack"] = column_reconstruction_known_seed.attack_name
    return rows


column_reconstruction_known_seed.attack_name = "column_reconstruction_known_seed"


def _fit_known(D, T, circular, n_iter=3):
    """Least squares ``T = D W`` column by column (mod 2 pi when circular:
    unwrapped around each column's circular mean, then around the fit)."""
    if not circular:
        return np.linalg.lstsq(D, T, rcond=None)[0]
    centre = np.angle(np.exp(1j * T).mean(axis=0))
    T = _wrap(T - centre)
    W = np.linalg.lstsq(D, T, rcond=None)[0]
    for _ in range(n_iter):
        T = D @ W + _wrap(T - D @ W)
        W = np.linalg.lstsq(D, T, rcond=None)[0]
    W[-1] += centre
    return W


def _n_known(d):
    return max(2 * (d + 1), 10)


@_one_blas_thread
def column_reconstruction_known_rows(estimator, messages, X, y=None,
                                     n_known=None, estimates=None, **fit_params):
    """The attacker knows ``n_known`` rows of the victims' columns (default
    ``max(2 (d_V + 1), 10)``); it estimates each feature's directions and
    constant from them, then the other rows. Metric ``r2`` on the others.

    ``estimates``, a dict, receives for every table key ``(attacker,
    victim, target)`` the attacker's best reconstruction as ``(rows,
    estimate, truth)`` (for plots; the truth only scores it)."""
    best, chance = {}, {}
    for view in _views_for(estimator, messages, X):
        rows_u, r, feats_u, f, v = _select(view)
        cols = _victim_columns(estimator, view.victims)
        d = len(cols)
        k = _n_known(d) if n_known is None else int(n_known)
        if not cols or len(rows_u) < k + MIN_ROWS:
            continue
        truth = _truth_rows(estimator, X, rows_u)
        Xv = truth[:, [c for _, c in cols]]
        known = np.zeros(len(rows_u), dtype=bool)
        known[np.random.RandomState(0).choice(len(rows_u), k, replace=False)] = True
        # 1. each feature's directions and constant, from the known rows
        obs = known[r]
        n_f = len(feats_u)
        coef = np.zeros((n_f, d + 1))
        enough = np.bincount(f[obs], None, n_f) >= d + 2
        if np.all(np.bincount(f[obs], None, n_f) == k):
            # every known row holds every feature: one least squares for all
            T = np.empty((k, n_f))
            T[np.searchsorted(np.flatnonzero(known), r[obs]), f[obs]] = v[obs]
            coef[:] = _fit_known(np.hstack([Xv[known], np.ones((k, 1))]), T,
                                 view.circular).T
        else:
            design = np.hstack([Xv[r[obs]], np.ones((obs.sum(), 1))])
            for j in np.flatnonzero(enough):
                sel = f[obs] == j
                coef[j] = _fit_known(design[sel], v[obs][sel][:, None],
                                     view.circular)[:, 0]
        # 2. every other row from those features
        use = ~known[r] & enough[f]
        if not use.any():
            continue
        A, c = coef[f[use], :d], coef[f[use], d]
        target = v[use] - c
        if view.circular:
            target = _wrap(target)
        present, rr = np.unique(r[use], return_inverse=True)
        x = np.tile(Xv[known].mean(axis=0), (len(present), 1))
        for _ in range(5 if view.circular else 1):
            pred = np.einsum("od,od->o", x[rr], A)
            t = pred + (_wrap(target - pred) if view.circular else target - pred)
            x = _solve_rows(A, rr, t, len(present))
        ok = np.bincount(rr, None, len(present)) >= d
        if ok.sum() < MIN_ROWS:
            continue
        truth_ok = Xv[present[ok]]
        for a, (victim, col) in enumerate(cols):
            key = (view.attacker, victim, f"column {col} ({k} known rows)")
            score = _r2(x[ok, a], truth_ok[:, a])
            if estimates is not None and score > best.get(key, -np.inf):
                estimates[key] = (rows_u[present[ok]], x[ok, a], truth_ok[:, a])
            _best(best, key, score)
            chance[key] = 0.0
    return [attack_row("column_reconstruction_known_rows", *key, "r2", value,
                       chance[key]) for key, value in sorted(best.items())]


column_reconstruction_known_rows.attack_name = "column_reconstruction_known_rows"


@_one_blas_thread
def distance_reconstruction(estimator, messages, X, y=None, **fit_params):
    """Spearman correlation between the kernel the attacker estimates from a
    view and minus the true pairwise distances of the view's columns."""
    best = {}
    rng = np.random.RandomState(0)
    for view in _views_for(estimator, messages, X):
        rows_u, r, feats_u, f, v = _select(view)
        cols = _victim_columns(estimator, view.victims)
        if len(rows_u) < MIN_ROWS or not cols:
            continue
        dense = np.full((len(rows_u), len(feats_u)), np.nan)
        dense[r, f] = v
        a = rng.randint(len(rows_u), size=N_PAIRS)
        b = rng.randint(len(rows_u), size=N_PAIRS)
        keep = a != b
        a, b = a[keep], b[keep]
        diff = dense[a] - dense[b]
        shared = np.sum(np.isfinite(diff), axis=1)
        kernel = np.nanmean(np.cos(np.where(np.isfinite(diff), diff, np.nan)),
                            axis=1) if diff.size else np.empty(0)
        ok = shared >= 10
        if ok.sum() < MIN_ROWS:
            continue
        truth = _truth_rows(estimator, X, rows_u)[:, [c for _, c in cols]]
        dist = np.linalg.norm(truth[a[ok]] - truth[b[ok]], axis=1)
        rho = spearmanr(kernel[ok], -dist)[0]
        victim = "+".join(view.victims)
        key = (view.attacker, victim, f"pairwise distances of {victim}'s columns")
        _best(best, key, 0.0 if not np.isfinite(rho) else float(rho))
    return [attack_row("distance_reconstruction", *key, "spearman", value, 0.0)
            for key, value in sorted(best.items())]


distance_reconstruction.attack_name = "distance_reconstruction"


# --------------------------------------------------------------------------
# Distances and MDS

#: rows used per view (a seeded choice beyond it): MDS is O(rows^2)
MDS_MAX_ROWS = 1500
#: features used per view (the most observed ones): the kernel estimate's
#: error falls as 1 / sqrt(features), and costs rows^2 x features
MDS_MAX_FEATURES = 4000
#: least number of features two rows must share for their kernel estimate
MIN_SHARED = 10


def kernel_from_angles(rows, features, values, n_rows, n_features):
    """``mean_j cos(v_ij - v_kj)`` over the features rows ``i`` and ``k``
    share, and how many they share.

    Returns
    -------
    kernel, shared : ndarray of shape (n_rows, n_rows)
    """
    E = np.zeros((n_rows, n_features), dtype=complex)
    E[rows, features] = np.exp(1j * values)
    M = np.zeros((n_rows, n_features))
    M[rows, features] = 1.0
    shared = M @ M.T
    kernel = (E @ E.conj().T).real / np.maximum(shared, 1.0)
    return kernel, shared


def squared_distances(kernel, shared, gamma, kernel_name="rbf"):
    """Squared distances from a kernel estimate (``NaN`` where unknown).

    The estimate of a kernel value has a standard error about
    ``1 / sqrt(2 shared)``; values below twice that are clipped to it (the
    distance is then a lower bound: far rows look less far).
    """
    floor = 2.0 / np.sqrt(2.0 * np.maximum(shared, 1.0))
    k = np.clip(kernel, floor, 1.0)
    d = -np.log(k) / gamma
    d2 = d if kernel_name == "rbf" else d**2
    d2[shared < MIN_SHARED] = np.nan
    np.fill_diagonal(d2, 0.0)
    return d2


def classical_mds(d2, n_components):
    """Classical (Torgerson) MDS of squared distances; ``NaN`` entries are
    filled with their row's and column's mean first."""
    d2 = np.array(d2, dtype=float)
    missing = ~np.isfinite(d2)
    if missing.any():
        fill = np.nanmean(d2, axis=1)
        fill = np.where(np.isfinite(fill), fill, np.nanmean(d2))
        d2[missing] = ((fill[:, None] + fill[None, :]) / 2)[missing]
    n = len(d2)
    J = np.eye(n) - 1.0 / n
    B = -0.5 * J @ d2 @ J
    w, V = np.linalg.eigh((B + B.T) / 2)
    top = np.argsort(w)[::-1][:n_components]
    return V[:, top] * np.sqrt(np.maximum(w[top], 0.0))


def procrustes_rotation(Y, T):
    """The orthogonal ``R`` (reflections allowed) minimising ``||Y R - T||``
    for centred ``Y`` and ``T``."""
    U, _, Vt = np.linalg.svd(Y.T @ T)
    return U @ Vt


def _abs_corr(S, T):
    """``|corr|`` of every column of ``S`` with every column of ``T``."""
    S = (S - S.mean(axis=0)) / np.maximum(S.std(axis=0), 1e-300)
    T = (T - T.mean(axis=0)) / np.maximum(T.std(axis=0), 1e-300)
    return np.abs(S.T @ T) / len(S)


def _unmixed(Y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a non-converged ICA is still a guess
        return FastICA(n_components=Y.shape[1], whiten="unit-variance",
                       max_iter=400, random_state=0).fit_transform(Y)


def _chance_abs_corr(T, n_draws=20):
    rng = np.random.RandomState(1)
    return float(np.mean([_abs_corr(rng.standard_normal(T.shape), T).max(axis=0)
                          for _ in range(n_draws)]))


def _embed(view, estimator):
    rows_u, r, feats_u, f, v = _select(view, MDS_MAX_FEATURES)
    if len(rows_u) > MDS_MAX_ROWS:
        keep = np.sort(np.random.RandomState(0).choice(len(rows_u), MDS_MAX_ROWS,
                                                        replace=False))
        sel = np.isin(r, keep)
        rows_u, r, f, v = rows_u[keep], np.searchsorted(keep, r[sel]), f[sel], v[sel]
    kernel, shared = kernel_from_angles(r, f, v, len(rows_u), len(feats_u))
    d2 = squared_distances(kernel, shared, estimator.gamma_, estimator.kernel)
    return rows_u, d2


@_one_blas_thread
def distance_mds(estimator, messages, X, y=None, n_known=None, estimates=None,
                 **fit_params):
    """Kernel estimate -> distances -> classical MDS -> alignment (see the
    module docstring). Rows ``"column c (oracle rotation)"`` (``r2``) and
    ``"column c (ICA, no side information)"`` (``abs_corr``); with
    ``n_known`` (an int or several), ``"column c (n known rows)"`` (``r2``
    on the other rows).
    ``estimates``, a dict, receives the embedding of every view as
    ``(rows, embedding, truth)``."""
    best, chance, metric = {}, {}, {}
    for view in kernel_views(estimator, messages, len(X)):
        cols = _victim_columns(estimator, view.victims)
        if not cols:
            continue
        rows_u, d2 = _embed(view, estimator)
        if len(rows_u) < MIN_ROWS or np.isnan(d2).all():
            continue
        d = len(cols)
        Y = classical_mds(d2, d)
        Y -= Y.mean(axis=0)
        truth = _truth_rows(estimator, X, rows_u)[:, [c for _, c in cols]]
        T = truth - truth.mean(axis=0)
        if estimates is not None:
            estimates[view.attacker, tuple(view.victims), view.kind] = (
                rows_u, Y, truth)
        found = {}
        aligned = Y @ procrustes_rotation(Y, T)
        for a in range(d):
            found[f"column {cols[a][1]} (oracle rotation)"] = (a, "r2", _r2(
                aligned[:, a], T[:, a]), 0.0)
        unmixed = _abs_corr(_unmixed(Y), T).max(axis=0)
        by_chance = _chance_abs_corr(T)
        for a in range(d):
            found[f"column {cols[a][1]} (ICA, no side information)"] = (
                a, "abs_corr", float(unmixed[a]), by_chance)
        for k in () if n_known is None else np.atleast_1d(n_known).astype(int):
            if len(rows_u) < k + MIN_ROWS:
                continue
            known = np.zeros(len(rows_u), dtype=bool)
            known[np.random.RandomState(0).choice(len(rows_u), k,
                                                  replace=False)] = True
            mu_y, mu_t = Y[known].mean(axis=0), truth[known].mean(axis=0)
            R = procrustes_rotation(Y[known] - mu_y, truth[known] - mu_t)
            fit = (Y[~known] - mu_y) @ R + mu_t
            for a in range(d):
                found[f"column {cols[a][1]} ({k} known rows)"] = (
                    a, "r2", _r2(fit[:, a], truth[~known, a]), 0.0)
        for target, (a, name, value, base) in found.items():
            key = (view.attacker, cols[a][0], target)
            if key not in best or value > best[key]:
                best[key], chance[key], metric[key] = value, base, name
    return [attack_row("distance_mds", *key, metric[key], value, chance[key])
            for key, value in sorted(best.items())]


distance_mds.attack_name = "distance_mds"


def blocks_row_order(estimator, n_rows):
    """Row ``r`` of the parties' blocks is row ``order[r]`` of the caller's
    ``X`` (a fit may put held-out rows first): FDSKL's and AVFKAM's
    ``_privacy_row_order``."""
    order = getattr(estimator, "_row_order", None)
    return np.arange(n_rows) if order is None else np.asarray(order)


def secrets_in_row_order(secrets, order):
    """Put each row-indexed secret (every kind but ``"rows"``, whose values
    are row ids) in the parties' row order ``order``, as the messages are:
    FDSKL's and AVFKAM's ``_privacy_secrets``."""
    for secret in secrets:
        if secret.kind != "rows" and len(secret.values) == len(order):
            secret.values = np.asarray(secret.values)[order]
    return secrets


#: the attacks of FDSKL and AVFKAM, as their ``_privacy_attacks`` return them
KERNEL_ATTACKS = (column_reconstruction, column_reconstruction_known_seed,
                  column_reconstruction_known_rows, distance_reconstruction,
                  distance_mds)
