"""Seconds per SecureBoost boosting round on credit-shaped data.

Synthetic tables shaped like the paper's credit sets (30,000 x 23 like
"Credit 1" / default of credit card clients, 150,000 x 10 like "Credit 2" /
Give Me Some Credit; 22% positives, 5% missing values), two parties (half
the columns each, party 0 holds the labels), depth 3, 32 bins.

For each table and key size the script fits one round (``n_estimators=1``,
the round time is read from ``verbose``, so key generation and binning are
not counted) and prints it beside

- where the time goes (``verbose=2``): encrypting the gradients (active),
  building the encrypted histograms (passive), decrypting (active);
- the plaintext mode (same protocol, no encryption) and sklearn's
  centralized HistGradientBoostingClassifier (one iteration), and
- the *naive* cost of encrypting the round's gradients the textbook way:
  python-paillier's ``encrypt`` of ``g`` and of ``h`` for every row (time
  per row measured on a sample in the same run, times the number of rows).
  A naive round costs at least this much before any histogram is built.

``--accuracy`` prints the acceptance table instead: 5-fold cross-validated
scores of the plaintext model beside sklearn's HistGradientBoosting with the
same depth, learning rate, rounds and bins (and, in the middle column,
sklearn's leaf constraints ``min_samples_leaf=20, reg_lambda=0``). It is
an accuracy comparison, not a losslessness test: HistGradientBoosting bins,
regularises and splits differently, so the scores differ by a few
thousandths. ``benchmarks/papers/secureboost.py`` is the losslessness test
(pre-binned data, matched leaf settings, predictions equal to 1e-7).

``--audit`` prints what an honest-but-curious party learns
(:func:`skfed.privacy.audit`: contract violations and the ``deshuffle``,
``leaf_purity`` and ``subset_sum`` attacks) on 500 standardised
breast-cancer rows over three parties, 5 rounds, 1024-bit keys, for the
default settings, the paper's protocol (``min_passive_rows=0``), the
paper's ``subsample=0.8``, RL-SecureBoost (``active_only_rounds=1``) and
the regressor (target: the first column, which then leaves the table), with
the ``communication_`` totals of each fit.

Usage::

    python benchmarks/bench_secureboost.py             # 1024 and 2048 bits
    python benchmarks/bench_secureboost.py --quick     # a tenth of the rows
    python benchmarks/bench_secureboost.py --accuracy  # federated vs centralized
    python benchmarks/bench_secureboost.py --audit     # who learns what
    python benchmarks/bench_secureboost.py --variants --quick --keys 2048
                                      # weights, GOSS, colsample vs default
    python benchmarks/bench_secureboost.py --multiclass --keys 2048
                                      # digits: per-class vs multi-output trees
    python benchmarks/bench_secureboost.py --a9a --keys 2048   # wide, depth 6:
                                      # a9a-shaped, 2 trees, beside commit 51c1df5
    python benchmarks/bench_secureboost.py --narrow --keys 2048  # 30,000 x 23:
                                      # rounds / encryption bound, beside 51c1df5
    python benchmarks/bench_secureboost.py --a9a --keys 2048 --schemes paillier ou \
        --baseline none               # the a9a tree with Paillier and with OU
    python benchmarks/bench_secureboost.py --schemes-table --keys 2048
                                      # 5,000 x 20, 3 trees: plaintext, Paillier,
                                      # OU: CPU s and identical predictions
    python benchmarks/bench_secureboost.py --wait --keys 2048
                                      # default trees on 1k and 10k rows: the
                                      # times the getting-started page quotes
    python benchmarks/bench_secureboost.py --small-nodes  # subset_sum attack,
                                      # min_passive_rows: reach, accuracy cost,
                                      # then the --sides tables
    python benchmarks/bench_secureboost.py --sides  # side_fixing attack,
                                      # min_passive_side: sides, accuracy cost
                                      # beside HGB, passive CPU at depth 6

The machine may be shared: the load average is printed with the results.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import argparse
import contextlib
import io
import os
import re
import time

import numpy as np
import phe
from sklearn.datasets import (
    load_breast_cancer,
    load_diabetes,
    load_digits,
    make_classification,
    make_friedman1,
)
from sklearn.ensemble import (
    HistGradientBoostingClassifier,
    HistGradientBoostingRegressor,
)
from sklearn.model_selection import KFold, StratifiedKFold, cross_val_score
from threadpoolctl import threadpool_limits

from skfed.ensemble import SecureBoostClassifier, SecureBoostRegressor

from _secureboost_narrow import narrow
from _secureboost_sides import sides
from _secureboost_small_nodes import small_nodes
from _secureboost_wide import BASELINE, cpu_seconds, fit_splits, wide


def credit_like(n_rows, n_features, seed=0):
    X, y = make_classification(n_rows, n_features, n_informative=min(8, n_features),
                               weights=[0.78], flip_y=0.05, random_state=seed)
    rng = np.random.default_rng(seed)
    X[rng.random(X.shape) < 0.05] = np.nan
    return X, y


def round_seconds(X, y, encryption, key_size, n_jobs, fit_params=None, **extra):
    """Round 1 from the ``verbose=2`` lines: seconds, kB sent, seconds per step."""
    extra = {"max_depth": 3, **extra}
    clf = SecureBoostClassifier(n_estimators=1, max_bins=32,
                                encryption=encryption, key_size=key_size, n_jobs=n_jobs,
                                early_stopping=False, random_state=0, verbose=2,
                                **extra)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        clf.fit(X, y, **(fit_params or {}))
    text = out.getvalue()
    match = re.search(r", ([0-9.]+) s, ([0-9.]+) (GB|MB|kB|B) sent", text)
    steps = dict((k, float(v)) for k, v in re.findall(r"(\w+) ([0-9.]+)",
                                                       text.split("seconds:")[1]))
    unit = {"GB": 1e6, "MB": 1e3, "kB": 1.0, "B": 1e-3}[match.group(3)]
    return float(match.group(1)), float(match.group(2)) * unit, steps


def phe_seconds_per_row(key_size, n_sample=20):
    """python-paillier: encrypt one row's g and h (two floats), seconds."""
    public_key, _ = phe.generate_paillier_keypair(n_length=key_size)
    rng = np.random.default_rng(0)
    values = rng.uniform(-1, 1, size=2 * n_sample).tolist()
    start = time.perf_counter()
    for v in values:
        public_key.encrypt(v)
    return (time.perf_counter() - start) / n_sample


