"""Ctrl-C during fit: how soon the caller gets it, and what keeps working.

For each estimator, a fit that would run for minutes (a huge ``max_iter``
or ``n_estimators``, early stopping off) is interrupted by Ctrl-C
(``_thread.interrupt_main``) ``--after`` seconds in. The table gives the
seconds from the press to ``KeyboardInterrupt`` in the caller, then the CPU
seconds every other thread of the process used in the next ``--watch``
seconds (from ``/proc/self/task``, Linux) and the skfed threads still
working then (a party thread that is not back in the pool, a training
driver). Each case runs in a process of its own, so a thread left working
by one case cannot slow the next. The load average is printed: on a shared
machine the latency follows it.

Before plan_steps polled the stop flag (AVFKAM's label holder replays its
sampling for ``max_iter`` steps before training), AVFKAM took ~1.0 s (the
runtime's ``stop_wait`` for a party that does not stop) and its label
holder's thread kept replaying.

Usage::

    python benchmarks/bench_interrupt.py                 # every estimator, ~3 min
    python benchmarks/bench_interrupt.py --quick         # one run each, ~1 min
    python benchmarks/bench_interrupt.py --only AVFKAM --repeat 3
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import _thread
import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
import warnings

import numpy as np

from _common import text_table

CASES = {
    "AVFKAMRanker (asynchronous)": (
        "skfed.kernel_methods", "AVFKAMRanker",
        dict(max_iter=10**7, early_stopping=False)),
    "AVFKAMRanker (synchronous)": (
        "skfed.kernel_methods", "AVFKAMRanker",
        dict(max_iter=10**7, asynchronous=False, early_stopping=False)),
    # 10**5 steps: FDSKL sizes its per-feature arrays for max_iter x
    # n_components_per_iter features up front (at 10**7, 3.2e8 of them:
    # gigabytes, filled by numpy calls no stop flag can cut short).
    "FDSKLClassifier": ("skfed.kernel_methods", "FDSKLClassifier",
                        dict(max_iter=10**5, early_stopping=False)),
    "SecureBoostClassifier": ("skfed.ensemble", "SecureBoostClassifier",
                              dict(n_estimators=10**5, early_stopping=False,
                                   key_size=1024)),
    "FederatedKernelKMeans": ("skfed.cluster", "FederatedKernelKMeans",
                              dict(n_clusters=3, max_iter=10**7, tol=None)),
    "HyFDCAClassifier": ("skfed.linear_model", "HyFDCAClassifier",
                         dict(max_iter=10**7, tol=None, key_size=1024)),
}


def _thread_cpu(tid):
    """CPU seconds of thread ``tid`` of this process so far."""
    with open(f"/proc/self/task/{tid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _other_threads_cpu():
    me = threading.get_native_id()
    out = {}
    for tid in map(int, os.listdir("/proc/self/task")):
        if tid != me:
            try:
                out[tid] = _thread_cpu(tid)
            except OSError:  # the thread ended meanwhile
                pass
    return out


def _working_threads():
    return sorted(t.name for t in threading.enumerate()
                  if t.name.startswith("skfed-") and t.name != "skfed-idle-worker"
                  and not t.name.startswith("skfed-crypto-worker"))


def run_case(name, after, watch, seed):
    """One interrupted fit in this process; returns the measurements."""
    import importlib

    from sklearn.datasets import make_classification

    os.environ.setdefault("SKFED_ALLOW_INSECURE_KEYS", "1")  # 1024-bit keys
    warnings.simplefilter("ignore")
    signal.signal(signal.SIGINT, signal.default_int_handler)
    module, cls, params = CASES[name]
    estimator = getattr(importlib.import_module(module), cls)(
        random_state=seed, **params)
    X, y = make_classification(400, 8, random_state=seed)
    pressed = {}

    def press():
        pressed["at"] = time.monotonic()
        _thread.interrupt_main()

    threading.Timer(after, press).start()
    try:
        estimator.fit(X, y)
        return {"error": "the fit ended before Ctrl-C"}
    except KeyboardInterrupt:
        latency = time.monotonic() - pressed["at"]
    before = _other_threads_cpu()
    time.sleep(watch)
    now = _other_threads_cpu()
    burnt = sum(now[t] - before[t] for t in now if t in before)
    return {"latency": latency, "cpu": burnt, "working": _working_threads()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--after", type=float, default=1.0,
                        help="seconds into the fit when Ctrl-C is pressed")
    parser.add_argument("--watch", type=float, default=3.0,
                        help="seconds to watch the other threads afterwards")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--quick", action="store_true",
                        help="one run per case, watched for 1 s")
    parser.add_argument("--only", default="",
                        help="cases whose name contains this text")
    parser.add_argument("--case", help=argparse.SUPPRESS)  # a child process
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.quick:
        args.repeat, args.watch = 1, 1.0
    if args.case:
        print(json.dumps(run_case(args.case, args.after, args.watch, args.seed)))
        os._exit(0)  # a thread left working must not keep the child alive

    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; "
          f"Ctrl-C {args.after:g} s into the fit, watched for {args.watch:g} s")
    rows = []
    for name in CASES:
        if args.only not in name:
            continue
        runs = []
        for seed in range(args.repeat):
            child = subprocess.run(
                [sys.executable, __file__, "--case", name, "--seed", str(seed),
                 "--after", str(args.after), "--watch", str(args.watch)],
                capture_output=True, text=True, check=True)
            runs.append(json.loads(child.stdout.strip().splitlines()[-1]))
        if any("error" in r for r in runs):
            rows.append((name, "-", "-", runs[0].get("error", "")))
            continue
        latency = [r["latency"] for r in runs]
        cpu = [r["cpu"] for r in runs]
        working = sorted({t for r in runs for t in r["working"]})
        rows.append((name, f"{min(latency):.3f}-{max(latency):.3f}",
                     f"{np.mean(cpu):.2f}", ", ".join(working) or "none"))
    print(text_table(("estimator", "Ctrl-C to caller (s)",
                      f"CPU-s of others in {args.watch:g} s", "threads working"),
                     rows))
    print(f"load average {os.getloadavg()[0]:.1f} after the runs")


if __name__ == "__main__":
    main()
