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

Attacks (each scored only against the victims' true columns):

``column_reconstruction``
    The paper's inference attack (its Definition 6): least squares for the
    victim rows and the per-feature constants, given the directions
    ``omega_{j,V}`` the attacker can compute: from the public seed, and from
    its own key (the estimator's ``_privacy_direction_guesses``); the
    attacker keeps the guess that fits best, and weights its reconstruction
    by the share of the values that guess explains beyond chance (a guess
    that explains nothing is no better than the prior mean, which is all
    that knowing the distribution of the directions allows). Angles are
    unwrapped iteratively. Metric: ``r2 = 1 - SSE / SST`` of each reconstructed column
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
``distance_mds`` (:mod:`._mds_attack`)
    The kernel estimate as distances, and classical MDS: the victims'
    block up to a rigid motion, scored with an oracle rotation (an upper
    bound) and without side information.

For every (attacker, victim, target) the table keeps the attacker's best
view, an upper bound on what it could do with the views listed above.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import functools
from dataclasses import dataclass

import numpy as np
from scipy.stats import spearmanr
from threadpoolctl import threadpool_limits

from .._privacy_core import attack_row
from ._attack_fits import (
    _TWO_PI,
    _confidence,
    _fit_rows_and_constants,
    _null_residual,
    _solve_rows,
    _wrap,
)

__all__ = [
    "column_reconstruction",
    "column_reconstruction_known_rows",
    "column_reconstruction_known_seed",
    "distance_reconstruction",
    "kernel_views",
    "KERNEL_ATTACKS",
]

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
    from ..federation import child_sets
    from ._privacy import masked_sum_instances

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
    from ._vertical_features import party_name

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
    from ..kernel_approximation import spectral_directions
    from ._vertical_features import party_name

    hook = getattr(estimator, "_privacy_direction_guesses", None)
    partition = estimator.partition_
    per_party = []
    for k in range(partition.n_parties):
        name = party_name(k)
        if name not in victims:
            continue
        if hook is not None:
            per_party.append(hook(attacker, name, feature_ids,
                                  knows_random_state=knows_random_state))
        else:  # the float protocol: one public seed for every block
            per_party.append([("public seed", spectral_directions(
                estimator._basis_seed, partition.columns(k), feature_ids,
                estimator.kernel, estimator.gamma_))])
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

#: the attacks of FDSKL and AVFKAM, as ``_privacy_attacks`` returns them
KERNEL_ATTACKS = (column_reconstruction, column_reconstruction_known_seed,
                  column_reconstruction_known_rows, distance_reconstruction)