def accuracy(rounds=20):
    """Cross-validated scores: HistGradientBoosting vs SecureBoost (plaintext)."""
    same = dict(learning_rate=0.3, max_depth=3, max_bins=32, early_stopping=False)
    like_hgb = dict(min_samples_leaf=20, reg_lambda=0.0)
    cases = [
        ("breast cancer", load_breast_cancer(return_X_y=True), True),
        ("digits (10 cl.)", load_digits(return_X_y=True), True),
        ("credit-like", credit_like(3000, 23), True),
        ("diabetes (R2)", load_diabetes(return_X_y=True), False),
        ("friedman1 (R2)", make_friedman1(2000, noise=1.0, random_state=0), False),
    ]
    print(f"5-fold CV, {rounds} rounds, depth 3, learning rate 0.3, 32 bins; "
          "SecureBoost in plaintext mode (identical to Paillier).\n"
          "An accuracy comparison, not a losslessness test (binning and leaf "
          "rules differ);\nfor losslessness run benchmarks/papers/secureboost.py.\n")
    header = (f"{'data':16s}  {'HistGB':>7}  {'SB like HistGB':>14}  {'diff':>6}  "
              f"{'SB defaults':>11}  {'diff':>6}")
    print(header)
    print("-" * len(header))
    for name, (X, y), classification in cases:
        if classification:
            cv = StratifiedKFold(5, shuffle=True, random_state=0)
            hgb = HistGradientBoostingClassifier(max_iter=rounds, **same)
            ours = SecureBoostClassifier
        else:
            cv = KFold(5, shuffle=True, random_state=0)
            hgb = HistGradientBoostingRegressor(max_iter=rounds, **same)
            ours = SecureBoostRegressor
        with threadpool_limits(1):
            base = cross_val_score(hgb, X, y, cv=cv).mean()
        scores = [cross_val_score(ours(n_estimators=rounds, encryption=None,
                                       random_state=0, **same, **extra), X, y,
                                  cv=cv).mean()
                  for extra in (like_hgb, {})]
        print(f"{name:16s}  {base:7.4f}  {scores[0]:14.4f}  {scores[0] - base:+6.3f}  "
              f"{scores[1]:11.4f}  {scores[1] - base:+6.3f}", flush=True)


