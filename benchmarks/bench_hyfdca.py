"""HyFDCA: convergence with defaults, where its time goes, what the server
can reconstruct, and the comparison with FedAvg at equal outer rounds.

1. ``--acceptance`` (the default run starts with it): default settings
   (2 x 2 grid, one local pass per round, line search, ``tol=1e-3``) on
   three standardised tables (breast cancer, ``make_classification``
   5,000 x 50, digits odd/even) at ``alpha`` 1e-2 and 1e-3, with and without
   intercept, and 50% partial participation (random and cyclic). Printed:
   rounds, the relative primal gap ``(P(w) - P_ref) / P_ref`` against
   liblinear (``LinearSVC``, hinge, ``C = 1 / (alpha N)``, the intercept a
   regularised constant column in both) and against the optimum of the same
   objective (the best of liblinear and a long sequential dual coordinate
   ascent: liblinear stops above it on some tables), the agreement of
   predictions with liblinear, whether a ConvergenceWarning was raised, and
   the plaintext fit time. Protocol runs are plaintext (``encryption=None``):
   the encrypted mode runs the same iterates (its fixed-point scale comes
   from the data), only slower.
2. ``--timing``: the encrypted default fit (2048-bit Paillier) on breast
   cancer (with ``--full`` also on the 5,000 x 50 table): wall time, the
   parties' crypto time, rounds and ``communication_`` by phase.
3. ``--audit``: ``skfed.privacy.audit`` of default fits (row_reconstruction:
   the server's best reconstruction of a client's row, against chance).
4. ``--fedavg``: the relative loss of HyFDCA and of FedAvg lifted to hybrid
   splits (``benchmarks/_fedavg.py``, learning rate and local steps tuned on
   a small grid) after the same number of outer rounds.
5. ``--sparse``: a generated rcv1-like table (47,236 columns, density
   0.16%, unit-norm rows, Zipf-like column popularity): the CSR fit at
   20,000 rows (2x2 grid and 2 and 4 clients holding whole rows) against
   ``LinearSVC`` on the same CSR matrix (time, primal gap, test accuracy;
   a dense copy would take 7.6 GB), and the same fit on CSR and on a dense
   copy at 3,000 x 4,724 (fit time, largest coefficient difference).
6. ``--weights``: ``sample_weight`` on an imbalanced table (balanced
   class weights times random row weights): rounds, time, the relative gap
   to liblinear's optimum of the same weighted objective (``C = 1 /
   (alpha S)``, ``S`` the total weight), prediction agreement, and the fit
   on integer weights against the fit on repeated rows.
7. ``--schemes``: HyFDCA with defaults on a standardised 2,000 x 20
   ``make_classification`` table with ``encryption=None``, ``"paillier"``
   and ``"ou"`` (2048-bit keys): rounds, process CPU (with reaped forked
   workers) and wall, CPU seconds and counts of raw encryptions and
   decryptions, the CPU ratio to the plaintext fit, and the largest
   coefficient difference from it; median of three fits of each, taken
   in turn.

Run::

    python benchmarks/bench_hyfdca.py              # acceptance, timing, audit, FedAvg
    python benchmarks/bench_hyfdca.py --quick      # breast cancer only, 1024-bit timing
    python benchmarks/bench_hyfdca.py --acceptance # only the convergence table
    python benchmarks/bench_hyfdca.py --sparse --weights
    python benchmarks/bench_hyfdca.py --schemes    # Paillier/OU CPU vs plaintext
    python benchmarks/bench_hyfdca.py --sparse --sparse-rows 100000  # issue's size
"""

import argparse
import itertools
import os
import sys
import time
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.datasets import load_breast_cancer, load_digits, make_classification
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC
from sklearn.utils.class_weight import compute_sample_weight

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _convergence_hyfdca import central_optimum, primal_objective  # noqa: E402
from _fedavg import FedAvgHybrid  # noqa: E402

from skfed import config_context  # noqa: E402
from skfed.linear_model import HyFDCAClassifier  # noqa: E402
from skfed.partition import (HorizontalPartition, HybridPartition,  # noqa: E402
                             VerticalPartition)


def breast_cancer():
    X, y = load_breast_cancer(return_X_y=True)
    return StandardScaler().fit_transform(X), y


def classification_5000x50():
    X, y = make_classification(n_samples=5000, n_features=50,
                               n_informative=10, random_state=0)
    return StandardScaler().fit_transform(X), y


