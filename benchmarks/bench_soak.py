"""Soak test of the party runtime: many mixed fits, two at a time, some faulty.

Runs ``--jobs`` fits (200 by default) of every estimator on random small
data with random valid settings, two at a time on a thread pool, as a
``GridSearchCV(n_jobs=2)`` with the threading backend would. About one job
in four gets an injected fault (``tests/_faults.py``): one party raises,
hangs past the timeout, or answers with the wrong shape at a random call of
a random phase. Each job also predicts with its model.

At the end it prints, per estimator and overall: jobs, unexpected failures
(a clean job that failed, a fault that went unnoticed or was not named, a
hang that outlived its timeout, a failed fit that left fitted attributes),
the time, the threads alive (and any still busy), and the resident memory.

Usage::

    python benchmarks/bench_soak.py                  # 200 jobs, seed 0
    python benchmarks/bench_soak.py --jobs 40 --seed 1
"""

import argparse
import random
import sys
import threading
import time
import warnings
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import skfed  # noqa: E402
from _common import rss_kib  # noqa: E402
from skfed.federation import FederationTimeoutError  # noqa: E402
from skfed.partition import HybridPartition  # noqa: E402
from skfed.utils import all_estimators  # noqa: E402
from tests._faults import (  # noqa: E402
    busy_party_threads,
    call_counts,
    inject_fault,
    record_calls,
)

#: Random valid settings per estimator (small keys and sizes: a soak test).
SPACES = {
    "SecureBoostClassifier": dict(
        n_estimators=[1, 2, 3], max_depth=[1, 2, 3], learning_rate=[0.1, 0.3],
        key_size=[512], encryption=["paillier", None], partition=[2, 3],
        n_jobs=[None, 2]),
    "SecureBoostRegressor": dict(
        n_estimators=[1, 2, 3], max_depth=[1, 2, 3], key_size=[512],
        encryption=["paillier", None], partition=[2, 3]),
    "FDSKLClassifier": dict(
        max_iter=[5, 10, 20], batch_size=[4, 8, 16],
        n_components_per_iter=[2, 4, 8], partition=[2, 3]),
    "FDSKLRegressor": dict(
        max_iter=[5, 10, 20], batch_size=[4, 8, 16],
        n_components_per_iter=[2, 4, 8], partition=[2, 3]),
    "AVFKAMRanker": dict(
        max_iter=[20, 40], n_random_features=[10, 20, 40], batch_size=[4, 8],
        features_per_step=[4, 8], partition=[2, 3]),
    "FederatedKernelKMeans": dict(
        n_clusters=[2, 3], n_random_features=[10, 20], max_iter=[2, 3],
        coreset_size=[20, 40], tol=[None]),
    "HyFDCAClassifier": dict(
        max_iter=[2, 3, 5], key_size=[512], encryption=["paillier", None],
        partition=[HybridPartition(2, 2), HybridPartition(2, 1),
                   HybridPartition(1, 2)]),
}
NOT_SOAKED = {"PSIAudit"}  # audits of other runs, not federated fits
FAULT_RATE = 0.25
PARTY_TIMEOUT = 3.0
KINDS = ("raise", "hang", "garbage")


def make_data(name, rng):
    n, d = int(rng.integers(40, 100)), int(rng.integers(4, 9))
    X = rng.normal(size=(n, d))
    if "Regressor" in name:
        return X, X[:, 0] - 0.5 * X[:, 1] + 0.1 * rng.normal(size=n)
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    y[:2] = [0, 1]  # both classes, whatever the draw
    return X, y


def settings(cls, name, rng):
    valid = cls().get_params()
    params = {k: v[int(rng.integers(len(v)))] for k, v in SPACES[name].items()
              if k in valid}
    if "random_state" in valid:
        params["random_state"] = int(rng.integers(1000))
    return params


def output(model, X):
    if hasattr(model, "decision_function"):
        return model.decision_function(X)
    return model.predict(X)


def discover_phases(estimators):
    """``{name: [(party, key, count), ...]}`` from one small clean fit each."""
    phases = {}
    rng = np.random.default_rng(12345)
    for name, cls in estimators.items():
        X, y = make_data(name, rng)
        with record_calls() as calls:
            output(cls(**settings(cls, name, rng)).fit(X, y), X)
        phases[name] = [(p, k, c) for (p, k), c in call_counts(calls).items()]
    return phases


def run_job(job, estimators, phases):
    """One fit and predict; returns a dict describing what happened."""
    name, seed, fault = job
    rng = np.random.default_rng(seed)
    cls = estimators[name]
    X, y = make_data(name, rng)
    params = settings(cls, name, rng)
    model = cls(**params)
    record = {"name": name, "params": params, "fault": fault, "error": None,
              "problem": None, "fired": False}
    start = time.monotonic()
    # skfed's configuration is thread-local, like sklearn's: set it in the
    # thread that fits (512-bit keys: speed only).
    with skfed.config_context(party_timeout=PARTY_TIMEOUT,
                              allow_insecure_keys=True), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore")
        stage = "fit"
        try:
            if fault is None:
                model.fit(X, y)
                stage = "predict"
                output(model, X)
            else:
                party, key, n, kind = fault
                with inject_fault(party, key, n, kind,
                                  thread=threading.current_thread()) as planted:
                    try:
                        model.fit(X, y)
                        stage = "predict"
                        output(model, X)
                    finally:
                        record["fired"] = planted["fired"]
                        record["garbled"] = planted["garbled"]
        except Exception as exc:  # noqa: BLE001 - classified below
            record["error"] = exc
        record["stage"] = stage
    record["seconds"] = time.monotonic() - start
    record["problem"] = classify(record, model)
    # Keep the outcome, not the exception: its traceback holds the frames of
    # the failed fit (the federation, the parties' states and keys), which
    # would pile up over the jobs and look like a leak.
    error = record.pop("error")
    record["error"] = None if error is None else f"{type(error).__name__}: {error}"
    return record