def variants(n_rows, n_features, key_size, n_jobs):
    """One round with weights, GOSS and column subsampling beside the default.

    Measured back to back in one run (same table, key size and load), so the
    ratios compare like with like.
    """
    X, y = credit_like(n_rows, n_features)
    w = np.random.default_rng(0).uniform(0.5, 2.0, size=y.size)
    cases = [
        ("default", {}, {}),
        ("sample_weight", {}, {"sample_weight": w}),
        ("class_weight=balanced", {"class_weight": "balanced"}, {}),
        ("GOSS 0.2 + 0.1", {"goss_top_rate": 0.2, "goss_other_rate": 0.1}, {}),
        ("colsample_bytree=0.5", {"colsample_bytree": 0.5}, {}),
    ]
    print(f"SecureBoost, one round of {n_rows} x {n_features}, {key_size}-bit keys, "
          f"2 parties, depth 3, 32 bins, n_jobs={n_jobs}")
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}\n")
    header = (f"{'variant':22s}  {'round s':>8}  {'encrypt':>7}  {'hist':>6}  "
              f"{'decrypt':>7}  {'kB/round':>9}  {'x default':>9}")
    print(header)
    print("-" * len(header))
    reference = None
    for name, extra, fit_params in cases:
        seconds, kb, steps = round_seconds(X, y, "paillier", key_size, n_jobs,
                                           fit_params, **extra)
        reference = reference or seconds
        print(f"{name:22s}  {seconds:8.2f}  {steps['encrypt']:7.2f}  "
              f"{steps['histograms']:6.2f}  {steps['decrypt']:7.2f}  {kb:9.0f}  "
              f"{seconds / reference:9.2f}", flush=True)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


def multiclass(key_size, n_jobs, rounds=20):
    """Digits (K=10): one tree per class vs one multi-output tree per round.

    One encrypted round of each (seconds from ``verbose=2``) and the test
    accuracy of ``rounds`` plaintext rounds (identical to Paillier), on one
    stratified 70/30 split, measured in the same run.
    """
    from sklearn.model_selection import train_test_split

    X, y = load_digits(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=0.3, random_state=0, stratify=y)
    cases = [("one tree per class, depth 3", dict(max_depth=3)),
             ("multi-output, depth 3", dict(max_depth=3, multi_mode="multi_output")),
             ("multi-output, depth 5", dict(max_depth=5, multi_mode="multi_output"))]
    print(f"SecureBoost on digits ({len(X_train)} training rows x 64, 10 classes), "
          f"{key_size}-bit keys, 2 parties, 32 bins, n_jobs={n_jobs}")
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}\n")
    header = (f"{'trees':28s}  {'round s':>8}  {'encrypt':>7}  {'hist':>6}  "
              f"{'decrypt':>7}  {'kB/round':>9}  {'x today':>7}  "
              f"{'accuracy':>8}  {'diff':>6}")
    print(header)
    print("-" * len(header))
    reference = accuracy_reference = None
    for name, extra in cases:
        seconds, kb, steps = round_seconds(X_train, y_train, "paillier", key_size,
                                           n_jobs, **extra)
        model = SecureBoostClassifier(n_estimators=rounds, encryption=None,
                                      random_state=0, **extra).fit(X_train, y_train)
        score = model.score(X_test, y_test)
        reference = reference or seconds
        accuracy_reference = accuracy_reference or score
        print(f"{name:28s}  {seconds:8.2f}  {steps['encrypt']:7.2f}  "
              f"{steps['histograms']:6.2f}  {steps['decrypt']:7.2f}  {kb:9.0f}  "
              f"{seconds / reference:7.2f}  {score:8.4f}  "
              f"{score - accuracy_reference:+6.3f}", flush=True)
    print(f"accuracy: {rounds} rounds in plaintext mode, 30% held out")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


