"""Federated preprocessing beside scikit-learn on the pooled table and naive.

Everything printed is measured in one run of this script:

1. Per transformer, on N rows split over P row holders (horizontal): the
   federated fit (wall and CPU seconds, messages, bytes, largest difference
   from scikit-learn's transform on the pooled table), scikit-learn's fit
   on the pooled table, and a naive federation in which every holder ships
   its raw rows to a server that fits scikit-learn there (the bytes it
   would send: 8 per value, nothing else counted). Ratios: ours / pooled
   (time) and ours / naive (bytes).
2. The naive *secure* alternative for StandardScaler: one pass of float64
   sums ``sum x`` and ``sum x^2`` per holder, added and turned into the
   variance as ``E[x^2] - E[x]^2``; its relative error against
   scikit-learn's on a column far from the origin, beside ours.
3. The KBinsDiscretizer quantile bound, round by round: with
   ``histogram_rounds=r``, the largest stated bound (``bin_edges_bound_``)
   and the largest measured distance from scikit-learn's edges, both as a
   fraction of the column's range, and the messages sent.

Run::

    python benchmarks/bench_preprocessing.py            # 20,000 x 8, 3 holders
    python benchmarks/bench_preprocessing.py --quick    # 2,000 x 4
    python benchmarks/bench_preprocessing.py --rows 100000 --holders 5

The machine may be shared: the load average is printed before and after.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import argparse
import math
import os
import time
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn import impute as sk_impute
from sklearn import preprocessing as skp

import skfed.preprocessing as fp
from skfed.federation import record_messages
from skfed.partition import HorizontalPartition

from _common import text_table


def make_data(n_rows, n_cols, seed=0):
    """Lognormal and normal columns of different scales, one far from the
    origin, 5% missing in a copy, and five categories per coded column."""
    rng = np.random.RandomState(seed)
    X = rng.randn(n_rows, n_cols) * np.logspace(0, 3, n_cols)
    X[:, 0] = 1e6 + rng.randn(n_rows)  # far from the origin
    X[:, 1] = np.exp(rng.randn(n_rows))
    missing = X.copy()
    missing[rng.rand(n_rows, n_cols) < 0.05] = np.nan
    codes = rng.randint(0, 5, (n_rows, min(n_cols, 4))).astype(float)
    return X, missing, codes


def _dense(a):
    return a.toarray() if sp.issparse(a) else np.asarray(a, dtype=float)


def _timed(fn):
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - wall, time.process_time() - cpu


def compare(rows_out, name, ours, theirs, X, owner):
    with record_messages() as rec:
        _, wall, cpu = _timed(lambda: ours.fit(X, sample_party=owner))
    _, sk_wall, _ = _timed(lambda: theirs.fit(X))
    err = np.nanmax(np.abs(_dense(ours.transform(X))
                           - _dense(theirs.transform(X))))
    sent = sum(m.n_bytes for m in rec.messages)
    naive = 8 * X.size
    rows_out.append([name, f"{wall:.3f}", f"{cpu:.3f}", len(rec.messages),
                     f"{sent:,}", f"{err:.1e}", f"{sk_wall * 1e3:.2f} ms",
                     f"{naive:,}", f"{wall / sk_wall:,.0f}x",
                     f"{sent / naive:.2g}x"])


def one_pass_variance(X, owner):
    """The naive secure sum: float64 sums of x and x^2 per holder."""
    n = s = q = 0.0
    for m in np.unique(owner):
        block = X[owner == m]
        n += len(block)
        s = s + block.sum(axis=0)
        q = q + (block ** 2).sum(axis=0)
    mean = s / n
    return q / n - mean ** 2


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--cols", type=int, default=8)
    parser.add_argument("--holders", type=int, default=3)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.rows, args.cols = 2_000, 4
    warnings.simplefilter("ignore", UserWarning)
    print(f"load before: {os.getloadavg()}")
    X, missing, codes = make_data(args.rows, args.cols)
    owner = np.arange(args.rows) % args.holders
    part = HorizontalPartition(args.holders)
    print(f"\n{args.rows:,} rows x {args.cols} columns, {args.holders} row "
          "holders (horizontal)\n")
    rows = []
    cases = [
        ("StandardScaler", fp.StandardScaler(partition=part),
         skp.StandardScaler(), X),
        ("MinMaxScaler", fp.MinMaxScaler(partition=part),
         skp.MinMaxScaler(), X),
        ("MaxAbsScaler", fp.MaxAbsScaler(partition=part),
         skp.MaxAbsScaler(), X),
        ("SimpleImputer(mean)", fp.SimpleImputer(partition=part),
         sk_impute.SimpleImputer(), missing),
        ("SimpleImputer(most_frequent)",
         fp.SimpleImputer(partition=part, strategy="most_frequent"),
         sk_impute.SimpleImputer(strategy="most_frequent"), codes),
        ("OneHotEncoder", fp.OneHotEncoder(partition=part),
         skp.OneHotEncoder(), codes),
        ("KBinsDiscretizer(quantile)",
         fp.KBinsDiscretizer(n_bins=10, encode="ordinal", partition=part),
         skp.KBinsDiscretizer(n_bins=10, encode="ordinal"), X),
    ]
    for name, ours, theirs, data in cases:
        compare(rows, name, ours, theirs, data, owner)
    print(text_table(["transformer", "fit s", "CPU s", "messages", "bytes",
                      "max |diff|", "sklearn pooled", "naive bytes",
                      "time / pooled", "bytes / naive"], rows))

    sk_fit = skp.StandardScaler().fit(X)
    ref = sk_fit.var_
    ours_fit = fp.StandardScaler(partition=part).fit(X, sample_party=owner)
    ours = ours_fit.var_
    naive = one_pass_variance(X, owner)
    # the correctly rounded mean: differences from scikit-learn's transform
    # above are scikit-learn's own summation error, far from the origin
    exact_mean = np.array([math.fsum(X[:, j]) / len(X)
                           for j in range(X.shape[1])])
    print("\nStandardScaler: variance, relative error against scikit-learn "
          "(column 0: mean 1e6, sd 1), and the mean against math.fsum's")
    print(text_table(["method", "var, column 0", "var, worst other",
                      "max |mean - fsum mean|"], [
        ["ours: exact two-pass secure sums",
         f"{abs(ours[0] - ref[0]) / ref[0]:.1e}",
         f"{np.max(np.abs(ours[1:] - ref[1:]) / ref[1:]):.1e}",
         f"{np.max(np.abs(ours_fit.mean_ - exact_mean)):.1e}"],
        ["scikit-learn on the pooled table", "0", "0",
         f"{np.max(np.abs(sk_fit.mean_ - exact_mean)):.1e}"],
        ["naive: one-pass float64 sums",
         f"{abs(naive[0] - ref[0]) / ref[0]:.1e}",
         f"{np.max(np.abs(naive[1:] - ref[1:]) / ref[1:]):.1e}", ""],
    ]))

    theirs = skp.KBinsDiscretizer(n_bins=10, encode="ordinal",
                                  quantile_method="linear").fit(X)
    print("\nKBinsDiscretizer(quantile) edges by histogram rounds "
          "(16 sub-ranges per round), as a fraction of the column range")
    rows = []
    for rounds in (2, 3, 4, 6, 8, None):
        est = fp.KBinsDiscretizer(n_bins=10, encode="ordinal",
                                  quantile_method="linear", partition=part,
                                  histogram_bins=16, histogram_rounds=rounds)
        with record_messages() as rec:
            est.fit(X, sample_party=owner)
        stated = measured = 0.0
        within, dropped = True, 0
        for j in range(X.shape[1]):
            span = np.ptp(theirs.bin_edges_[j])
            if len(est.bin_edges_[j]) != len(theirs.bin_edges_[j]):
                # two edges in one sub-range: scikit-learn's rule drops one
                dropped += 1
                continue
            err = np.abs(est.bin_edges_[j] - theirs.bin_edges_[j])
            bound = est.bin_edges_bound_[j]
            # the bound is on the exact order statistics; numpy's
            # interpolation between them adds rounding of a few ulps
            within &= bool(np.all(err <= bound + 4 * np.spacing(
                np.abs(theirs.bin_edges_[j]))))
            stated = max(stated, bound.max() / span)
            measured = max(measured, err.max() / span)
        rows.append([rounds or f"None ({est.n_histogram_rounds_})",
                     f"{stated:.1e}", f"{measured:.1e}",
                     "yes" if within else "NO", dropped,
                     len(rec.messages)])
    print(text_table(["rounds", "stated bound", "measured error",
                      "every edge within", "columns with a dropped edge",
                      "messages"], rows))
    print(f"\nload after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
