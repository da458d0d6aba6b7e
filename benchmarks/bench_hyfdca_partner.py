"""HyFDCA: what a client learns of the other clients' rows (issue 37).

The attacks ``partner_block`` and ``model_differences``
(:mod:`skfed.linear_model._attacks`, run by :func:`skfed.privacy.audit`)
on the configurations of issue 37: 300 rows, standardised, plaintext mode
(the attacks read the same values under Paillier or OU: the client
decrypts them), ``alpha=1e-2``, defaults otherwise.

- Hybrid split, 2 row groups x 2 column groups (the acceptance): per table,
  solver and curvature, the rounds, the relative primal gap of the model to
  the centralised optimum (liblinear or long SDCA, whichever is lower), and
  the attack's means over the four (attacker, partner) pairs: the Gram
  error, r2 after the best rotation (norm route with ``"row_norm"``, the
  whitened prior otherwise), r2 with ``d`` known rows.
- Vertical split (one row group, 2 column groups): the Gram error and the
  rounds after which it is exact, with the default curvature.
- Horizontal split (2 and 3 row groups): the share of a client's weight
  differences that are another client's row in direction, and the share of
  that client's rows read, at the defaults and with one coordinate per
  round.

Tables: breast cancer (300 rows drawn with ``RandomState(0)``, 30 columns)
and ``make_classification(300, 2 d, n_informative=d, n_redundant=0)`` with
``d`` = 4, 6, 12 (columns close to uncorrelated: the whitened prior is
close to the truth there).

Run::

    python benchmarks/bench_hyfdca_partner.py [--quick]

``--quick``: breast cancer and d = 6 only, accelerated solver, no vertical
and horizontal paper rows.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import argparse
import os
import time
import warnings

import numpy as np
from sklearn.datasets import load_breast_cancer, make_classification
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import StandardScaler

from _convergence_hyfdca import central_optimum, primal_objective
from skfed.federation import record_messages
from skfed.linear_model import HyFDCAClassifier
from skfed.linear_model._attacks import model_differences, partner_block
from skfed.partition import HybridPartition

LAM = 1e-2


def table(name, n=300):
    if name == "breast cancer":
        X, y = load_breast_cancer(return_X_y=True)
        keep = np.sort(np.random.RandomState(0).choice(len(X), n,
                                                       replace=False))
        X, y = X[keep], y[keep]
    else:
        d = int(name.split("=")[1])
        X, y = make_classification(n, 2 * d, n_informative=d,
                                   n_redundant=0, random_state=0)
    return StandardScaler().fit_transform(X), y


def recorded(est, X, y):
    start, cpu = time.perf_counter(), time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        with record_messages() as rec:
            est.fit(X, y)
    return rec.messages, time.perf_counter() - start, (
        time.process_time() - cpu)


def gap(est, X, y, optimum):
    p = primal_objective(X, y, est.coef_.ravel(), float(est.intercept_[0]),
                         LAM, "hinge")
    return (p - optimum) / optimum


def mean(rows, metric, field="value"):
    values = [r[field] for r in rows if r["metric"] == metric]
    return float(np.nanmean(values)) if values else float("nan")


def hybrid(names, solvers):
    print("\n== Hybrid 2 x 2, 300 rows: partner_block (mean over the four "
          "attacker/partner pairs)")
    header = (f"{'table':<14} {'solver':<11} {'curvature':<9} {'rounds':>6} "
              f"{'gap':>8} {'gram err':>8} {'r2 rot':>6} {'known r2':>8} "
              f"{'chance':>6} {'wall s':>6} {'CPU s':>6}")
    print(header)
    print("-" * len(header))
    for name in names:
        X, y = table(name)
        optimum = central_optimum(X, y, LAM, "hinge")
        for solver in solvers:
            for curvature in ("row_norm", "auto"):
                est = HyFDCAClassifier(HybridPartition(2, 2), solver=solver,
                                       dual_curvature=curvature,
                                       encryption=None, random_state=0)
                messages, wall, cpu = recorded(est, X, y)
                rows = partner_block(est, messages, X, y)
                print(f"{name:<14} {solver:<11} {curvature:<9} "
                      f"{est.n_iter_:>6} {gap(est, X, y, optimum):>8.1e} "
                      f"{mean(rows, 'gram_error'):>8.1e} "
                      f"{mean(rows, 'r2_rotation'):>6.3f} "
                      f"{mean(rows, 'known_rows_r2'):>8.3f} "
                      f"{mean(rows, 'known_rows_r2', 'chance'):>6.3f} "
                      f"{wall:>6.1f} {cpu:>6.1f}", flush=True)


def vertical(names, solvers):
    print("\n== Vertical (one row group, 2 column groups), default "
          "curvature: the partner's Gram matrix")
    header = (f"{'table':<14} {'solver':<11} {'rounds':>6} {'gram err':>8} "
              f"{'exact after':>11} {'partner widths':>14}")
    print(header)
    print("-" * len(header))
    for name in names:
        X, y = table(name)
        for solver in solvers:
            est = HyFDCAClassifier(HybridPartition(1, 2), solver=solver,
                                   encryption=None, random_state=0)
            messages, _, _ = recorded(est, X, y)
            rows = partner_block(est, messages, X, y)
            exact = [r["value"] for r in rows
                     if r["metric"] == "rounds_to_exact_gram"]
            widths = [len(est.partition_.client_columns(1 - a)) + (a == 1)
                      for a in range(2)]
            print(f"{name:<14} {solver:<11} {est.n_iter_:>6} "
                  f"{mean(rows, 'gram_error'):>8.1e} "
                  f"{'/'.join(f'{e:g}' for e in exact):>11} "
                  f"{'/'.join(map(str, widths)):>14}", flush=True)


def horizontal(names, settings):
    print("\n== Horizontal: model_differences (per client: differences on "
          "another client's row, that client's rows read)")
    header = (f"{'table':<14} {'split':<6} {'solver':<11} {'H':<5} "
              f"{'rounds':>6} {'on a row':>8} {'rows read':>9} "
              f"{'best err':>8} {'chance':>8}")
    print(header)
    print("-" * len(header))
    for name in names:
        X, y = table(name)
        for groups, solver, H, max_iter in settings:
            est = HyFDCAClassifier(HybridPartition(groups, 1), solver=solver,
                                   local_iterations=H, max_iter=max_iter,
                                   encryption=None, random_state=0)
            messages, _, _ = recorded(est, X, y)
            rows = model_differences(est, messages, X, y)
            share = [r["value"] for r in rows
                     if r["metric"] == "share_on_a_row"]
            read = [r["value"] for r in rows if r["metric"] == "rows_read"]
            best = min(r["value"] for r in rows
                       if r["metric"] == "direction_error")
            on_row = f"{min(share):.2f}-{max(share):.2f}"
            rows_read = f"{min(read):.2f}-{max(read):.2f}"
            print(f"{name:<14} {f'{groups}x1':<6} {solver:<11} {str(H):<5} "
                  f"{est.n_iter_:>6} {on_row:>8} {rows_read:>9} "
                  f"{best:>8.1e} "
                  f"{mean(rows, 'direction_error', 'chance'):>8.2f}",
                  flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    print(__doc__.split("\n\n")[0])
    print(f"load before: {os.getloadavg()[0]:.2f}")
    start, cpu = time.perf_counter(), time.process_time()
    if args.quick:
        names, solvers = ["breast cancer", "d=6"], ["accelerated"]
    else:
        names = ["breast cancer", "d=4", "d=6", "d=12"]
        solvers = ["accelerated", "paper"]
    hybrid(names, solvers)
    if not args.quick:
        vertical(["breast cancer", "d=6"], solvers)
    settings = [(2, "accelerated", "auto", 1000),
                (2, "accelerated", 1, 80), (3, "accelerated", 1, 80)]
    if not args.quick:
        settings += [(2, "paper", "auto", 1000), (3, "paper", "auto", 1000)]
    horizontal(["breast cancer", "d=6"], settings)
    print(f"\nload after: {os.getloadavg()[0]:.2f}; "
          f"{time.perf_counter() - start:.0f} s wall, "
          f"{time.process_time() - cpu:.0f} s CPU")


if __name__ == "__main__":
    main()
