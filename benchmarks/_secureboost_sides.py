"""SecureBoost's threshold sides: the ``side_fixing`` attack and ``min_passive_side``.

Called by ``benchmarks/bench_secureboost.py --sides`` (and ``--small-nodes``,
after the node tables; issue 37, item 3). Three tables:

1. *Sides*: ``skfed.privacy.audit`` (plaintext mode: the sums are the same
   integers under Paillier and OU) of ``SecureBoostClassifier`` with two
   parties, ``rounds`` rounds, depth 3, 300 rows of breast cancer (drawn
   with ``RandomState(0)``, standardised), of a 3-class table and of a
   binary one (``make_classification``, 12 columns, 6 informative,
   ``random_state=0``), for the paper's protocol (``min_passive_rows=0``),
   the node rule alone (64, ``min_passive_side=0``, the default before issue
   37) and side bounds ``m`` of 8, 16 (the default), 32 and 64:
   ``side_fixing``'s share of the passive party's rows with a side of some
   threshold fixed (mean over trees, worst tree), rows isolated in a side of
   at most 3 rows, sums inverted (right / wrong), contract violations
   (``MinPassiveRows`` replays the side rule), training accuracy.
2. *Accuracy cost*: repeated stratified 5-fold CV (``repeats`` x 5, the
   same folds for every setting), 20 rounds, depth 3, plaintext, defaults
   otherwise, on the full breast-cancer table (569 rows) and 600-row
   versions of the two synthetic tables: mean accuracy per setting, the
   paired difference to the node rule alone (mean +- standard error over
   the folds) and the ratio to sklearn's ``HistGradientBoostingClassifier``
   (same rounds, learning rate, depth and bins; no early stopping) on the
   same folds.
3. *Passive CPU*: thread CPU seconds the passive party spends building
   histograms (``passive_histograms``) and, of those, in the side rule
   (``SideLedger.walk``), at depth 3 and 6, ``min_passive_side`` 0 and 16,
   breast cancer (569 rows) and a 5,000 x 20 binary table, 5 rounds,
   plaintext mode (the side rule's largest share: encrypted histograms
   cost far more, the rule the same), and one round at depth 6 with
   1024-bit Paillier keys; with the largest number of check sets one node
   needed (the ledger withholds a node above 512).
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import os
import time
import warnings

import numpy as np
from sklearn.datasets import load_breast_cancer, make_classification
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.model_selection import RepeatedStratifiedKFold
from sklearn.preprocessing import StandardScaler

from skfed.ensemble import SecureBoostClassifier
from skfed.ensemble import _grower, _histogram
from skfed.ensemble._attacks import side_results
from skfed.privacy import audit

#: (label, min_passive_rows, min_passive_side)
SETTINGS = [("paper (rows 0)", 0, 0), ("node rule (64, side 0)", 64, 0),
            ("side m=8", 64, 8), ("side m=16 (default)", 64, 16),
            ("side m=32", 64, 32), ("side m=64", 64, 64)]
REFERENCE = 1  # paired differences against the node rule alone


def _load():
    return f"load {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores"


def data(name, n_rows):
    """The tables of the issue: breast cancer, 3 classes, binary synthetic."""
    if name == "breast cancer":
        X, y = load_breast_cancer(return_X_y=True)
        if n_rows < len(X):
            keep = np.sort(np.random.RandomState(0).choice(len(X), n_rows,
                                                           replace=False))
            X, y = X[keep], y[keep]
    else:
        X, y = make_classification(n_rows, 12, n_informative=6,
                                   n_classes=3 if name == "3 classes" else 2,
                                   random_state=0)
    return StandardScaler().fit_transform(X), y


def side_table(rounds=10, n_rows=300, names=("breast cancer", "3 classes", "binary")):
    print(f"1. side_fixing: {n_rows} rows, 2 parties, {rounds} rounds, depth 3, "
          f"plaintext mode, random_state=0 ({_load()})\n")
    print(f"{'data':14s}  {'setting':22s}  {'fixed mean':>10}  {'worst':>5}  "
          f"{'isolated':>8}  {'worst':>5}  {'chance':>7}  {'right':>5}  "
          f"{'wrong':>5}  {'violations':>10}  {'train acc':>9}  {'CPU s':>6}")
    for name in names:
        X, y = data(name, n_rows)
        for label, rows, side in SETTINGS:
            cpu = time.process_time()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                report = audit(SecureBoostClassifier(
                    n_estimators=rounds, max_depth=3, encryption=None,
                    min_passive_rows=rows, min_passive_side=side, random_state=0),
                    X, y, attacks=[])
            trees = list(side_results(report.estimator, X, y, "party1"))
            fixed = np.array([t[1].mean() for t in trees])
            isolated = np.array([t[2].mean() for t in trees])
            chance = np.mean([t[3].mean() for t in trees])
            right = sum(t[5] for t in trees)
            wrong = sum(t[6] for t in trees)
            print(f"{name:14s}  {label:22s}  {fixed.mean():10.3f}  "
                  f"{fixed.max():5.3f}  {isolated.mean():8.3f}  "
                  f"{isolated.max():5.3f}  {chance:7.1e}  {right:5d}  {wrong:5d}  "
                  f"{len(report.violations):10d}  "
                  f"{report.estimator.score(X, y):9.3f}  "
                  f"{time.process_time() - cpu:6.1f}", flush=True)


def accuracy_table(rounds=20, repeats=2, n_rows=600,
                   names=("breast cancer", "3 classes", "binary")):
    print(f"\n2. accuracy cost: {repeats} x 5-fold stratified CV, {rounds} rounds, "
          f"depth 3, 2 parties, plaintext mode, defaults otherwise; paired "
          f"difference to the node rule alone, mean +- SE over the folds; ratio "
          f"to HistGradientBoostingClassifier on the same folds ({_load()})\n")
    print(f"{'data (rows)':20s}  {'setting':22s}  {'accuracy':>8}  "
          f"{'vs node rule':>16}  {'/ HGB':>6}")
    for name in names:
        X, y = data(name, n_rows)
        cv = RepeatedStratifiedKFold(n_splits=5, n_repeats=repeats, random_state=0)
        scores = np.zeros((len(SETTINGS) + 1, 5 * repeats))
        for fold, (train, test) in enumerate(cv.split(X, y)):
            for k, (_, rows, side) in enumerate(SETTINGS):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", UserWarning)
                    model = SecureBoostClassifier(
                        n_estimators=rounds, max_depth=3, encryption=None,
                        min_passive_rows=rows, min_passive_side=side,
                        random_state=0).fit(X[train], y[train])
                scores[k, fold] = model.score(X[test], y[test])
            hgb = HistGradientBoostingClassifier(
                max_iter=rounds, learning_rate=0.3, max_depth=3, max_bins=32,
                early_stopping=False, random_state=0).fit(X[train], y[train])
            scores[-1, fold] = hgb.score(X[test], y[test])
        for k, (label, _, _) in enumerate(SETTINGS):
            diff = scores[k] - scores[REFERENCE]
            se = diff.std(ddof=1) / np.sqrt(diff.size)
            print(f"{name + f' ({len(y)})':20s}  {label:22s}  {scores[k].mean():8.4f}  "
                  f"{diff.mean():+7.4f} +- {se:6.4f}  "
                  f"{scores[k].mean() / scores[-1].mean():6.3f}", flush=True)
        print(f"{name + f' ({len(y)})':20s}  {'HistGradientBoosting':22s}  "
              f"{scores[-1].mean():8.4f}", flush=True)


def cpu_table(rounds=5):
    print(f"\n3. passive CPU: thread CPU s in passive_histograms and, of it, in "
          f"the side rule; {rounds} rounds (Paillier: 1), 2 parties ({_load()})\n")
    print(f"{'data':34s}  {'depth':>5}  {'side':>4}  {'histograms':>10}  "
          f"{'side rule':>9}  {'max sets':>8}  {'fit CPU s':>9}  {'wall s':>6}")
    binary = make_classification(5000, 20, n_informative=10, random_state=0)
    cases = [("breast cancer (569), plaintext", data("breast cancer", 569),
              dict(encryption=None, n_estimators=rounds)),
             ("binary 5000 x 20, plaintext", binary,
              dict(encryption=None, n_estimators=rounds)),
             ("binary 5000 x 20, Paillier 1024", binary,
              dict(key_size=1024, n_estimators=1))]
    original_histograms = _grower.passive_histograms
    original_walk = _histogram.SideLedger.walk
    original_sets = _histogram.SideLedger.check_sets
    clock = {}

    def histograms(*args, **kwargs):
        start = time.thread_time()
        try:
            return original_histograms(*args, **kwargs)
        finally:
            clock["histograms"] += time.thread_time() - start

    def walk(self, *args, **kwargs):
        start = time.thread_time()
        try:
            return original_walk(self, *args, **kwargs)
        finally:
            clock["side"] += time.thread_time() - start

    def check_sets(self, rows):
        sets = original_sets(self, rows)
        clock["sets"] = max(clock["sets"], 0 if sets is None else len(sets))
        return sets

    _grower.passive_histograms = histograms
    _histogram.SideLedger.walk = walk
    _histogram.SideLedger.check_sets = check_sets
    try:
        for name, (X, y), params in cases:
            for depth in (3, 6) if params["n_estimators"] > 1 else (6,):
                for side in (0, 16):
                    clock.update(histograms=0.0, side=0.0, sets=0)
                    cpu, wall = time.process_time(), time.perf_counter()
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore", UserWarning)
                        SecureBoostClassifier(
                            max_depth=depth, min_passive_side=side, random_state=0,
                            **params).fit(X, y)
                    print(f"{name:34s}  {depth:5d}  {side:4d}  "
                          f"{clock['histograms']:10.2f}  {clock['side']:9.2f}  "
                          f"{clock['sets']:8d}  {time.process_time() - cpu:9.1f}  "
                          f"{time.perf_counter() - wall:6.1f}", flush=True)
    finally:
        _grower.passive_histograms = original_histograms
        _histogram.SideLedger.walk = original_walk
        _histogram.SideLedger.check_sets = original_sets


def sides(rounds=10, repeats=2):
    start, cpu = time.perf_counter(), time.process_time()
    side_table(rounds)
    accuracy_table(repeats=repeats)
    cpu_table()
    print(f"\n{time.perf_counter() - start:.0f} s wall, "
          f"{time.process_time() - cpu:.0f} s CPU, {_load()}")
