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
3. *Residual* (not a shipped attack): inside the nodes whose sums are
   revealed, the difference of two candidate sums of one feature is the sum
   over the rows between their thresholds. For every pair of distinct
   candidate sums of a node, the active party looks the difference up among
   the sums of one row and of two rows of the node; a unique match that the
   owner's bins confirm tells it that this row (or pair) alone lies between
   two thresholds of one (unknown) feature. Fraction of a passive party's
   rows so isolated per tree (mean, worst tree; the worse party), on 300
   and 500 breast-cancer rows, depth 3 and 6, ``min_passive_rows`` 0 and
   64.
4. *Accuracy cost*: the acceptance table's data sets (5-fold CV, 20 rounds,
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
from skfed.ensemble._attacks import (
    _first_output,
    _key,
    _passive_bins,
    _true_left,
    node_results,
    subset_sum,
)
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


def _isolated(fitted, X, y, passive):
    """Per tree, the rows the difference lookup isolates (verified)."""
    names = fitted._privacy_party_names()
    bins, missing_bin = _passive_bins(fitted, X, y, names.index(passive))
    log = fitted._audit_log
    truth = log[passive]
    orders = {tuple(k): o for k, o, _ in truth["trees"]}
    fractions = []
    for tree in log[names[0]]["trees"]:
        if tree["key"] not in orders:
            continue
        qg, qh = _first_output(tree["qg"]), _first_output(tree["qh"])
        owner = dict(truth, order=orders[tree["key"]])
        isolated = np.zeros(bins.shape[0], dtype=bool)
        for rows, positions, sums in tree["nodes"]:
            if passive not in sums:
                continue
            G, H = (_first_output(v) for v in sums[passive][:2])
            slots = np.flatnonzero(sums[passive][2])  # the candidates sent
            pairs, first = np.unique(np.column_stack([G[slots], H[slots]]),
                                     axis=0, return_index=True)
            slots = slots[first]
            left = _true_left(owner, bins, missing_bin, slots, rows)
            g, h = qg[positions], qh[positions]
            first, second = np.triu_indices(g.size, 1)
            with np.errstate(over="ignore"):
                diff = _key(pairs[:, 0][:, None] - pairs[:, 0][None, :],
                            pairs[:, 1][:, None] - pairs[:, 1][None, :]).ravel()
            for keys, members in (
                    (_key(g, h), lambda t: [t]),
                    (_key(g[first] + g[second], h[first] + h[second]),
                     lambda t: [first[t], second[t]])):
                if keys.size == 0:
                    continue
                order = np.argsort(keys)
                ranked = keys[order]
                lo = np.searchsorted(ranked, diff, side="left")
                hi = np.searchsorted(ranked, diff, side="right")
                for flat in np.flatnonzero(hi - lo == 1):
                    a, b = divmod(int(flat), pairs.shape[0])
                    rows_in = np.zeros(rows.size, dtype=bool)
                    rows_in[members(order[lo[flat]])] = True
                    # Confirmed by the owner's bins: exactly these rows
                    # lie left of a and not of b.
                    if np.array_equal(left[a] & ~left[b], rows_in) and not (
                            left[b] & ~left[a]).any():
                        isolated[rows[rows_in]] = True
        fractions.append(isolated.mean())
    return fractions


def residual_table(trees=5):
    print(f"\n3. residual: rows alone (or in a pair) between two thresholds of a "
          f"passive feature, from differences of revealed sums ({_load()})\n")
    print(f"{'rows':>4}  {'depth':>5}  {'min_passive_rows':>16}  {'mean/tree':>9}  "
          f"{'worst tree':>10}")
    full_X, full_y = load_breast_cancer(return_X_y=True)
    for n_rows in (300, 500):
        keep = np.sort(np.random.RandomState(0).choice(len(full_X), n_rows,
                                                       replace=False))
        X, y = StandardScaler().fit_transform(full_X[keep]), full_y[keep]
        for depth in (3, 6):
            for m in (0, 64):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", UserWarning)
                    report = audit(SecureBoostClassifier(
                        n_estimators=trees, max_depth=depth, partition=3,
                        encryption=None, min_passive_rows=m, random_state=0),
                        X, y, attacks=[])
                per_party = [_isolated(report.estimator, X, y, p)
                             for p in ("party1", "party2")]
                mean = max(np.mean(f) for f in per_party)
                worst = max(np.max(f) for f in per_party)
                print(f"{n_rows:4d}  {depth:5d}  {m:16d}  {mean:9.3f}  {worst:10.3f}",
                      flush=True)


def accuracy_table(rounds=20):
    cases = [
        ("breast cancer", load_breast_cancer(return_X_y=True), True, 3),
        ("breast cancer", load_breast_cancer(return_X_y=True), True, 6),
        ("digits (10 cl.)", load_digits(return_X_y=True), True, 3),
        ("diabetes (R2)", load_diabetes(return_X_y=True), False, 3),
        ("friedman1 (R2)", make_friedman1(2000, noise=1.0, random_state=0), False, 3),
    ]
    print(f"\n4. accuracy cost: 5-fold CV, {rounds} rounds, plaintext mode, two "
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
    residual_table()
    accuracy_table()
    print(f"\n{time.perf_counter() - start:.0f} s wall, "
          f"{time.process_time() - cpu:.0f} s CPU, {_load()}")
