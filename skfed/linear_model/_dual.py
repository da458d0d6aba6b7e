"""HyFDCA's one-dimensional dual maths: losses, conjugates, exact steps.

Pure functions of numbers, no party state: the primal and conjugate values
of the hinge, squared hinge and logistic losses, the exact maximiser of one
dual coordinate's subproblem (the paper's Algorithm 5, with the row norm it
leaves out), a client's sequential local pass over whole rows (reading its
block row by row, dense or CSR), and the server's line search along the
aggregated direction with its step lengths. The party functions
that use them are in :mod:`._protocol`.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import math

import numpy as np
import scipy.sparse as sp
from scipy.special import expit, xlogy

__all__ = ["LINE_SEARCH_GRID", "ZERO_MODEL_LOSS", "line_search_grid",
           "loss_values", "conjugate_values", "dual_step", "row_reader"]

#: step lengths at which clients report their conjugate sums: the exact
#: values of a polynomial of degree 1 (hinge) or 2 (squared hinge), a grid
#: for the logistic loss's entropy
LINE_SEARCH_GRID = {
    "hinge": np.array([0.0, 1.0]),
    "squared_hinge": np.array([0.0, 0.5, 1.0]),
    "logistic": np.linspace(0.0, 1.0, 17),
}

#: value of the loss at margin 0 (the zero model's primal objective)
ZERO_MODEL_LOSS = {"hinge": 1.0, "squared_hinge": 0.5, "logistic": math.log(2.0)}


def line_search_grid(loss, step_size):
    """The step lengths at which the clients report their conjugate sums:
    :data:`LINE_SEARCH_GRID` with ``step_size="auto"``; with a fixed step
    ``s`` the sums at 0, (s/2,) s."""
    grid = LINE_SEARCH_GRID[loss]
    if step_size == "auto":
        return grid
    return grid[[0, -1]] * float(step_size) if loss != (
        "squared_hinge") else np.array([0.0, 0.5, 1.0]) * float(step_size)


# -- losses: primal values, dual (conjugate) values, exact 1-D dual steps ----
#
# With a_i = y_i alpha_i (the dual variable in label direction) every loss of
# the paper's family has -l*(-alpha_i) = g(a_i) on a box, and the Algorithm 5
# subproblem for one coordinate is
#     max_d  g(a + d) - d * b - c d^2 / 2,  b = y_i x_i^T w,  c = ||x_i||^2 / (lambda N)
# whose solution a' = a + d is closed form (hinge, squared hinge) or a 1-D
# monotone root (logistic).

def loss_values(loss, margins):
    """``l(m)`` at margins ``m = y x^T w``."""
    if loss == "hinge":
        return np.maximum(0.0, 1.0 - margins)
    if loss == "squared_hinge":
        return 0.5 * np.maximum(0.0, 1.0 - margins) ** 2
    return np.logaddexp(0.0, -margins)


def conjugate_values(loss, a):
    """``g(a) = -l*(-alpha)`` with ``a = y alpha`` (feasible ``a`` only)."""
    if loss == "hinge":
        return a
    if loss == "squared_hinge":
        return a - 0.5 * a ** 2
    a = np.clip(a, 0.0, 1.0)
    return -(xlogy(a, a) + xlogy(1.0 - a, 1.0 - a))


def dual_step(loss, a, b, c):
    """The maximiser ``a'`` of ``g(a') - (a' - a) b - c (a' - a)^2 / 2``."""
    c = np.maximum(c, 1e-300)
    if loss == "hinge":
        # The paper's closed form (section 5), with the ||x_i||^2 that it
        # leaves out: clip(a + lambda N (1 - y x^T w) / ||x||^2, 0, 1).
        with np.errstate(over="ignore"):
            return np.clip(a + (1.0 - b) / c, 0.0, 1.0)
    if loss == "squared_hinge":
        return np.maximum(0.0, a + (1.0 - b - a) / (1.0 + c))
    # Logistic: log(a'/(1-a')) + b + c (a' - a) = 0, increasing in a'. Solve
    # for s = logit(a') by Newton steps kept inside a shrinking bracket.
    lo = -b - c * (1.0 - a)
    hi = -b + c * a
    s = np.clip(-b, lo, hi)
    for _ in range(60):
        p = expit(s)
        f = s + b + c * (p - a)
        lo = np.where(f < 0, s, lo)
        hi = np.where(f > 0, s, hi)
        newton = s - f / (1.0 + c * p * (1.0 - p))
        inside = (newton > lo) & (newton < hi)
        s_new = np.where(inside, newton, 0.5 * (lo + hi))
        if np.all(np.abs(s_new - s) <= 1e-13 * (1.0 + np.abs(s))):
            s = s_new
            break
        s = s_new
    return expit(s)


def _logistic_step_scalar(a, b, c):
    """:func:`dual_step` for one logistic coordinate, in Python floats."""
    lo, hi = -b - c * (1.0 - a), -b + c * a
    s = min(max(-b, lo), hi)
    for _ in range(100):
        p = 1.0 / (1.0 + math.exp(-s)) if s > -700 else 0.0
        f = s + b + c * (p - a)
        if f < 0:
            lo = s
        elif f > 0:
            hi = s
        else:
            break
        newton = s - f / (1.0 + c * p * (1.0 - p))
        s_new = newton if lo < newton < hi else 0.5 * (lo + hi)
        if abs(s_new - s) <= 1e-13 * (1.0 + abs(s)):
            s = s_new
            break
        s = s_new
    return 1.0 / (1.0 + math.exp(-s)) if s > -700 else 0.0


def row_reader(X):
    """``read(i) -> (columns, values)`` of row ``i`` of a dense array or CSR
    block, for the sequential coordinate pass (``columns`` a slice for
    dense rows)."""
    if sp.issparse(X):
        indptr, indices, data = X.indptr, X.indices, X.data

        def read(i):
            lo, hi = indptr[i], indptr[i + 1]
            return indices[lo:hi], data[lo:hi]
        return read
    everything = slice(None)
    return lambda i: (everything, X[i])


def _sequential_pass(loss, X, signs, a, margins, sqnorm, lam_n, beta, order,
                     weights):
    """One client's local dual coordinate ascent on whole rows (one task).

    Exact SDCA on the client's own rows (CoCoA's local solver, curvature
    scaled by ``beta``): each step sees the margins moved by the previous
    steps, through the client's local copy of its change of ``w``. Row ``i``
    of weight ``s_i`` has curvature ``s_i ||x_i||^2 / (lambda N)`` and moves
    ``w`` by ``s_i`` times its dual step (see the estimator's Notes).
    ``X`` is dense or CSR (rows read as index/value pairs). Returns the
    change of ``a``.
    """
    a = a.copy()
    start = a.copy()
    read = row_reader(X)
    dw = np.zeros(X.shape[1])
    for i in order:
        s = weights[i]
        c = beta * s * sqnorm[i] / lam_n
        if c <= 0.0:
            continue
        columns, values = read(i)
        b = margins[i] + beta * signs[i] * float(values @ dw[columns])
        if loss == "hinge":
            new = min(1.0, max(0.0, a[i] + (1.0 - b) / c))
        elif loss == "squared_hinge":
            new = max(0.0, a[i] + (1.0 - b - a[i]) / (1.0 + c))
        else:
            new = _logistic_step_scalar(a[i], b, c)
        if new != a[i]:
            dw[columns] += (s * (new - a[i]) * signs[i] / lam_n) * values
            a[i] = new
    return a - start


def _project(loss, a):
    if loss == "squared_hinge":
        return np.maximum(a, 0.0)
    return np.clip(a, 0.0, 1.0)


def _line_search(loss, grid, D_point, lin_w, quad_w, conj_grid, fixed):
    """The step length in [0, 1] maximising the dual along the direction
    (with ``fixed``, the grid's last point: a step size chosen by the user).

    ``D(s) = D_point + s lin_w - s^2 quad_w / 2 + (conj(s) - conj(0)) / N``
    where ``conj`` is known at ``grid`` (exactly a polynomial for hinge and
    squared hinge). Returns ``(s, D(s))``.
    """
    def quad_part(s):
        return D_point + s * lin_w - 0.5 * s * s * quad_w

    if fixed:  # the grid ends at the fixed step length
        s = float(grid[-1])
        return s, quad_part(s) + conj_grid[-1] - conj_grid[0]
    if loss == "logistic":
        values = quad_part(grid) + conj_grid - conj_grid[0]
        i = int(np.argmax(values))
        return float(grid[i]), float(values[i])
    if loss == "hinge":
        lin = lin_w + (conj_grid[1] - conj_grid[0])
        quad = quad_w
    else:  # squared hinge: conj(s) = c0 + c1 s - c2 s^2 / 2 through 3 points
        c2 = -4.0 * (conj_grid[2] - 2.0 * conj_grid[1] + conj_grid[0])
        c1 = conj_grid[2] - conj_grid[0] + 0.5 * c2
        lin, quad = lin_w + c1, quad_w + c2
    if quad > 0:
        s = min(1.0, max(0.0, lin / quad))
    else:
        s = 1.0 if lin > 0 else 0.0
    return s, D_point + s * lin - 0.5 * s * s * quad


def _conj_at(loss, grid, conj, s):
    if loss == "squared_hinge":
        return float(np.polyval(np.polyfit(grid, conj, 2), s))
    return float(np.interp(s, grid, conj))
