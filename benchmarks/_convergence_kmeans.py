"""Convergence rows of FederatedKernelKMeans for ``bench_convergence.py``.

Default settings on one table (blobs, 6 columns, 4 clusters, 3 users) in
four settings: standardised; unscaled (columns times factors up to 1e3);
wide kernel (``gamma`` a hundredth of the paper's rule); a near-constant
column (spread 1e-8) added to the standardised table. ``objective_ratio``
is the kernel k-means objective (exact RBF kernel at the fitted ``gamma_``)
of the federated labels over that of centralized exact kernel k-means
(top-k eigenvectors of the same kernel, then KMeans).

Run it through ``python benchmarks/bench_convergence.py --only kmeans``, or
alone: ``python benchmarks/_convergence_kmeans.py [--quick]``.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import time
import warnings

import numpy as np
from sklearn.cluster import KMeans
from sklearn.datasets import make_blobs
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.preprocessing import StandardScaler

from skfed.cluster import FederatedKernelKMeans

NOTE = ("kernel k-means objective (exact RBF kernel at the fitted gamma_) of "
        "the federated labels / that of centralized exact kernel k-means "
        "(top-k eigenvectors + KMeans); <= 1 is as good or better")


def kernel_kmeans_objective(K, labels):
    """``sum_i K_ii - sum_c (1/|c|) sum_{i,j in c} K_ij``."""
    total = float(np.trace(K))
    for c in np.unique(labels):
        rows = labels == c
        total -= float(K[np.ix_(rows, rows)].sum()) / rows.sum()
    return total


def exact_labels(K, k):
    w, U = np.linalg.eigh(K)
    H = U[:, ::-1][:, :k] * np.sqrt(np.maximum(w[::-1][:k], 0))
    return KMeans(k, n_init=10, random_state=0).fit_predict(H)


def paper_gamma(X):
    msd = 2 * (np.mean((X ** 2).sum(1)) - (X.mean(0) ** 2).sum())
    return 1.0 / (2 * msd)


def settings(quick):
    X, _ = make_blobs(300 if quick else 600, n_features=6, centers=4,
                      cluster_std=2.0, random_state=0)
    X = StandardScaler().fit_transform(X)
    yield "standardised", X, None
    yield "unscaled", X * np.logspace(0, 3, X.shape[1]), None
    yield "wide kernel", X, paper_gamma(X) / 100
    column = 1.0 + 1e-8 * np.random.RandomState(0).standard_normal(len(X))
    yield "near-constant column", np.column_stack([X, column]), None


def cases(quick=False):
    """One row per setting (see the module docstring)."""
    for setting, X, gamma in settings(quick):
        start = time.perf_counter()
        row = dict(estimator="FederatedKernelKMeans", loss="kernel k-means",
                   setting=setting, note=NOTE)
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", ConvergenceWarning)
                km = FederatedKernelKMeans(4, gamma=gamma, partition=3,
                                           random_state=0).fit(X)
                predicted = km.predict(X)
        except (ValueError, RuntimeError) as exc:
            row.update(objective_ratio=float("nan"), diverged=True,
                       nonfinite=False, error=str(exc),
                       seconds=time.perf_counter() - start)
            yield row
            continue
        K = rbf_kernel(X, gamma=km.gamma_)
        ratio = float(kernel_kmeans_objective(K, km.labels_)
                 / kernel_kmeans_objective(K, exact_labels(K, 4)))
        outputs = (km.eigenvalues_, km.embedding_map_, km.cluster_centers_,
                   km.embedding_changes_, [km.score(X)])
        row.update(
            objective_ratio=ratio,
            diverged=any(issubclass(w.category, ConvergenceWarning)
                         for w in caught),
            nonfinite=not all(np.all(np.isfinite(o)) for o in outputs),
            n_iter=km.n_iter_, agree_with_predict=float(np.mean(
                predicted == km.labels_)),
            seconds=time.perf_counter() - start)
        yield row


if __name__ == "__main__":
    import sys

    for row in cases(quick="--quick" in sys.argv):
        print({k: (round(v, 4) if isinstance(v, float) else v)
               for k, v in row.items() if k != "note"})
    print("objective_ratio:", NOTE)
