"""FDSKL benchmarks: speed and accuracy against centralized kernel machines.

Each table is measured side by side in one run (compare the ratios: the
timings are wall-clock on a shared machine, whose load is printed):

1. ``issue``: issue 19's 3,450 x 6 standardised table, FDSKL defaults with
   1 and 3 parties against the same steps centralized in numpy
   (``_fdskl_numpy.py``), ``SVC`` and ``RBFSampler`` + ``SGDClassifier``,
   with the bytes sent.
2. ``speed``: the same five at 2,000, 10,000, 50,000 and 200,000 rows
   (SVC only up to 50,000: its fit grows between n^2 and n^3).
3. ``sparse``: an rcv1-like CSR table (100,000 x 47,000, density 0.16%)
   over 2 and 4 parties, each holding its block as a sparse matrix.
4. ``acceptance`` (on request): test accuracy (R^2 for regression) of FDSKL
   with 2, 3 and 4 parties against ``SVC(kernel="rbf")`` (``KernelRidge``
   and ``SVR`` for regression) with the same ``gamma`` on small real sets.
5. ``cost`` (on request): fit time and scalars sent after ``t`` steps, with
   the locally saved partial sums (default) and without them
   (``cache_size=0``, the paper's plain loop, whose step cost grows with
   ``t``).

Run ``python benchmarks/bench_fdskl.py`` (the first three tables, a few
minutes on an idle 2-core machine), ``--quick`` for smaller sizes (2,000 and
10,000 rows, 20,000 sparse rows), ``--seeds 3`` to average the acceptance
scores over three seeds, or name the tables, e.g. ``--tables acceptance
cost``.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import argparse
import os
import time

import numpy as np
import scipy.sparse as sp
from sklearn.datasets import (
    load_breast_cancer,
    load_digits,
    make_circles,
    make_classification,
    make_friedman1,
    make_moons,
)
from sklearn.kernel_approximation import RBFSampler
from sklearn.kernel_ridge import KernelRidge
from sklearn.linear_model import SGDClassifier
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler, normalize
from sklearn.svm import SVC, SVR
from threadpoolctl import threadpool_limits

from skfed.kernel_methods import FDSKLClassifier, FDSKLRegressor

from _common import text_table
from _fdskl_numpy import numpy_fdskl


def _split_scaled(X, y, stratify=True, random_state=0):
    Xtr, Xte, ytr, yte = train_test_split(
        X, y, test_size=0.25, random_state=random_state,
        stratify=y if stratify else None)
    scaler = StandardScaler().fit(Xtr)
    return scaler.transform(Xtr), scaler.transform(Xte), ytr, yte


def _rotate4(X):
    Q, _ = np.linalg.qr(np.random.RandomState(0).normal(size=(4, 4)))
    return np.hstack([X, np.zeros((len(X), 2))]) @ Q


def _datasets(quick):
    X, y = load_breast_cancer(return_X_y=True)
    yield "breast_cancer", "clf", X, y
    X, y = load_digits(return_X_y=True)
    yield "digits (>=5)", "clf", X, (y >= 5).astype(int)
    if not quick:
        yield "digits (10)", "clf", X, y
    # Two-column sets are turned by a random rotation into four columns
    # (RBF distances unchanged) so that they can be split over 4 parties.
    X, y = make_moons(800, noise=0.25, random_state=0)
    yield "moons (rotated 4-D)", "clf", _rotate4(X), y
    X, y = make_circles(800, noise=0.1, factor=0.5, random_state=0)
    yield "circles (rotated 4-D)", "clf", _rotate4(X), y
    X, y = make_friedman1(1000, noise=1.0, random_state=0)
    yield "friedman1", "reg", X, y


def acceptance(quick, seeds, only=None):
    rows = []
    for name, task, X, y in _datasets(quick):
        if only and not any(key in name for key in only):
            continue
        Xtr, Xte, ytr, yte = _split_scaled(X, y, stratify=task == "clf")
        gamma = 1.0 / (Xtr.shape[1] * Xtr.var())
        t0 = time.perf_counter()
        if task == "clf":
            base = SVC(kernel="rbf", gamma=gamma).fit(Xtr, ytr).score(Xte, yte)
            base_name = "SVC"
        else:
            krr = KernelRidge(kernel="rbf", gamma=gamma, alpha=0.1)
            krr.fit(Xtr, ytr - ytr.mean())
            base = krr.score(Xte, yte - ytr.mean())
            svr = SVR(gamma=gamma, C=float(np.std(ytr))).fit(Xtr, ytr).score(Xte, yte)
            base_name, base = ("KRR", base) if base >= svr else ("SVR", svr)
        base_time = time.perf_counter() - t0
        for q in ([2, 3] if quick else [2, 3, 4]):
            scores, times = [], []
            for seed in seeds:
                Est = FDSKLClassifier if task == "clf" else FDSKLRegressor
                t0 = time.perf_counter()
                est = Est(partition=q, random_state=seed).fit(Xtr, ytr)
                times.append(time.perf_counter() - t0)
                scores.append(est.score(Xte, yte))
            rows.append((name, q, base_name, f"{base:.3f}", f"{np.mean(scores):.3f}",
                         f"{np.min(scores):.3f}", f"{np.mean(scores) - base:+.3f}",
                         f"{base_time:.2f}", f"{np.mean(times):.2f}"))
            print(" ", rows[-1], flush=True)
    print(f"\nAcceptance: test score, FDSKL defaults (mean and min over seeds "
          f"{list(seeds)}) against the centralized baseline with the same gamma")
    print(text_table(("data", "parties", "baseline", "base score", "FDSKL mean",
                  "FDSKL min", "mean - base", "base s", "FDSKL s"), rows))


def cost_curve(quick):
    X, y = make_classification(2000, 20, n_informative=10, random_state=0)
    X = StandardScaler().fit_transform(X)
    max_iter = 120 if quick else 300
    marks = [t for t in (25, 50, 100, 200, 300) if t <= max_iter]
    rows = []
    results = {}
    for label, cache in [("saved features", 200.0), ("plain loop", 0.0)]:
        stamps = {}
        est = FDSKLClassifier(partition=3, cache_size=cache, random_state=0)
        for t in marks:  # a fit of t steps runs the same first t steps
            est.set_params(max_iter=t)
            t0 = time.perf_counter()
            est.fit(X, y)
            stamps[t] = (time.perf_counter() - t0,
                         est.communication_.total_scalars)
        results[label] = stamps
    for t in marks:
        a, b = results["saved features"][t], results["plain loop"][t]
        rows.append((t, f"{a[0]:.2f}", f"{b[0]:.2f}", f"{b[0] / a[0]:.2f}",
                     f"{a[1] / 1e6:.2f}", f"{b[1] / 1e6:.2f}", f"{b[1] / a[1]:.2f}"))
    print("\nCost: fit time and scalars sent after t steps (2000 rows, 20 "
          "features, 3 parties, batch 256, 32 features per step)")
    print(text_table(("steps t", "saved s", "plain s", "plain/saved", "saved Mscalars",
                  "plain Mscalars", "plain/saved"), rows))


#: CPU seconds (every thread of this process) of the last _timed call: the
#: figure the machine's load does not inflate
_CPU = [0.0]


def _timed(fit, *args):
    t0, c0 = time.perf_counter(), time.process_time()
    out = fit(*args)
    _CPU[0] = time.process_time() - c0
    return out, time.perf_counter() - t0


def _ours(Xtr, ytr, Xte, yte, q, **params):
    est, seconds = _timed(FDSKLClassifier(partition=q, random_state=0,
                                          **params).fit, Xtr, ytr)
    return est, seconds, est.score(Xte, yte)


def _numpy_same_maths(est, Xtr, ytr, Xte, yte, **params):
    # The same steps centralized: as many steps as ours took, its step size,
    # features (fresh or a pool) and gamma, every row a training row (ours
    # may hold out 1,000).
    Y = np.where(ytr == est.classes_[1], 1.0, -1.0)[:, None]
    decision, seconds = _timed(
        lambda: numpy_fdskl(Xtr, Y, n_iter=est.n_iter_,
                            batch_size=est.batch_size_,
                            m=est.n_components_per_iter_,
                            learning_rate=est.learning_rate_, alpha=est.alpha,
                            gamma=est.gamma_, pool=est.pool_size_))
    pred = np.where(decision(Xte)[:, 0] > 0, est.classes_[1], est.classes_[0])
    return seconds, float(np.mean(pred == yte))


def _rbf_sgd(Xtr, ytr, Xte, yte, gamma, n_components=1000):
    model = make_pipeline(RBFSampler(gamma=gamma, n_components=n_components,
                                     random_state=0),
                          SGDClassifier(random_state=0))
    _, seconds = _timed(model.fit, Xtr, ytr)
    return seconds, model.score(Xte, yte)


def _svc(Xtr, ytr, Xte, yte, gamma):
    model, seconds = _timed(SVC(gamma=gamma, cache_size=500).fit, Xtr, ytr)
    return seconds, model.score(Xte, yte)


def _gb(est):
    return est.communication_.total_bytes / 1e9


def issue_table():
    """The 3,450 x 6 standardised table of issue 19 (today: 28.4 s with one
    party, 32.5 s with three, 13.5 GB sent, SVC 0.11 s)."""
    X, y = make_classification(4600, 6, n_informative=4, random_state=0)
    X = StandardScaler().fit_transform(X)
    Xtr, Xte, ytr, yte = X[:3450], X[3450:], y[:3450], y[3450:]
    cpu = {}
    one, t1, a1 = _ours(Xtr, ytr, Xte, yte, 1)
    cpu[1] = _CPU[0]
    three, t3, a3 = _ours(Xtr, ytr, Xte, yte, 3)
    cpu[3] = _CPU[0]
    tn, an = _numpy_same_maths(one, Xtr, ytr, Xte, yte)
    cpu["numpy"] = _CPU[0]
    ts, as_ = _svc(Xtr, ytr, Xte, yte, one.gamma_)
    cpu["svc"] = _CPU[0]
    tr, ar = _rbf_sgd(Xtr, ytr, Xte, yte, one.gamma_)
    cpu["rff"] = _CPU[0]
    rows = [(name, f"{t:.2f}", f"{cpu[k]:.2f}", f"{a:.3f}", gb) for name, k, t, a, gb in [
        ("FDSKL, 1 party", 1, t1, a1, f"{_gb(one):.3f}"),
        ("FDSKL, 3 parties", 3, t3, a3, f"{_gb(three):.3f}"),
        ("same maths, numpy", "numpy", tn, an, "-"),
        ("SVC", "svc", ts, as_, "-"),
        ("RBFSampler(1000)+SGD", "rff", tr, ar, "-")]]
    print("\nIssue 19's table: 3,450 x 6 standardised rows (make_classification,"
          " 1,150 test rows), defaults; before issue 19 the fits took 28.4 s "
          "(1 party) and 32.5 s (3 parties) and sent 13.5 GB")
    print(text_table(("model", "fit s", "CPU s", "test acc", "sent GB"), rows))
    print(f"3 parties / 1 party: {t3 / t1:.2f}x wall, {cpu[3] / cpu[1]:.2f}x CPU; "
          f"1 party / numpy: {t1 / tn:.2f}x wall, {cpu[1] / cpu['numpy']:.2f}x "
          f"CPU; 1 party / SVC: {t1 / ts:.1f}x wall")


#: SVC's fit grows between n^2 and n^3 (kernel rows, SMO passes): past this
#: it takes many minutes, so the speed table leaves it out
SVC_MAX_ROWS = 50_000


def speed(quick):
    sizes = [2_000, 10_000] if quick else [2_000, 10_000, 50_000, 200_000]
    rows = []
    for n in sizes:
        X, y = make_classification(n + 2000, 20, n_informative=10, flip_y=0.05,
                                   random_state=0)
        X = StandardScaler().fit_transform(X)
        Xtr, Xte, ytr, yte = X[:n], X[n:], y[:n], y[n:]
        one, t1, a1 = _ours(Xtr, ytr, Xte, yte, 1)
        c1 = _CPU[0]
        three, t3, a3 = _ours(Xtr, ytr, Xte, yte, 3)
        c3 = _CPU[0]
        tn, an = _numpy_same_maths(one, Xtr, ytr, Xte, yte)
        cn = _CPU[0]
        tr, ar = _rbf_sgd(Xtr, ytr, Xte, yte, one.gamma_)
        if n <= SVC_MAX_ROWS:
            ts, as_ = _svc(Xtr, ytr, Xte, yte, one.gamma_)
            svc = (f"{ts:.2f}", f"{as_:.3f}", f"{t1 / ts:.2f}")
        else:
            svc = ("skipped", "-", "-")
        rows.append((n, f"{one.n_iter_}/{three.n_iter_}", f"{t1:.2f}", f"{t3:.2f}",
                     f"{t3 / t1:.2f}",
                     f"{c3 / c1:.2f}", f"{tn:.2f}", f"{t1 / tn:.2f}",
                     f"{c1 / cn:.2f}", svc[0], svc[2], f"{tr:.2f}",
                     f"{a1:.3f}", f"{a3:.3f}", f"{an:.3f}", svc[1], f"{ar:.3f}",
                     f"{_gb(three):.2f}"))
        print(" ", rows[-1], flush=True)
    print("\nSpeed: n training rows (20 features, 5% flipped labels, 2,000 test "
          "rows), wall seconds and CPU ratios, FDSKL defaults with 1 and 3 "
          "parties, the same maths in numpy "
          "(as many steps as 1 party), SVC and RBFSampler(1000)+SGDClassifier "
          "with the same gamma. Above 10,000 rows early stopping is on, the "
          "defaults run a pool of 2,000 features (batches of 32, 5 epochs; "
          "the numpy loop too), and the "
          "1- and 3-party models (other private directions) may stop at other "
          f"steps. SVC is skipped above {SVC_MAX_ROWS:,} rows: its fit "
          "grows between n^2 and n^3.")
    print(text_table(("n", "steps 1p/3p", "1p s", "3p s", "3p/1p", "CPU 3p/1p", "numpy s",
                  "1p/numpy", "CPU 1p/numpy", "SVC s", "1p/SVC", "RFF+SGD s", "1p acc", "3p acc",
                  "numpy acc", "SVC acc", "RFF+SGD acc", "3p GB"), rows))


def _rcv1_like(n, d=47_000, words=75, seed=0):
    """A text-like CSR table: ``words`` draws per row (density ~0.16% for
    47,000 columns), half from a Zipf vocabulary every row shares and half
    from 500 topic words of the row's class, tf weights normalised to unit
    L2 norm per row (as rcv1's tf-idf rows), 5% of the labels flipped."""
    rng = np.random.RandomState(seed)
    y = rng.randint(0, 2, n)
    topics = np.stack([rng.choice(d, 500, replace=False) for _ in range(2)])
    popularity = np.cumsum(1.0 / (np.arange(d) + 20.0))
    row = np.repeat(np.arange(n), words)
    col = np.searchsorted(popularity, rng.uniform(0, popularity[-1], n * words))
    topical = rng.rand(n * words) < 0.5
    col[topical] = topics[y[row[topical]], rng.randint(0, 500, topical.sum())]
    X = sp.csr_matrix((rng.exponential(size=n * words), (row, col)), shape=(n, d))
    X.sum_duplicates()
    flip = rng.rand(n) < 0.05
    y[flip] = 1 - y[flip]
    return normalize(X), y


def sparse(quick):
    n = 20_000 if quick else 100_000
    X, y = _rcv1_like(n + 5000)
    Xtr, Xte, ytr, yte = X[:n], X[n:], y[:n], y[n:]
    # Early stopping off: with max_iter=100 it checks every step and its
    # patience (10 checks) ends the fit after about 10 steps here. The
    # paper's fresh features (n_components=None, batches of 256) at any n.
    params = dict(max_iter=100, n_components_per_iter=16, early_stopping=False,
                  n_components=None, batch_size=256)
    rows, times = [], {}
    for q in (2, 4):
        est, seconds, acc = _ours(Xtr, ytr, Xte, yte, q, **params)
        times[q] = seconds
        rows.append((f"FDSKL, {q} parties", f"{seconds:.2f}", f"{_CPU[0]:.2f}",
                     f"{acc:.3f}", f"{_gb(est):.3f}"))
        print(" ", rows[-1], flush=True)
    tn, an = _numpy_same_maths(est, Xtr, ytr, Xte, yte)
    rows.append(("same maths, numpy", f"{tn:.2f}", f"{_CPU[0]:.2f}", f"{an:.3f}",
                 "-"))
    tr, ar = _rbf_sgd(Xtr, ytr, Xte, yte, est.gamma_)
    rows.append(("RBFSampler(1000)+SGD", f"{tr:.2f}", f"{_CPU[0]:.2f}",
                 f"{ar:.3f}", "-"))
    linear, tl = _timed(SGDClassifier(random_state=0).fit, Xtr, ytr)
    rows.append(("linear SGD (raw)", f"{tl:.2f}", f"{_CPU[0]:.2f}",
                 f"{linear.score(Xte, yte):.3f}", "-"))
    print(f"\nSparse: rcv1-like {n:,} x 47,000 CSR, density 0.16% "
          "(5,000 test rows); FDSKL with max_iter=100, 16 features per step "
          "(1,600 features), early_stopping=False; each party's block a CSR "
          "matrix")
    print(text_table(("model", "fit s", "CPU s", "test acc", "sent GB"), rows))
    print(f"4 parties / 2 parties: {times[4] / times[2]:.2f}x; "
          f"2 parties / numpy: {times[2] / tn:.2f}x")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--tables", nargs="*",
                        default=["issue", "speed", "sparse"])
    parser.add_argument("--seeds", type=int, default=None)
    parser.add_argument("--data", nargs="*", default=None,
                        help="acceptance data sets to run (name substrings)")
    args = parser.parse_args()
    seeds = range(args.seeds or 1)
    print("Timings are wall-clock on a shared machine; compare the ratios. "
          "Load average at start: %.1f %.1f %.1f" % os.getloadavg())
    # One BLAS thread for every model (FDSKL sets it in each party thread),
    # so that numpy, RFF+SGD and FDSKL compare on equal terms.
    with threadpool_limits(limits=1, user_api="blas"):
        _run(args, seeds)
    print("Load average at end: %.1f %.1f %.1f" % os.getloadavg())


def _run(args, seeds):
    if "acceptance" in args.tables:
        acceptance(args.quick, seeds, args.data)
    if "cost" in args.tables:
        cost_curve(args.quick)
    if "issue" in args.tables:
        issue_table()
    if "speed" in args.tables:
        speed(args.quick)
    if "sparse" in args.tables:
        sparse(args.quick)


if __name__ == "__main__":
    main()