def audit_table(rounds=5, key_size=1024):
    """``skfed.privacy.audit`` of SecureBoost settings on one standard table."""
    import warnings

    import pandas as pd
    from sklearn.preprocessing import StandardScaler

    from skfed.privacy import audit

    X, y = load_breast_cancer(return_X_y=True)
    keep = np.sort(np.random.RandomState(0).choice(len(X), 500, replace=False))
    X, y = StandardScaler().fit_transform(X[keep]), y[keep]
    base = dict(n_estimators=rounds, partition=3, key_size=key_size, random_state=0)
    cases = [
        ("default", SecureBoostClassifier(**base), X, y),
        ("min_passive_rows=0 (paper)",
         SecureBoostClassifier(**base, min_passive_rows=0), X, y),
        ("subsample=0.8", SecureBoostClassifier(**base, subsample=0.8), X, y),
        ("active_only_rounds=1", SecureBoostClassifier(**base, active_only_rounds=1),
         X, y),
        ("regressor", SecureBoostRegressor(**base), X[:, 1:], X[:, 0]),
    ]
    pd.set_option("display.width", 200)
    pd.set_option("display.max_colwidth", 70)
    print(f"skfed.privacy.audit: breast cancer, 500 standardised rows, 3 parties, "
          f"{rounds} rounds, {key_size}-bit keys, random_state=0")
    for name, estimator, X_case, y_case in cases:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            report = audit(estimator, X_case, y_case)
        c = report.estimator.communication_
        print(f"\n== {name}: {len(report.violations)} contract violation(s); "
              f"{c.total_messages} messages, {c.total_bytes} bytes, "
              f"{c.total_ciphertexts} ciphertexts; {report.seconds:.1f} s")
        for violation in report.violations[:5]:
            print("  ", violation)
        print(report.attacks.drop(columns="attack").assign(
            attack=report.attacks.attack).to_string(index=False,
                                                    float_format="%.3f"))


def _fit_cpu(X, y, **params):
    """Fit a SecureBoostClassifier; ``(model, wall s, CPU s)``, key generation included.

    CPU seconds count every thread of this process and the forked workers it
    waited for (:func:`_secureboost_wide.cpu_seconds`), so they do not grow
    with the machine's load as wall seconds do.
    """
    clf = SecureBoostClassifier(**params)
    start, cpu = time.perf_counter(), cpu_seconds()
    clf.fit(X, y)
    return clf, time.perf_counter() - start, cpu_seconds() - cpu


def schemes_table(key_size, n_jobs, n_rows=5_000, n_features=20, trees=3):
    """Acceptance table of issue 28: plaintext, Paillier and OU, same run."""
    X, y = credit_like(n_rows, n_features)
    params = dict(n_estimators=trees, max_bins=32, max_depth=3, key_size=key_size,
                  n_jobs=n_jobs, early_stopping=False, random_state=0)
    _print_header(f"SecureBoost, {n_rows} x {n_features} (credit-like), {trees} trees, "
                  f"depth 3, {key_size}-bit keys, n_jobs={n_jobs}; key generation "
                  "included")
    header = (f"{'encryption':>10}  {'wall s':>7}  {'CPU s':>7}  {'CPU / paillier':>14}  "
              f"{'predictions':>22}")
    print(header)
    print("-" * len(header))
    results = {}
    for encryption in (None, "paillier", "ou"):
        clf, wall, cpu = _fit_cpu(X, y, encryption=encryption, **params)
        results[encryption] = (clf.predict_proba(X), wall, cpu)
    reference = results[None][0]
    for encryption, (proba, wall, cpu) in results.items():
        same = ("identical to None" if np.array_equal(proba, reference)
                else "DIFFERENT from None")
        print(f"{str(encryption):>10}  {wall:7.2f}  {cpu:7.2f}  "
              f"{cpu / results['paillier'][2]:14.3f}  {same:>22}", flush=True)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