def digits_odd_even():
    X, y = load_digits(return_X_y=True)
    return StandardScaler().fit_transform(X), y % 2


DATASETS = {"breast_cancer": breast_cancer,
            "make_classification 5000x50": classification_5000x50,
            "digits odd/even": digits_odd_even}


def liblinear_hinge(X, y, lam, fit_intercept):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return LinearSVC(loss="hinge", C=1 / (lam * len(y)),
                         fit_intercept=fit_intercept, intercept_scaling=1.0,
                         tol=1e-10, max_iter=200_000, random_state=0).fit(X, y)


def acceptance(names):
    """The issue's acceptance table (see the module docstring)."""
    print("\n== Defaults (2x2 grid, one local pass, line search, tol=1e-3); "
          "relative primal gap to liblinear and to the optimum")
    header = (f"{'data':<28} {'alpha':>6} {'icpt':>5} {'setting':<22} "
              f"{'rounds':>6} {'gap/liblin':>11} {'gap/opt':>9} "
              f"{'agree':>6} {'warn':>5} {'s':>6}")
    print(header)
    settings = {"full participation": {},
                "50% random": {"participation": 0.5},
                "50% cyclic": {"participation": 0.5, "schedule": "cyclic"}}
    for name in names:
        X, y = DATASETS[name]()
        for lam, icpt in itertools.product((1e-2, 1e-3), (True, False)):
            svc = liblinear_hinge(X, y, lam, icpt)
            p_lib = primal_objective(X, y, svc.coef_.ravel(),
                                     float(svc.intercept_[0]) if icpt else 0.0,
                                     lam, "hinge")
            p_opt = min(p_lib, central_optimum(X, y, lam, "hinge", icpt))
            for setting, extra in settings.items():
                if setting != "full participation" and not icpt:
                    continue  # partial participation: with intercept only
                start = time.perf_counter()
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always", ConvergenceWarning)
                    clf = HyFDCAClassifier(alpha=lam, fit_intercept=icpt,
                                           encryption=None, random_state=0,
                                           **extra).fit(X, y)
                seconds = time.perf_counter() - start
                p = primal_objective(X, y, clf.coef_.ravel(),
                                     float(clf.intercept_[0]), lam, "hinge")
                warned = any(issubclass(w.category, ConvergenceWarning)
                             for w in caught)
                agree = np.mean(clf.predict(X) == svc.predict(X))
                print(f"{name:<28} {lam:>6g} {str(icpt):>5} {setting:<22} "
                      f"{clf.n_iter_:>6} {(p - p_lib) / p_lib:>11.2e} "
                      f"{(p - p_opt) / p_opt:>9.2e} {agree:>6.3f} "
                      f"{'yes' if warned else 'no':>5} {seconds:>6.1f}",
                      flush=True)


def timing(names, key_size):
    """Encrypted default fits: where the time goes."""
    for name in names:
        X, y = DATASETS[name]()
        print(f"\n== Encrypted default fit: {name}, {key_size}-bit Paillier, "
              "2x2 grid (machine shared with other jobs)")
        with config_context(allow_insecure_keys=key_size < 1024):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                clf = HyFDCAClassifier(key_size=key_size,
                                       random_state=0).fit(X, y)
        plain = HyFDCAClassifier(encryption=None, random_state=0).fit(X, y)
        comm = clf.communication_
        print(f"rounds {clf.n_iter_}, wall {clf.fit_time_:.1f} s "
              f"({clf.fit_time_ / clf.n_iter_:.3f} s/round), crypto time "
              f"summed over parties {clf.crypto_time_:.1f} s; plaintext run "
              f"{plain.fit_time_:.1f} s; max |coef - plaintext coef| "
              f"{np.max(np.abs(clf.coef_ - plain.coef_)):.2e}")
        print(f"messages {comm.total_messages}, ciphertexts "
              f"{comm.total_ciphertexts}, {comm.total_bytes / 1e6:.1f} MB; "
              f"per round {comm.total_messages / clf.n_iter_:.0f} messages, "
              f"{comm.total_bytes / clf.n_iter_ / 1e3:.0f} kB")
        print(comm.table())


