"""Convergence rows of FDSKL and AVFKAM for ``bench_convergence.py``.

Default settings (``learning_rate="auto"``) of FDSKLClassifier (logistic,
smooth hinge and squared losses, breast cancer), FDSKLRegressor (squared
loss, diabetes) and AVFKAMRanker (squared and logistic pairwise losses,
breast cancer cut to 10% malignant, as the quick tour), two parties, in five
settings:

- ``standardised``: the standardised table;
- ``unscaled``: the same columns times factors from 1 to 1e3;
- ``wide kernel``: ``gamma`` a tenth of ``"scale"`` (0.01 on diabetes, the
  issue's case where the former fixed step diverged);
- ``near-constant column``: a column ``1 + 1e-8 noise`` added to the
  standardised table;
- ``paper-exact step``: one row (pair) and one random feature per step, the
  papers' loop, on the standardised table, with ``max_iter = 20 n`` for FDSKL
  (fresh features, ``n`` rows) and 20,000 for AVFKAM (the issue's count).

``objective_ratio`` is the final regularised objective of the fitted model
over the optimum of the same objective computed centrally (see ``NOTE``):
``>= 1``, 1 is the optimum. ``diverged``: the fit raised (divergence guard)
or warned (``ConvergenceWarning``); ``nonfinite``: a decision value on the
training rows was not finite.

Run it through ``python benchmarks/bench_convergence.py --only kernel``, or
alone: ``python benchmarks/_convergence_kernel.py [--quick]``.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import time
import warnings

import numpy as np
from scipy.optimize import minimize
from sklearn.datasets import load_breast_cancer, load_diabetes
from sklearn.exceptions import ConvergenceWarning
from sklearn.kernel_approximation import RBFSampler
from sklearn.preprocessing import StandardScaler

from skfed.kernel_methods import AVFKAMRanker, FDSKLClassifier, FDSKLRegressor
from skfed.losses import get_loss

NOTE = ("mean training loss + alpha/2 ||f||^2 in the RKHS of the model's own "
        "F random features (||f||^2 = F sum alpha_j^2; targets standardised "
        "for the regressor; all positive x negative pairs for AVFKAM) / the "
        "exact minimum of that objective over F random features of the same "
        "kernel drawn centrally (sklearn's RBFSampler; closed form for the "
        "squared losses, L-BFGS otherwise)")


# ---------------------------------------------------------------- the data

def _breast_cancer(quick):
    X, y = load_breast_cancer(return_X_y=True)
    if quick:
        keep = np.random.RandomState(0).permutation(len(y))[:300]
        X, y = X[keep], y[keep]
    return X, y


def _diabetes(quick):
    X, y = load_diabetes(return_X_y=True)
    return (X[:250], y[:250]) if quick else (X, y)


def _imbalanced_breast_cancer(quick):
    # The quick tour's AVFKAM data: malignant (positive) cut to 10%.
    X, y = load_breast_cancer(return_X_y=True)
    y = (y == 0).astype(int)
    rng = np.random.RandomState(0)
    pos, neg = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    if quick:
        neg = neg[:200]
    keep = np.r_[neg, rng.choice(pos, len(neg) // 9, replace=False)]
    return X[keep], y[keep]


def _scale_gamma(X):
    return 1.0 / (X.shape[1] * X.var())


def settings(X, quick):
    """``(setting, X, extra parameters)`` for one table."""
    X = StandardScaler().fit_transform(X)
    yield "standardised", X, {}
    yield "unscaled", X * np.logspace(0, 3, X.shape[1]), {}
    yield "wide kernel", X, {"gamma": _scale_gamma(X) / 10}
    column = 1.0 + 1e-8 * np.random.RandomState(0).standard_normal(len(X))
    yield "near-constant column", np.column_stack([X, column]), {}
    yield "paper-exact step", X, {"paper_exact": True}


# ----------------------------------------------------- centralized optima

def _features(X, gamma, n_features, seed=0):
    """``sqrt(2) cos(omega^T x + b)`` for ``n_features`` draws (RBF kernel)."""
    sampler = RBFSampler(gamma=gamma, n_components=n_features, random_state=seed)
    return sampler.fit_transform(X) * np.sqrt(n_features)


def pointwise_optimum(X, y, loss, gamma, n_features, alpha):
    """``min mean L(f(x_i), y_i) + alpha/2 ||f||^2`` over ``F`` features.

    With ``f = Phi a`` and ``||f||^2 = F ||a||^2``, the minimiser is
    ``a = Phi^T beta / F``: a kernel problem in ``beta`` with ``K = Phi
    Phi^T / F``.
    """
    Phi = _features(X, gamma, n_features)
    K = Phi @ Phi.T / n_features
    n, L = len(y), get_loss(loss)
    if loss == "squared":
        beta = np.linalg.solve(K + n * alpha * np.eye(n), y)
    else:
        def fun(b):
            f = K @ b
            value = L(y, f).mean() + 0.5 * alpha * b @ f
            return value, K @ (L.derivative(y, f) / n) + alpha * f
        beta = minimize(fun, np.zeros(n), jac=True, method="L-BFGS-B",
                        options=dict(maxiter=3000, gtol=1e-9)).x
    f = K @ beta
    return float(L(y, f).mean() + 0.5 * alpha * beta @ f)


def pairwise_objective(f, y, loss, alpha, norm2):
    """Mean pairwise loss over every (positive, negative) pair + penalty."""
    L = get_loss(loss, pairwise=True)
    d = f[y == 1][:, None] - f[y == 0][None, :]
    return float(L(d).mean() + 0.5 * alpha * norm2)


def pairwise_optimum(X, y, loss, gamma, n_features, alpha):
    """The same for AVFKAM's objective, over a pool of ``F`` features."""
    Z = _features(X, gamma, n_features)
    zp, zn = Z[y == 1], Z[y == 0]
    F = n_features
    if loss == "squared":
        # E (1 - (z+ - z-) a)^2 + alpha/2 F ||a||^2 is quadratic in a.
        mp, mn = zp.mean(0), zn.mean(0)
        C = np.cov(zp.T, bias=True) + np.cov(zn.T, bias=True) + np.outer(
            mp - mn, mp - mn)
        a = np.linalg.solve(2 * C + alpha * F * np.eye(F), 2 * (mp - mn))
    else:
        L = get_loss(loss, pairwise=True)

        def fun(a):
            d = (zp @ a)[:, None] - (zn @ a)[None, :]
            g = L.derivative(d) / d.size
            grad = zp.T @ g.sum(1) - zn.T @ g.sum(0) + alpha * F * a
            return float(L(d).mean() + 0.5 * alpha * F * a @ a), grad
        a = minimize(fun, np.zeros(F), jac=True, method="L-BFGS-B",
                     options=dict(maxiter=3000, gtol=1e-9)).x
    return pairwise_objective(Z @ a, y, loss, alpha, F * float(a @ a))


