"""Federated kernel k-means: DSPGD + CEM + distributed Lanczos.

The data are split by rows: user ``m`` holds ``X[m]``; a server with no data
coordinates. ``_dspgd_with_cem`` is the paper's Algorithm 1 (lines 4-18),
``_plain_dspgd.dspgd_without_cem`` the plain DSPGD of section 4.1 kept for
the communication comparison, and ``_coreset.distributed_kmeans`` line 19.
Party code lives in ``_dspgd``, ``_lanczos`` and ``_coreset``.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClusterMixin, _fit_context
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted, validate_data

from .._docstrings import fill_doc
from ..base import FederatedMixin, party_seeds
from ..partition import HorizontalPartition
from . import _dspgd as dspgd
from ._dspgd import SERVER, choose_lambda, phase_of
from ._plain_dspgd import dspgd_without_cem
from ._coreset import MIN_GROUP, distributed_kmeans
from ._lanczos import distributed_lanczos, server_collect

__all__ = ["FederatedKernelKMeans", "dspgd_uploads"]

#: cap on the random features of the out-of-sample map (memory of s x D')
_MAX_OOS_FEATURES = 2000


def _user(m):
    return f"user{m}"


def dspgd_uploads(communication):
    """Floats each user uploaded in each DSPGD iteration (the paper's measure).

    Parameters
    ----------
    communication : CommunicationSummary
        ``communication_`` of a fitted :class:`FederatedKernelKMeans`.

    Returns
    -------
    uploads : dict
        ``{t: {user: n_floats}}``: scalars sent by each user to the server in
        phase ``"dspgd t=<t>"``.
    """
    out = {}
    for sender, receiver, phase, _, scalars, _, _ in communication.records:
        if receiver == SERVER and phase.startswith("dspgd t="):
            t = int(phase.split("=")[1])
            out.setdefault(t, {}).setdefault(sender, 0)
            out[t][sender] += scalars
    return dict(sorted(out.items()))


# -- the protocol -------------------------------------------------------------

def _setup(fed, users, gamma):
    """The server learns the row counts and, by default, the kernel width."""
    if gamma is None:
        phase, local_fn, server_fn = ("setup: gamma", dspgd.user_moments,
                                      dspgd.server_gamma)
    else:
        phase, local_fn, server_fn = ("setup: row counts", dspgd.user_row_count,
                                      dspgd.server_row_counts)
    replies = fed.gather(fed[u].call(local_fn) for u in users)
    fed.gather(fed[SERVER].call(server_collect, r, sender=u, phase=phase)
               for u, r in zip(users, replies))
    computed = fed[SERVER].call(server_fn).result()
    gamma = computed if gamma is None else gamma
    fed.gather(fed[u].call(dspgd.user_set_gamma, gamma, sender=SERVER,
                           phase="setup: gamma") for u in users)
    return float(gamma)


def _dspgd_with_cem(fed, users, *, n_iter, n_lambda, n_components,
                    lanczos_seeds, verbose, monitor):
    """Algorithm 1, lines 4-18. Returns lambda, the eigenvalue estimates of
    the columns of H, and ``(Q_t, r_{t+1})`` per iteration."""
    lam, trace = None, []
    for t in range(1, n_iter + 1):
        eta, phase = 1.0 / t, phase_of(t)
        # Lines 6-9: every user draws A_t[m] and forms W_t[m] (the server only
        # announces the iteration).
        dims = fed.gather(fed[u].call(dspgd.user_form_w, t, eta, sender=SERVER,
                                      phase=phase) for u in users)

        # Line 10: DLA on W_t^T W_t (D + r_t square, whatever the number of
        # rows): the server broadcasts c, each user uploads W_t[m]^T W_t[m] c.
        def matvec(c):
            parts = fed.gather(fed[u].call(dspgd.user_gram_product, c,
                                           sender=SERVER, phase=phase)
                               for u in users)
            fed.gather(fed[SERVER].call(server_collect, g, sender=u, phase=phase)
                       for u, g in zip(users, parts))

        first, last = lam is None, t == n_iter
        q = distributed_lanczos(
            fed, SERVER, dims[0], matvec,
            threshold=np.inf if first else eta * lam,
            n_min=n_lambda if first else (n_components if last else 1),
            seed=lanczos_seeds[t - 1])
        if first:
            theta_all = fed[SERVER].call(dspgd.server_select_pairs, np.inf,
                                         n_lambda).result()[0]
            lam = choose_lambda(theta_all, n_lambda)
        shrink = eta * lam
        theta, V = fed[SERVER].call(dspgd.server_select_pairs, shrink,
                                    n_components if last else 0).result()
        # Lines 11-14: the server broadcasts the eigenpairs; each user forms
        # its rows of the eigenvectors and of B_{t+1} (soft threshold).
        fed.gather(fed[u].call(dspgd.user_update_from_eigenpairs, theta, V,
                               shrink, sender=SERVER, phase=phase)
                   for u in users)
        rank = int(np.sum(theta > shrink))
        trace.append((q, rank))
        if verbose:
            print(f"[FederatedKernelKMeans] t={t}: {q} Lanczos steps, "
                  f"dimension {dims[0]}, rank {rank}")
        if monitor is not None:
            monitor(t, theta + (1.0 - eta) * lam,
                    fed.gather(fed[u].call(_evaluation_only_rows) for u in users))
    # Lines 16-18: each user builds its rows of H.
    scales = np.sqrt(theta[:n_components] + (1.0 - eta) * lam)
    fed.gather(fed[u].call(dspgd.user_build_h, scales, sender=SERVER,
                           phase="dspgd: build H") for u in users)
    return lam, scales ** 2, trace


def _evaluation_only_rows(state):
    # Not a protocol message: the benchmark's recovery-error curve reads the
    # users' eigenvector rows through this local call.
    return state.U


def _out_of_sample_map(fed, users, eigenvalues, n_features):
    """Users upload H[m]^T A'[m]; the server sums it into the embedding map."""
    phase = "oos: embedding map"
    moments = fed.gather(fed[u].call(dspgd.user_oos_moment, n_features)
                         for u in users)
    fed.gather(fed[SERVER].call(server_collect, mom, sender=u, phase=phase)
               for u, mom in zip(users, moments))
    P = fed[SERVER].call(dspgd.server_oos_map, eigenvalues, n_features).result()
    fed.gather(fed[u].call(dspgd.user_receive_map, P, sender=SERVER, phase=phase)
               for u in users)
    return P


def _user_labels(state):
    # The output of the protocol: each user's own labels, handed to its owner.
    return state.labels


def _user_embed_and_assign(state, embedding_map, centers):
    """Prediction on a user: embed its new rows, nearest published center."""
    A = dspgd.random_features(state.X, state.oos_seed, state.gamma,
                              embedding_map.shape[1])
    E = A @ embedding_map.T
    d = ((E[:, None, :] - centers[None]) ** 2).sum(axis=-1)
    return np.argmin(d, axis=1), d.min(axis=1)


# -- the estimator ------------------------------------------------------------

@fill_doc
class FederatedKernelKMeans(FederatedMixin, ClusterMixin, BaseEstimator):
    """Federated kernel k-means on rows split over users (DSPGD + CEM).

    Users each hold some rows of ``X``; a server that holds no data
    coordinates. The top eigenpairs of the RBF kernel matrix are found by
    distributed stochastic proximal gradient descent (DSPGD): in iteration
    ``t`` every user draws fresh random Fourier features of its own rows and
    the server runs a distributed Lanczos on the small matrix
    ``W_t^T W_t`` (the communication-efficient mechanism, CEM), whose size
    does not depend on the number of rows. Each user then builds its rows of
    the embedding ``H`` and a distributed linear k-means clusters them
    without any row leaving its user.

    Read more in the :ref:`User Guide <kernel_kmeans>`.

    Parameters
    ----------
    n_clusters : int, default=8
        The number of clusters ``k``.

    n_components : int or None, default=None
        The number ``s`` of top eigenvectors of the kernel matrix that make up
        the embedding ``H``. ``None`` means ``n_clusters``.

    n_random_features : int, default=50
        The number ``D`` of random Fourier features each user draws per
        iteration. The paper uses small values (below 50): the iterations,
        not ``D``, drive the accuracy. Must be at least
        ``max(n_clusters + 2, n_components + 1)``.

    max_iter : int, default=20
        The number ``T`` of DSPGD iterations (the paper picks it from 10-50).

    gamma : float or None, default=None
        Width of the RBF kernel ``exp(-gamma ||x - x'||^2)``. ``None`` is the
        paper's rule ``gamma = N^2 / (2 sum_ij ||x_i - x_j||^2)``, computed
        by the server from per-user sums (counts, sums and sums of squares),
        so no row moves. Data sets with curved clusters (circles, moons)
        need a larger, explicit value.

    communication_efficient : bool, default=True
        Run DSPGD with the communication-efficient mechanism (Lanczos on the
        ``(D + r_t)``-square matrix ``W_t^T W_t``). ``False`` runs the plain
        DSPGD of the paper's section 4.1 (Lanczos on the ``n x n`` matrix
        ``R_t``, the server holding ``Z_t``), whose uploads grow with the
        number of rows; it exists to reproduce the paper's communication
        comparison and gives the server more (the eigenvectors, hence ``H``).

    coreset_size : int, default=1000
        Budget ``C`` of the distributed k-means: the number of group means
        the users send in total (the paper uses 1000-4000).

    %(partition_horizontal)s
    %(random_state)s
    %(verbose)s

    Attributes
    ----------
    labels_ : ndarray of shape (n_samples,)
        Cluster of each training row (each user learns the labels of its
        own rows; the estimator collects them for the caller).

    cluster_centers_ : ndarray of shape (n_clusters, n_components_)
        The centers in the embedding space (rows of ``H``), not in the input
        space: a kernel k-means center has no pre-image in general.

    communication_ : CommunicationSummary
        Every message of ``fit``. Phases: ``"setup: gamma"`` (or
        ``"setup: row counts"``), ``"dspgd t=<t>"`` for iteration ``t``,
        ``"dspgd: build H"`` (``"dspgd: rows of H"`` without CEM),
        ``"kmeans: ..."`` and ``"oos: embedding map"``. The paper's measure,
        floats uploaded per user per iteration, is the ``scalars`` sent to
        ``"server"`` in phase ``"dspgd t=<t>"``; :func:`dspgd_uploads`
        tabulates it.

    n_iter_ : int
        Number of DSPGD iterations run (``max_iter``).

    n_lanczos_iter_ : ndarray of shape (n_iter_,)
        Lanczos steps ``Q_t`` of each iteration (rounds of uploads).

    ranks_ : ndarray of shape (n_iter_,)
        Rank ``r_{t+1}`` of ``Z_{t+1}`` after each iteration.

    gamma_ : float
        The kernel width used.

    threshold_ : float
        The threshold ``lambda`` of the proximal step.

    eigenvalues_ : ndarray of shape (n_components_,)
        Estimates of the top eigenvalues of the kernel matrix,
        ``theta_{i,T} + (1 - eta_T) lambda``.

    n_components_ : int
        Columns of ``H`` actually built (``n_components`` unless the data
        have fewer positive eigenvalues).

    embedding_map_ : ndarray of shape (n_components_, n_oos_features)
        The published out-of-sample map ``P`` (see Notes).

    partition_ : HorizontalPartition
        The resolved partition (row owners).

    n_features_in_ : int
        Number of features seen during ``fit``.

    feature_names_in_ : ndarray of shape (n_features_in_,)
        Names of features seen during ``fit`` (DataFrame input only).

    See Also
    --------
    sklearn.cluster.KMeans : Centralized linear k-means.
    sklearn.cluster.SpectralClustering : Centralized clustering on an affinity
        matrix's eigenvectors.

    Notes
    -----
    Protocol (Algorithm 1). Setup: each user sends its row count (and, for
    the default ``gamma``, its sum of rows and sum of squared norms); the
    server broadcasts ``gamma``. For ``t = 1..T`` with ``eta_t = 1/t``: each
    user draws ``A_t[m]`` from a seed that the users share and the server
    does not know, and forms ``W_t[m] = [sqrt(eta_t/D) A_t[m],
    sqrt(1-eta_t) B_t[m]]``. The server runs Lanczos on ``W_t^T W_t``: it
    broadcasts ``c_q``, each user uploads ``W_t[m]^T W_t[m] c_q``, the
    server sums, re-orthogonalises fully (twice) and stops once every Ritz
    value above ``eta_t lambda`` has converged. It broadcasts those
    eigenpairs ``(theta_i, v_i)``; each user forms ``u_i[m] = W_t[m] v_i /
    sqrt(theta_i)`` and ``B_{t+1}[m] = [sqrt(theta_i - eta_t lambda)
    u_i[m]]``. After ``T`` iterations ``H[m] = [sqrt(theta_i + (1-eta_T)
    lambda) u_i[m]]``, ``i <= s``.

    Choices where the paper is silent or loose:

    - ``lambda`` is the ``max(k + 2, s + 1)``-th eigenvalue of the first
      iteration: the paper's ``(k+2)``-th whenever ``s <= k + 1``, and
      otherwise one further down so that the limit ``Z*`` keeps the ``s``
      eigenpairs that ``H`` needs. In the last iteration at least ``s``
      pairs are converged and broadcast.
    - A Ritz pair is converged when its residual ``beta_q |e_q^T p|`` is
      below ``1e-6`` times the largest Ritz value.
    - Distributed k-means: the two rounds of Balcan et al. (2013) (local
      costs, cost-proportional coreset budget), but each user's share is
      made of group means over at least two rows instead of sampled rows,
      so the server never receives a row of ``H`` (see
      :mod:`skfed.cluster._coreset`). The server runs weighted k-means
      (``n_init=10``) on the union and broadcasts the centers; the users
      label their own rows.
    - Out-of-sample embedding. ``H^T H = Lambda`` (the eigenvalue
      estimates), so a new row ``x`` embeds as ``Lambda^{-1} H^T k_x`` (the
      Nystrom extension, exact on training rows when the kernel matrix is
      of rank ``s``). With ``D' = min(D T, 2000)`` fresh shared random
      features ``a'``, ``k_x ~ A' a'(x) / D'``, so at the end of ``fit``
      each user uploads ``H[m]^T A'[m]`` (``s x D'`` floats, independent of
      its row count), the server publishes ``P = Lambda^{-1} H^T A' / D'``
      and every user holds ``P`` and the centers. ``predict`` then runs on
      the user that owns the new rows, with no message at all: it draws
      ``a'(x)``, embeds ``P a'(x)`` and picks the nearest center. Rows of
      the ``X`` passed to ``predict`` are dealt to the users evenly.
    - ``score`` is the negative k-means objective of the embedded rows,
      like :meth:`sklearn.cluster.KMeans.score`.

    What the server receives with CEM: row counts and moment sums, the
    products ``W_t[m]^T W_t[m] c`` (from which at most ``W_t[m]^T W_t[m]``
    follows, not ``A_t[m]``: Theorem 4), one cost per user, group means of
    ``H``, and ``H[m]^T A'[m]``. Without CEM it receives ``A_t[m] A_t^T c``
    and holds the eigenvectors of ``R_t`` over all rows.

    References
    ----------
    .. [1] "A Communication Efficient Federated Kernel k-Means", anonymous
       ICLR 2021 submission (DSPGD, CEM, Algorithm 1).
    .. [2] M.-F. Balcan, S. Ehrlich and Y. Liang, "Distributed k-means and
       k-median clustering on general topologies", NeurIPS 2013.
    .. [3] L. Zhang, T. Yang, J. Yi, R. Jin and Z.-H. Zhou, "Stochastic
       optimization for kernel PCA", AAAI 2016.

    Examples
    --------
    >>> from sklearn.datasets import make_blobs
    >>> from sklearn.metrics import adjusted_rand_score
    >>> from skfed.cluster import FederatedKernelKMeans
    >>> X, y = make_blobs(200, centers=3, random_state=1)
    >>> km = FederatedKernelKMeans(n_clusters=3, max_iter=5, partition=3,
    ...                            random_state=0).fit(X)
    >>> bool(adjusted_rand_score(y, km.labels_) > 0.9)
    True
    >>> km.cluster_centers_.shape
    (3, 3)
    """

    _partition_kind = "horizontal"

    _parameter_constraints = {
        "n_clusters": [Interval(Integral, 1, None, closed="left")],
        "n_components": [None, Interval(Integral, 1, None, closed="left")],
        "n_random_features": [Interval(Integral, 1, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "gamma": [None, Interval(Real, 0, None, closed="neither")],
        "communication_efficient": ["boolean"],
        "coreset_size": [Interval(Integral, 1, None, closed="left")],
        "partition": "no_validation",
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __init__(self, n_clusters=8, *, n_components=None, n_random_features=50,
                 max_iter=20, gamma=None, communication_efficient=True,
                 coreset_size=1000, partition=None, random_state=None,
                 verbose=0):
        self.n_clusters = n_clusters
        self.n_components = n_components
        self.n_random_features = n_random_features
        self.max_iter = max_iter
        self.gamma = gamma
        self.communication_efficient = communication_efficient
        self.coreset_size = coreset_size
        self.partition = partition
        self.random_state = random_state
        self.verbose = verbose

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, sample_party=None):
        """Run the federated protocol on the rows of ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data; each user only ever sees its own rows.

        y : Ignored
            Not used, present for API consistency.

        sample_party : array-like of int of shape (n_samples,), default=None
            The user that holds each row (ids ``0..M-1``). Without it rows go
            to users by the partition's rule.

        Returns
        -------
        self : FederatedKernelKMeans
            Fitted estimator.
        """
        X = validate_data(self, X, dtype=np.float64)
        n_samples = X.shape[0]
        k = self.n_clusters
        if k > n_samples:
            raise ValueError(
                f"n_samples={n_samples} should be >= n_clusters={k}: there are "
                "more clusters than rows. Use fewer clusters.")
        s = k if self.n_components is None else self.n_components
        n_lambda = max(k + 2, s + 1)
        D = self.n_random_features
        if D < n_lambda:
            raise ValueError(
                f"n_random_features={D} is too small: the threshold lambda is "
                f"the {n_lambda}-th eigenvalue of the first iteration, which "
                f"needs at least {n_lambda} random features "
                "(max(n_clusters + 2, n_components + 1)).")
        partition = self._resolve_partition(X, sample_party)
        users = [_user(m) for m in range(partition.n_parties)]
        n_groups = sum(len(partition.rows(m)) // MIN_GROUP
                       for m in range(partition.n_parties))
        if n_groups < k:
            raise ValueError(
                f"n_samples={n_samples} rows over {len(users)} user(s) are too "
                f"few for n_clusters={k}: each user summarises its rows by "
                f"means of at least {MIN_GROUP} rows (no raw row is sent), "
                f"which gives only {n_groups} summaries. Use fewer clusters, "
                "fewer users or more rows.")
        T = self.max_iter
        seeds = party_seeds(self.random_state, 2 * T + len(users) + 2)
        feature_seeds, lanczos_seeds = seeds[:T], seeds[T:2 * T]
        kmeans_seeds, (oos_seed, server_seed) = seeds[2 * T:-2], seeds[-2:]
        n_oos = min(D * T, _MAX_OOS_FEATURES)

        states = {SERVER: {}}
        for m, u in enumerate(users):
            rows = X[partition.rows(m)]
            states[u] = dict(X=rows, feature_seeds=feature_seeds,
                             n_random_features=D, B=np.zeros((len(rows), 0)),
                             kmeans_seed=kmeans_seeds[m], oos_seed=oos_seed)
        monitor = getattr(self, "_monitor", None)
        with self._federation(states) as fed:
            gamma = _setup(fed, users, self.gamma)
            common = dict(n_iter=T, n_lambda=n_lambda, n_components=s,
                          lanczos_seeds=lanczos_seeds, verbose=self.verbose,
                          monitor=monitor)
            if self.communication_efficient:
                lam, eigenvalues, trace = _dspgd_with_cem(fed, users, **common)
            else:
                lam, eigenvalues, trace = dspgd_without_cem(
                    fed, users, n_random_features=D, n_samples=n_samples,
                    **common)
            # Line 19: distributed linear k-means over the rows of H.
            centers = distributed_kmeans(fed, SERVER, users, n_clusters=k,
                                         coreset_size=self.coreset_size,
                                         seed=server_seed)
            embedding_map = _out_of_sample_map(fed, users, eigenvalues, n_oos)
            user_labels = fed.gather(fed[u].call(_user_labels) for u in users)

        labels = np.empty(n_samples, dtype=np.int64)
        for m, lab in enumerate(user_labels):
            labels[partition.rows(m)] = lab
        # Centers that won no row go last, so the labels are 0..n_used-1.
        used = np.unique(labels)
        order = np.concatenate([used, np.setdiff1d(np.arange(k), used)])
        self.labels_ = np.argsort(order)[labels].astype(np.int64)
        self.cluster_centers_ = np.asarray(centers)[order]
        self.gamma_ = gamma
        self.threshold_ = float(lam)
        self.eigenvalues_ = np.asarray(eigenvalues)
        self.n_components_ = len(eigenvalues)
        self.embedding_map_ = embedding_map
        self._oos_seed = oos_seed
        self.n_iter_ = T
        self.n_lanczos_iter_ = np.array([q for q, _ in trace])
        self.ranks_ = np.array([r for _, r in trace])
        return self

    def fit_predict(self, X, y=None, sample_party=None):
        """Fit and return the cluster of each training row (``labels_``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training rows, split over the users by the partition.

        y : Ignored
            Not used, present for API consistency.

        sample_party : array-like of int of shape (n_samples,), default=None
            The user that holds each row.

        Returns
        -------
        labels : ndarray of shape (n_samples,)
        """
        return self.fit(X, sample_party=sample_party).labels_

    def _embed_and_assign(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        n_users = min(self.partition_.n_parties, X.shape[0])
        owners = HorizontalPartition(n_users).resolve(X)
        states = {_user(m): dict(X=X[owners.rows(m)], gamma=self.gamma_,
                                 oos_seed=self._oos_seed)
                  for m in range(n_users)}
        labels = np.empty(X.shape[0], dtype=np.int64)
        dist = np.empty(X.shape[0])
        with self._federation(states, record=False) as fed:
            # No message: every user already holds the published map and
            # centers, and embeds only the rows it owns.
            results = fed.gather(
                fed[_user(m)].call(_user_embed_and_assign, self.embedding_map_,
                                   self.cluster_centers_)
                for m in range(n_users))
        for m, (lab, d) in enumerate(results):
            labels[owners.rows(m)] = lab
            dist[owners.rows(m)] = d
        return labels, dist

    def predict(self, X):
        """Nearest center of each new row, through the out-of-sample map.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            New rows, embedded through the out-of-sample map.

        Returns
        -------
        labels : ndarray of shape (n_samples,)
        """
        return self._embed_and_assign(X)[0]

    def score(self, X, y=None):
        """Opposite of the k-means objective of ``X`` in the embedding space.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            New rows, embedded through the out-of-sample map.

        y : Ignored
            Not used, present for API consistency.

        Returns
        -------
        score : float
            ``-sum_i min_c ||h(x_i) - c||^2`` (larger is better).
        """
        return -float(np.sum(self._embed_and_assign(X)[1]))