def _cpu_seconds():
    """CPU of this process and of its reaped children (forked workers)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


class _CryptoCPU:
    """Thread CPU seconds in the keys' raw encryption and decryption (the
    benchmark's own instrumentation: it wraps the private keys' methods)."""

    def __init__(self):
        import functools
        import threading

        from skfed.crypto import OUPrivateKey, PaillierPrivateKey

        self.seconds = {"encrypt": 0.0, "decrypt": 0.0}
        self.calls = {"encrypt": 0, "decrypt": 0}
        self._lock = threading.Lock()
        self._saved = []
        for cls in (PaillierPrivateKey, OUPrivateKey):
            for name, kind in (("raw_encrypt", "encrypt"),
                               ("raw_decrypt", "decrypt")):
                original = getattr(cls, name)

                def timed(*args, _f=original, _k=kind, **kwargs):
                    start = time.thread_time()
                    try:
                        return _f(*args, **kwargs)
                    finally:
                        with self._lock:
                            self.seconds[_k] += time.thread_time() - start
                            self.calls[_k] += len(np.ravel(args[1]))

                setattr(cls, name, functools.wraps(original)(timed))
                self._saved.append((cls, name, original))

    def close(self):
        for cls, name, original in self._saved:
            setattr(cls, name, original)


def schemes_table(n_rows=2000, n_features=20, repeats=3):
    """HyFDCA with defaults (2x2 grid, 2048-bit keys, tol=1e-3) on a
    standardised make_classification table: process CPU (time.process_time
    plus reaped children) and wall of encryption=None, "paillier" and "ou",
    rounds, the CPU in raw encryption and decryption, and the ratio to the
    plaintext CPU. Every scheme is fitted ``repeats`` times in turn (None,
    paillier, ou, None, ...) and the median fit of each is shown (CPU range
    beside it), so that a load change hits all three alike; the ratio is of
    medians. Each encrypted fit generates its key; the first OU and
    Paillier fits also build the key owner's tables."""
    X, y = make_classification(n_samples=n_rows, n_features=n_features,
                               random_state=0)
    X = StandardScaler().fit_transform(X)
    print(f"\n== Encryption schemes: HyFDCA defaults, {n_rows} x {n_features}, "
          f"2x2 grid, 2048-bit keys, median of {repeats} fits each "
          "(CPU: process + reaped children)")
    print(f"load before: {open('/proc/loadavg').read().split()[:3]}")
    schemes = (None, "paillier", "ou")
    runs = {encryption: [] for encryption in schemes}
    for _ in range(repeats):
        for encryption in schemes:
            probe = _CryptoCPU()
            cpu, wall = _cpu_seconds(), time.perf_counter()
            clf = HyFDCAClassifier(encryption=encryption,
                                   random_state=0).fit(X, y)
            runs[encryption].append((_cpu_seconds() - cpu,
                                     time.perf_counter() - wall, clf, probe))
            probe.close()
    print(f"{'encryption':>10} {'rounds':>6} {'CPU s':>7} {'CPU range':>11} "
          f"{'wall s':>7} {'enc CPU':>8} {'#enc':>6} {'dec CPU':>8} "
          f"{'#dec':>6} {'x plain':>8} {'max|dcoef|':>10}")
    plain, base = None, None
    for encryption in schemes:
        ordered = sorted(runs[encryption], key=lambda r: r[0])
        cpu, wall, clf, probe = ordered[len(ordered) // 2]
        if encryption is None:
            plain, base = clf, cpu
        span = f"{ordered[0][0]:.2f}-{ordered[-1][0]:.2f}"
        print(f"{str(encryption):>10} {clf.n_iter_:>6} {cpu:>7.2f} {span:>11} "
              f"{wall:>7.2f} {probe.seconds['encrypt']:>8.2f} "
              f"{probe.calls['encrypt']:>6} {probe.seconds['decrypt']:>8.2f} "
              f"{probe.calls['decrypt']:>6} {cpu / base:>8.1f} "
              f"{np.max(np.abs(clf.coef_ - plain.coef_)):>10.1e}", flush=True)
    print(f"load after: {open('/proc/loadavg').read().split()[:3]}")


def privacy_audit():
    """row_reconstruction on default fits (small key: the attack does not
    depend on it)."""
    from skfed.privacy import audit

    print("\n== What the server reconstructs (row_reconstruction; lower is a "
          "better attack; chance: random aggregates of the victim's rows)")
    X40, y40 = make_classification(400, 40, n_informative=12, random_state=0)
    X40 = StandardScaler().fit_transform(X40)
    data = {"breast_cancer": breast_cancer(),
            "make_classification 400x40": (X40, y40)}
    cases = {"hybrid 2x2": dict(partition=HybridPartition(2, 2)),
             "horizontal 3": dict(partition=HorizontalPartition(3)),
             "vertical 3 (one client per column group)": dict(
                 partition=VerticalPartition(3)),
             "horizontal 3, local_iterations=1": dict(
                 partition=HorizontalPartition(3), local_iterations=1,
                 max_iter=50, tol=None)}
    with config_context(allow_insecure_keys=True):
        for dname, (X, y) in data.items():
            for cname, params in cases.items():
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    report = audit(HyFDCAClassifier(key_size=512,
                                                    random_state=0, **params),
                                   X, y)
                table = report.attacks
                for metric in ("relative_error", "direction_error"):
                    rows = table[table.metric == metric]
                    print(f"{dname:<28} {cname:<42} {metric:<16} min "
                          f"{rows.value.min():.2f} (chance {rows.chance.min():.2f})"
                          f" mean {rows.value.mean():.2f} (chance "
                          f"{rows.chance.mean():.2f}); violations "
                          f"{len(report.violations)}", flush=True)


def fedavg_comparison(checkpoints=(1, 5, 10, 25, 50, 100, 200)):
    """Relative loss after t rounds: HyFDCA (defaults, tol=None) and FedAvg
    lifted to the hybrid 2x2 split, breast cancer, alpha=1e-2, no intercept."""
    X, y = breast_cancer()
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.25,
                                              random_state=0, stratify=y)
    lam = 1e-2
    s_tr = np.where(y_tr == 1, 1.0, -1.0)
    p_star = central_optimum(X_tr, y_tr, lam, "hinge", fit_intercept=False)
    print(f"\n== HyFDCA and FedAvg at equal rounds (breast cancer train, "
          f"2x2, alpha={lam}, no intercept; P*={p_star:.6g})")
    partition = HybridPartition(2, 2).resolve(X_tr)

    def fedavg(params, rounds, marks):
        a, b, steps = params
        return FedAvgHybrid(lam, local_steps=steps, a=a, b=b,
                            participation=1.0, random_state=0).run(
            X_tr, s_tr, partition, rounds, marks)

    def loss(w):
        return 0.5 * lam * w @ w + np.maximum(0, 1 - s_tr * (X_tr @ w)).mean()

    tune = max(checkpoints) // 4
    best = min(itertools.product((0.1, 0.5, 2.0), (1.0, 10.0), (10, 50)),
               key=lambda p: np.nan_to_num(loss(fedavg(p, tune, (tune,))[tune]),
                                           nan=np.inf))
    fa = fedavg(best, max(checkpoints), checkpoints)
    print(f"{'round':>6} {'HyFDCA rel.loss':>16} {'FedAvg rel.loss':>16} "
          f"{'HyFDCA acc':>11} {'FedAvg acc':>11}")
    for t in checkpoints:
        hy = HyFDCAClassifier(alpha=lam, max_iter=t, tol=None,
                              fit_intercept=False, encryption=None,
                              random_state=0).fit(X_tr, y_tr).coef_.ravel()
        print(f"{t:>6} {(loss(hy) - p_star) / p_star:>16.3e} "
              f"{(loss(fa[t]) - p_star) / p_star:>16.3e} "
              f"{np.mean((X_te @ hy > 0) == (y_te == 1)):>11.4f} "
              f"{np.mean((X_te @ fa[t] > 0) == (y_te == 1)):>11.4f}")


