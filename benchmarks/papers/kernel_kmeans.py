"""Federated kernel k-means (DSPGD + CEM): small tables, Figure 3's axes.

The paper's headline (section 6): FK k-means reaches "comparable average NMI
scores" to centralized kernel k-means (CK k-means; Figure 3, NMI against the
floats uploaded), and CEM "can reduce communication cost of DSPGD by more
than 98%" (Figure 2, floats uploaded per user per DSPGD iteration, with and
without CEM; section 6.2). Our copy of the paper lost Table 1's sizes; with
its M = 5 users (section 6.1) and LIBSVM's Mushrooms (8,124 rows) and
Covtype (581,012 rows) that is 1,625 to 116,202 rows per user (our
inference). Three tables:

1. **Small tables** (a few hundred rows over 3 and 5 users, several seeds):
   digits subsets, iris, wine, breast cancer (standardised) and blobs, each
   split 2/3 train, 1/3 held out. ``FederatedKernelKMeans`` with its
   defaults against CK k-means (the exact centralized reference: top-k
   eigenpairs of the full RBF kernel of the training rows, k-means; held-out
   rows by its exact Nystrom extension), on the training labels and on
   ``predict`` of the held-out rows; the upload saving of CEM (Figure 2's
   measure: floats per user per DSPGD iteration against DSPGD without CEM at
   the same settings, measured) and the best saving any ``D`` could give at
   those rows per user (see below).
2. **Figure 3 on digits** (1,797 rows, the paper's M = 5 users): NMI against
   the floats uploaded by all users over the whole fit for FK k-means at the
   paper's settings (``D`` below 50, appendix G; ``T = 10``, the smallest
   of the paper's grid [10, 20, 30, 40, 50]; ``threshold="paper"``) and
   with its defaults, DSPGD without CEM, and random-feature k-means (RFK,
   Figure 3's distributed competitor), with the CK k-means NMI.
3. **Saving against rows per user** (Figure 2's x axis, Figure 3's y axis):
   digits subsets and generated blobs from 60 to 2,000 (5,000 in the full
   run) rows per user with the defaults.

"Defaults" here are skfed's defaults with the paper's clustering of the
embedding (``refine=None``): the paper has no refinement, and skfed's
default one update (``refine="once"``) is measured in
``benchmarks/bench_kernel_kmeans.py`` (table 6).

The saving per DSPGD iteration is ``1 - Q_1 (D + r) / (Q_0 (D + n_m))``
(Theorem 2: CEM uploads ``D + r_t`` floats per Lanczos step, DSPGD without
it ``D + n_m``, ``n_m`` the user's rows; ``Q_0 ~ Q_1``). Since ``D >=
n_lambda = k + 2`` and ``r >= s = k``, no setting saves more than ``1 -
(2k + 2) / (k + 2 + n_m)``: 90% needs ``n_m >= 9 D + 10 r`` rows per user
(208 with ten clusters at the smallest ``D`` and ``r``).

Run::

    python benchmarks/papers/kernel_kmeans.py            # 3 seeds, up to 5,000 rows per user
    python benchmarks/papers/kernel_kmeans.py --quick    # 2 seeds, up to 2,000 rows per user
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import warnings

import numpy as np
from sklearn.cluster import KMeans
from sklearn.datasets import (load_breast_cancer, load_digits, load_iris,
                              load_wine, make_blobs)
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import normalized_mutual_info_score as nmi
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.preprocessing import StandardScaler

import _paper
from _paper import clock, text_table

from bench_kernel_kmeans import paper_gamma, rfk_kmeans, uploads_total
from skfed.cluster import FederatedKernelKMeans, dspgd_uploads

#: Every fit here clusters the embedding as the paper does (line 19 of
#: Algorithm 1): skfed's default refinement (refine="once") is not the
#: paper's and is measured in benchmarks/bench_kernel_kmeans.py, table 6.
PAPER = None

USERS = 5  # the paper's M
CK_MAX_ROWS = 5_000


# -- the centralized reference ------------------------------------------------

def exact_kernel_kmeans(X, k, gamma, X_new=None):
    """CK k-means: k-means on the top-k eigenpairs of the full RBF kernel.

    Returns the labels of ``X`` and, with ``X_new``, those of the new rows
    by the exact Nystrom extension ``k_x^T U Lambda^{-1/2}``.
    """
    w, U = np.linalg.eigh(rbf_kernel(X, gamma=gamma))
    w, U = np.maximum(w[::-1][:k], 1e-300), U[:, ::-1][:, :k]
    km = KMeans(k, n_init=10, random_state=0).fit(U * np.sqrt(w))
    if X_new is None:
        return km.labels_
    H_new = rbf_kernel(X_new, X, gamma=gamma) @ U / np.sqrt(w)
    return km.labels_, km.predict(H_new)


# -- 1. small tables ------------------------------------------------------------

def small_tables():
    """A few hundred rows each: ``(name, X, y)``."""
    X, y = load_digits(return_X_y=True)
    order = np.random.RandomState(0).permutation(len(X))[:333]
    yield "digits 333 (10)", X[order] / 16.0, y[order]
    X, y = load_digits(n_class=5, return_X_y=True)
    order = np.random.RandomState(1).permutation(len(X))[:450]
    yield "digits 450 (5)", X[order] / 16.0, y[order]
    for name, load in (("iris", load_iris), ("wine", load_wine),
                       ("breast cancer", load_breast_cancer)):
        X, y = load(return_X_y=True)
        yield f"{name} {len(X)} ({len(np.unique(y))})", \
            StandardScaler().fit_transform(X), y
    X, y = make_blobs(400, n_features=5, centers=4, cluster_std=2.0,
                      random_state=3)
    yield "blobs 400 (4)", X, y


def train_test(n, seed=7):
    order = np.random.RandomState(seed).permutation(n)
    return order[: 2 * n // 3], order[2 * n // 3:]


def per_iteration(estimator):
    """Mean floats a user uploads per DSPGD iteration (Figure 2's measure)."""
    up = dspgd_uploads(estimator)
    return float(np.mean([v for t in up.values() for v in t.values()]))


def best_saving(k, n_rows):
    """The most any ``D`` could save at ``n_rows`` per user (D = k+2, r = k)."""
    return 1.0 - (2 * k + 2) / (k + 2 + n_rows)


def small_table_rows(quick, **params):
    seeds = (0, 1) if quick else (0, 1, 2)
    rows, worst = [], dict(train=np.inf, held=np.inf, saving=np.inf,
                           held_ok=0, settings=0)
    for name, X, y in small_tables():
        k = len(np.unique(y))
        train, test = train_test(len(X))
        gamma = paper_gamma(X[train])
        ck_train, ck_test = exact_kernel_kmeans(X[train], k, gamma, X[test])
        ck = (nmi(y[train], ck_train), nmi(y[test], ck_test))
        for M in (3, 5):
            ratios, savings, iters, floats = [], [], [], []
            for seed in seeds:
                fits = [FederatedKernelKMeans(
                    k, partition=M, random_state=seed, refine=PAPER,
                    communication_efficient=cem, **params).fit(X[train])
                    for cem in (True, False)]
                fed = fits[0]
                ratios.append((nmi(y[train], fed.labels_) / ck[0],
                               nmi(y[test], fed.predict(X[test])) / ck[1]))
                savings.append(1 - per_iteration(fed) / per_iteration(fits[1]))
                iters.append(fed.n_iter_)
                floats.append(uploads_total(fed.communication_))
            r = np.array(ratios)
            n_m = len(train) // M
            rows.append((name, len(train), len(test), M, n_m,
                         f"{r[:, 0].mean():.3f}", f"{r[:, 0].min():.3f}",
                         f"{r[:, 1].mean():.3f}", f"{r[:, 1].min():.3f}",
                         f"{100 * np.mean(savings):.0f}%",
                         f"{100 * best_saving(k, n_m):.0f}%",
                         fed.n_random_features_, int(np.mean(iters)),
                         f"{np.mean(floats):,.0f}"))
            worst["train"] = min(worst["train"], r[:, 0].mean())
            worst["held"] = min(worst["held"], r[:, 1].mean())
            worst["saving"] = min(worst["saving"], np.mean(savings))
            # unrounded: 0.9494 prints as 0.949 and is below 0.95
            worst["held_ok"] += int(r[:, 1].mean() >= 0.95)
            worst["settings"] += 1
    return rows, worst


def print_small_tables(quick):
    print("\n1. Small tables: FK k-means (defaults, gamma by the paper's rule) "
          "against CK k-means, over seeds")
    rows, worst = small_table_rows(quick)
    print(text_table(
        ("data", "train", "held", "users", "rows/user", "FK/CK train",
         "min", "FK/CK held-out", "min", "saving/iter", "best possible",
         "D", "n_iter", "floats/fit"), rows))
    print(f"worst table mean: FK/CK {worst['train']:.3f} on training rows, "
          f"{worst['held']:.3f} on held-out rows; saving {100 * worst['saving']:.0f}%")
    print(f"ours: held-out mean FK/CK >= 0.95 in {worst['held_ok']} of "
          f"{worst['settings']} settings (unrounded means)")
    print("paper: NMI comparable to CK k-means (Figure 3); CEM saves > 98% "
          "per iteration at 1,625+ rows per user (Figure 2); at these rows per "
          "user no D saves 90% (column 'best possible')")


# -- 2. Figure 3 on digits --------------------------------------------------------

def figure3(quick):
    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    k, gamma = 10, paper_gamma(X)
    ck = nmi(y, exact_kernel_kmeans(X, k, gamma))
    print(f"\n2. Figure 3 on digits ({len(X):,} rows, {USERS} users): NMI "
          "against floats uploaded by all users over the whole fit; CK "
          f"k-means NMI {ck:.3f}")
    rows, points = [], []
    # The paper's settings: D below 50, lambda by its rule; T = 10 is the
    # smallest of appendix G's grid [10, 20, 30, 40, 50].
    paper = dict(max_iter=10, tol=None, threshold="paper")
    settings = [("FK k-means (CEM), T=10", True, D, paper)
                for D in ((12, 25, 50) if quick else (12, 25, 50, 100))]
    settings += [("DSPGD without CEM, T=10", False, D, paper)
                 for D in (12, 50)]
    settings += [("FK k-means defaults", True, "auto", {})]
    for label, cem, D, extra in settings:
        with clock() as spent:
            km = FederatedKernelKMeans(
                k, n_random_features=D, gamma=gamma, partition=USERS,
                random_state=0, refine=PAPER, communication_efficient=cem,
                **extra).fit(X)
        score, up = nmi(y, km.labels_), uploads_total(km.communication_)
        rows.append((label, km.n_random_features_, km.n_iter_,
                     f"{score:.3f}", f"{score / ck:.3f}", f"{up:,}",
                     f"{spent['wall']:.1f}"))
        points.append((label.split(",")[0], up, score))
    for D in ((50, 200) if quick else (50, 200, 400, 800)):
        with clock() as spent:
            labels, up = rfk_kmeans(X, k, USERS, D, gamma, 0)
        score = nmi(y, labels)
        rows.append(("RFK k-means", D, 1, f"{score:.3f}", f"{score / ck:.3f}",
                     f"{up:,}", f"{spent['wall']:.1f}"))
        points.append(("RFK k-means", up, score))
    print(text_table(("method", "D", "T", "NMI", "NMI/CK", "floats uploaded",
                      "s"), rows))

    def cheapest(method):
        ok = [up for name, up, score in points
              if name == method and score >= 0.95 * ck]
        return min(ok) if ok else None

    fk, rfk = cheapest("FK k-means (CEM)"), cheapest("RFK k-means")
    if fk and rfk:
        print(f"floats to reach 0.95 of CK k-means: FK k-means {fk:,}, RFK "
              f"{rfk:,} (FK needs {100 * (1 - fk / rfk):.0f}% fewer)")
    print("paper (Figure 3(b), MNIST): FK k-means nearly reaches the CK/SK NMI "
          "and needs > 60% fewer floats than RFK k-means for it")
    return ck, points


# -- 3. saving against rows per user ---------------------------------------------

def rows_per_user_settings(quick):
    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    order = np.random.RandomState(0).permutation(len(X))
    for n in ((300, 1797) if quick else (300, 600, 1200, 1797)):
        yield "digits", X[order[:n]], y[order[:n]]
    for per_user in ((600, 2000) if quick else (600, 2000, 5000)):
        Xb, yb = make_blobs(USERS * per_user, n_features=16, centers=10,
                            cluster_std=3.0, random_state=0)
        yield "blobs", Xb, yb


def fmt(value, digits=3):
    return "-" if np.isnan(value) else f"{value:.{digits}f}"


def saving_vs_rows(quick):
    rows, points = [], []
    for name, X, y in rows_per_user_settings(quick):
        k, gamma = len(np.unique(y)), paper_gamma(X)
        exact = (nmi(y, exact_kernel_kmeans(X, k, gamma))
                 if len(X) <= CK_MAX_ROWS else np.nan)
        fits = {}
        for cem in (True, False):
            with clock() as spent:
                fits[cem] = FederatedKernelKMeans(
                    k, gamma=gamma, partition=USERS, random_state=0,
                    refine=PAPER, communication_efficient=cem).fit(X)
            fits[cem].seconds = spent["wall"]
        fed = fits[True]
        score = nmi(y, fed.labels_)
        up = {cem: uploads_total(f.communication_) for cem, f in fits.items()}
        per = {cem: per_iteration(f) for cem, f in fits.items()}
        saving = 1 - per[True] / per[False]
        rows.append((name, len(X), len(X) // USERS, f"{score:.3f}",
                     fmt(exact), fmt(score / exact), f"{up[True]:,}",
                     f"{up[False]:,}", f"{100 * saving:.1f}%",
                     f"{100 * (1 - up[True] / up[False]):.1f}%",
                     fed.n_random_features_, fed.n_iter_,
                     f"{fed.seconds:.1f}"))
        points.append((name, len(X) // USERS, saving))
        last_per = per
    print(f"\n3. Upload saving against rows per user ({USERS} users, defaults "
          "with the paper's gamma)")
    print(text_table(
        ("data", "rows", "rows/user", "FK NMI", "CK NMI", "FK/CK",
         "floats CEM", "floats no CEM", "saving/iter", "saving/fit", "D",
         "n_iter", "FK s"), rows))
    # Without CEM a user uploads about r floats per row and iteration, with
    # it about c whatever its rows: the saving 1 - c / (r n) reaches 98% at
    # n = c / (0.02 r) rows per user.
    per_user = points[-1][1]
    c, r = last_per[True], last_per[False] / per_user
    print(f"at {per_user:,} rows per user a user uploads {c:,.0f} floats per "
          f"DSPGD iteration with CEM, {r:.1f} per row without: a 98% saving "
          f"needs about {c / (0.02 * r):,.0f} rows per user")
    print("paper (Figure 2): > 98% at 1,625 to 116,202 rows per user")
    return points


def main(args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        print_small_tables(args.quick)
        ck, nmi_points = figure3(args.quick)
        saving_points = saving_vs_rows(args.quick)
    if args.plot:
        plot(ck, nmi_points, saving_points, args.plot)


def plot(ck, nmi_points, saving_points, path):
    import matplotlib
    import matplotlib.ticker
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.4))
    markers = {"FK k-means (CEM)": "o", "FK k-means defaults": "*",
               "DSPGD without CEM": "s", "RFK k-means": "^"}
    for method, marker in markers.items():
        pts = sorted((up, s) for name, up, s in nmi_points if name == method)
        if pts:
            left.plot(*zip(*pts), marker=marker, ls="-" if len(pts) > 1 else "",
                      label=method)
    left.axhline(ck, color="k", ls=":", lw=1, label="CK k-means")
    left.set_xscale("log")
    left.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    left.set_xlabel("floats uploaded by all users")
    left.set_ylabel("NMI (digits, 5 users)")
    left.legend(fontsize=7)
    for name in ("digits", "blobs"):
        pts = [(n, 100 * s) for d, n, s in saving_points if d == name]
        right.plot(*zip(*pts), "o-", label=f"skfed, {name}")
    right.axhline(98, color="C3", ls="--", lw=1, label="paper: > 98% (Fig. 2)")
    right.set_xscale("log")
    right.set_xlabel("rows per user")
    right.set_ylabel("upload saving per iteration (%)")
    right.legend(fontsize=7)
    _paper.save_figure(fig, path)


if __name__ == "__main__":
    _paper.run("Federated kernel k-means: small tables and Figure 3's axes",
               main, doc=__doc__)