def wait_table(key_size, n_jobs, sizes=(1_000, 10_000), n_features=20, trees=4):
    """SecureBoost with its defaults on 1k and 10k rows, each scheme.

    Fits ``trees`` trees (no early stopping) and prints, in CPU seconds, the
    setup (key generation, binning) with the first tree (which also builds
    the key tables), the mean of the later trees, and what the default
    ``n_estimators=100`` costs at that pace: the numbers the getting-started
    page quotes. CPU seconds do not grow with the machine's load; on an idle
    two-core machine, ``n_jobs=2`` gives wall seconds at most these.
    """
    _print_header(f"SecureBoostClassifier defaults except n_estimators={trees} and "
                  f"early_stopping=False, {key_size}-bit keys, n_jobs={n_jobs}, "
                  f"{n_features} credit-like columns, 2 parties")
    header = (f"{'rows':>7}  {'encryption':>10}  {'wall s':>7}  {'CPU s':>7}  "
              f"{'setup + tree 1':>14}  {'per later tree':>14}  {'100 trees':>9}")
    print(header)
    print("-" * len(header))
    for n_rows in sizes:
        X, y = credit_like(n_rows, n_features)
        for encryption in (None, "ou", "paillier"):
            clf = SecureBoostClassifier(encryption=encryption, key_size=key_size,
                                        n_jobs=n_jobs, random_state=0, verbose=2,
                                        n_estimators=trees, early_stopping=False)
            start, cpu = time.perf_counter(), cpu_seconds()
            splits, _ = fit_splits(clf, X, y)
            wall, cpu = time.perf_counter() - start, cpu_seconds() - cpu
            later = float(np.mean([s["cpu"] for s in splits[1:]]))
            first = cpu - later * (trees - 1)
            print(f"{n_rows:>7}  {str(encryption):>10}  {wall:7.1f}  {cpu:7.1f}  "
                  f"{first:14.2f}  {later:14.3f}  {first + 99 * later:9.0f}",
                  flush=True)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