def rcv1_like(n_samples, n_features=47_236, density=0.0016, seed=0):
    """A sparse table shaped like rcv1: unit-norm rows of positive entries
    (tf-idf-like), Zipf-like column popularity, labels from a linear rule on
    the most frequent 2% of the columns, with 5% label noise."""
    rng = np.random.RandomState(seed)
    popularity = 1.0 / np.arange(1, n_features + 1) ** 0.8
    popularity = rng.permutation(popularity / popularity.sum())
    per_row = rng.poisson(density * n_features, n_samples) + 1
    rows = np.repeat(np.arange(n_samples), per_row)
    cols = rng.choice(n_features, size=len(rows), p=popularity)
    X = sp.csr_matrix((rng.exponential(size=len(rows)), (rows, cols)),
                      shape=(n_samples, n_features))
    X.sum_duplicates()
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    X = sp.csr_matrix(sp.diags(1.0 / np.maximum(norms, 1e-12)) @ X)
    # topics: the label depends on the 2% most frequent columns
    w = rng.normal(size=n_features) * (popularity >= np.quantile(popularity,
                                                                 0.98))
    score = X @ w
    y = (score > np.median(score)).astype(int)
    flip = rng.uniform(size=n_samples) < 0.05
    y[flip] = 1 - y[flip]
    return X, y


