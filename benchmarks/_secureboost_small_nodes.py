"""SecureBoost's small nodes: the ``subset_sum`` attack and ``min_passive_rows``.

Called by ``benchmarks/bench_secureboost.py --small-nodes`` (issue 25, item
3). Three tables, one run:

1. *Attack*: ``skfed.privacy.audit`` (plaintext mode: the sums are the same
   integers under Paillier) of ``SecureBoostClassifier`` on breast-cancer
   rows (``n_rows``, standardised), three parties, ``trees`` trees, at
   ``max_depth`` 3 (the default) and 6, for ``min_passive_rows`` 0 (the
   paper), 32, 64 (the default) and 128: ``subset_sum``'s fraction of each
   passive party's rows whose threshold indicator is recovered (mean over
   trees, worst tree; the worse of the two passive parties), the sums it
   inverted (and how many wrongly), the contract violations
   (``MinPassiveRows`` at the default) and the training accuracy.
2. *Reach*: with the defence off at depth 6, per size of the row sets the
   attack searches (nodes, and nodes minus the held nodes inside them), how
   many of the distinct candidate sums that split a set the search inverts
   uniquely and correctly, and how many of the sets' rows it fixes,
   searching sets of up to ``reach`` rows: whether a size threshold is
   about the attacker's compute or about uniqueness.
3. *Accuracy cost*: the acceptance table's data sets (5-fold CV, 20 rounds,
   depth 3, plaintext mode, the estimators' defaults otherwise; two
   parties, as in ``--accuracy``), at ``min_passive_rows`` 0, 32, 64 and
   128, and at depth 6 for breast cancer.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import os
import re
import time
import warnings

import numpy as np
from sklearn.datasets import (
    load_breast_cancer,
    load_diabetes,
    load_digits,
    make_friedman1,
)
from sklearn.model_selection import KFold, StratifiedKFold, cross_val_score
from sklearn.preprocessing import StandardScaler

from skfed.ensemble import SecureBoostClassifier, SecureBoostRegressor
from skfed.ensemble._attack_subset_sum import node_results, subset_sum
from skfed.privacy import audit

SETTINGS = (0, 32, 64, 128)


def _load():
    return f"load {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores"


def attack_table(n_rows=300, trees=5):
    X, y = load_breast_cancer(return_X_y=True)
    keep = np.sort(np.random.RandomState(0).choice(len(X), n_rows, replace=False))
    X, y = StandardScaler().fit_transform(X[keep]), y[keep]
    print(f"1. subset_sum: breast cancer, {n_rows} rows, 3 parties, {trees} trees, "
          f"plaintext mode, random_state=0 ({_load()})\n")
    print(f"{'depth':>5}  {'min_passive_rows':>16}  {'mean/tree':>9}  "
          f"{'worst tree':>10}  {'inverted':>8}  {'wrong':>5}  {'violations':>10}  "
          f"{'train acc':>9}  {'s':>5}")
    kept = None
    for depth in (3, 6):
        for m in SETTINGS:
            start = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                report = audit(SecureBoostClassifier(
                    n_estimators=trees, max_depth=depth, partition=3,
                    encryption=None, min_passive_rows=m, random_state=0),
                    X, y, attacks=["subset_sum"])
            rows = report.attacks
            mean = rows[rows.target.str.endswith("trees")].value.max()
            worst = rows[rows.target.str.endswith("worst tree")].value.max()
            found = [re.search(r"\((\d+) sums inverted, (\d+) wrong", t)
                     for t in rows.target]
            counts = [int(f.group(1)) for f in found]
            wrong = [int(f.group(2)) for f in found]
            print(f"{depth:5d}  {m:16d}  {mean:9.3f}  {worst:10.3f}  "
                  f"{sum(counts) // 2:8d}  {sum(wrong) // 2:5d}  "
                  f"{len(report.violations):10d}  "
                  f"{report.estimator.score(X, y):9.3f}  "
                  f"{time.perf_counter() - start:5.1f}", flush=True)
            if depth == 6 and m == 0:
                kept = report
    return kept, X, y


def reach_table(report, X, y, reach=32):
    print(f"\n2. reach: depth 6, min_passive_rows=0, nodes of up to {reach} rows "
          f"({_load()})\n")
    fitted = report.estimator
    buckets = {}
    start = time.perf_counter()
    for passive in ("party1", "party2"):
        for _, rows, hit, splitting, solved, wrong in node_results(
                fitted, X, y, passive, max_rows=reach):
            if rows is None:
                continue
            size = rows.size
            low = 1 if size < 8 else 8 * (size // 8)
            b = buckets.setdefault(low, [0, 0, 0, 0, 0, 0])
            b[0] += 1
            b[1] += splitting
            b[2] += solved - wrong
            b[3] += wrong
            b[4] += hit.size
            b[5] += size
    print(f"{'set rows':>9}  {'sets':>5}  {'rows':>5}  {'rows fixed':>10}  "
          f"{'splitting sums':>14}  {'inverted right':>14}  {'wrong':>5}")
    for low in sorted(buckets):
        nodes, splitting, right, wrong, fixed, _ = buckets[low]
        label = f"{low}-{low + 7}" if low >= 8 else "1-7"
        print(f"{label:>9}  {nodes:5d}  {buckets[low][5]:5d}  {fixed:10d}  "
              f"{splitting:14d}  {right:14d}  {wrong:5d}")
    rows = subset_sum(fitted, report.messages, X, y, max_rows=reach)
    print(f"({time.perf_counter() - start:.0f} s) fraction of rows, searching "
          f"up to {reach} rows: "
          + ", ".join(f"{r['victim']} {r['target'].split(', ')[-1]} {r['value']:.3f}"
                      for r in rows))


def accuracy_table(rounds=20):
    cases = [
        ("breast cancer", load_breast_cancer(return_X_y=True), True, 3),
        ("breast cancer", load_breast_cancer(return_X_y=True), True, 6),
        ("digits (10 cl.)", load_digits(return_X_y=True), True, 3),
        ("diabetes (R2)", load_diabetes(return_X_y=True), False, 3),
        ("friedman1 (R2)", make_friedman1(2000, noise=1.0, random_state=0), False, 3),
    ]
    print(f"\n3. accuracy cost: 5-fold CV, {rounds} rounds, plaintext mode, two "
          f"parties, defaults otherwise ({_load()})\n")
    print(f"{'data':16s}  {'depth':>5}  "
          + "  ".join(f"{'m=' + str(m):>7}  {'diff':>6}" for m in SETTINGS))
    for name, (X, y), classification, depth in cases:
        cv = (StratifiedKFold if classification else KFold)(5, shuffle=True,
                                                            random_state=0)
        model = SecureBoostClassifier if classification else SecureBoostRegressor
        scores = [cross_val_score(model(n_estimators=rounds, max_depth=depth,
                                        encryption=None, min_passive_rows=m,
                                        random_state=0), X, y, cv=cv).mean()
                  for m in SETTINGS]
        print(f"{name:16s}  {depth:5d}  "
              + "  ".join(f"{s:7.4f}  {s - scores[0]:+6.3f}" for s in scores),
              flush=True)


def small_nodes():
    start, cpu = time.perf_counter(), time.process_time()
    report, X, y = attack_table()
    reach_table(report, X, y)
    accuracy_table()
    print(f"\n{time.perf_counter() - start:.0f} s wall, "
          f"{time.process_time() - cpu:.0f} s CPU, {_load()}")