def classify(record, model):
    """What went wrong with this job, or None."""
    error, fault = record["error"], record["fault"]
    if error is not None and record["stage"] == "fit":
        try:
            check_is_fitted(model)
            return (f"fitted attributes left after a failed fit "
                    f"({type(error).__name__}: {str(error)[:150]})")
        except NotFittedError:
            pass
    if fault is None or not record["fired"]:
        if error is not None:
            return f"unexpected error: {type(error).__name__}: {str(error)[:200]}"
        return None
    party, key, _, kind = fault
    if kind == "garbage":
        return None  # an error, or an answer never used (tests/test_faults.py
        # checks that such a model equals the clean one)
    if error is None:
        return f"{kind} at {party}/{key} went unnoticed"
    text = str(error)
    if f"'{party}'" not in text:
        return f"error does not name {party}: {type(error).__name__}: {text[:200]}"
    if kind == "hang":
        cause, timed_out = error, False
        while cause is not None:
            timed_out |= isinstance(cause, FederationTimeoutError)
            cause = cause.__cause__
        if not timed_out:
            return f"hang ended without a timeout: {type(error).__name__}"
        if record["seconds"] > PARTY_TIMEOUT + 3.0:
            return f"hang took {record['seconds']:.1f} s"
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    skfed.set_config(allow_insecure_keys=True)  # 512-bit keys: speed only
    threads_at_start, rss_at_start = threading.active_count(), rss_kib()

    estimators = {n: c for n, c in all_estimators() if n not in NOT_SOAKED}
    missing = sorted(set(estimators) - set(SPACES))
    if missing:
        raise SystemExit(f"Add settings for {missing} to SPACES.")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        phases = discover_phases(estimators)
    threads_warm, rss_warm = threading.active_count(), rss_kib()

    plan_rng = random.Random(args.seed)
    names = sorted(estimators)
    jobs = []
    for i in range(args.jobs):
        name = names[i % len(names)]
        fault = None
        if plan_rng.random() < FAULT_RATE:
            party, key, count = plan_rng.choice(phases[name])
            # An early call of the phase: this job's settings may make fewer.
            n = plan_rng.randint(1, max(1, (count + 1) // 2))
            fault = (party, key, n, plan_rng.choice(KINDS))
        jobs.append((name, args.seed * 100_000 + i, fault))

    start = time.monotonic()
    half = len(jobs) // 2
    with ThreadPoolExecutor(max_workers=args.workers) as pool:
        records = list(pool.map(lambda job: run_job(job, estimators, phases),
                                jobs[:half]))
        rss_half = rss_kib()  # growth that levels off is the allocator's
        records += list(pool.map(lambda job: run_job(job, estimators, phases),
                                 jobs[half:]))
    seconds = time.monotonic() - start
    busy = busy_party_threads(wait=5.0)
    threads_end, rss_end = threading.active_count(), rss_kib()

    by_name = defaultdict(Counter)
    for r in records:
        c = by_name[r["name"]]
        c["jobs"] += 1
        c["seconds"] += r["seconds"]
        if r["fault"] is not None:
            c[f"fault:{r['fault'][3]}"] += 1
            c["fired"] += r["fired"]
        c["errors"] += r["error"] is not None
        c["problems"] += r["problem"] is not None
    header = f"{'estimator':24s} {'jobs':>4s} {'faulty':>6s} {'fired':>5s} " \
             f"{'errors':>6s} {'problems':>8s} {'s/job':>6s}"
    print(f"soak: {args.jobs} jobs on {args.workers} threads, seed {args.seed}, "
          f"party_timeout={PARTY_TIMEOUT:g} s, fault rate {FAULT_RATE:.0%}\n")
    print(header)
    print("-" * len(header))
    for name in names:
        c = by_name[name]
        faulty = sum(v for k, v in c.items() if k.startswith("fault:"))
        print(f"{name:24s} {c['jobs']:4d} {faulty:6d} {c['fired']:5d} "
              f"{c['errors']:6d} {c['problems']:8d} {c['seconds'] / c['jobs']:6.2f}")
    kinds = Counter(r["fault"][3] for r in records if r["fault"] is not None)
    fired = Counter(r["fault"][3] for r in records if r["fault"] is not None
                    and r["fired"])
    problems = [r for r in records if r["problem"] is not None]
    print(f"\nfaults planned {dict(kinds)}, fired {dict(fired)} (a fault whose "
          "phase this job's settings never reach does not fire)")
    print(f"unexpected failures: {len(problems)} of {len(records)} jobs")
    for r in problems[:20]:
        print(f"  {r['name']} {r['fault']}: {r['problem']}")
    print(f"time: {seconds:.1f} s wall for {args.jobs} jobs")
    print(f"threads: {threads_at_start} at start, {threads_warm} after warm-up, "
          f"{threads_end} at the end; busy party threads at the end: {busy or 'none'}")
    print(f"resident memory: {rss_at_start} KiB at start, {rss_warm} KiB after "
          f"warm-up, {rss_half} KiB after half the jobs ({rss_half - rss_warm:+d} "
          f"KiB), {rss_end} KiB at the end ({rss_end - rss_half:+d} KiB over the "
          "second half)")
    return 1 if problems or busy else 0


if __name__ == "__main__":
    sys.exit(main())