def _hinge_primal(X, y, w, b, lam, s=None):
    s = np.ones(len(y)) if s is None else s
    m = np.where(y == 1, 1.0, -1.0) * (X @ w + b)
    return 0.5 * lam * (w @ w + b * b) + np.sum(s * np.maximum(0, 1 - m)) / s.sum()


def _liblinear(X, y, lam, s=None):
    total = len(y) if s is None else s.sum()
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        svc = LinearSVC(loss="hinge", C=1 / (lam * total), tol=1e-6,
                        max_iter=100_000, random_state=0).fit(
            X, y, sample_weight=s)
    return svc, time.perf_counter() - start


def sparse_input(n_rows=20_000, lam=1e-3):
    """CSR fits on an rcv1-like table, against liblinear and a dense copy."""
    X, y = rcv1_like(n_rows + 5_000)
    X, X_te, y, y_te = X[:n_rows], X[n_rows:], y[:n_rows], y[n_rows:]
    print(f"\n== Sparse input: rcv1-like {X.shape[0]} x {X.shape[1]}, "
          f"density {X.nnz / np.prod(X.shape):.2%} ({X.nnz} stored values; "
          f"dense would be {np.prod(X.shape) * 8 / 1e9:.1f} GB), alpha={lam}, "
          "plaintext protocol, tol=1e-3")
    svc, t_svc = _liblinear(X, y, lam)
    p_svc = _hinge_primal(X, y, svc.coef_.ravel(), svc.intercept_[0], lam)
    print(f"{'fit':<34} {'rounds':>6} {'s':>7} {'gap/liblin':>11} "
          f"{'test acc':>8}")
    print(f"{'LinearSVC (liblinear, CSR)':<34} {'':>6} {t_svc:>7.1f} "
          f"{0.0:>11.2e} {svc.score(X_te, y_te):>8.4f}", flush=True)
    for label, partition in (("HyFDCA CSR, hybrid 2x2", HybridPartition(2, 2)),
                             ("HyFDCA CSR, 2 clients, whole rows",
                              HorizontalPartition(2)),
                             ("HyFDCA CSR, 4 clients, whole rows",
                              HorizontalPartition(4))):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            clf = HyFDCAClassifier(partition, alpha=lam, encryption=None,
                                   random_state=0).fit(X, y)
        p = _hinge_primal(X, y, clf.coef_.ravel(), clf.intercept_[0], lam)
        print(f"{label:<34} {clf.n_iter_:>6} {clf.fit_time_:>7.1f} "
              f"{(p - p_svc) / p_svc:>11.2e} {clf.score(X_te, y_te):>8.4f}"
              + ("  (ConvergenceWarning)" if caught else ""), flush=True)
    Xs, ys = rcv1_like(3_000, n_features=4_724, density=0.016, seed=1)
    print(f"\n-- the same fit on CSR and on a dense copy, {Xs.shape[0]} x "
          f"{Xs.shape[1]}, density {Xs.nnz / np.prod(Xs.shape):.2%}, "
          "hybrid 2x2, alpha=1e-3")
    fits = {}
    for label, data in (("CSR", Xs), ("dense", Xs.toarray())):
        start = time.perf_counter()
        fits[label] = HyFDCAClassifier(HybridPartition(2, 2), alpha=1e-3,
                                       encryption=None, random_state=0).fit(
            data, ys)
        print(f"{label:<6} rounds {fits[label].n_iter_}, fit "
              f"{time.perf_counter() - start:.2f} s (protocol "
              f"{fits[label].fit_time_:.2f} s)", flush=True)
    print("max |coef CSR - coef dense| "
          f"{np.max(np.abs(fits['CSR'].coef_ - fits['dense'].coef_)):.2e}")


