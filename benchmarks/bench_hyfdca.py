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

Run::

    python benchmarks/bench_hyfdca.py              # acceptance, timing, audit, FedAvg
    python benchmarks/bench_hyfdca.py --quick      # breast cancer only, 1024-bit timing
    python benchmarks/bench_hyfdca.py --acceptance # only the convergence table
"""

import argparse
import itertools
import os
import sys
import time
import warnings

import numpy as np
from sklearn.datasets import load_breast_cancer, load_digits, make_classification
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC

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
    args = parser.parse_args()
    start = time.perf_counter()
    names = ["breast_cancer"] if args.quick else list(DATASETS)
    everything = not (args.acceptance or args.timing or args.audit
                      or args.fedavg)
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
    print(f"\nTotal benchmark time {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