def _print_header(title):
    print(title)
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())} "
          f"on {os.cpu_count()} cores\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a tenth of the rows")
    parser.add_argument("--accuracy", action="store_true",
                        help="print federated vs centralized scores and exit")
    parser.add_argument("--audit", action="store_true",
                        help="print the privacy audit of a few settings and exit")
    parser.add_argument("--variants", action="store_true",
                        help="weights, GOSS and colsample_bytree beside the default "
                             "(one round of the first table, first key) and exit")
    parser.add_argument("--multiclass", action="store_true",
                        help="digits: one tree per class vs multi-output trees, "
                             "first key size, and exit")
    parser.add_argument("--a9a", action="store_true",
                        help="seconds per depth-6 tree on an a9a-shaped table "
                             "(first key size; --quick: rows / 10) and exit")
    parser.add_argument("--narrow", action="store_true",
                        help="rounds of the first table over the encryption bound "
                             "(first key size; --trees rounds, at least 3) and exit")
    parser.add_argument("--small-nodes", action="store_true",
                        help="the subset_sum attack and min_passive_rows: attack, "
                             "reach and accuracy cost tables, and exit")
    parser.add_argument("--sides", action="store_true",
                        help="the side_fixing attack and min_passive_side: side, "
                             "accuracy cost and passive CPU tables, and exit")
    parser.add_argument("--repeats", type=int, default=2,
                        help="--sides: repeats of the 5-fold CV")
    parser.add_argument("--trees", type=int, default=2,
                        help="--a9a: trees to fit (the first also builds key tables)")
    parser.add_argument("--baseline", default=BASELINE,
                        help="--a9a: git revision measured beside this code "
                             "('none' to skip; default: before sparse histograms)")
    parser.add_argument("--baseline-trees", type=int, default=None,
                        help="--a9a: trees fitted with the baseline (default --trees)")
    parser.add_argument("--schemes", nargs="+", default=["paillier"],
                        help="--a9a: encryption schemes to fit, in order")
    parser.add_argument("--schemes-table", action="store_true",
                        help="5,000 x 20, 3 trees: None, paillier and ou side by "
                             "side (CPU s, predictions), first key size, and exit")
    parser.add_argument("--wait", action="store_true",
                        help="default SecureBoost on 1,000 and 10,000 rows with "
                             "each scheme (first key size), and exit")
    parser.add_argument("--n-jobs", type=int, default=2, help="crypto worker threads")
    parser.add_argument("--keys", type=int, nargs="+", default=[1024, 2048])
    parser.add_argument("--tables", nargs="+", default=["30000x23", "150000x10"],
                        help="table shapes, rows x columns")
    args = parser.parse_args()
    if args.accuracy:
        accuracy()
        return
    if args.audit:
        audit_table()
        return
    if args.small_nodes:
        small_nodes()
        sides(repeats=args.repeats)
        return
    if args.sides:
        sides(repeats=args.repeats)
        return
    if args.multiclass:
        multiclass(args.keys[0], args.n_jobs)
        return
    scale = 10 if args.quick else 1
    shapes = [(int(t.split("x")[0]) // scale, int(t.split("x")[1]))
              for t in args.tables]
    if args.a9a:
        wide(32_561 // scale, args.keys[0], args.n_jobs, trees=args.trees,
             baseline=None if args.baseline == "none" else args.baseline,
             baseline_trees=args.baseline_trees, schemes=tuple(args.schemes))
        return
    if args.schemes_table:
        schemes_table(args.keys[0], args.n_jobs)
        return
    if args.wait:
        wait_table(args.keys[0], args.n_jobs)
        return
    if args.narrow:
        narrow(shapes[0][0], args.keys[0], args.n_jobs, rounds=max(3, args.trees),
               baseline=None if args.baseline == "none" else args.baseline)
        return
    if args.variants:
        variants(*shapes[0], args.keys[0], args.n_jobs)
        return
    print(f"SecureBoost seconds per boosting round, 2 parties, depth 3, 32 bins, "
          f"n_jobs={args.n_jobs}{' (--quick: rows / 10)' if args.quick else ''}")
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())} "
          f"on {os.cpu_count()} cores\n")
    naive = {k: phe_seconds_per_row(k) for k in args.keys}
    header = (f"{'table':>13}  {'key':>9}  {'round s':>8}  {'encrypt':>7}  "
              f"{'hist':>6}  {'decrypt':>7}  {'kB/round':>9}  {'x plain':>7}  "
              f"{'x HistGB':>8}  {'naive enc s':>11}  {'naive/ours':>10}")
    print(header)
    print("-" * len(header))
    for n_rows, n_features in shapes:
        X, y = credit_like(n_rows, n_features)
        hgb = HistGradientBoostingClassifier(max_iter=1, max_depth=3, max_bins=32,
                                             early_stopping=False)
        with threadpool_limits(1):  # OpenMP spinning distorts times under load
            hgb.fit(X[:100], y[:100])  # warm-up
            start = time.perf_counter()
            hgb.fit(X, y)  # one iteration, binning included
            central = time.perf_counter() - start
        plain, plain_kb, _ = round_seconds(X, y, None, 2048, args.n_jobs)
        table = f"{n_rows:>7} x {n_features:<3}"
        print(f"{table}  {'HistGB':>9}  {central:8.2f}", flush=True)
        print(f"{table}  {'plaintext':>9}  {plain:8.2f}  {'':>7}  {'':>6}  {'':>7}  "
              f"{plain_kb:9.0f}  {1.0:7.1f}  {plain / central:8.1f}", flush=True)
        for key_size in args.keys:
            seconds, kb, steps = round_seconds(X, y, "paillier", key_size, args.n_jobs)
            naive_seconds = naive[key_size] * n_rows
            print(f"{table}  {key_size:>4} bits  {seconds:8.2f}  "
                  f"{steps['encrypt']:7.2f}  {steps['histograms']:6.2f}  "
                  f"{steps['decrypt']:7.2f}  {kb:9.0f}  {seconds / plain:7.0f}  "
                  f"{seconds / central:8.0f}  {naive_seconds:11.1f}  "
                  f"{naive_seconds / seconds:10.1f}", flush=True)
    print("\nencrypt: the active party's gradients (one packed ciphertext per row); "
          "hist: the passive party's\nencrypted histograms, packing and "
          "re-randomisation; "
          "decrypt: the active party's decryption.")
    print("naive: python-paillier encrypt of g and h per row = "
          + ", ".join(f"{naive[k] * 1e3:.1f} ms ({k} bits)" for k in args.keys)
          + ", times the rows (encryption only; a naive round also sums and decrypts)")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
