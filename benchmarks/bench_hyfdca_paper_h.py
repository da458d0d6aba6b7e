"""HyFDCA ``solver="paper"``: the default ``H`` (``local_iterations="auto"``).

The paper tunes ``H`` (coordinates a client updates per round) per data set
and gives no default. With the theorems' constant step ``gamma_t = 1`` all
``H`` coordinates move against the same ``w``, so one pass per round
overshoots on correlated rows. skfed's ``"auto"`` for the paper solver is
``ceil(sqrt(n_k))`` for a client with ``n_k`` rows (one pass only under
``gamma_t = 1/t``, Theorem 4.11). This script checks the default on
standardised tables, 2 x 2 grid, plaintext mode, hinge loss, ``alpha=1e-2``,
no intercept, 1,000 rounds (the paper's loop evaluates no objective and runs
every round): training accuracy beside ``LinearSVC`` on the same objective,
and the relative primal gap ``(P(w) - P*) / P*`` of binary fits against the
centralized optimum; "diverged" is the fit's ``DivergenceError``.

Each ``H`` runs with the default curvature (``dual_curvature="auto"``: twice
the public mean squared row norm over all rows, issue 37) and with each
row's exact squared norm (``"row_norm"``, the default before issue 37,
which gives a row group's clients their partners' norms).

Run::

    python benchmarks/bench_hyfdca_paper_h.py [--quick]

``--quick``: the default ``H`` only.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import argparse
import math
import os
import time
import warnings

import numpy as np
from sklearn.datasets import load_breast_cancer, load_wine, make_classification
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC

from _convergence_hyfdca import central_optimum, primal_objective
from skfed.exceptions import DivergenceError
from skfed.linear_model import HyFDCAClassifier

LAM = 1e-2


def tables():
    wine = load_wine(return_X_y=True)
    return {
        "breast cancer": load_breast_cancer(return_X_y=True),
        "make_classification 600 x 12": make_classification(600, 12, random_state=0),
        "make_classification 2000 x 20": make_classification(2000, 20, random_state=1),
        "wine (3 classes)": wine,
        "make_classification 600 x 12, 3 classes": make_classification(
            600, 12, n_informative=6, n_classes=3, random_state=0),
    }


def fit(X, y, local_iterations, dual_curvature="auto"):
    est = HyFDCAClassifier(solver="paper", encryption=None, alpha=LAM,
                           fit_intercept=False, max_iter=1000,
                           local_iterations=local_iterations, random_state=0,
                           dual_curvature=dual_curvature)
    start = time.process_time()
    try:
        est.fit(X, y)
    except DivergenceError:
        return None, time.process_time() - start
    return est, time.process_time() - start


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true",
                        help="the default H only")
    args = parser.parse_args()
    print(__doc__.split("\n\n")[0])
    print(f"load before: {os.getloadavg()[0]:.2f}")
    header = (f"{'table':<42} {'n_k':>5} {'LinearSVC':>9} "
              f"{'H':>12} {'curvature':>9} {'accuracy':>9} {'P_R':>9} "
              f"{'CPU s':>6}")
    print(header)
    print("-" * len(header))
    for name, (X, y) in tables().items():
        X = StandardScaler().fit_transform(X)
        n_k = len(X) // 2
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            svc = LinearSVC(loss="hinge", C=1.0 / (LAM * len(X)),
                            fit_intercept=False, max_iter=200_000).fit(X, y)
        binary = len(np.unique(y)) == 2
        p_star = central_optimum(X, y, LAM, "hinge", fit_intercept=False) \
            if binary else None
        default = math.ceil(math.sqrt(n_k))
        settings = ((f"auto ({default})", "auto"), ("13 (issue 30)", 13),
                    (f"pass ({n_k})", n_k))
        for label, H in settings[:1] if args.quick else settings:
            for curvature in ("auto", "row_norm"):
                est, cpu = fit(X, y, H, curvature)
                acc, gap = "diverged", "-"
                if est is not None:
                    acc = f"{est.score(X, y):.3f}"
                if est is not None and binary:
                    p = primal_objective(X, y, est.coef_.ravel(), 0.0, LAM,
                                         "hinge")
                    gap = f"{(p - p_star) / p_star:.1e}"
                print(f"{name:<42} {n_k:>5} {svc.score(X, y):>9.3f} "
                      f"{label:>12} {curvature:>9} {acc:>9} {gap:>9} "
                      f"{cpu:>6.1f}", flush=True)
    print(f"load after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
