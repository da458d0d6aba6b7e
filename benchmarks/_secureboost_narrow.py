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

The first round also builds the key owner's CRT tables.

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
import io
import os
import re
import time
import types

import numpy as np

from skfed._progress import Progress
from skfed.crypto import _precompute, generate_keypair
from skfed.ensemble import SecureBoostClassifier
from skfed.ensemble import _boosting, _grower, _histogram
from skfed.ensemble._packing import GradientLayout

__all__ = ["encryption_bound", "narrow"]


def cpu_seconds():
    """CPU seconds so far of this process and its waited-for children."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def encryption_bound(n_rows, key_size, n_jobs, repeat=2):
    """Seconds to encrypt ``n_rows`` packed gradient pairs, best of ``repeat``.

    Returns ``(seconds, cpu, table_seconds)``: wall-clock and CPU seconds of
    the encryption with the key owner's CRT tables built, and the time the
    tables took to build.
    """
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


@contextlib.contextmanager
def _wrapped(owner, name, before=None, after=None):
    """``owner.name`` calling ``before()`` and ``after(seconds)`` around it."""
    original = getattr(owner, name)

    def timed(*args, **kwargs):
        if before is not None:
            before()
        start = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            if after is not None:
                after(time.perf_counter() - start)

    setattr(owner, name, timed)
    try:
        yield
    finally:
        setattr(owner, name, original)


@contextlib.contextmanager
def _patched(owner, name, value):
    original = getattr(owner, name)
    setattr(owner, name, value)
    try:
        yield
    finally:
        setattr(owner, name, original)


@contextlib.contextmanager
def _counted_takes(counts):
    """Record how many precomputed obfuscators each encryption took."""
    original = _precompute.ObfuscatorPool.take

    def take(self, count):
        out = original(self, count)
        counts.append(len(out))
        return out

    _precompute.ObfuscatorPool.take = take
    try:
        yield
    finally:
        _precompute.ObfuscatorPool.take = original


def round_splits(X, y, key_size, n_jobs, rounds, **params):
    """Per-round seconds of a verbose fit: list of dicts by step."""
    clf = SecureBoostClassifier(n_estimators=rounds, max_depth=3, max_bins=32,
                                key_size=key_size, n_jobs=n_jobs,
                                early_stopping=False, random_state=0, verbose=2,
                                **params)
    packing, cpu, ahead, taken = [], [], [], [0]
    out = io.StringIO()
    cpu_clock = types.SimpleNamespace(perf_counter=cpu_seconds)
    # CPU seconds: of each step (the fit's step clock), of the packing, and
    # at the start of the loop and at each round's report.
    with _wrapped(_histogram, "pack_candidates", before=lambda: packing.append(
                -cpu_seconds()), after=lambda _: packing.append(cpu_seconds())), \
            _patched(_grower, "time", cpu_clock), _patched(_boosting, "time", cpu_clock), \
            _counted_takes(ahead), \
            _wrapped(Progress, "__init__", after=lambda _: cpu.append(cpu_seconds())), \
            _wrapped(Progress, "report", before=lambda: (
                cpu.append(cpu_seconds()), taken.append(sum(ahead)))), \
            contextlib.redirect_stdout(out):
        clf.fit(X, y)
    text = out.getvalue()
    totals = [float(s) for s in re.findall(r"round \d+/\d+: .*?, ([0-9.]+) s", text)]
    phases = [dict((k, float(v)) for k, v in re.findall(r"(\w+) ([0-9.]+)", line))
              for line in re.findall(r"seconds: (.*)", text)]
    per_round = np.diff([0.0] + totals)
    packing = np.add(packing[::2], packing[1::2]).tolist()  # -start + end
    # pack_candidates runs once per built node: depth 3 -> 1 + 1 + 2 calls.
    per_tree = len(packing) // rounds
    splits = []
    for r, (seconds, steps) in enumerate(zip(per_round, phases)):
        pack = sum(packing[r * per_tree:(r + 1) * per_tree])
        known = steps["encrypt"] + steps["histograms"] + steps["decrypt"]
        total = cpu[r + 1] - cpu[r]
        splits.append({"round": seconds, "cpu": total,
                       "ahead": taken[r + 1] - taken[r],
                       "encrypt": steps["encrypt"],
                       "histograms": steps["histograms"] - pack, "packing": pack,
                       "decrypt": steps["decrypt"], "other": total - known})
    return splits


def narrow(X, y, key_size=2048, n_jobs=2, rounds=3):
    """Print the narrow-data table: rounds split by step, beside the bound."""
    n_rows, n_features = X.shape
    print(f"SecureBoost, {n_rows} x {n_features}, {key_size}-bit keys, 2 parties, "
          f"depth 3, 32 bins, n_jobs={n_jobs}, {rounds} rounds")
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())} "
          f"on {os.cpu_count()} cores")
    bound, bound_cpu, table = encryption_bound(n_rows, key_size, n_jobs)
    print(f"encryption bound: {n_rows} packed (g, h) plaintexts in {bound:.2f} s, "
          f"{bound_cpu:.2f} CPU s (key owner's CRT path, tables built in "
          f"{table:.2f} s, best of 2)\n")
    header = (f"{'round':>5}  {'seconds':>7}  {'x bound':>7}  {'CPU s':>6}  "
              f"{'encrypt':>7}  {'hist':>6}  {'packing':>7}  {'decrypt':>7}  "
              f"{'other':>6}  {'x bound CPU':>11}  {'ahead':>6}")
    print(header)
    print("-" * len(header))
    splits = round_splits(X, y, key_size, n_jobs, rounds)
    for r, s in enumerate(splits, start=1):
        print(f"{r:5d}  {s['round']:7.2f}  {s['round'] / bound:7.2f}  "
              f"{s['cpu']:6.2f}  {s['encrypt']:7.2f}  {s['histograms']:6.2f}  "
              f"{s['packing']:7.2f}  {s['decrypt']:7.2f}  {s['other']:6.2f}  "
              f"{s['cpu'] / bound_cpu:11.2f}  {s['ahead']:6d}", flush=True)
    later = splits[1:] or splits
    wall = np.mean([s["round"] for s in later])
    cpu = np.mean([s["cpu"] for s in later])
    print(f"\nrounds after the first (the first also builds the CRT tables): "
          f"{wall:.2f} s = {wall / bound:.2f} x the encryption bound ({bound:.2f} s); "
          f"CPU {cpu:.2f} s = {cpu / bound_cpu:.2f} x ({bound_cpu:.2f} s)")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return splits, bound
