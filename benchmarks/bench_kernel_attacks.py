"""The kernel attacks on FDSKL and AVFKAM without and with known rows.

The label holder that receives ``omega^T x + b`` estimates the kernel of the
other parties' columns, hence their distances (``distance_mds``: classical
MDS, the block up to a rigid motion). This script fits both estimators on
500 standardised rows of breast cancer split over 3 parties (10 columns
each, as ``bench_privacy.py``), records the messages and prints:

1. ``distance_mds`` at the receiver, per victim party: ``r2`` after the
   oracle rotation (an upper bound) and ``|corr|`` after ICA (no side
   information), beside chance;
2. the known-rows curve: rows of the victims' columns the attacker knows
   against the ``r2`` it reaches on the other rows, for ``distance_mds``
   (the rigid motion fitted on the known rows) and
   ``column_reconstruction_known_rows`` (each feature's directions fitted
   on the known rows);
3. ``column_reconstruction`` by an attacker who knows ``random_state``,
   with keys from the seed (``party_keys="auto"`` and a seed) and from the
   operating system (``party_keys="os"``).

Usage::

    python benchmarks/bench_kernel_attacks.py
    python benchmarks/bench_kernel_attacks.py --only AVFKAMRanker --known 9 18
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import argparse
import os
import time
import warnings

import numpy as np

from _common import text_table
from bench_privacy import _breast_cancer
from skfed.federation import record_messages
from skfed.kernel_methods import AVFKAMRanker, FDSKLClassifier
from skfed.kernel_methods._attacks import (
    column_reconstruction_known_rows,
    column_reconstruction_known_seed,
    distance_mds,
)
from skfed.partition import VerticalPartition

KNOWN = (3, 5, 9, 12, 18, 25, 40, 80)


def _fit(estimator, X, y):
    with record_messages() as rec:
        estimator.fit(X, y)
    return estimator, rec.messages


def _receiver(est):
    return f"party{est.partition_.active_parties[0]}"


def _stats(rows, attacker, contains):
    values = [r["value"] for r in rows
              if r["attacker"] == attacker and contains in r["target"]]
    return (np.mean(values), np.max(values)) if values else (np.nan, np.nan)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="estimators to run")
    parser.add_argument("--known", nargs="*", type=int, default=KNOWN,
                        help="known-row counts of the curve")
    args = parser.parse_args(argv)
    X, y = _breast_cancer()
    three = VerticalPartition(3)
    cases = {"FDSKLClassifier": FDSKLClassifier, "AVFKAMRanker": AVFKAMRanker}
    start_wall, start_cpu = time.perf_counter(), time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        for name, cls in cases.items():
            if args.only and name not in args.only:
                continue
            est, messages = _fit(cls(three, random_state=0), X, y)
            receiver = _receiver(est)
            victims = [f"party{k}" for k in range(3) if f"party{k}" != receiver]
            rows = distance_mds(est, messages, X, y)
            print(f"\n== {name}: distance_mds at the receiver ({receiver}), "
                  "no known row")
            table = []
            for victim in victims:
                mine = [r for r in rows
                        if r["victim"] == victim and r["attacker"] == receiver]
                oracle = [r["value"] for r in mine if "oracle" in r["target"]]
                ica = [r for r in mine if "ICA" in r["target"]]
                table.append([victim, f"{np.mean(oracle):.3f}",
                              f"{np.min(oracle):.3f}..{np.max(oracle):.3f}",
                              f"{np.mean([r['value'] for r in ica]):.3f}",
                              f"{np.max([r['value'] for r in ica]):.3f}",
                              f"{ica[0]['chance']:.3f}"])
            print(text_table(["victim", "r2 oracle mean", "r2 oracle range",
                              "|corr| ICA mean", "|corr| ICA max", "chance"],
                             table))
            print(f"\n== {name}: known rows of the victims' columns -> r2 on "
                  "the other rows (receiver; mean and best over the 20 columns)")
            table = []
            mds = distance_mds(est, messages, X, y, n_known=args.known)
            for k in args.known:
                fit = column_reconstruction_known_rows(est, messages, X, y,
                                                       n_known=k)
                m_mean, m_max = _stats(mds, receiver, f"({k} known rows)")
                f_mean, f_max = _stats(fit, receiver, f"({k} known rows)")
                table.append([k, f"{m_mean:.3f}", f"{m_max:.3f}",
                              f"{f_mean:.3f}", f"{f_max:.3f}"])
            print(text_table(["known rows", "MDS + rigid mean", "MDS + rigid best",
                              "directions fit mean", "directions fit best"],
                             table))
            print(f"\n== {name}: column_reconstruction by whoever knows "
                  "random_state=0 (receiver's mean and best r2)")
            table = []
            for keys in ("auto", "os"):
                e, msgs = (est, messages) if keys == "auto" else _fit(
                    cls(three, random_state=0, party_keys=keys), X, y)
                seed_rows = column_reconstruction_known_seed(e, msgs, X, y)
                mean, best = _stats(seed_rows, receiver, "column")
                table.append([f"party_keys={keys!r} ({e.party_keys_} keys)",
                              f"{mean:.3f}", f"{best:.3f}"])
            print(text_table(["setting", "r2 mean", "r2 best"], table))
    print(f"\nwall {time.perf_counter() - start_wall:.1f} s, CPU "
          f"{time.process_time() - start_cpu:.1f} s, load "
          f"{os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
