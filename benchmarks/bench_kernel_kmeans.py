"""Benchmark of FederatedKernelKMeans against the paper's comparisons.

Four tables, printed side by side with their baselines:

1. Acceptance sweep, default settings (only ``gamma`` given where the set
   needs it): NMI of the federated estimator (mean and minimum over seeds)
   beside exact centralized kernel k-means (full RBF kernel, top-s
   eigenvectors, KMeans; the paper's CK k-means) and linear KMeans, for 2,
   5 and 8 users, with the iterations the stopping rule ran and the bytes
   of a fit.
2. Communication of DSPGD (the paper's Figure 2): floats uploaded per user
   per iteration with and without CEM on a 5,000-row set, and both NMIs.
3. NMI against communication (Figure 3): FK k-means (CEM), DSPGD without
   CEM, and random-feature k-means (RFK: each user computes D random
   features of its rows, then the same distributed linear k-means), at
   several D. The cost is the paper's: floats uploaded by all users.
4. Convergence (Figure 1): normalised recovery error ||K_t - K_hat||_F^2 / N^2
   of DSPGD with and without CEM, with t * error (bounded for O(1/t)).

Tables 2-4 fix ``n_random_features`` and run ``max_iter`` iterations
(``tol=None``), as the paper's figures do.

Run ``python benchmarks/bench_kernel_kmeans.py [--quick]``.
"""

import argparse
import time

import numpy as np
from sklearn.cluster import KMeans
from sklearn.datasets import (load_digits, load_wine, make_blobs, make_circles,
                              make_moons)
from sklearn.metrics import normalized_mutual_info_score as nmi
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.preprocessing import StandardScaler

from skfed.base import party_seeds
from skfed.cluster import FederatedKernelKMeans, dspgd_uploads
from skfed.cluster._coreset import distributed_kmeans
from skfed.federation import Federation
from skfed.kernel_approximation import RandomFourierBasis
from skfed.partition import HorizontalPartition


def exact_embedding(X, s, gamma):
    w, U = np.linalg.eigh(rbf_kernel(X, gamma=gamma))
    w, U = w[::-1][:s], U[:, ::-1][:, :s]
    return U * np.sqrt(np.maximum(w, 0)), w, U


def exact_kernel_kmeans(X, k, s, gamma):
    H, _, _ = exact_embedding(X, s, gamma)
    return KMeans(k, n_init=10, random_state=0).fit_predict(H)


def paper_gamma(X):
    msd = 2 * (np.mean((X ** 2).sum(1)) - (X.mean(0) ** 2).sum())
    return 1.0 / (2 * msd)


