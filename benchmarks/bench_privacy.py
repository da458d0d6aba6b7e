"""What an honest-but-curious party learns: ``skfed.privacy.audit`` on every
estimator, 500 standardised rows and 3 parties.

For each estimator the script fits while recording every message, holds the
messages against the estimator's privacy contract (violations are counted;
the acceptance is zero) and runs every attack that applies, printing the
attack table: the attacker's score beside what chance gives. Where an attack
has many targets (one per victim column), the table shows the worst case for
the defender (the attacker's best score) and the mean.

The generic ``accumulation`` attack that ``audit`` runs for every estimator on
a vertical or hybrid split (every row-indexed vector a party received,
stacked) is summarised over all its attacker-victim pairs: one row per
metric, for the pair that beats chance by the most (``vectors`` and
``rank``: the party that received the most), ``targets`` counting the pairs
and ``mean`` their mean. ``--full`` shows every pair.

``--rst FILE`` also writes the tables as reStructuredText for the security
page of the user guide (``doc/user_guide/audit_tables.inc``), so the figures
in the docs are this script's output, not typed by hand.

Usage::

    python benchmarks/bench_privacy.py
    python benchmarks/bench_privacy.py --rst doc/user_guide/audit_tables.inc
    python benchmarks/bench_privacy.py --only FDSKLClassifier --full

Keys are 1024 bits (the policy warns below 2048; the attacks do not depend
on the key size).
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import argparse
import os
import time
import warnings

import numpy as np
from sklearn.datasets import load_breast_cancer, load_digits
from sklearn.preprocessing import StandardScaler

import skfed
from skfed.privacy import audit


def _breast_cancer(n=500):
    X, y = load_breast_cancer(return_X_y=True)
    rng = np.random.RandomState(0)
    keep = np.sort(rng.choice(len(X), n, replace=False))
    return StandardScaler().fit_transform(X[keep]), y[keep]


def _digits(n=500):
    X, y = load_digits(return_X_y=True)
    return StandardScaler().fit_transform(X[:n]), None


def cases():
    """``(name, estimator, X, y, fit_params)`` for every audited protocol."""
    from skfed.cluster import FederatedKernelKMeans
    from skfed.ensemble import SecureBoostClassifier
    from skfed.kernel_methods import AVFKAMRanker, FDSKLClassifier
    from skfed.linear_model import HyFDCAClassifier
    from skfed.partition import HybridPartition, VerticalPartition

    X, y = _breast_cancer()
    Xd, _ = _digits()
    three = VerticalPartition(3)
    yield "FDSKLClassifier", FDSKLClassifier(three, random_state=0), X, y, {}
    yield "AVFKAMRanker", AVFKAMRanker(three, random_state=0), X, y, {}
    # party_keys="auto" with a seed derives the keys from it (the rows of
    # column_reconstruction_known_seed above); OS keys are the other setting.
    yield ("FDSKLClassifier (party_keys='os')",
           FDSKLClassifier(three, random_state=0, party_keys="os"), X, y, {})
    yield ("AVFKAMRanker (party_keys='os')",
           AVFKAMRanker(three, random_state=0, party_keys="os"), X, y, {})
    yield ("SecureBoostClassifier",
           SecureBoostClassifier(n_estimators=3, partition=three, key_size=1024,
                                 random_state=0), X, y, {})
    yield ("SecureBoostClassifier (min_passive_rows=0, the paper)",
           SecureBoostClassifier(n_estimators=3, partition=three, key_size=1024,
                                 min_passive_rows=0, random_state=0), X, y, {})
    yield ("FederatedKernelKMeans",
           FederatedKernelKMeans(n_clusters=10, partition=3, random_state=0),
           Xd, None, {})
    yield ("HyFDCAClassifier (3 row groups)",
           HyFDCAClassifier(HybridPartition(3, 1), key_size=1024, random_state=0),
           X, y, {})
    yield ("HyFDCAClassifier (3 x 3 grid)",
           HyFDCAClassifier(HybridPartition(3, 3), key_size=1024, random_state=0),
           X, y, {})


def _accumulation_rows(table):
    """One row per metric of the accumulation attack: the pair that beats
    chance by the most."""
    rows = []
    for metric, group in table.groupby("metric", sort=False):
        margin = (group["value"] - group["chance"]).fillna(-np.inf)
        best = group.loc[margin.idxmax()]
        rows.append({"attack": "accumulation", "attacker": best["attacker"],
                     "victim": best["victim"], "targets": len(group),
                     "metric": metric, "best": best["value"],
                     "mean": group["value"].mean(), "chance": best["chance"]})
    return rows


def summarise(table, full=False):
    """Worst case (the attacker's best score) and mean per attack and metric;
    the accumulation attack summarised over its pairs."""
    if full or table.empty:
        return table
    better_low = table["metric"].isin(["relative_error", "error", "rmse"])
    accumulation = table["attack"] == "accumulation"
    rows = []
    for (attack, attacker, victim, metric), group in table[~accumulation].groupby(
            ["attack", "attacker", "victim", "metric"], sort=False):
        low = bool(better_low[group.index].all())
        best = group["value"].min() if low else group["value"].max()
        rows.append({"attack": attack, "attacker": attacker, "victim": victim,
                     "targets": len(group), "metric": metric,
                     "best": best, "mean": group["value"].mean(),
                     "chance": group["chance"].mean()})
    if accumulation.any():
        rows += _accumulation_rows(table[accumulation])
    import pandas as pd

    return pd.DataFrame(rows)


def to_rst(title, frame, violations, seconds, n_messages):
    lines = [title, "-" * len(title), "",
             f"{n_messages} messages, {violations} contract violation(s), "
             f"audit {seconds:.1f} s.", ""]
    if frame.empty:
        return "\n".join(lines + ["No attack applies.", ""])
    header = list(frame.columns)
    cells = [[f"{v:.3f}" if isinstance(v, float) else str(v) for v in row]
             for row in frame.itertuples(index=False)]
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(header)]
    rule = "  ".join("=" * w for w in widths)
    lines += [rule, "  ".join(h.ljust(w) for h, w in zip(header, widths)), rule]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths)) for row in cells]
    return "\n".join(lines + [rule, ""])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rst", help="also write the tables to this file")
    parser.add_argument("--only", nargs="*", help="estimators to audit")
    parser.add_argument("--full", action="store_true",
                        help="one row per target instead of the summary")
    args = parser.parse_args(argv)
    import pandas as pd

    pd.set_option("display.width", 200)
    pd.set_option("display.max_columns", 20)
    sections = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        for name, estimator, X, y, fit_params in cases():
            if args.only and not any(name.startswith(o) for o in args.only):
                continue
            start = time.perf_counter()
            report = audit(estimator, X, y, **fit_params)
            seconds = time.perf_counter() - start
            frame = summarise(report.attacks, args.full)
            print(f"\n== {name}: {len(report.messages)} messages, "
                  f"{len(report.violations)} violation(s), {seconds:.1f} s")
            for violation in report.violations[:5]:
                print("  ", violation)
            print(frame.to_string(index=False) if len(frame) else "(no attack)")
            sections.append(to_rst(name, frame, len(report.violations), seconds,
                                   len(report.messages)))
    print(f"\nskfed {skfed.__version__}, load average {os.getloadavg()[0]:.1f}")
    if args.rst:
        with open(args.rst, "w") as fh:
            fh.write(".. Generated by benchmarks/bench_privacy.py --rst; "
                     "do not edit by hand.\n\n" + "\n".join(sections))


if __name__ == "__main__":
    main()
