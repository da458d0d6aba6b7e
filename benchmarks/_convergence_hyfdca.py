"""HyFDCA rows of ``bench_convergence.py``.

Every fit uses HyFDCAClassifier's defaults (2 x 2 grid, ``alpha=1e-2``,
``local_iterations="auto"``, ``step_size="auto"``, ``tol=1e-3``), in
plaintext mode: the encrypted mode runs the same iterates (its fixed-point
scale comes from the data; encrypted and plaintext fits agree to ~1e-10).
``objective_ratio`` is the final primal objective over the optimum of the
same objective (intercept regularised as a constant column, as in
liblinear) from a centralised solver: the best of liblinear / L-BFGS and a
long run of sequential dual coordinate ascent (liblinear alone stops 1%
above the optimum on standardised breast cancer at ``alpha=1e-3``).
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import time
import warnings

import numpy as np
from scipy.optimize import minimize
from sklearn.datasets import load_breast_cancer
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import LinearSVC

from _common import hard_variants
from skfed.linear_model import HyFDCAClassifier
from skfed.exceptions import DivergenceError
from skfed.linear_model._dual import loss_values

LOSSES = ("hinge", "squared_hinge", "logistic")
NOTE = ("final primal objective / the centralised optimum of the same "
        "objective (plaintext mode, defaults)")


def primal_objective(X, y, w, b, lam, loss):
    """``lambda/2 (||w||^2 + b^2) + mean l(y (Xw + b))``, labels 0/1 or +-1."""
    signs = np.where(y == np.unique(y)[-1], 1.0, -1.0)
    return 0.5 * lam * (w @ w + b * b) + loss_values(
        loss, signs * (X @ w + b)).mean()


def _sdca_hinge(Z, signs, lam, epochs=3000, tol=1e-9, seed=0):
    """Sequential dual coordinate ascent (hinge) to a duality gap of tol."""
    n = len(signs)
    rng = np.random.RandomState(seed)
    Zs = Z * signs[:, None]
    sq = np.einsum("ij,ij->i", Z, Z)
    a, w, best = np.zeros(n), np.zeros(Z.shape[1]), np.inf
    for _ in range(epochs):
        for i in rng.permutation(n):
            if sq[i] == 0:
                continue
            new = min(1.0, max(0.0, a[i] + lam * n * (1 - Zs[i] @ w) / sq[i]))
            if new != a[i]:
                w += (new - a[i]) * Zs[i] / (lam * n)
                a[i] = new
        best = min(best, 0.5 * lam * w @ w + np.maximum(0, 1 - Zs @ w).mean())
        dual = -0.5 * lam * w @ w + a.mean()
        if best - dual <= tol * best:
            break
    return best


def central_optimum(X, y, lam, loss, fit_intercept=True):
    """The optimum of HyFDCA's objective, computed centrally."""
    Z = np.hstack([X, np.ones((len(X), 1))]) if fit_intercept else X
    signs = np.where(y == np.unique(y)[-1], 1.0, -1.0)
    n = len(y)
    if loss == "hinge":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            svc = LinearSVC(loss="hinge", C=1.0 / (lam * n),
                            fit_intercept=False, tol=1e-12,
                            max_iter=200_000, random_state=0).fit(Z, signs)
        liblinear = primal_objective(Z, signs, svc.coef_.ravel(), 0.0, lam,
                                     loss)
        return min(liblinear, _sdca_hinge(Z, signs, lam))

    def f(w):
        m = signs * (Z @ w)
        if loss == "logistic":
            g = -signs / (1.0 + np.exp(np.clip(m, -700, 700)))
        else:
            g = -signs * np.maximum(0.0, 1.0 - m)
        return (0.5 * lam * w @ w + loss_values(loss, m).mean(),
                lam * w + Z.T @ g / n)

    res = minimize(f, np.zeros(Z.shape[1]), jac=True, method="L-BFGS-B",
                   options=dict(gtol=1e-12, ftol=1e-15, maxiter=50_000))
    return float(res.fun)


def _settings(quick):
    X, y = load_breast_cancer(return_X_y=True)
    hard = hard_variants(X, quick)
    Xs = hard["standardised"]
    return y, {
        "standardised": (Xs, {}),
        "unscaled": (hard["unscaled"], {}),
        "wide (many columns)": (hard["wide"], {}),
        "near-constant column": (hard["near-constant column"], {}),
        "partial participation 50% random": (Xs, {"participation": 0.5}),
        "partial participation 50% cyclic": (Xs, {"participation": 0.5,
                                                  "schedule": "cyclic"}),
    }


def cases(quick=False):
    """Yield one row per loss x setting (see ``bench_convergence.py``)."""
    y, settings = _settings(quick)
    for loss in LOSSES:
        for setting, (X, extra) in settings.items():
            clf = HyFDCAClassifier(loss=loss, encryption=None, random_state=0,
                                   **extra)
            start = time.perf_counter()
            diverged, note = False, NOTE
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", ConvergenceWarning)
                try:
                    clf.fit(X, y)
                except (DivergenceError, ArithmeticError) as exc:
                    diverged, note = True, f"{type(exc).__name__}: {exc}"
            seconds = time.perf_counter() - start
            if diverged:
                yield {"estimator": "HyFDCAClassifier", "loss": loss,
                       "setting": setting, "objective_ratio": float("nan"),
                       "diverged": True, "nonfinite": False,
                       "seconds": seconds, "note": note}
                continue
            lam = clf.alpha
            mine = primal_objective(X, y, clf.coef_.ravel(),
                                    float(clf.intercept_[0]), lam, loss)
            reference = central_optimum(X, y, lam, loss)
            warned = [w for w in caught
                      if issubclass(w.category, ConvergenceWarning)]
            if warned:
                note = f"{NOTE}; ConvergenceWarning: {warned[0].message}"
            note += f"; {clf.n_iter_} rounds, gap {clf.duality_gap_:.2g}"
            decision = clf.decision_function(X)
            yield {"estimator": "HyFDCAClassifier", "loss": loss,
                   "setting": setting, "objective_ratio": mine / reference,
                   "diverged": False,
                   "nonfinite": not (np.all(np.isfinite(decision))
                                     and np.isfinite(mine)),
                   "seconds": seconds, "note": note}


if __name__ == "__main__":  # pragma: no cover - a quick look
    for row in cases(quick=True):
        print(row)
