"""Memory growth over many encrypted fits: does the party runtime leak?

Each fit runs one thread per party. gmpy2 keeps a small per-thread cache of
big-integer objects that is never freed when a thread exits, so a runtime
that starts new threads for every fit leaks a few KiB per fit (measured
before the thread pool: traced memory 321 -> 815 KiB over 60 SecureBoost
512-bit fits, ~8 KiB per fit). skfed now reuses party threads from a small
per-process pool. This script fits SecureBoost with 512-bit keys many times
and prints the resident set size (``/proc/self/status``) before and after
``--fits`` fits, then the traced Python memory (``tracemalloc``) before and
after as many more, once with the pool and once
with a new thread per party and fit (``--no-pool``, the old behaviour), plus
the largest growing allocation sites.

Usage::

    python benchmarks/bench_runtime_leak.py            # 500 fits, pooled
    python benchmarks/bench_runtime_leak.py --fits 60 --no-pool
"""

import argparse
import gc
import threading
import time
import tracemalloc
import warnings

import numpy as np

import skfed
from _common import rss_kib
from skfed.crypto import InsecureKeyWarning
from skfed.ensemble import SecureBoostClassifier
from skfed.federation import _pool as pool_module


def disable_pool():
    """The old runtime: a fresh thread per party and fit, ending with it."""
    pool_module.MAX_IDLE_THREADS = 0
    pool_module._pool.clear()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fits", type=int, default=500)
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--no-pool", action="store_true",
                        help="start new threads for every fit (old runtime)")
    args = parser.parse_args()
    if args.no_pool:
        disable_pool()
    skfed.set_config(allow_insecure_keys=True)  # 512-bit keys: speed only
    warnings.simplefilter("ignore", InsecureKeyWarning)

    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 4))
    y = (X[:, 0] + X[:, 1] > 0).astype(int)

    def fit():
        SecureBoostClassifier(n_estimators=1, max_depth=2, key_size=512,
                              random_state=0).fit(X, y)

    for _ in range(args.warmup):  # imports, caches, the pool's threads
        fit()
    # Resident set first, without tracemalloc (whose hooks change how the
    # allocator fragments), then the traced Python memory over as many fits.
    gc.collect()
    rss_before = rss_kib()
    start = time.perf_counter()
    for _ in range(args.fits):
        fit()
    seconds = time.perf_counter() - start
    gc.collect()
    rss_after = rss_kib()

    tracemalloc.start()
    before_snapshot = tracemalloc.take_snapshot()
    traced_before = tracemalloc.get_traced_memory()[0]
    for _ in range(args.fits):
        fit()
    gc.collect()
    traced_after = tracemalloc.get_traced_memory()[0]
    after_snapshot = tracemalloc.take_snapshot()

    mode = "new threads per fit" if args.no_pool else "pooled party threads"
    print(f"{args.fits} SecureBoost 512-bit fits ({mode}), {seconds:.1f} s "
          f"(without tracemalloc), then {args.fits} more traced; threads "
          f"alive at the end: {threading.active_count()}")
    print(f"traced memory: {traced_before / 1024:8.0f} KiB -> "
          f"{traced_after / 1024:8.0f} KiB  "
          f"({(traced_after - traced_before) / 1024:+.0f} KiB, "
          f"{(traced_after - traced_before) / args.fits:+.0f} B per fit)")
    print(f"resident set:  {rss_before:8d} KiB -> {rss_after:8d} KiB  "
          f"({rss_after - rss_before:+d} KiB, "
          f"{(rss_after - rss_before) * 1024 / args.fits:+.0f} B per fit)")
    print("largest growth by allocation site:")
    for stat in after_snapshot.compare_to(before_snapshot, "lineno")[:5]:
        print(f"  {stat}")


if __name__ == "__main__":
    main()
