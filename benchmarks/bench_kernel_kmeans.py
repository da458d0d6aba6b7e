"""Benchmark of FederatedKernelKMeans against the paper's comparisons.

Nine tables, printed side by side with their baselines:

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
5. The threshold lambda (issue 35): how often the first iteration's
   estimate puts it above the ``(s+1)``-th and the ``s``-th eigenvalue of the
   kernel, with the paper's rule and with ``threshold="auto"``, over draws
   of the first iteration's features at the default ``D``; then the moons
   of issue 35 (1,000 rows, three users) fitted with both rules.
6. The refinement (issue 35, skfed's, not the paper's): NMI of the paper's
   clustering (``refine=None``), of one center update (``refine="once"``,
   the default) and of Lloyd to its end (``refine="auto"``; Lloyd's k-means
   on the out-of-sample random features from the embedding's labels) over
   seeds 0-2, beside exact kernel k-means and sklearn's KMeans on the same
   random features (and on X), with the DSPGD iterations, the Lloyd
   iterations and the bytes of the three fits.
7. What the refinement's totals tell (``refinement_differences``, the
   audit's attack on consecutive totals): the share of each victim's moved
   rows that the server and the other users recover within 0.1 of the
   data's scale, their mean error in that scale, and chance (as many
   uniform guesses in the data's range), on issue 35's moons (seeds 0-2)
   and the digits of table 6 (seed 0).
8. What one release of the totals tells (``totals_inversion``, default
   fits: ``refine="once"`` releases the totals once): per attacker and victim,
   the share of the victim's rows with a guess within 0.1 of the data's
   scale, the share with a guess of their own (matched, one guess per
   row), the mean error, each beside both no-message baselines (as many
   uniform guesses as the others' rows, and the attacker's own rows), on
   issue 35's moons (IID, seeds 0-2; and split by terciles of the first
   coordinate, seed 0) and the digits of table 6 (seed 0); the server
   holds no totals (one row, mean over victims).
9. What the published out-of-sample map tells (``map_inversion``, default
   fits, seed 0 of table 8's sets): the same measures for each user and
   for the server, which publishes the map and, with the default
   ``party_keys="random_state"``, derives the features' key.

Tables 2-4 fix ``n_random_features``, run ``max_iter`` iterations
(``tol=None``) and use the paper's threshold and clustering
(``refine=None``), as the paper's figures do; tables 1 and 5 measure the
paper's clustering too (table 1 with the other defaults, table 5 comparing
the threshold rules); table 6 adds the refinement.

Run ``python benchmarks/bench_kernel_kmeans.py [--quick] [--only 1 5 6 7 8 9]``.
"""

import argparse
import time
import warnings

import numpy as np
from sklearn.cluster import KMeans
from sklearn.datasets import (load_digits, load_wine, make_blobs, make_circles,
                              make_moons)
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import normalized_mutual_info_score as nmi
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from skfed.base import party_seeds
from skfed.cluster import FederatedKernelKMeans, dspgd_uploads
from skfed.cluster._attacks import inversion_scores, map_inversion_scores
from skfed.cluster._coreset import distributed_kmeans
from skfed.cluster._dspgd import choose_lambda, lambda_margin, oos_seed
from skfed.cluster._estimator import auto_random_features
from skfed.federation import Federation, record_messages
from skfed.kernel_approximation import RandomFourierBasis
from skfed.partition import HorizontalPartition
from skfed.privacy import audit


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
    # rule runs ~150-170 iterations here (threshold="auto"; issue 35).
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
    print("1. NMI with default settings, gamma given and the paper's "
          "clustering (refine=None; table 6 adds the refinement): federated "
          "(over seeds) vs exact kernel k-means vs linear")
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
                                          refine=None, random_state=s).fit(X)
                    for s in seeds]
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
                                   threshold="paper", refine=None,
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
                                       threshold="paper", refine=None,
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
                                   threshold="paper", refine=None,
                                   communication_efficient=cem, partition=4)
        km._monitor = monitor
        km.fit(X)
        errors[cem] = errs
    ts = [t for t in (1, 2, 3, 5, 8, 10, 15, 20, 30) if t <= T]
    rows = [(t, errors[True][t], errors[False][t], t * errors[True][t], 1.0 / t)
            for t in ts]
    table(rows, ["t", "error CEM", "error no CEM", "t * error CEM", "1/t"])