# ------------------------------------------------------------------ rows

def _fit(make, X, y):
    """Fit; ``(model or None, diverged, error message)``."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        try:
            model = make().fit(X, y)
        except FloatingPointError as exc:  # the divergence guard
            return getattr(exc, "estimator", None), True, str(exc)
    warned = [str(w.message) for w in caught
              if issubclass(w.category, ConvergenceWarning)]
    return model, bool(warned), "; ".join(warned)


def _fdskl_norm2(model):
    return model.n_components_ * sum(float((s.coef ** 2).sum())
                                     for s in model.coef_stores_ if s is not None)


def _fdskl_rows(quick):
    tables = [("FDSKLClassifier", loss, _breast_cancer(quick))
              for loss in ("logistic", "smooth_hinge", "squared")]
    tables.append(("FDSKLRegressor", "squared", _diabetes(quick)))
    for name, loss, (X0, y0) in tables:
        for setting, X, extra in settings(X0, quick):
            params = dict(partition=2, loss=loss, random_state=0)
            if extra.pop("paper_exact", False):
                params.update(batch_size=1, n_components_per_iter=1,
                              max_iter=(10 if quick else 20) * len(y0))
            params.update(extra)
            cls = FDSKLClassifier if name == "FDSKLClassifier" else FDSKLRegressor
            start = time.perf_counter()
            model, diverged, message = _fit(lambda: cls(**params), X, y0)
            seconds = time.perf_counter() - start
            row = dict(estimator=name, loss=loss, setting=setting,
                       diverged=diverged, seconds=seconds, note=NOTE)
            if model is None:
                yield dict(row, objective_ratio=float("nan"), nonfinite=False,
                           error=message)
                continue
            if name == "FDSKLClassifier":
                target = np.where(y0 == model.classes_[1], 1.0, -1.0)
                f = model.decision_function(X)
            else:
                target = (y0 - model._y_mean) / model._y_scale
                f = (model.predict(X) - model._y_mean) / model._y_scale
            nonfinite = not np.all(np.isfinite(f))
            L = get_loss(loss)
            value = float(L(target, f).mean()
                          + 0.5 * model.alpha * _fdskl_norm2(model))
            best = pointwise_optimum(X, target, loss, model.gamma_,
                                     model.n_components_, model.alpha)
            yield dict(row, objective_ratio=value / best, nonfinite=nonfinite,
                       objective=value, optimum=best, n_iter=model.n_iter_,
                       learning_rate=model.learning_rate_,
                       **({"warning": message} if message else {}))


def _avfkam_rows(quick):
    X0, y0 = _imbalanced_breast_cancer(quick)
    for loss in ("squared", "logistic"):
        for setting, X, extra in settings(X0, quick):
            params = dict(partition=2, loss=loss, random_state=0)
            if extra.pop("paper_exact", False):
                params.update(batch_size=1, features_per_step=1,
                              max_iter=5000 if quick else 20000)
            params.update(extra)
            start = time.perf_counter()
            model, diverged, message = _fit(lambda: AVFKAMRanker(**params), X, y0)
            seconds = time.perf_counter() - start
            row = dict(estimator="AVFKAMRanker", loss=loss, setting=setting,
                       diverged=diverged, seconds=seconds, note=NOTE)
            if model is None:
                yield dict(row, objective_ratio=float("nan"), nonfinite=False,
                           error=message)
                continue
            f = model.decision_function(X)
            nonfinite = not np.all(np.isfinite(f))
            D = model.n_random_features
            norm2 = D * sum(float((s.coef ** 2).sum())
                            for s in model.coefficient_stores_)
            value = pairwise_objective(f, y0, loss, model.alpha, norm2)
            best = pairwise_optimum(X, y0, loss, model.gamma_, D, model.alpha)
            yield dict(row, objective_ratio=value / best, nonfinite=nonfinite,
                       objective=value, optimum=best, n_iter=model.n_iter_,
                       learning_rate=model.learning_rate_, auc=model.score(X, y0),
                       **({"warning": message} if message else {}))


def cases(quick=False):
    """One row per estimator x loss x setting (see the module docstring)."""
    yield from _fdskl_rows(quick)
    yield from _avfkam_rows(quick)


if __name__ == "__main__":
    import sys

    for row in cases(quick="--quick" in sys.argv):
        print({k: (round(v, 4) if isinstance(v, float) else v)
               for k, v in row.items() if k != "note"}, flush=True)
    print("objective_ratio:", NOTE)
