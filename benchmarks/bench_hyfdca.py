"""HyFDCA against FedAvg at equal outer rounds, and where HyFDCA's time goes.

Reproduces the shape of the paper's comparison (section 5, Figure 3 and 4):

1. For each data set and setting (hybrid 2x2 and 3x2 grids, 50% of the clients
   per round), the relative loss ``(P(w_t) - P*) / P*`` and the test accuracy
   of HyFDCA and of FedAvg lifted to hybrid splits (``benchmarks/_fedavg.py``,
   learning rate and local steps tuned on a small grid by the loss after a
   quarter of the rounds)
   after the same number of outer rounds, with the ratio of relative losses.
   ``P*`` and the centralised accuracy come from liblinear (``LinearSVC``,
   hinge loss, ``C = 1 / (lambda N)``, no intercept, tolerance 1e-10).
   HyFDCA's model after ``t`` rounds is the one its server publishes then
   (the iterate of smallest primal value so far). Protocol runs are
   plaintext (``encryption=None``): identical iterates, encryption changes
   only the time.
2. The time of one HyFDCA fit with Paillier encryption split into the parties'
   encryption/decryption/ciphertext-addition time and the rest, and the
   plaintext run of the same protocol for comparison.

Run::

    python benchmarks/bench_hyfdca.py           # a few minutes
    python benchmarks/bench_hyfdca.py --quick   # < 1 minute
    python benchmarks/bench_hyfdca.py --acceptance   # convergence table
"""

import argparse
import itertools
import time

import numpy as np
from sklearn.datasets import load_breast_cancer, make_classification
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC

from skfed.linear_model import HyFDCAClassifier
from skfed.partition import (HorizontalPartition, HybridPartition,
                             VerticalPartition)

from _fedavg import FedAvgHybrid


def breast_cancer():
    X, y = load_breast_cancer(return_X_y=True)
    return StandardScaler().fit_transform(X), y, 0.1, 10


def classification():
    X, y = make_classification(n_samples=2000, n_features=40,
                               n_informative=15, random_state=0)
    return X, y, 0.1, 20


def sparse_high_dim():
    rng = np.random.RandomState(0)
    X = np.where(rng.rand(600, 2000) < 0.01, rng.randn(600, 2000), 0.0)
    y = (X @ rng.randn(2000) + 0.1 * rng.randn(600) > 0).astype(int)
    return X, y, 0.01, 40


DATASETS = {"breast_cancer": breast_cancer,
            "make_classification": classification,
            "sparse_2000d": sparse_high_dim}

SETTINGS = {"hybrid 2x2": dict(grid=(2, 2), participation=1.0),
            "hybrid 3x2": dict(grid=(3, 2), participation=1.0),
            "2x2, 50% clients": dict(grid=(2, 2), participation=0.5)}


def primal(w, X, s, lam):
    return 0.5 * lam * w @ w + np.maximum(0.0, 1.0 - s * (X @ w)).mean()


def hyfdca_snapshots(X, y, lam, H, grid, participation, checkpoints):
    """Models after each checkpoint round (same seed: identical prefixes)."""
    out = {}
    for t in checkpoints:
        clf = HyFDCAClassifier(HybridPartition(*grid), alpha=lam, max_iter=t,
                               local_iterations=H, participation=participation,
                               tol=None, fit_intercept=False, encryption=None,
                               random_state=0).fit(X, y)
        out[t] = clf.coef_.ravel()
    return out


