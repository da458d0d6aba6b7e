"""``distance_mds``: the other parties' block from the kernel, without any known row.

A party that receives ``v_ij = omega_{j,V}^T x_{i,V} + c_j (mod 2 pi)`` over
many random features (the receiver of the masked sums, by design) can
estimate the kernel of the view's columns between any two rows,
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

import warnings

import numpy as np
from sklearn.decomposition import FastICA

from .._privacy_core import attack_row
from ._attacks import (
    _one_blas_thread,
    _r2,
    _select,
    _truth_rows,
    _victim_columns,
    kernel_views,
)

__all__ = ["distance_mds", "kernel_from_angles", "classical_mds",
           "procrustes_rotation"]

#: rows used per view (a seeded choice beyond it): MDS is O(rows^2)
MAX_ROWS = 1500
#: features used per view (the most observed ones): the kernel estimate's
#: error falls as 1 / sqrt(features), and costs rows^2 x features
MAX_FEATURES = 4000
#: least number of features two rows must share for their kernel estimate
MIN_SHARED = 10
#: rows below which a view is not attacked
MIN_ROWS = 20


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
    rows_u, r, feats_u, f, v = _select(view, MAX_FEATURES)
    if len(rows_u) > MAX_ROWS:
        keep = np.sort(np.random.RandomState(0).choice(len(rows_u), MAX_ROWS,
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
            estimates[view.attacker, tuple(view.victims), view.kind] = (rows_u, Y, truth)
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
