"""Least squares behind the kernel attacks: rows and constants from angles.

The column attacks of :mod:`skfed.kernel_methods._attacks` model a view's
values as ``v_ij = x_i . omega_j + c_j`` (modulo ``2 pi`` for ring values)
and solve for the rows ``x`` and the per-feature constants ``c`` by
alternating least squares, unwrapping angles around the current fit, when
every row observes every feature (dense) or not (sparse); and they weigh a
fit against the values' spread around their constants alone.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np

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
