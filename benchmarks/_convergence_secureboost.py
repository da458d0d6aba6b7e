"""SecureBoost rows of ``bench_convergence.py``.

Boosting has no step size to diverge with, but a boosted model can still go
wrong silently (non-finite leaf weights from a degenerate hessian, a wrong
split on a near-constant column). The objective is the training loss (log
loss or squared error) of SecureBoost's plaintext mode, which the encrypted
mode reproduces exactly, over that of sklearn's HistGradientBoosting with the
same rounds, depth, learning rate, bins and L2 regularisation.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import time

import numpy as np
from sklearn.datasets import load_breast_cancer, load_diabetes, make_classification
from sklearn.ensemble import (
    HistGradientBoostingClassifier,
    HistGradientBoostingRegressor,
)
from sklearn.metrics import log_loss, mean_squared_error

from _common import hard_variants
from skfed.ensemble import SecureBoostClassifier, SecureBoostRegressor

NOTE = "training loss / HistGradientBoosting's (same rounds, depth, lr, bins)"


def _row(name, loss, setting, ours, reference, X, y, score):
    start = time.perf_counter()
    diverged = False
    try:
        ours.fit(X, y)
        mine = score(ours, X, y)
    except (ArithmeticError, ValueError, RuntimeError):
        diverged, mine = True, float("nan")
    seconds = time.perf_counter() - start
    theirs = score(reference.fit(X, y), X, y)
    return {"estimator": name, "loss": loss, "setting": setting,
            "objective_ratio": mine / theirs, "diverged": diverged,
            "nonfinite": not np.isfinite(mine), "seconds": seconds,
            "note": NOTE}


def cases(quick=False):
    common = dict(n_estimators=10 if quick else 30, max_depth=3,
                  learning_rate=0.3, max_bins=32, encryption=None,
                  early_stopping=False, random_state=0)
    reference = dict(max_iter=common["n_estimators"], max_depth=3,
                     learning_rate=0.3, max_bins=32, l2_regularization=1.0,
                     min_samples_leaf=1, early_stopping=False)
    X, y = load_breast_cancer(return_X_y=True)
    Xc, yc = make_classification(n_samples=500 if quick else 2000,
                                 n_classes=3, n_informative=6, random_state=0)
    Xr, yr = load_diabetes(return_X_y=True)

    def logloss(est, X, y):
        return log_loss(y, est.predict_proba(X))

    def mse(est, X, y):
        return mean_squared_error(y, est.predict(X))

    for setting, Xt in hard_variants(X, quick).items():
        yield _row("SecureBoostClassifier", "log_loss", setting,
                   SecureBoostClassifier(**common),
                   HistGradientBoostingClassifier(**reference), Xt, y, logloss)
    for setting, Xt in hard_variants(Xc, quick).items():
        yield _row("SecureBoostClassifier", "log_loss (3 classes)", setting,
                   SecureBoostClassifier(**common),
                   HistGradientBoostingClassifier(**reference), Xt, yc, logloss)
    for setting, Xt in hard_variants(Xr, quick).items():
        yield _row("SecureBoostRegressor", "squared_error", setting,
                   SecureBoostRegressor(**common),
                   HistGradientBoostingRegressor(**reference), Xt, yr, mse)
