"""What HyFDCA's objective reports give the server: ``report_inversion``.

The server holds ``w_t`` every round and receives loss sums over rows; the
attack fits ``L_t = sum_i l(y_i [x_i, 1]^T w_t)`` over the rounds (see
:mod:`skfed.linear_model._attacks`). Three settings, each a
plaintext fit of standardised ``make_classification`` rows (``tol=None``):

- ``per-group``: every row group's plaintext report (the protocol before
  issue 25, restored by the planted leak of the privacy tests);
- ``totals``: the protocol as shipped, every row group taking part: the
  server has only the secure sums over all row groups;
- ``alone``: cyclic participation with one row group per round, so each
  report is one row group's (a one-term sum, declared in the contract):
  how many rows a group needs before the inversion fails.

Per row group: the median relative row error (lower is a better attack)
and the label accuracy, beside chance (the group's mean row; its majority
label). Prints the CPU seconds of the fits and the attack, and the load.

Usage::

    python benchmarks/bench_hyfdca_reports.py
    python benchmarks/bench_hyfdca_reports.py --quick
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import argparse
import os
import sys
import time
import warnings

import pytest
from sklearn.datasets import make_classification
from sklearn.preprocessing import StandardScaler

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from _common import text_table  # noqa: E402
from skfed.federation import record_messages  # noqa: E402
from skfed.linear_model import HyFDCAClassifier  # noqa: E402
from skfed.linear_model._attacks import report_inversion  # noqa: E402
from skfed.partition import HybridPartition  # noqa: E402
from tests.linear_model._plants import restore_plain_reports  # noqa: E402


def run(setting, rows_per_group, n_features, rounds, n_groups=3):
    X, y = make_classification(rows_per_group * n_groups, n_features,
                               n_informative=min(n_features, 3),
                               n_redundant=0, random_state=0)
    X = StandardScaler().fit_transform(X)
    params = dict(encryption=None, tol=None, random_state=0)
    if setting == "alone":
        # one row group per round: ``rounds`` reports per row group
        params.update(participation=1.0 / n_groups, schedule="cyclic",
                      max_iter=rounds * n_groups)
    else:
        params.update(max_iter=rounds)
    with pytest.MonkeyPatch.context() as patch:
        if setting == "per-group":
            restore_plain_reports(patch)
        with record_messages() as rec:
            clf = HyFDCAClassifier(HybridPartition(n_groups, 2), **params)
            clf.fit(X, y)
    rows = report_inversion(clf, rec.messages, X, y)
    error = [r for r in rows if r["metric"] == "median_relative_error"]
    label = [r for r in rows if r["metric"] == "label_accuracy"]
    return error, label


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="only the 5-row groups")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    settings = [("per-group", 5, 4, 60), ("totals", 5, 4, 60),
                ("per-group", 5, 12, 60), ("totals", 5, 12, 60),
                ("alone", 5, 4, 60)]
    if not args.quick:
        settings += [("alone", 10, 4, 60), ("alone", 20, 4, 60),
                     ("alone", 40, 4, 60), ("per-group", 5, 4, 200),
                     ("totals", 5, 4, 200)]
    table = []
    start, wall = time.process_time(), time.perf_counter()
    for setting, n_rows, n_features, rounds in settings:
        error, label = run(setting, n_rows, n_features, rounds)
        values = [r["value"] for r in error]
        table.append((
            setting, n_rows, n_features, rounds,
            " / ".join(f"{v:.2f}" for v in values), f"{min(values):.2f}",
            " / ".join(f"{r['chance']:.2f}" for r in error),
            " / ".join(f"{r['value']:.1f}" for r in label),
            " / ".join(f"{r['chance']:.1f}" for r in label)))
        print(table[-1], flush=True)
    print()
    print(text_table(("reports", "rows/group", "features", "rounds",
                      "median row error", "best", "chance (mean row)",
                      "label accuracy", "chance (majority)"), table))
    print(f"\nCPU {time.process_time() - start:.1f} s, wall "
          f"{time.perf_counter() - wall:.1f} s, load "
          f"{open('/proc/loadavg').read().split()[0]}")


if __name__ == "__main__":
    main()