def first_threshold(X, gamma, D, n_lambda, s, margin, seed):
    """lambda of a fit whose first-iteration features come from ``seed``."""
    A = RandomFourierBasis(seed, gamma=gamma).transform(X, range(D))
    theta = np.sort(np.linalg.eigvalsh(A.T @ A / D))[::-1]
    return choose_lambda(theta, n_lambda, s, margin)


def issue_moons():
    X, y = make_moons(1000, noise=0.05, random_state=0)
    return X, y, 8.0


def thresholds(quick):
    n_draws = 20 if quick else 40
    print("5. The threshold lambda from the first iteration (default D, "
          f"{n_draws} draws of its features): share of draws above the "
          "(s+1)-th and the s-th eigenvalue of the kernel")
    sets = dict(datasets(quick))
    sets["moons 1000 (gamma=8)"] = issue_moons()
    rows = []
    for name, (X, y, gamma) in sets.items():
        k = s = len(np.unique(y))
        n_lambda = max(k + 2, s + 1)
        D = auto_random_features(k, n_lambda, len(X))
        w = np.sort(np.linalg.eigvalsh(rbf_kernel(X, gamma=gamma)))[::-1]
        seeds = np.random.RandomState(0).randint(2**31 - 1, size=n_draws)
        row = [name, D, w[s - 1], w[s]]
        for rule in ("paper", "auto"):
            margin = lambda_margin(rule, D)
            lam = np.array([first_threshold(X, gamma, D, n_lambda, s, margin,
                                            seed) for seed in seeds])
            row += [float(np.mean(lam > w[s])), float(np.mean(lam > w[s - 1])),
                    float(np.mean(lam) / w[s])]
        rows.append(tuple(row))
    table(rows, ["data", "D", "lambda_s", "lambda_s+1", "paper >s+1",
                 "paper >s", "paper mean/(s+1)", "auto >s+1", "auto >s",
                 "auto mean/(s+1)"])
    X, y, gamma = issue_moons()
    exact = nmi(y, exact_kernel_kmeans(X, 2, 2, gamma))
    print("   moons of issue 35 (1,000 rows, gamma=8, three users, defaults); "
          f"exact kernel k-means NMI {exact:.3f}")
    rows = []
    for rule in ("paper", "auto"):
        for seed in range(3):
            start, cpu = time.perf_counter(), time.process_time()
            km = FederatedKernelKMeans(2, gamma=gamma, partition=3,
                                       random_state=seed, threshold=rule,
                                       refine=None)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                km.fit(X)
            score = nmi(y, km.labels_)
            rows.append((rule, seed, score, score / exact, km.n_iter_,
                         km.threshold_, km.communication_.total_bytes / 1e6,
                         time.perf_counter() - start,
                         time.process_time() - cpu))
    table(rows, ["threshold", "seed", "NMI", "NMI/exact", "n_iter", "lambda",
                 "MB", "s", "CPU s"])


