"""
=====================================================================
Federated kernel k-means: clustering quality against communication
=====================================================================

:class:`~skfed.cluster.FederatedKernelKMeans` clusters rows that stay with
their users: five users each hold part of scikit-learn's handwritten digits,
and a server that holds no data coordinates. The top eigenvectors of the RBF
kernel matrix are found by DSPGD, whose Lanczos iterations run either on the
small ``(D + r_t)``-square matrix ``W_t^T W_t`` (the communication-efficient
mechanism, CEM) or on the ``n x n`` matrix ``R_t`` (plain DSPGD).

We reproduce the shape of the paper's Figures 2 and 3: NMI against the
number of floats the users upload, for CEM, plain DSPGD and random-feature
k-means (each user computes random features of its rows, then the same
distributed linear k-means runs on them), next to exact centralized kernel
k-means.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

# %%
# Data, users and the centralized reference
# -----------------------------------------
# Exact kernel k-means (the paper's CK k-means) computes the full kernel
# matrix, keeps its top ``s = k`` eigenpairs and runs KMeans on
# ``U Lambda^{1/2}``. It needs every row in one place.
import matplotlib.pyplot as plt
import numpy as np
from sklearn.cluster import KMeans
from sklearn.datasets import load_digits
from sklearn.metrics import normalized_mutual_info_score as nmi
from sklearn.metrics.pairwise import rbf_kernel

from skfed.base import party_seeds
from skfed.cluster import FederatedKernelKMeans, dspgd_uploads
from skfed.cluster._coreset import distributed_kmeans
from skfed.federation import Federation
from skfed.kernel_approximation import RandomFourierBasis
from skfed.partition import HorizontalPartition

X, y = load_digits(return_X_y=True)
X, y = X[:900] / 16.0, y[:900]
k, n_users = 10, 5

# The paper's gamma: N^2 / (2 sum_ij ||x_i - x_j||^2).
gamma = 1.0 / (4 * (np.mean((X**2).sum(1)) - (X.mean(0) ** 2).sum()))
w, U = np.linalg.eigh(rbf_kernel(X, gamma=gamma))
H = U[:, ::-1][:, :k] * np.sqrt(w[::-1][:k])
exact = nmi(y, KMeans(k, n_init=10, random_state=0).fit_predict(H))
print(f"exact kernel k-means NMI: {exact:.3f}")


# %%
# Federated runs at several numbers of random features
# ----------------------------------------------------
# ``communication_`` counts every message; the users' uploads are the
# scalars sent to ``"server"`` (masked ring values: the server decodes only
# their sums). ``communication_`` groups them by protocol phase;
# ``communication_by_iteration_`` keeps each DSPGD iteration's counts, and
# :func:`~skfed.cluster.dspgd_uploads` reads it to split the Lanczos uploads
# by iteration and user (the paper's Figure 2 measure). As in the paper's
# figures, each run has a fixed number of iterations (``tol=None``) and the
# paper's threshold ``lambda``; the defaults instead stop on the change of
# the embedding and keep ``lambda`` clear of the first iteration's noise.
def uploaded(summary):
    return sum(v["scalars"] for (s, r), v in summary.by_link.items() if r == "server")


runs = {"FK k-means (CEM)": [], "DSPGD without CEM": []}
for D in (12, 25, 50):
    for name, cem in (("FK k-means (CEM)", True), ("DSPGD without CEM", False)):
        km = FederatedKernelKMeans(k, n_random_features=D, max_iter=8, tol=None,
                                   threshold="paper", partition=n_users,
                                   random_state=0,
                                   communication_efficient=cem).fit(X)
        runs[name].append((uploaded(km.communication_), nmi(y, km.labels_)))
        if D == 25:
            per_iteration = dspgd_uploads(km)[2]["user0"]
            print(f"{name}, D=25: user0 uploads {per_iteration} floats in "
                  "iteration 2")


# %%
# Random-feature k-means
# ----------------------
# Each user maps its rows to ``D`` random Fourier features (shared seed) and
# the same row-free distributed k-means clusters them: one round of
# features, no iterations, but ``D`` must be large for a good kernel
# estimate, and the coreset then carries ``D``-dimensional summaries.
def rfk_kmeans(X, D, seed=0):
    part = HorizontalPartition(n_users).resolve(X)
    seeds = party_seeds(seed, n_users + 2)
    users = [f"user{m}" for m in range(n_users)]
    states = {"server": {"n_rows": [len(part.rows(m)) for m in range(n_users)]}}
    states.update({u: dict(X=X[part.rows(m)], kmeans_seed=seeds[m])
                   for m, u in enumerate(users)})

    def features(state):
        basis = RandomFourierBasis(seeds[-1], gamma=gamma)
        state.H = basis.transform(state.X, range(D))

    with Federation(states) as fed:
        fed.gather(fed[u].call(features) for u in users)
        distributed_kmeans(fed, "server", users, n_clusters=k, coreset_size=1000,
                           seed=seeds[-2])
        labels = fed.gather(fed[u].call(lambda s: s.labels) for u in users)
        summary = fed.summary()
    out = np.empty(len(X), dtype=int)
    for m, lab in enumerate(labels):
        out[part.rows(m)] = lab
    return uploaded(summary), nmi(y, out)


runs["RFK k-means"] = [rfk_kmeans(X, D) for D in (50, 100, 200)]

# %%
# NMI against the floats uploaded
# -------------------------------
# CEM reaches the NMI of plain DSPGD with a fraction of its uploads (plain
# DSPGD ships vectors as long as a user's row count in every Lanczos step).
fig, ax = plt.subplots(figsize=(6.5, 4))
for (name, points), marker in zip(runs.items(), "osd"):
    cost, score = np.array(points).T
    ax.plot(cost, score, marker=marker, label=name)
ax.axhline(exact, color="k", ls="--", label="exact kernel k-means")
ax.set_xscale("log")
ax.set_xlabel("floats uploaded by all users (log scale)")
ax.set_ylabel("NMI")
ax.set_title(f"Digits, {len(X)} rows over {n_users} users")
ax.legend(loc="lower right")
fig.tight_layout()
plt.show()

# %%
# Distances to the centers, as a pipeline step
# --------------------------------------------
# Like :meth:`sklearn.cluster.KMeans.transform`, ``transform`` gives each
# row's distance to every center, in the embedding where the centers live
# (``predict`` is the nearest); each user embeds only its own rows. With
# ``set_output(transform="pandas")`` the columns are named.
km.set_output(transform="pandas")
distances = km.transform(X[:5])
print(distances.round(3))
print("nearest center = predict:",
      np.array_equal(distances.to_numpy().argmin(axis=1), km.predict(X[:5])))
