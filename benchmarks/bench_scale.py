"""The kernel estimators at scale, beside centralized random features.

Every point (estimator, rows, method) runs in a fresh Python process, so
that its peak resident memory is its own: the parent reads the child's
``ru_maxrss`` from ``os.wait4``. Per point: wall and CPU seconds of the fit
(CPU summed over the party threads), peak RSS, bytes sent between parties,
bytes per step (AVFKAM: of its training steps, its preprocessing is once
per row: kB/row) and the quality on 10,000 held-out rows:

- ``fdskl``: FDSKLClassifier, 3 parties, ``max_iter="auto"`` (5 epochs) and
  ``n_components=2000`` (a pool of 2,000 feature seeds), beside random
  features + SGD (RBFSampler with the same gamma and 2,000 features,
  SGDClassifier with the log loss); accuracy. ``fdskl-default`` is the
  default FDSKLClassifier, whose ``"auto"`` settings choose by size (the
  paper's fresh features up to 10,000 rows, the pool of 2,000 above), and
  ``fdskl-paper`` the former defaults (``n_components=None,
  n_components_per_iter=32, batch_size=256, max_iter=500``: 500 steps of
  fresh features, the paper's loop, at any size); the defaults get their own
  table (rows, settings chosen, bytes per step, total, accuracy beside the
  same baseline, peak memory, CPU and wall seconds).
- ``avfkam``: AVFKAMRanker, 3 parties, defaults, on a 10%-positive table,
  beside the same random features (3,000) + SGDClassifier; ROC AUC.
- ``kkm``: FederatedKernelKMeans, 5 clusters, 4 users, defaults, beside
  KMeans on the same number of random features; NMI against the blobs.

Tables: make_classification (20 features, 10 informative) and make_blobs
(20 features, 5 centers, cluster_std=6). Above 2 x 10^8 feature values
(10^5 rows at 2,000 features) the baselines stream their random features
by chunks of 20,000 rows (SGDClassifier.partial_fit for 5 epochs,
MiniBatchKMeans.partial_fit for 3): the full matrix would not fit. Run::

    python benchmarks/bench_scale.py                   # 8k and 64k rows
    python benchmarks/bench_scale.py --sizes 8000,64000,512000,1000000
    python benchmarks/bench_scale.py --estimators fdskl --sizes 2000,8000
    python benchmarks/bench_scale.py --estimators fdskl-default --sizes 8000,64000

The cores are shared: quote the load average printed with the table.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import argparse
import json
import os
import subprocess
import sys
import time
import warnings

import numpy as np

N_TEST = 10_000
ESTIMATORS = ("fdskl", "fdskl-default", "avfkam", "kkm")
METHODS = {"fdskl": ("ours", "baseline"), "fdskl-default": ("ours", "baseline"),
           "fdskl-paper": ("ours", "baseline"),
           "avfkam": ("ours", "baseline"), "kkm": ("ours", "baseline")}
#: the FDSKL variants, all on the same table beside the same baseline
FDSKL_PARAMS = {
    "fdskl": dict(max_iter="auto", n_components=2000, n_components_per_iter=2000,
                  batch_size=32),
    "fdskl-default": {},
    "fdskl-paper": dict(n_components=None, n_components_per_iter=32,
                        batch_size=256, max_iter=500),
}
FDSKL_FEATURES = 2000


def _classification(n, seed=0, weights=None):
    from sklearn.datasets import make_classification

    X, y = make_classification(n + N_TEST, 20, n_informative=10,
                               weights=weights, random_state=seed)
    return X[:n], y[:n], X[n:], y[n:]


def _blobs(n, seed=0):
    from sklearn.datasets import make_blobs

    X, y = make_blobs(n + N_TEST, 20, centers=5, cluster_std=6.0,
                      random_state=seed)
    return X[:n], y[:n], X[n:], y[n:]


def _scale_gamma(X):
    # gamma="scale" as FDSKL and AVFKAM resolve it: 1 / (d var(X))
    return 1.0 / (X.shape[1] * X.var())


#: above this many feature values the baselines stream their features by
#: chunks of rows (the n x D matrix itself would exceed the machine: 16 GB
#: for 10^6 rows and 2,000 features)
STREAM_VALUES = 2 * 10**8
CHUNK_ROWS = 20_000
STREAM_EPOCHS = 5


def _chunks(n, seed):
    order = np.random.RandomState(seed).permutation(n // CHUNK_ROWS + 1)
    return [slice(k * CHUNK_ROWS, min((k + 1) * CHUNK_ROWS, n)) for k in order
            if k * CHUNK_ROWS < n]


def _rf_sgd(Xtr, ytr, Xte, n_features):
    from sklearn.kernel_approximation import RBFSampler
    from sklearn.linear_model import SGDClassifier
    from sklearn.pipeline import make_pipeline

    rbf = RBFSampler(gamma=_scale_gamma(Xtr), n_components=n_features,
                     random_state=0)
    sgd = SGDClassifier(loss="log_loss", random_state=0)
    if Xtr.shape[0] * n_features <= STREAM_VALUES:
        model = make_pipeline(rbf, sgd).fit(Xtr, ytr)
    else:  # the same features and loss, by chunks (partial_fit, 5 epochs)
        rbf.fit(Xtr[:1])
        classes = np.unique(ytr)
        for epoch in range(STREAM_EPOCHS):
            for rows in _chunks(Xtr.shape[0], epoch):
                sgd.partial_fit(rbf.transform(Xtr[rows]), ytr[rows], classes)
        sgd.n_iter_ = STREAM_EPOCHS
        model = make_pipeline(rbf, sgd)
    return model, model.decision_function(Xte)


def _point(name, method, n):
    """One point, in this (fresh) process: a dict of figures."""
    from sklearn.metrics import normalized_mutual_info_score, roc_auc_score

    warnings.simplefilter("ignore")
    out = dict(estimator=name, method=method, n=n)
    if name in FDSKL_PARAMS:
        Xtr, ytr, Xte, yte = _classification(n)
    elif name == "avfkam":
        Xtr, ytr, Xte, yte = _classification(n, weights=[0.9])
    else:
        Xtr, ytr, Xte, yte = _blobs(n)
    t0, c0 = time.perf_counter(), time.process_time()
    steps = bytes_ = None
    if name in FDSKL_PARAMS and method == "ours":
        from skfed.kernel_methods import FDSKLClassifier

        est = FDSKLClassifier(partition=3, random_state=0,
                              **FDSKL_PARAMS[name]).fit(Xtr, ytr)
        fit_s, fit_cpu = time.perf_counter() - t0, time.process_time() - c0
        quality = float(np.mean(est.predict(Xte) == yte))
        steps, bytes_ = est.n_iter_, est.communication_.total_bytes
        out["features"] = int(est.n_components_)
        # the settings "auto" chose (absent before they were exposed)
        out["pool"] = getattr(est, "pool_size_", est.n_components)
        out["batch"] = getattr(est, "batch_size_", est.batch_size)
        out["m"] = getattr(est, "n_components_per_iter_",
                           est.n_components_per_iter)
    elif name in FDSKL_PARAMS:
        model, _ = _rf_sgd(Xtr, ytr, Xte, FDSKL_FEATURES)
        fit_s, fit_cpu = time.perf_counter() - t0, time.process_time() - c0
        quality = float(np.mean(model.predict(Xte) == yte))
        steps = int(model[-1].n_iter_)  # epochs
    elif name == "avfkam" and method == "ours":
        from skfed.kernel_methods import AVFKAMRanker

        est = AVFKAMRanker(partition=3, random_state=0).fit(Xtr, ytr)
        fit_s, fit_cpu = time.perf_counter() - t0, time.process_time() - c0
        quality = float(roc_auc_score(yte, est.decision_function(Xte)))
        steps, bytes_ = est.n_iter_, est.communication_.total_bytes
    elif name == "avfkam":
        model, scores = _rf_sgd(Xtr, ytr, Xte, 3000)
        fit_s, fit_cpu = time.perf_counter() - t0, time.process_time() - c0
        quality = float(roc_auc_score(yte, scores))
        steps = int(model[-1].n_iter_)
    elif method == "ours":
        from skfed.cluster import FederatedKernelKMeans

        est = FederatedKernelKMeans(n_clusters=5, partition=4,
                                    random_state=0).fit(Xtr)
        fit_s, fit_cpu = time.perf_counter() - t0, time.process_time() - c0
        quality = float(normalized_mutual_info_score(yte, est.predict(Xte)))
        steps, bytes_ = est.n_iter_, est.communication_.total_bytes
        out["features"] = int(est.n_random_features_)
        out["gamma"] = float(est.gamma_)
    else:
        from sklearn.cluster import KMeans
        from sklearn.kernel_approximation import RBFSampler
        from sklearn.pipeline import make_pipeline

        # The paper's gamma: 1 / (2 mean squared distance between rows),
        # from the moments (no pairs); as many features as ours uses.
        mean_sq = 2.0 * Xtr.var(axis=0).sum()
        rbf = RBFSampler(gamma=1.0 / (2.0 * mean_sq), n_components=400,
                         random_state=0)
        if Xtr.shape[0] * 400 <= STREAM_VALUES:
            model = make_pipeline(rbf, KMeans(5, n_init=1, random_state=0))
            model.fit(Xtr)
        else:  # by chunks: MiniBatchKMeans.partial_fit, 3 epochs
            from sklearn.cluster import MiniBatchKMeans

            rbf.fit(Xtr[:1])
            km = MiniBatchKMeans(5, n_init=3, random_state=0)
            for epoch in range(3):
                for rows in _chunks(Xtr.shape[0], epoch):
                    km.partial_fit(rbf.transform(Xtr[rows]))
            km.n_iter_ = 3
            model = make_pipeline(rbf, km)
        fit_s, fit_cpu = time.perf_counter() - t0, time.process_time() - c0
        quality = float(normalized_mutual_info_score(yte, model.predict(Xte)))
        steps = int(model[-1].n_iter_)
    import skfed

    if bytes_ is not None:
        # What a step sends: AVFKAM's preprocessing (once, 4 (2q - 3) bytes
        # per row and seed) and the set-up are not per step.
        phases = est.communication_.by_phase
        once = sum(v["bytes"] for k, v in phases.items()
                   if k.startswith(("preprocess", "gamma", "setup", "threshold")))
        out["step_bytes"] = (bytes_ - once) / max(1, steps)
    out.update(wall=fit_s, cpu=fit_cpu, quality=quality, steps=steps,
               bytes=bytes_, skfed=os.path.dirname(skfed.__file__))
    return out


def run_point(name, method, n, timeout):
    """Run one point in a fresh process; add its peak RSS (MB)."""
    cmd = [sys.executable, __file__, "--point", name, method, str(n)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    start = time.perf_counter()
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.perf_counter() - start > timeout:
            proc.kill()
            pid, status, usage = os.wait4(proc.pid, 0)
            return dict(estimator=name, method=method, n=n,
                        error=f"timeout after {timeout:.0f} s")
        time.sleep(0.2)
    stdout, stderr = proc.stdout.read(), proc.stderr.read()
    proc.returncode = os.waitstatus_to_exitcode(status)
    lines = [ln for ln in stdout.splitlines() if ln.startswith("{")]
    if proc.returncode or not lines:
        return dict(estimator=name, method=method, n=n,
                    error=(stderr.strip().splitlines() or ["?"])[-1][:120])
    out = json.loads(lines[-1])
    out["rss_mb"] = usage.ru_maxrss / 1024.0  # KiB on Linux
    return out


def _fmt(x, spec):
    return "-" if x is None else format(x, spec)


def table(results):
    from _common import text_table

    rows = []
    for r in results:
        if "error" in r:
            rows.append((r["estimator"], r["n"], r["method"], r["error"],
                         *[""] * 8))
            continue
        per_step = r.get("step_bytes")
        rows.append((r["estimator"], f"{r['n']:,}", r["method"],
                     f"{r['wall']:.1f}", f"{r['cpu']:.1f}",
                     f"{r['rss_mb']:.0f}",
                     "-" if r.get("bytes") is None else f"{r['bytes'] / 1e6:,.1f}",
                     "-" if r.get("bytes") is None else f"{r['bytes'] / r['n'] / 1e3:,.1f}",
                     "-" if per_step is None else f"{per_step / 1e6:.3f}",
                     r["steps"], f"{r['quality']:.4f}"))
    return text_table(("estimator", "rows", "method", "wall s", "CPU s",
                       "peak RSS MB", "MB sent", "kB/row", "MB/step", "steps",
                       "quality"), rows)


def ratios(results):
    """Ours over the baseline at each size, and bytes per step against the
    smallest size."""
    from _common import text_table

    by = {(r["estimator"], r["n"], r["method"]): r for r in results
          if "error" not in r}
    rows, first = [], {}
    for (name, n, method), r in sorted(by.items()):
        if method != "ours":
            continue
        base = by.get((name, n, "baseline"))
        per_step = r.get("step_bytes")
        if per_step:
            first.setdefault(name, per_step)
        rows.append((
            name, f"{n:,}",
            "-" if base is None else f"{r['wall'] / max(base['wall'], 1e-9):.1f}",
            "-" if base is None else f"{r['cpu'] / max(base['cpu'], 1e-9):.1f}",
            "-" if base is None else f"{r['rss_mb'] / base['rss_mb']:.2f}",
            "-" if base is None else f"{r['quality'] - base['quality']:+.4f}",
            "-" if not per_step else f"{per_step / first[name]:.2f}"))
    return text_table(("estimator", "rows", "wall x", "CPU x", "RSS x",
                       "quality - baseline", "bytes/step x smallest"), rows)


def defaults_table(results, name="fdskl-default"):
    """FDSKL's defaults by size: the settings chosen, the traffic, the
    accuracy beside random features + SGD, peak memory and time."""
    from _common import text_table

    base = {r["n"]: r for r in results if r["method"] == "baseline"
            and r["estimator"] in FDSKL_PARAMS and "error" not in r}
    ours = sorted((r for r in results if r["estimator"] == name
                   and r["method"] == "ours"), key=lambda r: r["n"])
    rows, first = [], None
    for r in ours:
        if "error" in r:
            rows.append((f"{r['n']:,}", r["error"], *[""] * 11))
            continue
        b = base.get(r["n"])
        first = first or r["step_bytes"]
        setting = ("fresh" if r.get("pool") is None else f"pool {r['pool']}")
        rows.append((
            f"{r['n']:,}", f"{setting}, m {r.get('m')}, B {r.get('batch')}",
            r["steps"], f"{r['step_bytes'] / 1e6:.3f}",
            f"{r['step_bytes'] / first:.2f}", f"{r['bytes'] / 1e6:,.0f}",
            f"{r['quality']:.4f}", "-" if b is None else f"{b['quality']:.4f}",
            "-" if b is None else f"{r['quality'] - b['quality']:+.4f}",
            f"{r['rss_mb']:.0f}", f"{r['cpu']:.1f}", f"{r['wall']:.1f}"))
    return text_table(("rows", "settings", "steps", "MB/step",
                       "x smallest", "MB sent", "accuracy", "RF+SGD acc",
                       "acc - RF+SGD", "peak RSS MB", "CPU s", "wall s"), rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="8000,64000",
                        help="comma-separated row counts (default 8000,64000)")
    parser.add_argument("--estimators", default=",".join(ESTIMATORS),
                        help="fdskl, fdskl-default, fdskl-paper, avfkam, kkm "
                             "(comma-separated)")
    parser.add_argument("--methods", default="ours,baseline")
    parser.add_argument("--timeout", type=float, default=3600.0,
                        help="seconds per point before it is stopped")
    parser.add_argument("--quick", action="store_true",
                        help="2,000 and 8,000 rows")
    parser.add_argument("--point", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.point:
        name, method, n = args.point
        print(json.dumps(_point(name, method, int(n))))
        return
    sizes = [2000, 8000] if args.quick else [int(s) for s in args.sizes.split(",")]
    methods = args.methods.split(",")
    print(f"load average before: {open('/proc/loadavg').read().split()[:3]}")
    results, fdskl_baseline = [], {}
    for name in args.estimators.split(","):
        for n in sizes:
            for method in METHODS[name]:
                if method not in methods:
                    continue
                if name in FDSKL_PARAMS and method == "baseline" \
                        and n in fdskl_baseline:
                    # the FDSKL variants share one table and one baseline
                    r = dict(fdskl_baseline[n], estimator=name)
                else:
                    r = run_point(name, method, n, args.timeout)
                    if name in FDSKL_PARAMS and method == "baseline":
                        fdskl_baseline[n] = r
                results.append(r)
                print(json.dumps(r), flush=True)
    print(f"load average after: {open('/proc/loadavg').read().split()[:3]}")
    print()
    print(table(results))
    print()
    print(ratios(results))
    for name in ("fdskl-default", "fdskl-paper"):
        if any(r["estimator"] == name for r in results):
            print(f"\n{name}: the settings chosen, by size")
            print(defaults_table(results, name))


if __name__ == "__main__":
    _here = os.path.dirname(os.path.abspath(__file__))
    # This checkout's skfed (the parent of benchmarks/), then _common.
    sys.path[:0] = [os.path.dirname(_here), _here]
    main()
