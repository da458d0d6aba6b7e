"""FDSKL benchmarks: accuracy against centralized kernel machines, and cost.

Three tables, each measured side by side in one run:

1. ``acceptance``: test accuracy (R^2 for regression) of FDSKL with 2, 3 and
   4 parties against ``SVC(kernel="rbf")`` (``KernelRidge`` and ``SVR`` for
   regression) with the same ``gamma``, after standard scaling.
2. ``cost``: time per step of the federated loop against the step index,
   with the locally saved features (default) and without them
   (``cache_size=0``, the paper's plain loop, whose step cost grows with
   ``t``).
3. ``scaling``: fit time and accuracy against ``SVC`` on growing synthetic
   data, with the ratios; shows where FDSKL overtakes SVC in time.

Run ``python benchmarks/bench_fdskl.py`` (a few minutes), ``--quick`` for
a smoke run, ``--full`` to add 20,000 and 50,000 rows to the scaling table,
``--seeds 3`` to average the acceptance scores over three seeds, or name the
tables to run, e.g. ``--tables acceptance``.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import argparse
import time

import numpy as np
from sklearn.datasets import (
    load_breast_cancer,
    load_digits,
    make_circles,
    make_classification,
    make_friedman1,
    make_moons,
)
from sklearn.kernel_ridge import KernelRidge
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC, SVR

from skfed.kernel_methods import FDSKLClassifier, FDSKLRegressor


def _table(header, rows):
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    lines = ["  ".join(str(x).rjust(w) for x, w in zip(row, widths))
             for row in (header, *rows)]
    lines.insert(1, "-" * len(lines[0]))
    return "\n".join(lines)


def _split_scaled(X, y, stratify=True, random_state=0):
    Xtr, Xte, ytr, yte = train_test_split(
        X, y, test_size=0.25, random_state=random_state,
        stratify=y if stratify else None)
    scaler = StandardScaler().fit(Xtr)
    return scaler.transform(Xtr), scaler.transform(Xte), ytr, yte


def _rotate4(X):
    Q, _ = np.linalg.qr(np.random.RandomState(0).normal(size=(4, 4)))
    return np.hstack([X, np.zeros((len(X), 2))]) @ Q


def _datasets(quick):
    X, y = load_breast_cancer(return_X_y=True)
    yield "breast_cancer", "clf", X, y
    X, y = load_digits(return_X_y=True)
    yield "digits (>=5)", "clf", X, (y >= 5).astype(int)
    if not quick:
        yield "digits (10)", "clf", X, y
    # Two-column sets are turned by a random rotation into four columns
    # (RBF distances unchanged) so that they can be split over 4 parties.
    X, y = make_moons(800, noise=0.25, random_state=0)
    yield "moons (rotated 4-D)", "clf", _rotate4(X), y
    X, y = make_circles(800, noise=0.1, factor=0.5, random_state=0)
    yield "circles (rotated 4-D)", "clf", _rotate4(X), y
    X, y = make_friedman1(1000, noise=1.0, random_state=0)
    yield "friedman1", "reg", X, y


def acceptance(quick, seeds, only=None):
    rows = []
    for name, task, X, y in _datasets(quick):
        if only and not any(key in name for key in only):
            continue
        Xtr, Xte, ytr, yte = _split_scaled(X, y, stratify=task == "clf")
        gamma = 1.0 / (Xtr.shape[1] * Xtr.var())
        t0 = time.perf_counter()
        if task == "clf":
            base = SVC(kernel="rbf", gamma=gamma).fit(Xtr, ytr).score(Xte, yte)
            base_name = "SVC"
        else:
            krr = KernelRidge(kernel="rbf", gamma=gamma, alpha=0.1)
            krr.fit(Xtr, ytr - ytr.mean())
            base = krr.score(Xte, yte - ytr.mean())
            svr = SVR(gamma=gamma, C=float(np.std(ytr))).fit(Xtr, ytr).score(Xte, yte)
            base_name, base = ("KRR", base) if base >= svr else ("SVR", svr)
        base_time = time.perf_counter() - t0
        for q in ([2, 3] if quick else [2, 3, 4]):
            scores, times = [], []
            for seed in seeds:
                Est = FDSKLClassifier if task == "clf" else FDSKLRegressor
                t0 = time.perf_counter()
                est = Est(partition=q, random_state=seed).fit(Xtr, ytr)
                times.append(time.perf_counter() - t0)
                scores.append(est.score(Xte, yte))
            rows.append((name, q, base_name, f"{base:.3f}", f"{np.mean(scores):.3f}",
                         f"{np.min(scores):.3f}", f"{np.mean(scores) - base:+.3f}",
                         f"{base_time:.2f}", f"{np.mean(times):.2f}"))
            print(" ", rows[-1], flush=True)
    print(f"\nAcceptance: test score, FDSKL defaults (mean and min over seeds "
          f"{list(seeds)}) against the centralized baseline with the same gamma")
    print(_table(("data", "parties", "baseline", "base score", "FDSKL mean",
                  "FDSKL min", "mean - base", "base s", "FDSKL s"), rows))


def cost_curve(quick):
    X, y = make_classification(2000, 20, n_informative=10, random_state=0)
    X = StandardScaler().fit_transform(X)
    max_iter = 120 if quick else 300
    marks = [t for t in (25, 50, 100, 200, 300) if t <= max_iter]
    rows = []
    results = {}
    for label, cache in [("saved features", 200.0), ("plain loop", 0.0)]:
        stamps = {}
        est = FDSKLClassifier(partition=3, cache_size=cache, random_state=0)
        for t in marks:  # a fit of t steps runs the same first t steps
            est.set_params(max_iter=t)
            t0 = time.perf_counter()
            est.fit(X, y)
            stamps[t] = (time.perf_counter() - t0,
                         est.communication_.total_scalars)
        results[label] = stamps
    for t in marks:
        a, b = results["saved features"][t], results["plain loop"][t]
        rows.append((t, f"{a[0]:.2f}", f"{b[0]:.2f}", f"{b[0] / a[0]:.2f}",
                     f"{a[1] / 1e6:.2f}", f"{b[1] / 1e6:.2f}", f"{b[1] / a[1]:.2f}"))
    print("\nCost: fit time and scalars sent after t steps (2000 rows, 20 "
          "features, 3 parties, batch 256, 32 features per step)")
    print(_table(("steps t", "saved s", "plain s", "plain/saved", "saved Mscalars",
                  "plain Mscalars", "plain/saved"), rows))


def scaling(quick, full):
    sizes = [1000, 2000, 5000] if quick else [1000, 2000, 5000, 10000]
    if full:
        sizes += [20000, 50000]
    rows = []
    for n in sizes:
        # 10% flipped labels: many support vectors, as in real data.
        X, y = make_classification(int(n / 0.75), 20, n_informative=10,
                                   flip_y=0.1, class_sep=0.8, random_state=0)
        Xtr, Xte, ytr, yte = _split_scaled(X, y)
        t0 = time.perf_counter()
        svc = SVC(kernel="rbf", gamma="scale").fit(Xtr, ytr)
        svc_time = time.perf_counter() - t0
        svc_score = svc.score(Xte, yte)
        t0 = time.perf_counter()
        est = FDSKLClassifier(partition=2, random_state=0).fit(Xtr, ytr)
        fd_time = time.perf_counter() - t0
        fd_score = est.score(Xte, yte)
        rows.append((n, f"{svc_time:.2f}", f"{fd_time:.2f}",
                     f"{fd_time / svc_time:.2f}", f"{svc_score:.3f}",
                     f"{fd_score:.3f}", f"{fd_score - svc_score:+.3f}"))
        print(" ", rows[-1], flush=True)
    print("\nScaling: training rows n (20 features, 10% label noise, 2 parties), "
          "fit time and test accuracy, FDSKL defaults against SVC(gamma='scale')")
    print(_table(("n", "SVC s", "FDSKL s", "FDSKL/SVC", "SVC acc", "FDSKL acc",
                  "diff"), rows))
    faster = [r[0] for r in rows if float(r[3]) < 1]
    print("FDSKL is faster than SVC from n =", faster[0] if faster else "(not reached)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--full", action="store_true")
    parser.add_argument("--tables", nargs="*",
                        default=["acceptance", "cost", "scaling"])
    parser.add_argument("--seeds", type=int, default=None)
    parser.add_argument("--data", nargs="*", default=None,
                        help="acceptance data sets to run (name substrings)")
    args = parser.parse_args()
    seeds = range(args.seeds or 1)
    print("Timings are wall-clock on a shared machine; compare the ratios.")
    if "acceptance" in args.tables:
        acceptance(args.quick, seeds, args.data)
    if "cost" in args.tables:
        cost_curve(args.quick)
    if "scaling" in args.tables:
        scaling(args.quick, args.full)


if __name__ == "__main__":
    main()
