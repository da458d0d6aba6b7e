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
  each split into encrypt / histograms / packing / decrypt / other
  (``packing``: the passive party's candidate packing and re-randomisation,
  timed around :func:`skfed.ensemble._histogram.pack_candidates`;
  ``histograms``: the rest of the passive party's work; ``other``: split
  finding, scores, messages), and its ratio to the bound.

The first round also builds the key owner's CRT tables (printed apart).
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import contextlib
import io
import os
import re
import time

import numpy as np

from skfed.crypto import generate_keypair
from skfed.ensemble import SecureBoostClassifier
from skfed.ensemble import _histogram
from skfed.ensemble._packing import GradientLayout

__all__ = ["encryption_bound", "narrow"]


def encryption_bound(n_rows, key_size, n_jobs, repeat=2):
    """Seconds to encrypt ``n_rows`` packed gradient pairs, best of ``repeat``.

    Returns ``(seconds, table_seconds)``: the encryption with the key owner's
    CRT tables built, and the time the tables took to build.
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
    best = np.inf
    for _ in range(repeat):
        start = time.perf_counter()
        layout.encrypt_pairs(public_key, qg, qh, n_jobs, private_key)
        best = min(best, time.perf_counter() - start)
    return best, table_seconds


@contextlib.contextmanager
def _timed_packing(totals):
    """Accumulate the seconds spent in ``pack_candidates`` into ``totals``."""
    original = _histogram.pack_candidates

    def timed(*args, **kwargs):
        start = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            totals.append(time.perf_counter() - start)

    _histogram.pack_candidates = timed
    try:
        yield
    finally:
        _histogram.pack_candidates = original


def round_splits(X, y, key_size, n_jobs, rounds, **params):
    """Per-round seconds of a verbose fit: list of dicts by step."""
    clf = SecureBoostClassifier(n_estimators=rounds, max_depth=3, max_bins=32,
                                key_size=key_size, n_jobs=n_jobs,
                                early_stopping=False, random_state=0, verbose=2,
                                **params)
    packing = []
    out = io.StringIO()
    with _timed_packing(packing), contextlib.redirect_stdout(out):
        clf.fit(X, y)
    text = out.getvalue()
    totals = [float(s) for s in re.findall(r"round \d+/\d+: .*?, ([0-9.]+) s", text)]
    phases = [dict((k, float(v)) for k, v in re.findall(r"(\w+) ([0-9.]+)", line))
              for line in re.findall(r"seconds: (.*)", text)]
    per_round = np.diff([0.0] + totals)
    # pack_candidates runs once per built node: depth 3 -> 1 + 1 + 2 calls.
    per_tree = len(packing) // rounds
    splits = []
    for r, (seconds, steps) in enumerate(zip(per_round, phases)):
        pack = sum(packing[r * per_tree:(r + 1) * per_tree])
        known = steps["encrypt"] + steps["histograms"] + steps["decrypt"]
        splits.append({"round": seconds, "encrypt": steps["encrypt"],
                       "histograms": steps["histograms"] - pack, "packing": pack,
                       "decrypt": steps["decrypt"], "other": seconds - known})
    return splits


def narrow(X, y, key_size=2048, n_jobs=2, rounds=3):
    """Print the narrow-data table: rounds split by step, beside the bound."""
    n_rows, n_features = X.shape
    print(f"SecureBoost, {n_rows} x {n_features}, {key_size}-bit keys, 2 parties, "
          f"depth 3, 32 bins, n_jobs={n_jobs}, {rounds} rounds")
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())} "
          f"on {os.cpu_count()} cores")
    bound, table = encryption_bound(n_rows, key_size, n_jobs)
    print(f"encryption bound: {n_rows} packed (g, h) plaintexts in {bound:.2f} s "
          f"(key owner's CRT path, tables built in {table:.2f} s, best of 2)\n")
    header = (f"{'round':>5}  {'seconds':>7}  {'encrypt':>7}  {'hist':>6}  "
              f"{'packing':>7}  {'decrypt':>7}  {'other':>6}  {'x bound':>7}")
    print(header)
    print("-" * len(header))
    splits = round_splits(X, y, key_size, n_jobs, rounds)
    for r, s in enumerate(splits, start=1):
        print(f"{r:5d}  {s['round']:7.2f}  {s['encrypt']:7.2f}  "
              f"{s['histograms']:6.2f}  {s['packing']:7.2f}  {s['decrypt']:7.2f}  "
              f"{s['other']:6.2f}  {s['round'] / bound:7.2f}", flush=True)
    later = [s["round"] for s in splits[1:]] or [splits[0]["round"]]
    print(f"\nmean round after the first: {np.mean(later):.2f} s = "
          f"{np.mean(later) / bound:.2f} x the encryption bound ({bound:.2f} s); "
          "the first round also builds the CRT tables")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return splits, bound