def refine_sets(quick):
    """The sets of the refinement table: issue 35's moons and circles (eight
    users), and the blobs, wine and digits of table 1 (full digits)."""
    n = 400 if quick else 1000
    out = {}
    X, y = make_moons(n, noise=0.05, random_state=0)
    out["moons (gamma=8)"] = (X, y, 8.0, 3)
    X, y = make_circles(n, factor=0.2, noise=0.05, random_state=0)
    out["circles (gamma=5)"] = (X, y, 5.0, 8)
    X, y = make_blobs(n, centers=5, cluster_std=1.5, random_state=0)
    out["blobs (5)"] = (X, y, paper_gamma(X), 3)
    X, y = load_wine(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    out["wine (3, scaled)"] = (X, y, paper_gamma(X), 3)
    X, y = load_digits(return_X_y=True)
    if quick:
        X, y = X[:600], y[:600]
    X = X / 16.0
    out["digits (10)"] = (X, y, paper_gamma(X), 5)
    return out


def refinement(quick):
    seeds = range(2) if quick else range(3)
    print("6. Refinement (skfed's, issue 35): refine=None (the paper's "
          "Algorithm 1) vs refine='once' (the default: one center update) "
          "vs refine='auto' (Lloyd on the map's random features to its "
          f"end), seeds {seeds[0]}-{seeds[-1]}; mean NMI; KMeans(Z): "
          "sklearn KMeans (n_init=10) on the same features; MB: bytes over "
          "the paper's fit")
    rows = []
    for name, (X, y, gamma, M) in refine_sets(quick).items():
        k = len(np.unique(y))
        exact = nmi(y, exact_kernel_kmeans(X, k, k, gamma))
        linear = nmi(y, KMeans(k, n_init=10, random_state=0).fit_predict(X))
        (paper, once, refined, on_z, n_iter, n_lloyd, mb,
         cpu) = ([] for _ in range(8))
        for seed in seeds:
            fits = []
            for refine in (None, "once", "auto"):
                start = time.process_time()
                km = FederatedKernelKMeans(k, gamma=gamma, partition=M,
                                           random_state=seed, refine=refine)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", ConvergenceWarning)
                    km.fit(X)
                cpu.append(time.process_time() - start)
                fits.append(km)
            (base, one, ref) = fits
            paper.append(nmi(y, base.labels_))
            once.append(nmi(y, one.labels_))
            refined.append(nmi(y, ref.labels_))
            n_iter.append(ref.n_iter_)
            n_lloyd.append(ref.n_refine_iter_)
            mb.append([km.communication_.total_bytes / 1e6 for km in fits])
            D = ref.embedding_map_.shape[1]
            Z = RandomFourierBasis(oos_seed(ref._users_key), gamma=gamma
                                   ).transform(X, range(D)) / np.sqrt(D)
            on_z.append(nmi(y, KMeans(k, n_init=10, random_state=0
                                      ).fit_predict(Z)))
        mb = np.mean(mb, axis=0)
        rows.append((name, M, float(np.mean(paper)), float(np.mean(once)),
                     float(np.median(once)), float(np.mean(refined)),
                     float(np.min(refined)), exact, float(np.mean(on_z)),
                     linear, float(np.mean(once) / exact),
                     float(np.mean(refined) / exact),
                     f"{min(n_iter)}-{max(n_iter)}",
                     f"{min(n_lloyd)}-{max(n_lloyd)}", float(mb[0]),
                     float(mb[1] / mb[0]), float(mb[2] / mb[0]),
                     float(np.sum(cpu) / len(cpu))))
    table(rows, ["data", "users", "paper", "once", "once med", "auto",
                 "auto min", "exact CK", "KMeans(Z)", "linear", "once/exact",
                 "auto/exact", "n_iter", "lloyd", "MB paper", "MB once",
                 "MB auto", "CPU s/fit"])


def refinement_attack(quick):
    print("7. refinement_differences (skfed.privacy.audit's attack on the "
          "refinement's consecutive totals): share of the victims' moved "
          "rows recovered within 0.1 of the data's scale; error: mean "
          "distance to the nearest guess in that scale; chance: uniform "
          "guesses")
    sets = refine_sets(quick)
    runs = [("moons (gamma=8)", seed) for seed in range(3)]
    runs.append(("digits (10)", 0))
    rows = []
    for name, seed in runs:
        X, y, gamma, M = sets[name]
        k = len(np.unique(y))
        start, cpu = time.perf_counter(), time.process_time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            report = audit(FederatedKernelKMeans(k, gamma=gamma, partition=M,
                                                 random_state=seed,
                                                 refine="auto"),
                           X, attacks=["refinement_differences"])
        attacks = report.attacks
        for attacker in ("server", "users"):
            mine = attacks[(attacks["attacker"] == "server") == (
                attacker == "server")]
            share = mine[mine["metric"] == "recovered_share"]
            error = mine[mine["metric"] == "mean_relative_error"]
            rows.append((name, seed, M, report.estimator.refine_moves_.sum(),
                         attacker, float(share["value"].min()),
                         float(share["value"].mean()),
                         float(share["chance"].mean()),
                         float(error["value"].mean()),
                         float(error["chance"].mean()),
                         len(report.violations),
                         time.perf_counter() - start,
                         time.process_time() - cpu))
    table(rows, ["data", "seed", "users", "moved", "attacker", "share min",
                 "share", "chance", "error", "chance err", "violations",
                 "s", "CPU s"])


def inversion_runs(quick):
    """Table 8's fits: ``(name, seed, X, k, gamma, users, fit_params)``."""
    sets = refine_sets(quick)
    X, y, gamma, M = sets["moons (gamma=8)"]
    runs = [("moons IID", seed, X, 2, gamma, M, {}) for seed in range(3)]
    terciles = np.digitize(X[:, 0], np.quantile(X[:, 0], [1 / 3, 2 / 3]))
    runs.append(("moons by x tercile", 0, X, 2, gamma, M,
                 {"sample_party": terciles}))
    X, y, gamma, M = sets["digits (10)"]
    runs.append(("digits (10)", 0, X, 10, gamma, M, {}))
    return runs


def totals_inversion_table(quick):
    print("8. totals_inversion (one release of the refinement's totals, "
          "refine='once', the default): the others' rows recovered from "
          "the first totals a user holds. share: rows with a guess within "
          "0.1 of the data's scale; matched: rows with a guess of their "
          "own; error: mean distance to the nearest guess in that scale; "
          "each beside uniform "
          "guesses (as many as the others' rows) and the attacker's own "
          "rows; s: the attacker's inversion")
    _inversion_table(inversion_runs(quick), "once", inversion_scores,
                     per_server_victim=False)


def map_inversion_table(quick):
    print("9. map_inversion (the published out-of-sample map, default fits: "
          "refine='once', party_keys='random_state'): the others' rows "
          "recovered from the map by each user and by the server (which "
          "derives the key from random_state); columns as in table 8")
    runs = [run for run in inversion_runs(quick) if run[1] == 0]
    _inversion_table(runs, "once", map_inversion_scores,
                     per_server_victim=True)


def _inversion_table(runs, refine, scores_of, per_server_victim):
    rows = []
    for name, seed, X, k, gamma, M, fit_params in runs:
        km = FederatedKernelKMeans(k, gamma=gamma, partition=M,
                                   random_state=seed, refine=refine)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            with record_messages() as rec:
                km.fit(X, **fit_params)
        server = []
        with threadpool_limits(limits=1, user_api="blas"):
            scores = scores_of(km, rec.messages, X)
            last, attacker = time.perf_counter(), None
            cpu_last = time.process_time()
            for score in scores:
                if score["attacker"] != attacker:
                    attacker = score["attacker"]
                    wall = time.perf_counter() - last
                    cpu = time.process_time() - cpu_last
                cells = (*score["attack"], *score["uniform"],
                         *score["own_rows"])
                if attacker == "server" and not per_server_victim:
                    server.append(cells)
                else:
                    rows.append((name, seed, attacker, score["victim"],
                                 score["n_guesses"], *_inversion_cells(cells),
                                 wall, cpu))
                last, cpu_last = time.perf_counter(), time.process_time()
        if server:
            rows.append((name, seed, "server", "all (mean)", 0,
                         *_inversion_cells(np.mean(server, axis=0)), 0.0,
                         0.0))
    table(rows, ["data", "seed", "attacker", "victim", "guesses", "share",
                 "uniform", "own rows", "matched", "uniform", "own rows",
                 "error", "uniform", "own rows", "s", "CPU s"])


def _inversion_cells(cells):
    """(share, match, error) x (attack, uniform, own rows), reordered by
    metric; an infinite error (no own rows: the server) prints as "-"."""
    a, u, o = (cells[i:i + 3] for i in (0, 3, 6))
    return tuple(float(v) if np.isfinite(v) else "-"
                 for v in (a[0], u[0], o[0], a[2], u[2], o[2], a[1], u[1],
                           o[1]))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller runs")
    parser.add_argument("--only", nargs="*", type=int, choices=range(1, 10),
                        help="tables to print (default: all)")
    args = parser.parse_args()
    start = time.perf_counter()
    tables = (acceptance, communication, nmi_vs_communication, convergence,
              thresholds, refinement, refinement_attack,
              totals_inversion_table, map_inversion_table)
    for number, print_table in enumerate(tables, start=1):
        if not args.only or number in args.only:
            print_table(args.quick)
    print(f"total {time.perf_counter() - start:.0f} s (shared machine, under load)")


if __name__ == "__main__":
    main()