def fedavg_snapshots(X, s, lam, partition, participation, checkpoints):
    """Tune FedAvg's (a, b, local steps) on the loss after a quarter of the
    rounds, then run the best setting for all of them."""
    def run(params, n_rounds, marks):
        a, b, steps = params
        return FedAvgHybrid(lam, local_steps=steps, a=a, b=b,
                            participation=participation, random_state=0).run(
            X, s, partition, n_rounds, marks)

    tune_rounds = max(1, max(checkpoints) // 4)
    best = None
    for params in itertools.product((0.1, 0.5, 2.0), (1.0, 10.0), (10, 50)):
        final = primal(run(params, tune_rounds, (tune_rounds,))[tune_rounds],
                       X, s, lam)
        if np.isfinite(final) and (best is None or final < best[0]):
            best = (final, params)
    return run(best[1], max(checkpoints), checkpoints), best[1]


def compare(name, make, checkpoints):
    X, y, lam, H = make()
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.25,
                                              random_state=0, stratify=y)
    s_tr = np.where(y_tr == 1, 1.0, -1.0)
    svc = LinearSVC(loss="hinge", C=1 / (lam * len(y_tr)), fit_intercept=False,
                    tol=1e-10, max_iter=200_000).fit(X_tr, y_tr)
    p_star = primal(svc.coef_.ravel(), X_tr, s_tr, lam)
    central_acc = svc.score(X_te, y_te)
    print(f"\n== {name}: {X_tr.shape[0]} train rows x {X.shape[1]} columns, "
          f"lambda={lam}, H={H}; centralised P*={p_star:.6g}, "
          f"test accuracy {central_acc:.4f}")
    for setting, cfg in SETTINGS.items():
        partition = HybridPartition(*cfg["grid"]).resolve(X_tr)
        hy = hyfdca_snapshots(X_tr, y_tr, lam, H, cfg["grid"],
                              cfg["participation"], checkpoints)
        fa, params = fedavg_snapshots(X_tr, s_tr, lam, partition,
                                      cfg["participation"], checkpoints)
        print(f"\n{setting} (FedAvg a={params[0]}, b={params[1]}, "
              f"local steps={params[2]})")
        print(f"{'round':>6} {'HyFDCA rel.loss':>16} {'FedAvg rel.loss':>16} "
              f"{'FedAvg/HyFDCA':>14} {'HyFDCA acc':>11} {'FedAvg acc':>11} "
              f"{'acc/central':>12}")
        for t in checkpoints:
            rel_h = (primal(hy[t], X_tr, s_tr, lam) - p_star) / p_star
            rel_f = (primal(fa[t], X_tr, s_tr, lam) - p_star) / p_star
            acc_h = np.mean((X_te @ hy[t] > 0) == (y_te == 1))
            acc_f = np.mean((X_te @ fa[t] > 0) == (y_te == 1))
            print(f"{t:>6} {rel_h:>16.3e} {rel_f:>16.3e} "
                  f"{rel_f / max(rel_h, 1e-16):>14.3g} {acc_h:>11.4f} "
                  f"{acc_f:>11.4f} {acc_h / central_acc:>12.4f}")


def time_split(key_size, rounds):
    X, y, lam, H = breast_cancer()
    print(f"\n== Time split: breast_cancer, hybrid 2x2, {rounds} round(s) after setup, "
          f"{key_size}-bit Paillier (machine shared with other jobs)")
    print(f"{'run':>26} {'wall s':>9} {'s/round':>9} "
          f"{'party crypto s (summed)':>24} {'ciphertexts':>12}")
    walls, fits = {}, {}
    for label, encryption, packing in (
            ("plaintext", None, False),
            (f"Paillier {key_size} packed", "paillier", True),
            (f"Paillier {key_size} unpacked", "paillier", False)):
        clf = HyFDCAClassifier(HybridPartition(2, 2), alpha=lam, max_iter=rounds,
                               local_iterations=H, tol=None,
                               encryption=encryption, key_size=key_size,
                               packing=packing, random_state=0).fit(X, y)
        walls[label], fits[label] = clf.fit_time_, clf
        print(f"{label:>26} {clf.fit_time_:>9.2f} {clf.fit_time_ / rounds:>9.3f}"
              f" {clf.crypto_time_:>24.2f} {clf.communication_.total_ciphertexts:>12}")
    # Same protocol and messages in every run: the difference of wall times is
    # what encryption costs; the plaintext wall time is everything else.
    for label in list(walls)[1:]:
        overhead = walls[label] - walls["plaintext"]
        print(f"{label}: encryption {overhead:.2f} s ({overhead / walls[label]:.1%}"
              f" of the fit), rest {walls['plaintext']:.2f} s")
    clf = fits[f"Paillier {key_size} packed"]
    comm = clf.communication_
    print(f"\nMessages of the packed encrypted fit: {comm.total_messages}, "
          f"{comm.total_ciphertexts} ciphertexts, {comm.total_bytes / 1e6:.1f} MB")
    print(comm.table())


