"""FDSKL's doubly stochastic steps on one machine, in plain numpy.

The baseline of ``bench_fdskl.py``: the same maths as
:class:`~skfed.kernel_methods.FDSKLClassifier` (minibatches drawn without
replacement per epoch, ``m`` fresh random Fourier features per step, the new
coefficients ``-lr / (B m) sum_i L'(f(x_i), y_i) phi_j(x_i)``, the decay
``1 - lr alpha`` of the older ones, and the per-row partial sums of the
features a row already met; or, with ``pool=D``, the step's ``m`` feature
ids taken modulo ``D``, a returning id's coefficient growing in place and
every row scored on the whole pool), with every column in one place: no
parties, no masks, no messages. Its random directions come from one numpy generator, so
the model is another draw of the same distribution, not the federated
model itself (``tests/kernel_methods/fdskl/test_estimator.py`` checks that one
exactly).
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
import scipy.sparse as sp

from skfed.losses import get_loss

__all__ = ["numpy_fdskl"]


def _project(X, omega, lo, hi):
    """``X @ omega[:, lo:hi]``; for sparse rows only the columns they use."""
    if not sp.issparse(X):
        return X @ omega[:, lo:hi]
    X = sp.csr_matrix(X)
    used, local = np.unique(X.indices, return_inverse=True)
    compact = sp.csr_matrix((X.data, local.ravel(), X.indptr),
                            shape=(X.shape[0], len(used)))
    return np.asarray(compact @ omega[used, lo:hi])


def numpy_fdskl(X, Y, *, n_iter, batch_size, m, learning_rate, alpha, gamma,
                loss="logistic", random_state=0, pool=None):
    """Fit the centralized model; returns ``decision(X_new) -> (n, k)``.

    ``Y`` holds the encoded targets (``-1``/``+1`` per class for the
    classifier's losses), one column per output. ``learning_rate`` is a
    number or one step per iteration (a schedule, for studies). ``pool``:
    ``None`` for fresh features every step, or the pool size
    (``n_components``).
    """
    rng = np.random.RandomState(random_state)
    n, d = X.shape
    n_total = n_iter * m if pool is None else min(pool, n_iter * m)
    omega = rng.normal(scale=np.sqrt(2.0 * gamma), size=(d, n_total))
    phase = rng.uniform(0.0, 2.0 * np.pi, size=n_total)
    L = get_loss(loss)
    raw = np.zeros((n_total, Y.shape[1]))   # coefficients / scale
    scale = 1.0
    partial = np.zeros((n, Y.shape[1]))     # sum_j raw_j phi_j(x_i), j < upto_i
    upto = np.zeros(n, dtype=np.int64)
    rates = np.broadcast_to(np.asarray(learning_rate, dtype=float), (n_iter,))
    order, pos = np.empty(0, dtype=np.int64), 0
    root2 = np.sqrt(2.0)
    for t in range(n_iter):
        learning_rate, decay = rates[t], 1.0 - rates[t] * alpha
        if pos + batch_size > len(order):
            order, pos = rng.permutation(n), 0
        rows = order[pos:pos + batch_size]
        pos += batch_size
        if pool is not None:
            # every row meets the whole pool (untouched ids hold 0); the
            # step's ids wrap around it
            phi = root2 * np.cos(_project(X[rows], omega, 0, n_total) + phase)
            ids = np.arange(t * m, (t + 1) * m) % n_total
            coef = -learning_rate / (batch_size * m) * (
                phi[:, ids].T @ L.derivative(Y[rows], scale * phi @ raw))
            scale *= decay
            raw[ids] += coef / scale
            continue
        width = t * m
        # The features each row met since its last visit, rows grouped by
        # where they stopped (one dense product per group).
        starts = upto[rows]
        for s in np.unique(starts):
            if s < width:
                group = rows[starts == s]
                z = _project(X[group], omega, s, width) + phase[s:width]
                partial[group] += root2 * np.cos(z) @ raw[s:width]
        f = scale * partial[rows]
        z = _project(X[rows], omega, width, width + m) + phase[width:width + m]
        phi_new = root2 * np.cos(z)
        coef = -learning_rate / (batch_size * m) * (
            phi_new.T @ L.derivative(Y[rows], f))
        scale *= decay
        raw[width:width + m] = coef / scale
        partial[rows] += phi_new @ raw[width:width + m]
        upto[rows] = width + m

    def decision(X_new, block=2048):
        out = np.zeros((X_new.shape[0], Y.shape[1]))
        for lo in range(0, n_total, block):
            hi = min(lo + block, n_total)
            z = _project(X_new, omega, lo, hi) + phase[lo:hi]
            out += root2 * np.cos(z) @ (raw[lo:hi] * scale)
        return out

    return decision
