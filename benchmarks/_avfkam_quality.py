"""AVFKAMRanker with its defaults against ``SVC(class_weight="balanced")``
on held-out imbalanced tables (issue 19, item 6).

For each table and each of ``n_splits`` stratified 75/25 splits (the
scaler fitted on the training rows only), both models are fitted with
their defaults on the same standardised training rows and scored by ROC
AUC on the held-out rows; the table gives the means over the splits and the
mean fit time. ``gap`` is ours minus SVC's (negative: ours is behind), and
``worst`` the lowest gap of a single split.

Tables:

- ``make_classification`` with 10,000 rows and 5% positives, and with 5,000
  rows and 10% positives (20 columns, 6 informative, the default 1% label
  noise);
- breast cancer with the malignant (positive) class cut to 10% of the rows:
  all 357 benign rows and 40 malignant ones, 397 rows. The data set has only
  569 rows, so it is used at its natural size (it cannot reach 5,000 rows
  without inventing rows);
- digits one-vs-rest (1,797 rows, also its natural size, about 10%
  positives): "8 against the rest" (the hardest digit for SVC), and in the
  full run also the mean over all ten digits.

AVFKAM runs on two parties, the first active (the labels' holder), with the
columns split in halves; with one active party the asynchronous loop is
deterministic for a given ``random_state``. Its time is the whole ``fit``
(gamma, the masked preprocessing of the random features, training and the
threshold); SVC's is its ``fit``. The machine may be shared with other jobs,
so times are under that load (the script prints the load average).

Run::

    python benchmarks/_avfkam_quality.py            # 5 splits, ~2 min at load 3
    python benchmarks/_avfkam_quality.py --quick    # 1 split, ~10 s at load 3

``bench_avfkam.py`` prints the same table through :func:`quality_rows`.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import argparse
import os
import time

import numpy as np
from sklearn.datasets import load_breast_cancer, load_digits, make_classification
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from skfed.kernel_methods import AVFKAMRanker

#: stratified splits of the full run (the AUC of one split of the 5%-positive
#: table moves by about 0.01 with the random features drawn)
N_SPLITS = 5

HEADER = ("dataset", "n", "pos %", "ours AUC", "ours s", "SVC-bal AUC",
          "SVC s", "gap")


def quality_tables(quick=False):
    """``(name, X, y)`` of the imbalanced tables; ``y`` is 1 for positives.

    In the full run the digits' one-vs-rest tables of all ten digits follow
    under the names ``"digits <d>-vs-rest"``; :func:`quality_rows` averages
    them into one row.
    """
    X, y = make_classification(n_samples=10_000, n_features=20,
                               n_informative=6, weights=[0.95],
                               random_state=0)
    yield "make_classification 5% pos", X, y
    X, y = make_classification(n_samples=5_000, n_features=20,
                               n_informative=6, weights=[0.90],
                               random_state=1)
    yield "make_classification 10% pos", X, y
    X, y = load_breast_cancer(return_X_y=True)
    y = (y == 0).astype(int)  # malignant is the positive (minority) class
    pos, neg = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    keep = np.r_[neg, np.random.RandomState(0).choice(
        pos, int(round(len(neg) / 9)), replace=False)]
    yield "breast cancer 10% pos", X[keep], y[keep]
    X, y = load_digits(return_X_y=True)
    for digit in [8] if quick else range(10):
        yield f"digits {digit}-vs-rest", X, (y == digit).astype(int)


def _split(X, y, seed):
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.25, stratify=y,
                                          random_state=seed)
    scaler = StandardScaler().fit(Xtr)
    return scaler.transform(Xtr), scaler.transform(Xte), ytr, yte


def _timed_auc(model, Xtr, ytr, Xte, yte):
    start = time.perf_counter()
    model.fit(Xtr, ytr)
    seconds = time.perf_counter() - start
    return roc_auc_score(yte, model.decision_function(Xte)), seconds


def split_results(quick=False, n_splits=None):
    """Per table and split: ``(name, n, positives %, ours AUC, ours s, SVC
    AUC, SVC s)``."""
    n_splits = n_splits or (1 if quick else N_SPLITS)
    out = []
    for name, X, y in quality_tables(quick):
        for seed in range(n_splits):
            Xtr, Xte, ytr, yte = _split(X, y, seed)
            ours = _timed_auc(AVFKAMRanker(2, random_state=seed),
                              Xtr, ytr, Xte, yte)
            svc = _timed_auc(SVC(class_weight="balanced"), Xtr, ytr, Xte, yte)
            out.append((name, len(y), 100 * y.mean(), *ours, *svc))
    return out


def _aggregate(results):
    """Means per table (the ten digits' tables also into one row), and the
    worst gap of a single split."""
    groups = {}
    digits = {r[0] for r in results if r[0].startswith("digits ")}
    for r in results:
        if r[0] in digits and len(digits) > 1:
            if r[0] == "digits 8-vs-rest":
                groups.setdefault(r[0], []).append(r)
            groups.setdefault("digits one-vs-rest (mean of 10)", []).append(r)
        else:
            groups.setdefault(r[0], []).append(r)
    rows, worst = [], []
    for name, group in groups.items():
        a = np.array([g[1:] for g in group], dtype=float)
        n, pos, ours, t_ours, svc, t_svc = a.mean(axis=0)
        rows.append((name, int(round(n)), round(pos, 1), round(ours, 4),
                     round(t_ours, 2), round(svc, 4), round(t_svc, 2),
                     round(ours - svc, 4)))
        worst.append(round(float(np.min(a[:, 2] - a[:, 4])), 4))
    return rows, worst


def quality_rows(quick=False):
    """Rows ``(dataset, n, positives %, ours AUC, ours seconds, SVC-balanced
    AUC, SVC seconds, gap)``: means over the splits (1 with ``quick``, else
    ``N_SPLITS``), ``gap`` = ours - SVC."""
    return _aggregate(split_results(quick))[0]


def print_table(rows, header=HEADER):
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    fmt = "  ".join(f"{{:<{w}}}" if i == 0 else f"{{:>{w}}}"
                    for i, w in enumerate(widths))
    print(fmt.format(*header))
    for row in rows:
        print(fmt.format(*row))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="one split and digit 8 only")
    args = parser.parse_args(argv)
    n_splits = 1 if args.quick else N_SPLITS
    print(f"AVFKAMRanker defaults (2 parties, 1 active) vs "
          f"SVC(class_weight='balanced'): held-out ROC AUC, mean over "
          f"{n_splits} stratified 75/25 split(s); load average "
          f"{os.getloadavg()[0]:.1f}")
    rows, worst = _aggregate(split_results(args.quick, n_splits))
    print_table([r + (w,) for r, w in zip(rows, worst)], HEADER + ("worst",))


if __name__ == "__main__":
    main()