def datasets(quick):
    n = 400 if quick else 1000
    X, y = load_digits(return_X_y=True)
    if quick:
        X, y = X[:600], y[:600]
    X = X / 16.0
    out = {"digits (10 classes)": (X, y, paper_gamma(X))}
    X, y = make_blobs(n, centers=5, cluster_std=1.5, random_state=0)
    out["blobs (5)"] = (X, y, paper_gamma(X))
    X, y = make_circles(n, factor=0.2, noise=0.05, random_state=0)
    out["circles (gamma=5)"] = (X, y, 5.0)
    # Near-equal eigenvalue pairs (the two congruent moons): the stopping
    # rule runs ~100-150 iterations here.
    X, y = make_moons(600, noise=0.05, random_state=0)
    out["moons (gamma=8)"] = (X, y, 8.0)
    X, y = load_wine(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    out["wine (3, scaled)"] = (X, y, paper_gamma(X))
    return out


def _fmt(c):
    if isinstance(c, float):
        return f"{c:.3f}" if c == 0 or abs(c) >= 0.01 else f"{c:.2e}"
    return str(c)


def table(rows, header):
    cells = [[_fmt(c) for c in r] for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(header)]
    print("  ".join(h.rjust(w) for h, w in zip(header, widths)))
    for r in cells:
        print("  ".join(c.rjust(w) for c, w in zip(r, widths)))
    print()


def acceptance(quick):
    print("1. NMI with default settings and gamma given: federated (over seeds) "
          "vs exact kernel k-means vs linear")
    seeds = range(2) if quick else range(4)
    users = (2, 8) if quick else (2, 5, 8)
    rows = []
    for name, (X, y, gamma) in datasets(quick).items():
        k = len(np.unique(y))
        exact = nmi(y, exact_kernel_kmeans(X, k, k, gamma))
        linear = nmi(y, KMeans(k, n_init=10, random_state=0).fit_predict(X))
        for M in users:
            start = time.perf_counter()
            fits = [FederatedKernelKMeans(k, gamma=gamma, partition=M,
                                          random_state=s).fit(X) for s in seeds]
            scores = [nmi(y, km.labels_) for km in fits]
            fed = float(np.mean(scores))
            rows.append((name, M, fed, float(np.min(scores)), exact, linear,
                         fed / exact, float(np.min(scores)) / exact,
                         int(np.mean([km.n_iter_ for km in fits])),
                         fits[0].n_random_features_,
                         np.mean([km.communication_.total_bytes for km in fits]) / 1e6,
                         (time.perf_counter() - start) / len(seeds)))
    table(rows, ["data", "users", "fed NMI", "fed min", "exact CK", "linear",
                 "fed/exact", "min/exact", "n_iter", "D", "MB/fit", "s/fit"])


def communication(quick):
    n = 2000 if quick else 5000
    print(f"2. DSPGD floats uploaded per user per iteration ({n} rows, 5 users)")
    X, y = make_blobs(n, n_features=8, centers=5, cluster_std=2.0, random_state=0)
    rows, result = [], {}
    for cem in (True, False):
        start = time.perf_counter()
        km = FederatedKernelKMeans(5, n_random_features=20, max_iter=10,
                                   tol=None, partition=5, random_state=0,
                                   communication_efficient=cem).fit(X)
        up = dspgd_uploads(km)
        per = np.mean([v for t in up.values() for v in t.values()])
        result[cem] = per
        summary = km.communication_
        rows.append(("CEM" if cem else "no CEM", per, float(km.n_lanczos_iter_.mean()),
                     int(km.ranks_.max()), nmi(y, km.labels_),
                     summary.total_scalars, summary.total_messages,
                     summary.total_bytes, time.perf_counter() - start))
    table(rows, ["variant", "floats/user/iter", "mean Q", "max r_t", "NMI",
                 "all scalars (fit)", "messages", "bytes", "s"])
    print(f"   CEM uploads {100 * (1 - result[True] / result[False]):.1f}% fewer "
          "floats per user per iteration than DSPGD without CEM.\n")


def uploads_total(summary):
    return sum(v["scalars"] for (s, r), v in summary.by_link.items() if r == "server")


def _rfk_features(state, seed, gamma, D):
    state.H = RandomFourierBasis(seed, gamma=gamma).transform(state.X, range(D))


def rfk_kmeans(X, k, M, D, gamma, seed, coreset_size=1000):
    """Random-feature k-means: local features, then distributed linear k-means."""
    part = HorizontalPartition(M).resolve(X)
    seeds = party_seeds(seed, M + 2)
    states = {"server": {"n_rows": [len(part.rows(m)) for m in range(M)]}}
    users = [f"user{m}" for m in range(M)]
    for m, u in enumerate(users):
        states[u] = dict(X=X[part.rows(m)], kmeans_seed=seeds[m])
    with Federation(states) as fed:
        fed.gather(fed[u].call(_rfk_features, seeds[-1], gamma, D) for u in users)
        distributed_kmeans(fed, "server", users, n_clusters=k,
                           coreset_size=coreset_size, seed=seeds[-2])
        labels = fed.gather(fed[u].call(lambda s: s.labels) for u in users)
        summary = fed.summary()
    out = np.empty(len(X), dtype=int)
    for m, lab in enumerate(labels):
        out[part.rows(m)] = lab
    return out, uploads_total(summary)


def nmi_vs_communication(quick):
    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    if quick:
        X, y = X[:800], y[:800]
    k, M = 10, 5
    print(f"3. NMI vs floats uploaded by all users (digits, {len(X)} rows, {M} users)")
    exact = nmi(y, exact_kernel_kmeans(X, k, k, paper_gamma(X)))
    rows = []
    for D in ((12, 25) if quick else (12, 25, 50, 100)):
        for cem in (True, False):
            km = FederatedKernelKMeans(k, n_random_features=D, max_iter=10,
                                       tol=None, partition=M, random_state=0,
                                       communication_efficient=cem).fit(X)
            rows.append(("FK k-means" if cem else "DSPGD no CEM", D,
                         nmi(y, km.labels_), uploads_total(km.communication_)))
    for D in ((50, 200) if quick else (50, 100, 200, 400)):
        labels, up = rfk_kmeans(X, k, M, D, paper_gamma(X), 0)
        rows.append(("RFK k-means", D, nmi(y, labels), up))
    rows = [r + (r[2] / exact,) for r in rows]
    table(rows, ["method", "D", "NMI", "floats uploaded", "NMI/exact"])
    print(f"   exact centralized kernel k-means NMI: {exact:.3f}\n")


def convergence(quick):
    X, _ = make_blobs(400 if quick else 800, centers=4, cluster_std=1.5,
                      random_state=0)
    s, T = 4, (10 if quick else 30)
    gamma = paper_gamma(X)
    _, w, U = exact_embedding(X, s, gamma)
    K_hat = (U * w) @ U.T
    print(f"4. Normalised recovery error ||K_t - K_hat||_F^2 / N^2 (blobs, N={len(X)})")
    errors = {}
    for cem in (True, False):
        errs = {}

        def monitor(t, values, blocks, errs=errs):
            Ut = np.vstack(blocks)[:, :s]
            K_t = (Ut * values[:s]) @ Ut.T
            errs[t] = np.linalg.norm(K_t - K_hat) ** 2 / len(X) ** 2

        km = FederatedKernelKMeans(4, n_components=s, n_random_features=50,
                                   max_iter=T, tol=None, random_state=0,
                                   communication_efficient=cem, partition=4)
        km._monitor = monitor
        km.fit(X)
        errors[cem] = errs
    ts = [t for t in (1, 2, 3, 5, 8, 10, 15, 20, 30) if t <= T]
    rows = [(t, errors[True][t], errors[False][t], t * errors[True][t], 1.0 / t)
            for t in ts]
    table(rows, ["t", "error CEM", "error no CEM", "t * error CEM", "1/t"])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller runs")
    args = parser.parse_args()
    start = time.perf_counter()
    acceptance(args.quick)
    communication(args.quick)
    nmi_vs_communication(args.quick)
    convergence(args.quick)
    print(f"total {time.perf_counter() - start:.0f} s (shared machine, under load)")


if __name__ == "__main__":
    main()