def weights(lam=1e-3):
    """sample_weight on an imbalanced table, against weighted liblinear."""
    X, y = make_classification(n_samples=5000, n_features=50, n_informative=10,
                               weights=[0.9], random_state=0)
    X = StandardScaler().fit_transform(X)
    rng = np.random.RandomState(0)
    s = compute_sample_weight("balanced", y) * rng.uniform(0.5, 2.0, len(y))
    print(f"\n== sample_weight: make_classification 5000x50, 10% positives, "
          f"balanced class weights x uniform(0.5, 2) row weights, alpha={lam}, "
          "2x2 grid, plaintext, tol=1e-3")
    print(f"{'fit':<38} {'rounds':>6} {'s':>6} {'gap/liblin':>11} "
          f"{'agree':>6} {'recall+':>7}")
    svc, t_svc = _liblinear(X, y, lam, s)
    p_svc = _hinge_primal(X, y, svc.coef_.ravel(), svc.intercept_[0], lam, s)
    print(f"{'LinearSVC weighted':<38} {'':>6} {t_svc:>6.2f} {0.0:>11.2e} "
          f"{1.0:>6.3f} {np.mean(svc.predict(X)[y == 1] == 1):>7.3f}")
    plain, t_plain = _liblinear(X, y, lam)
    p = _hinge_primal(X, y, plain.coef_.ravel(), plain.intercept_[0], lam, s)
    print(f"{'LinearSVC unweighted':<38} {'':>6} {t_plain:>6.2f} "
          f"{(p - p_svc) / p_svc:>11.2e} "
          f"{np.mean(plain.predict(X) == svc.predict(X)):>6.3f} "
          f"{np.mean(plain.predict(X)[y == 1] == 1):>7.3f}")
    for label, weight in (("HyFDCA weighted", s), ("HyFDCA unweighted", None)):
        clf = HyFDCAClassifier(alpha=lam, encryption=None,
                               random_state=0).fit(X, y, sample_weight=weight)
        p = _hinge_primal(X, y, clf.coef_.ravel(), clf.intercept_[0], lam, s)
        print(f"{label:<38} {clf.n_iter_:>6} {clf.fit_time_:>6.2f} "
              f"{(p - p_svc) / p_svc:>11.2e} "
              f"{np.mean(clf.predict(X) == svc.predict(X)):>6.3f} "
              f"{np.mean(clf.predict(X)[y == 1] == 1):>7.3f}", flush=True)
    k = rng.randint(1, 4, size=len(y))
    a = HyFDCAClassifier(alpha=lam, encryption=None, tol=1e-6, max_iter=5000,
                         random_state=0).fit(X, y, sample_weight=k)
    b = HyFDCAClassifier(alpha=lam, encryption=None, tol=1e-6, max_iter=5000,
                         random_state=0).fit(np.repeat(X, k, 0), np.repeat(y, k))
    print(f"integer weights 1-3 vs repeated rows ({k.sum()} rows), tol=1e-6: "
          f"{a.n_iter_} vs {b.n_iter_} rounds, {a.fit_time_:.2f} vs "
          f"{b.fit_time_:.2f} s, max |coef diff| "
          f"{np.max(np.abs(a.coef_ - b.coef_)):.2e}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="breast cancer only; 1024-bit timing")
    parser.add_argument("--full", action="store_true",
                        help="also time the encrypted 5000 x 50 fit")
    parser.add_argument("--acceptance", action="store_true")
    parser.add_argument("--timing", action="store_true")
    parser.add_argument("--audit", action="store_true")
    parser.add_argument("--fedavg", action="store_true")
    parser.add_argument("--sparse", action="store_true")
    parser.add_argument("--weights", action="store_true")
    parser.add_argument("--schemes", action="store_true",
                        help="CPU of encryption=None/'paillier'/'ou' at "
                             "2,000 x 20 with defaults, ratios to plaintext")
    parser.add_argument("--sparse-rows", type=int, default=20_000,
                        help="training rows of the rcv1-like table")
    args = parser.parse_args()
    start = time.perf_counter()
    names = ["breast_cancer"] if args.quick else list(DATASETS)
    everything = not (args.acceptance or args.timing or args.audit
                      or args.fedavg or args.sparse or args.weights
                      or args.schemes)
    if args.acceptance or everything:
        acceptance(names)
    if args.timing or everything:
        timing(["breast_cancer"] + (["make_classification 5000x50"]
                                    if args.full else []),
               1024 if args.quick else 2048)
    if args.audit or everything:
        privacy_audit()
    if args.fedavg or everything:
        fedavg_comparison()
    if args.sparse or everything:
        sparse_input(args.sparse_rows)
    if args.weights or everything:
        weights()
    if args.schemes or everything:
        schemes_table()
    print(f"\nTotal benchmark time {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
