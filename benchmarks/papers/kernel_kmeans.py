"""Federated kernel k-means (DSPGD + CEM): NMI and uploads vs rows per user.

The paper's headline (section 6): FK k-means reaches "comparable average NMI
scores" to centralized kernel k-means (CK k-means; Figure 3, NMI against the
floats uploaded), and CEM "can reduce communication cost of DSPGD by more
than 98%" (Figure 2, floats uploaded per user per DSPGD iteration, with and
without CEM). Both depend on the rows each user holds: CEM uploads a
sketch whose size does not grow with the user's rows, while DSPGD without it
uploads a product per row. This script sweeps the rows per user with the
paper's M = 5 users and prints, per setting:

- NMI of ``FederatedKernelKMeans`` with its defaults (``gamma`` from the
  paper's rule, appendix G: ``N^2 / (2 sum_ij ||x_i - x_j||^2)``) and of the
  exact centralized kernel k-means (full RBF kernel, top-k eigenvectors,
  k-means: the paper's CK k-means), and their ratio;
- floats uploaded by all users in the whole fit (Figure 3's x axis) with
  CEM, without CEM (``communication_efficient=False``) and by random-feature
  k-means (RFK, Figure 3's distributed competitor:
  ``benchmarks/bench_kernel_kmeans.py``, D = 200) with its NMI;
- the saving of CEM per DSPGD iteration (Figure 2's measure) and over the
  whole fit, and the rows per user at which the saving would reach the
  paper's 98%.

Data: digits (the paper's MNIST-small stand-in, 10 clusters, pixels / 16),
subsets of 300 to 1,797 rows (60 to 359 rows per user), and a generated
table (``make_blobs``, 10 clusters, 16 columns) with more rows per user
(CK k-means, a dense kernel, only up to 5,000 rows).

Run::

    python benchmarks/papers/kernel_kmeans.py            # up to 5,000 rows per user
    python benchmarks/papers/kernel_kmeans.py --quick    # up to 2,000 rows per user
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
from scipy.sparse.linalg import eigsh
from sklearn.cluster import KMeans
from sklearn.datasets import load_digits, make_blobs
from sklearn.metrics import normalized_mutual_info_score as nmi
from sklearn.metrics.pairwise import rbf_kernel

import _paper
from _paper import clock, text_table

from bench_kernel_kmeans import paper_gamma, rfk_kmeans, uploads_total
from skfed.cluster import FederatedKernelKMeans, dspgd_uploads

USERS = 5  # the paper's M
CK_MAX_ROWS = 5_000


def exact_nmi(X, y, k, gamma):
    """CK k-means: k-means on the top-k eigenvectors of the full kernel."""
    w, U = eigsh(rbf_kernel(X, gamma=gamma), k=k, which="LA")
    H = U * np.sqrt(np.maximum(w, 0))
    return nmi(y, KMeans(k, n_init=10, random_state=0).fit_predict(H))


def settings(quick):
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


def per_iteration(summary):
    up = dspgd_uploads(summary)
    return float(np.mean([v for t in up.values() for v in t.values()]))


def main(args):
    rows, points = [], []
    for name, X, y in settings(args.quick):
        k, gamma = len(np.unique(y)), paper_gamma(X)
        exact, t_exact = np.nan, np.nan
        if len(X) <= CK_MAX_ROWS:
            with clock() as spent:
                exact = exact_nmi(X, y, k, gamma)
            t_exact = spent["wall"]
        fits = {}
        for cem in (True, False):
            with clock() as spent:
                fits[cem] = FederatedKernelKMeans(
                    k, gamma=gamma, partition=USERS, random_state=0,
                    communication_efficient=cem).fit(X)
            fits[cem].seconds = spent["wall"]
        rfk_labels, rfk_up = rfk_kmeans(X, k, USERS, 200, gamma, 0)
        fed, plain = fits[True], fits[False]
        score = nmi(y, fed.labels_)
        up = {cem: uploads_total(f.communication_) for cem, f in fits.items()}
        per = {cem: per_iteration(f.communication_) for cem, f in fits.items()}
        rows.append((name, len(X), len(X) // USERS, f"{score:.3f}",
                     fmt(exact), fmt(score / exact),
                     f"{nmi(y, plain.labels_):.3f}",
                     f"{nmi(y, rfk_labels):.3f}", f"{up[True]:,}",
                     f"{up[False]:,}", f"{rfk_up:,}",
                     f"{100 * (1 - per[True] / per[False]):.1f}%",
                     f"{100 * (1 - up[True] / up[False]):.1f}%",
                     fed.n_iter_, f"{fed.seconds:.1f}", fmt(t_exact, 1)))
        last_per = per
        points.append((name, len(X) // USERS, score, exact, up[True],
                       up[False], nmi(y, rfk_labels), rfk_up))
    print(f"\nM = {USERS} users, defaults with the paper's gamma; CEM = "
          "FederatedKernelKMeans(communication_efficient=True); floats are "
          "uploads to the server over the whole fit")
    print(text_table(
        ("data", "rows", "rows/user", "FK NMI", "CK NMI", "FK/CK",
         "no-CEM NMI", "RFK NMI", "floats CEM", "floats no CEM", "floats RFK",
         "saving/iter", "saving/fit", "n_iter", "FK s", "CK s"), rows))
    print(f"CK k-means (a dense N x N kernel) only up to {CK_MAX_ROWS:,} "
          "rows")
    # Without CEM a user uploads about r floats per row and iteration, with
    # it about c whatever its rows: the saving 1 - c / (r n) reaches 98% at
    # n = c / (0.02 r) rows per user.
    per_user = points[-1][1]
    c, r = last_per[True], last_per[False] / per_user
    print(f"at {per_user:,} rows per user a user uploads {c:,.0f} floats per "
          f"DSPGD iteration with CEM, {r:.1f} per row without: a 98% saving "
          f"needs about {c / (0.02 * r):,.0f} rows per user")
    print("paper: FK k-means NMI comparable to CK k-means (Figure 3); CEM "
          "saves > 98% of DSPGD's uploads per iteration (Figure 2, 1,625 to "
          "116,202 rows per user)")
    if args.plot:
        plot(points, args.plot)


def plot(points, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    for i, (name, per_user, fk, ck, up, up_plain, rfk, up_rfk) in enumerate(points):
        color = f"C{i}"
        ax.plot([up, up_plain], [fk, fk], "-", color=color, alpha=0.4)
        ax.plot(up, fk, "o", color=color,
                label=f"{name}, {per_user} rows/user")
        ax.plot(up_plain, fk, "s", color=color, mfc="none")
        ax.plot(up_rfk, rfk, "^", color=color, mfc="none")
        if not np.isnan(ck):
            ax.axhline(ck, color=color, ls=":", lw=1)
    ax.set_xscale("log")
    ax.set_xlabel("floats uploaded by all users (whole fit)")
    ax.set_ylabel("NMI")
    ax.set_title("o FK k-means (CEM)  s no CEM  ^ RFK  ... CK k-means",
                 fontsize=9)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    _paper.save_figure(fig, path)


if __name__ == "__main__":
    _paper.run("Federated kernel k-means: NMI and uploads vs rows per user",
               main, doc=__doc__)
