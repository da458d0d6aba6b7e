"""SecureBoost on narrow data: a round against the encryption it cannot avoid.

Called by ``benchmarks/bench_secureboost.py --narrow`` (issue 18, item 7).
A boosting round of a 30,000 x 23 credit-shaped table (two parties, depth 3,
32 bins) must encrypt one packed ``(g, h)`` plaintext per row; nothing else
in the round is unavoidable. This module measures, in one run and on one
key:

- the *encryption bound*: the fastest encryption skfed has of the round's
  30,000 packed plaintexts (the key owner's CRT path, ``n_jobs`` workers,
  tables already built, no obfuscator computed ahead), best of ``repeat``;
- ``rounds`` boosting rounds of ``SecureBoostClassifier`` (``verbose=2``),
  each with its wall-clock seconds and ratio to the bound, and its CPU
  seconds split into encrypt / histograms / packing / decrypt / other
  (``packing``: the passive party's candidate packing and re-randomisation,
  timed around :func:`skfed.ensemble._histogram.pack_candidates`;
  ``histograms``: the rest of the passive party's work; ``other``: split
  finding, scores, messages), and their ratio to the bound's CPU seconds;
  ``ahead``: how many of the round's obfuscators the active party's
  low-priority worker had computed during the previous round
  (``PaillierPrivateKey.precompute_obfuscators``; its CPU seconds count in
  the round that uses them).

The first round also builds the key owner's CRT tables. Beside ours, the
same rounds with the code of another git revision (``baseline``, default:
the commit the issue's "today" figures describe), run in a child process on
a copy of that revision's ``skfed`` (as ``--a9a`` does), against the same
bound, with a check that both fit the same model.

CPU seconds are this process's and its waited-for workers' (``os.times``);
the step split reads them through the fit's own ``verbose=2`` step clock
(whose ``time.perf_counter`` is pointed at them for the fit). The machine
may be shared: CPU seconds and their ratio change little with load from
other processes, wall-clock seconds do. On an idle machine with both cores
busy throughout, the two ratios agree; idle gaps make the wall ratio
larger, obfuscators computed in them (``precompute_obfuscators``) smaller.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import contextlib
import os
import time
from unittest import mock

import numpy as np
from _secureboost_wide import BASELINE, _baseline_splits, cpu_seconds, fit_splits

__all__ = ["encryption_bound", "narrow", "round_splits"]


def encryption_bound(n_rows, key_size, n_jobs, repeat=2):
    """Seconds to encrypt ``n_rows`` packed gradient pairs, best of ``repeat``.

    Returns ``(seconds, cpu, table_seconds)``: wall-clock and CPU seconds of
    the encryption with the key owner's CRT tables built (a key without
    obfuscators computed ahead), and the time the tables took to build.
    """
    from skfed.crypto import generate_keypair
    from skfed.ensemble._packing import GradientLayout

    public_key, private_key = generate_keypair(key_size)
    start = time.perf_counter()
    private_key.crt_djn.build(n_jobs)
    table_seconds = time.perf_counter() - start
    layout = GradientLayout(n_rows, key_size)
    rng = np.random.default_rng(0)
    g = rng.uniform(-1, 1, n_rows)
    h = rng.uniform(0, 0.25, n_rows)
    qg = layout.quantize(g, layout.exponent_for(g))
    qh = layout.quantize(h, layout.exponent_for(h))
    best = best_cpu = np.inf
    for _ in range(repeat):
        start, cpu = time.perf_counter(), cpu_seconds()
        layout.encrypt_pairs(public_key, qg, qh, n_jobs, private_key)
        best = min(best, time.perf_counter() - start)
        best_cpu = min(best_cpu, cpu_seconds() - cpu)
    return best, best_cpu, table_seconds


def _counted_takes(counts):
    """Patch counting the obfuscators each encryption took from a pool."""
    try:
        from skfed.crypto._precompute import ObfuscatorPool
    except ImportError:  # a revision without precomputed obfuscators
        return contextlib.nullcontext()
    take = ObfuscatorPool.take

    def counted(self, count):
        out = take(self, count)
        counts.append(len(out))
        return out

    return mock.patch.object(ObfuscatorPool, "take", counted)


def round_splits(n_rows, key_size, n_jobs, rounds):
    """Fit ``rounds`` rounds of the credit-shaped table; per round, by step.

    Returns ``(splits, check)`` as :func:`_secureboost_wide.fit_splits`
    (per round ``"tree"``: wall-clock seconds, ``"cpu"``, the steps' CPU
    seconds), each split with ``"ahead"``: the obfuscators its encryption
    took from the ones computed ahead.
    """
    from bench_secureboost import credit_like

    from skfed.ensemble import SecureBoostClassifier

    X, y = credit_like(n_rows, 23)
    clf = SecureBoostClassifier(n_estimators=rounds, max_depth=3, max_bins=32,
                                key_size=key_size, n_jobs=n_jobs,
                                early_stopping=False, random_state=0, verbose=2)
    ahead, taken = [], []
    splits, check = fit_splits(clf, X, y, on_round=lambda: taken.append(sum(ahead)),
                               patches=[_counted_takes(ahead)])
    # A round's encryption comes right after its start mark.
    for r, split in enumerate(splits):
        split["ahead"] = taken[r + 1] - taken[r]
    return splits, check


def _row(name, s, bound, bound_cpu):
    return (f"{name:22s}  {s['tree']:7.2f}  {s['tree'] / bound:7.2f}  "
            f"{s['cpu']:6.2f}  {s['cpu'] / bound_cpu:7.2f}  {s['encrypt']:7.2f}  "
            f"{s['histograms']:6.2f}  {s['packing']:7.2f}  {s['decrypt']:7.2f}  "
            f"{s['other']:6.2f}  {s['ahead']:6d}")


def narrow(n_rows=30_000, key_size=2048, n_jobs=2, rounds=3, baseline=BASELINE):
    """Print the narrow-data table: rounds by step, as ratios to the bound."""
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"SecureBoost, {n_rows} x 23 credit-shaped, {key_size}-bit keys, 2 parties, "
          f"depth 3, 32 bins, n_jobs={n_jobs}, {rounds} rounds",
          f"load average before: {load} on {os.cpu_count()} cores", sep="\n")
    bound, bound_cpu, table = encryption_bound(n_rows, key_size, n_jobs)
    bound_cpu = max(bound_cpu, 0.01)  # os.times ticks: 10 ms
    print(f"encryption bound: {n_rows} packed (g, h) plaintexts in {bound:.2f} s, "
          f"{bound_cpu:.2f} CPU s (key owner's CRT path, tables built in "
          f"{table:.2f} s, best of 2)\n")
    header = (f"{'code, round':22s}  {'seconds':>7}  {'x bound':>7}  {'CPU s':>6}  "
              f"{'x bound':>7}  {'encrypt':>7}  {'hist':>6}  {'packing':>7}  "
              f"{'decrypt':>7}  {'other':>6}  {'ahead':>6}")
    print(header, "-" * len(header), sep="\n")
    ours, check = round_splits(n_rows, key_size, n_jobs, rounds)
    for r, s in enumerate(ours, start=1):
        print(_row(f"this code, round {r}", s, bound, bound_cpu), flush=True)
    old = None
    if baseline:
        old, old_check = _baseline_splits(baseline, n_rows, key_size, n_jobs, rounds,
                                          "_secureboost_narrow:round_splits")
        for r, s in enumerate(old, start=1):
            print(_row(f"{baseline}, round {r}", s, bound, bound_cpu), flush=True)
        same = "same" if old_check == check else "DIFFERENT"
        print(f"\nmodels after each round: {same} predictions (sum of P(y=1) over "
              f"2000 rows after round {rounds}: {check[-1]} vs {old_check[-1]})")
    print("\nrounds after the first (the first also builds the CRT tables):")
    for name, splits in (("this code", ours), (baseline, old)):
        if splits:
            later = splits[1:] or splits
            wall = np.mean([s["tree"] for s in later])
            cpu = np.mean([s["cpu"] for s in later])
            print(f"  {name}: {wall:.2f} s = {wall / bound:.2f} x the encryption bound "
                  f"({bound:.2f} s); {cpu:.2f} CPU s = {cpu / bound_cpu:.2f} x its "
                  f"{bound_cpu:.2f} CPU s")
    print("step columns: CPU seconds; ahead: obfuscators computed in the previous "
          "round's idle time")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return ours, old