def acceptance():
    """Relative suboptimality, duality gap and agreement with liblinear on
    the whole of each data set (the issue's acceptance), hinge loss, no
    intercept, plaintext, 600 rounds (the sparse set: 200 rounds, H=40),
    twice as many with 50% participation, H doubled for the cyclic schedule."""
    print("\n== Acceptance: (P(w) - P*) / P* after the rounds, relative duality"
          " gap, and agreement of predictions with liblinear")
    print(f"{'data':<20} {'split':<28} {'rel. subopt':>12} {'rel. gap':>10}"
          f" {'agree':>7}")
    settings = {
        "hybrid 2x2": dict(partition=HybridPartition(2, 2)),
        "hybrid 3x2": dict(partition=HybridPartition(3, 2)),
        "horizontal 3": dict(partition=HorizontalPartition(3)),
        "vertical 3": dict(partition=VerticalPartition(3)),
        "hybrid 2x2, 50% random": dict(partition=HybridPartition(2, 2),
                                       participation=0.5),
        "vertical 4, 50% cyclic": dict(partition=VerticalPartition(4),
                                       participation=0.5, schedule="cyclic"),
    }
    data = {"breast_cancer": (breast_cancer, 0.1, 10, 600),
            "make_classification": (lambda: make_classification(
                n_samples=400, n_features=20, n_informative=10,
                random_state=0) + (0.1, 10), 0.1, 10, 600),
            "sparse_1000d": (lambda: _sparse_small(), 0.01, 40, 200)}
    for name, (make, lam, H, rounds) in data.items():
        X, y = make()[:2]
        s = np.where(y == 1, 1.0, -1.0)
        svc = LinearSVC(loss="hinge", C=1 / (lam * len(y)), fit_intercept=False,
                        tol=1e-10, max_iter=200_000).fit(X, y)
        p_star = primal(svc.coef_.ravel(), X, s, lam)
        for setting, kwargs in settings.items():
            # Half the clients per round: twice the rounds for the same work.
            partial = "50%" in setting
            h = H if "cyclic" not in setting else 2 * H
            clf = HyFDCAClassifier(alpha=lam, max_iter=rounds * (1 + partial),
                                   tol=None,
                                   local_iterations=h, fit_intercept=False,
                                   encryption=None, random_state=0,
                                   **kwargs).fit(X, y)
            rel = (primal(clf.coef_.ravel(), X, s, lam) - p_star) / p_star
            P, D = clf.objective_curve_[-1]
            agree = np.mean(clf.predict(X) == svc.predict(X))
            print(f"{name:<20} {setting:<28} {rel:>12.2e} {(P - D) / P:>10.2e}"
                  f" {agree:>7.4f}")


def _sparse_small():
    rng = np.random.RandomState(0)
    X = np.where(rng.rand(300, 1000) < 0.02, rng.randn(300, 1000), 0.0)
    y = (X @ rng.randn(1000) + 0.1 * rng.randn(300) > 0).astype(int)
    return X, y


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="one data set, fewer rounds, 1024-bit key")
    parser.add_argument("--acceptance", action="store_true",
                        help="only the convergence table of the acceptance")
    args = parser.parse_args()
    start = time.perf_counter()
    if args.acceptance:
        acceptance()
    elif args.quick:
        compare("breast_cancer", breast_cancer, (1, 10, 50, 200))
        time_split(1024, 1)
    else:
        checkpoints = (1, 5, 10, 25, 50, 100, 200, 400)
        for name, make in DATASETS.items():
            compare(name, make, checkpoints)
        time_split(2048, 1)
    print(f"\nTotal benchmark time {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
