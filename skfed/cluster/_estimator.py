"""The estimator of federated kernel k-means: :class:`FederatedKernelKMeans`.

The class with its methods, its Notes and its privacy hooks. The protocol
it runs is in :mod:`._protocol` (Algorithm 1: the setup, DSPGD with or
without CEM, the distributed k-means and the out-of-sample map), the privacy
contract of its messages in :mod:`._contract` and the attack on them in
:mod:`._attacks`.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import (BaseEstimator, ClassNamePrefixFeaturesOutMixin,
                          ClusterMixin, TransformerMixin, _fit_context)
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from .._docstrings import fill_doc
from .._privacy_core import Secret
from ..base import FederatedMixin, check_row_weights, party_seeds
from ..partition import HorizontalPartition
from ._attacks import (map_inversion, refinement_differences,
                       row_reconstruction, totals_inversion)
from ._contract import kernel_kmeans_contract
from ._coreset import MIN_GROUP
from ._protocol import (check_user_rows, run_protocol, user_embed_and_assign,
                        users_key_from_seed)
from ._refine import user_feature_distances

__all__ = ["FederatedKernelKMeans"]

#: cap on the random features of the out-of-sample map (memory of s x D')
_MAX_OOS_FEATURES = 2000


def auto_random_features(n_clusters, n_lambda, n_samples):
    """``n_random_features="auto"``: ``max(100, 10 n_lambda)``, at most N / 2.

    ``n_lambda = max(n_clusters + 2, n_components + 1)``. More clusters mean
    more eigenvectors with smaller gaps between them, hence more features per
    iteration; the cap keeps the ``(D + r_t)``-square Lanczos matrix smaller
    than the kernel matrix, and it never goes below ``n_lambda``. (Until
    issue 30 the base was ``max(200, 40 n_lambda)``: the same NMI on
    digits, blobs and the moons, with about twice the uploads.)
    """
    return int(max(n_lambda, min(max(100, 10 * n_lambda), n_samples // 2)))


def n_distinct_rows(X):
    """How many distinct rows ``X`` has (dense or sparse)."""
    if not sp.issparse(X):
        return len(np.unique(X, axis=0))
    X = X.tocsr(copy=True)
    X.sum_duplicates()
    X.eliminate_zeros()
    X.sort_indices()
    return len({(X.indices[a:b].tobytes(), X.data[a:b].tobytes())
                 for a, b in zip(X.indptr[:-1], X.indptr[1:])})


def _user(m):
    return f"user{m}"


# -- the estimator ------------------------------------------------------------

@fill_doc
class FederatedKernelKMeans(FederatedMixin, ClassNamePrefixFeaturesOutMixin,
                            TransformerMixin, ClusterMixin, BaseEstimator):
    """Federated kernel k-means on rows split over users (DSPGD + CEM).

    Users each hold some rows of ``X``; a server that holds no data
    coordinates. The top eigenpairs of the RBF kernel matrix are found by
    distributed stochastic proximal gradient descent (DSPGD): in iteration
    ``t`` every user draws fresh random Fourier features of its own rows and
    the server runs a distributed Lanczos on the small matrix
    ``W_t^T W_t`` (the communication-efficient mechanism, CEM), whose size
    does not depend on the number of rows. Each user then builds its rows of
    the embedding ``H`` and a distributed linear k-means clusters them
    without any row leaving its user. By default (``refine="once"``,
    skfed's addition) one update of kernel k-means on random features of
    the kernel then refines those labels. Every sum the server needs over users arrives
    through secure aggregation: the server decodes totals only.

    Read more in the :ref:`User Guide <kernel_kmeans>`.

    Parameters
    ----------
    n_clusters : int, default=8
        The number of clusters ``k``.

    n_components : int or None, default=None
        The number ``s`` of top eigenvectors of the kernel matrix that make up
        the embedding ``H``. ``None`` means ``n_clusters``.

    n_random_features : int or "auto", default="auto"
        The number ``D`` of random Fourier features each user draws per
        iteration. ``"auto"`` is ``max(100, 10 n_lambda)`` with ``n_lambda
        = max(n_clusters + 2, n_components + 1)``, capped at half the rows
        (and never below ``n_lambda``): more clusters mean more
        eigenvectors to separate. An int must be at least ``n_lambda``.
        The paper uses values below 50 with a fixed ``T``; see Notes.

    threshold : {"auto", "paper"}, default="auto"
        How the threshold ``lambda`` of the proximal step is read off the
        eigenvalues ``theta_1 >= theta_2 >= ...`` of the first iteration's
        kernel estimate. ``"paper"``: ``theta_{n_lambda}`` (the paper's
        ``(k+2)``-th, section 6.1). ``"auto"``: that, but at most
        ``(1 - rho) theta_{s+1}`` with ``rho = min(2 sqrt(2 / D), 1/2)``,
        so that the estimate's noise cannot lift ``lambda`` above the
        ``(s+1)``-th eigenvalue, which the embedding needs kept (skfed's
        rule; see Notes).

    refine : {"once", "auto"}, int or None, default="once"
        What follows the paper's clustering of the embedding (line 19 of
        Algorithm 1). ``None``: nothing, the paper's Algorithm 1.
        Otherwise skfed's refinement, Lloyd's k-means on the random features
        ``z(x)`` of the out-of-sample map, started from the embedding's
        labels, with the cluster sums and counts securely summed among the
        users (the server never receives them). ``"once"``: one center
        update, by design (the centers of the embedding's labels; each row
        then takes its nearest center); no warning. ``"auto"`` or an int:
        Lloyd until fewer than ``MIN_MOVED = 5`` rows change cluster, after
        at most 100 (``"auto"``) or ``refine`` center updates, with a
        ``ConvergenceWarning`` at that cap. Kernel k-means itself minimises
        the distances to cluster means in the kernel's feature space, which
        ``z`` approximates; the embedding's clustering is a relaxation of
        it (see Notes). Each further update releases new totals, and two
        consecutive totals give every user the rows of the other users
        that changed cluster (the audit's ``refinement_differences``:
        1.000 of them on the moons); ``"once"`` releases one.

    max_iter : int, default=300
        Cap on the number ``T`` of DSPGD iterations.

    tol : float or None, default=0.02
        Stop once the relative change of the embedding's Gram matrix,
        ``||H_t H_t^T - H_{t-1} H_{t-1}^T||_F / ||H_t H_t^T||_F``, averaged
        over the last 10 iterations, is below ``tol``. ``None`` runs exactly
        ``max_iter`` iterations, as the paper does (and sends no
        convergence message).

    gamma : float or None, default=None
        Width of the RBF kernel ``exp(-gamma ||x - x'||^2)``. ``None`` is the
        paper's rule ``gamma = N^2 / (2 sum_ij ||x_i - x_j||^2)``, computed
        by the server from securely summed moments (see Notes), so no row
        moves. Data sets with curved clusters (circles, moons) need a
        larger, explicit value.

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

    party_keys : {"random_state", "os"}, default="random_state"
        Where the users' shared key comes from. It seeds every random
        feature (so it shapes the model) and the server never learns it.
        ``"random_state"`` derives it from ``random_state``: fits are
        reproducible, and whoever knows ``random_state`` knows the key.
        ``"os"`` has the first user draw it from its CSPRNG and send it to
        the other users, as a deployment would: the server cannot
        regenerate any feature, and two fits differ.

    %(partition_horizontal)s
    %(random_state)s
    %(verbose)s

    Attributes
    ----------
    labels_ : ndarray of shape (n_samples,)
        Cluster of each training row (each user learns the labels of its
        own rows; the estimator collects them for the caller).

    cluster_centers_ : ndarray of shape (n_clusters, n_components_) or \
            (n_clusters, n_oos_features)
        The centers, not in the input space (a kernel k-means center has no
        pre-image in general): with ``refine=None`` in the embedding space
        (rows of ``H``), otherwise in the random features ``z`` of the
        out-of-sample map (``embedding_map_.shape[1]`` of them); the rows
        of clusters that held no row there are zero (and ``transform``
        gives them an infinite distance).

    communication_ : CommunicationSummary
        Every message of ``fit``, by protocol phase (the same phases in
        every iteration, as for the other estimators): ``"setup: ..."``
        (row counts, users' key, scale, moments, gamma), ``"dspgd:
        iteration"`` (the server announces ``t``), ``"dspgd: lanczos"``
        (``"/request"`` the server's Lanczos vectors, ``"/upload"`` the
        users' masked products; without CEM also ``"/rows"``), ``"dspgd:
        eigenpairs"``, ``"dspgd: convergence"`` (the masked overlaps of the
        stopping rule), ``"dspgd: build H"`` (``"dspgd: rows of H"`` without
        CEM), ``"kmeans: ..."``, ``"oos: embedding map"`` and, with the
        refinement, ``"refine: totals"`` (``"/upload"`` to the first user,
        ``"/relay"`` from it) and ``"refine: moves"``; ``"*/keys"`` are
        the secure sums' pair seeds. A recorded message carries its
        DSPGD iteration as ``Message.round``.

    communication_by_iteration_ : list of CommunicationSummary
        The messages of each DSPGD iteration (``n_iter_`` entries, same
        phases). The paper's measure, floats uploaded per user per
        iteration, is the ``scalars`` sent to ``"server"`` in the phase
        ``"dspgd: lanczos"``; :func:`dspgd_uploads` tabulates it.

    n_iter_ : int
        Number of DSPGD iterations run (where ``tol`` stopped them, or
        ``max_iter``).

    n_refine_iter_ : int
        Center updates of the refinement (0 with ``refine=None``, 1 with
        ``"once"``).

    refine_moves_ : ndarray of shape (n_refine_iter_,)
        Rows that changed cluster after each center update (the server's
        decoded total; ``"auto"`` stops below ``MIN_MOVED``).

    embedding_changes_ : ndarray of shape (n_iter_ - 1,)
        The server's measure of the embedding change after each iteration
        from the second (empty with ``tol=None``).

    n_random_features_ : int
        The number ``D`` of random features used.

    n_lanczos_iter_ : ndarray of shape (n_iter_,)
        Lanczos steps ``Q_t`` of each iteration (rounds of uploads).

    ranks_ : ndarray of shape (n_iter_,)
        Rank ``r_{t+1}`` of ``Z_{t+1}`` after each iteration.

    gamma_ : float
        The kernel width used.

    threshold_ : float
        The threshold ``lambda`` of the proximal step (see ``threshold``).

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
    Protocol (Algorithm 1). Setup: each user sends its row count; for the
    default ``gamma`` the users secure-sum ``(Q sum x, sum ||x||^2)``, ``Q``
    an orthogonal map from their key, so the server learns the totals and
    of the mean row only its norm; the server broadcasts ``gamma``. For
    ``t = 1, 2, ...`` with ``eta_t = 1/t``: each user draws ``A_t[m]`` from
    the users' key and forms ``W_t[m] = [sqrt(eta_t/D) A_t[m],
    sqrt(1-eta_t) B_t[m]]``. The server runs Lanczos on ``W_t^T W_t``: it
    broadcasts ``c_q``, the users upload ``W_t[m]^T W_t[m] c_q`` masked
    with pairwise ring masks, the server decodes only their sum (appendix
    B needs nothing else), re-orthogonalises fully (twice) and stops once
    every Ritz value above ``eta_t lambda`` has converged. It broadcasts those
    eigenpairs ``(theta_i, v_i)``; each user forms ``u_i[m] = W_t[m] v_i /
    sqrt(theta_i)`` and ``B_{t+1}[m] = [sqrt(theta_i - eta_t lambda)
    u_i[m]]``. After the last iteration ``T``, ``H[m] = [sqrt(theta_i +
    (1-eta_T) lambda) u_i[m]]``, ``i <= s``.

    Choices where the paper is silent or loose:

    - Stopping: the paper fixes ``T``; here the users secure-sum their
      ``s x s`` overlaps ``U_t[m]^T U_{t-1}[m]``, from which the server
      gets the embedding change (see ``tol``). The estimate is stochastic
      (error ``O(1/t)``), so the change is averaged over 10 iterations.
      With ``D`` of 100-120 the defaults reach, on the moons, circles,
      blobs, wine and digits of the benchmark, 0.95 of the NMI of exact
      kernel k-means (the moons, whose top eigenvalues come in near-equal
      pairs, in 90-190 iterations, the circles in 25-45; see the User
      Guide). Non-finite values
      stop the fit with an error naming ``gamma``; reaching ``max_iter``
      gives a ``ConvergenceWarning``.
    - Small tables: CEM saves about ``1 - (D + r_t) / (D + n_m)`` of the
      uploads per iteration (Theorem 2), so no ``D`` saves 90% below ``9 D
      + 10 r`` rows per user (208 with ten clusters); the defaults save
      19-55% at 20-130 rows per user (User Guide, "Small tables").
    - A user holding fewer than ``MIN_USER_ROWS = 5`` rows is refused
      before any party starts, so that every value a user sends sums
      several rows.
    - ``lambda`` starts from the ``max(k + 2, s + 1)``-th eigenvalue of the
      first iteration: the paper's ``(k+2)``-th whenever ``s <= k + 1``,
      and otherwise one further down so that the limit ``Z* = sum (lambda_i
      - lambda)_+ u_i u_i^T`` keeps the ``s`` eigenpairs that ``H`` needs.
      At least ``s`` pairs are converged and broadcast in every iteration.
    - ``threshold="auto"`` (skfed's rule, the default) also caps ``lambda``
      at ``(1 - rho) theta_{s+1}``, ``rho = min(2 sqrt(2 / D), 1/2)``. The
      first iteration's eigenvalues average only ``D`` random features
      (noise about ``theta sqrt(2 / D)``, 14% at ``D = 100``). Where the
      kernel's eigenvalues lie close together (the moons and circles of the
      User Guide) the paper's ``(k+2)``-th value then often lands above the
      true ``(s+1)``-th or even ``s``-th eigenvalue (35-55% and 15% of the
      draws at ``D = 100``, table 5 of ``benchmarks/bench_kernel_kmeans.py``;
      with the cap none above the ``s``-th, at most one in twenty above the
      ``(s+1)``-th). ``Z*`` then lacks the eigenpairs below ``H``'s last
      column, which follows each iteration's fresh features: the stopping
      rule fires late or never (400 circles over eight users: 300
      iterations; 1,000 moons: 181-300, NMI 0.65-0.81; with the cap 27-44
      and 92-138). If the cap lowers ``lambda``, the first Lanczos run goes
      on until every Ritz value above it has converged (appendix B). The
      cost where it binds: a few more eigenpairs in ``Z_t`` and Lanczos
      steps (3-24% more bytes on digits and wine, 17% at 64,000
      overlapping blobs). ``threshold="paper"`` keeps the paper's rule.
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
      of rank ``s``). With ``D' = min(D max_iter, 2000)`` fresh random
      features ``a'`` (users' key), ``k_x ~ A' a'(x) / D'``, so at the end
      of ``fit`` the users secure-sum ``H[m]^T A'[m]`` (``s x D'`` floats,
      independent of row counts), the server publishes ``P = Lambda^{-1}
      H^T A' / D'``
      and every user holds ``P`` and the centers. ``predict`` then runs on
      the user that owns the new rows, with no message at all: it draws
      ``a'(x)``, embeds ``P a'(x)`` and picks the nearest center. Rows of
      the ``X`` passed to ``predict`` are dealt to the users evenly.
    - ``score`` is the negative k-means objective of the embedded rows,
      like :meth:`sklearn.cluster.KMeans.score` (with the refinement, in
      the random features ``z``).
    - Refinement (skfed's; ``refine=None`` is the paper's Algorithm 1, to
      the byte). The embedding's clustering approximates kernel k-means
      through the top ``s`` eigenvectors; where those do not separate the
      clusters no accuracy of ``H`` helps (the moons of issue 35: exact
      kernel k-means, which ``H`` approaches, reaches NMI 0.776). The
      refinement runs Lloyd's k-means on ``z(x) = a'(x) / sqrt(D')``, the
      out-of-sample map's random features (``z(x)^T z(x') ~ k(x, x')``,
      so the objective is kernel k-means'), from the embedding's labels:
      each user secure-sums its ``(sum of z by cluster, rows by
      cluster)`` (``k (D' + 1)`` values) to the first user, who relays the
      totals to the other users; each user divides, relabels its rows and
      secure-sums to the server how many moved. ``"once"`` (the default)
      stops there: one Lloyd step, which never raises the kernel k-means
      objective. ``"auto"`` goes on, with new totals whenever at least
      ``MIN_MOVED = 5`` rows moved in all. Labels are always the nearest
      released center (``predict`` reproduces ``labels_``), and equal a
      pooled-data Lloyd with the same rule (``tests/cluster/
      test_refine.py``). Moons of issue 35 (seeds 0-2): NMI 0.781 / 0.622
      / 0.787 without, 0.948 / 0.710 / 0.854 with one update (median
      0.854), 0.990 for each with ``"auto"`` after 3-10 updates; on the
      other sets of ``benchmarks/bench_kernel_kmeans.py`` (table 6) one
      update is never below the paper's (wine and digits +0.005, blobs and
      circles equal) for 1-23% more bytes; ``"auto"`` gains more on digits
      (+0.012) and ends 0.005 below on the blobs (the seeds' spread).
      ``"once"`` is the default because a second release of the totals
      gives every user the other users' moved rows (below).
    - Memory: a user holds its ``W_t[m]`` (``n_m x (D + r_t)`` floats,
      the random features written into it by blocks of rows, never a
      second copy), ``U`` and ``B`` (``n_m`` times a few ``k``); the
      out-of-sample features ``A'`` and those of ``predict`` go by blocks
      of about 2 million values. ``gamma`` comes from the moments, never
      from pairs of rows.

    What the server learns with CEM: each user's row count, one local
    k-means cost per user and its group means of ``H`` (each over at least
    two rows); of everything else only totals over users -- ``N``,
    ``||sum x||`` and ``sum ||x||^2``, ``W_t^T W_t c_q`` (hence the small
    matrix ``W_t^T W_t``, not the paper's per-user ``W_t[m]^T W_t[m]``),
    the overlaps and ``H^T A'``; with the refinement also the number of
    rows that moved after each center update (the totals of the refinement
    go to the users only). With a single user these totals are that
    user's. Without CEM it also receives ``A_t[m] A_t^T c_q`` (one value
    per row: plain DSPGD concatenates them, so they cannot be summed away)
    and holds the eigenvectors of ``R_t`` over all rows. Users learn the
    broadcasts and the pair seeds of the secure sums; with the refinement
    also its totals. With ``"once"`` that is one release: the sum of ``z``
    and the row count of each cluster over all users, the centers the
    model publishes anyway (the kernel mean of each cluster, like the
    paper's map ``P``, a weighted kernel mean per eigenvector). The audit's
    ``totals_inversion`` measures what a user rebuilds from it of the
    other users' rows: a kernel density by cluster. On 1,000 moons with
    three users it gives 0.99-1.00 of another user's rows a guess of
    their own within 0.1 of the data's scale when the rows are dealt at
    random (the user's own rows give 0.87-0.90) and 0.89-0.99 when each
    user holds a third of the first coordinate (chance 0.29-0.33); on the
    digits none. ``map_inversion`` does the same from ``P``: 0.23-0.79 on
    the split moons for a user, 0.55-0.76 for the server (chance 0.45),
    which derives the key with ``party_keys="random_state"``
    (``benchmarks/bench_kernel_kmeans.py``, tables 8 and 9). No second
    total exists, so
    ``refinement_differences`` scores chance for every party. With
    ``"auto"`` two consecutive totals differ by the features of the rows
    that moved between them (signed): with the key every user holds, that
    is a small system in those rows, and ``refinement_differences`` solves
    it (matching pursuit, then least squares on the ``D'`` features). On
    issue 35's moons (1,000 rows, 3 users, seeds 0-2; 5 to 29 rows moved
    between two totals) each user recovers every moved row of the other
    two within 0.1 of the data's scale (mean error 0.001-0.011; random
    guesses 0-16%); on the digits (64 columns, ten clusters, 5 users)
    6-56% of them (mean error 0.27-0.64 of the scale, random guesses
    1.4). The ``MIN_MOVED`` gate cannot prevent it; the server, holding
    no total, scores chance (``benchmarks/bench_kernel_kmeans.py``,
    table 7). This is why ``"auto"`` is not the default.
    The refinement as first built summed the totals to the server, which
    then recovered every moved row with ``party_keys="random_state"``
    (mean error 0.012). The contract (``skfed.privacy.check_messages``)
    declares each message.

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
    >>> km = FederatedKernelKMeans(n_clusters=3, partition=3,
    ...                            random_state=0).fit(X)
    >>> bool(adjusted_rand_score(y, km.labels_) > 0.9)
    True
    >>> km.cluster_centers_.shape  # in the map's 2,000 random features
    (3, 2000)
    """

    _partition_kind = "horizontal"

    _parameter_constraints = {
        "n_clusters": [Interval(Integral, 1, None, closed="left")],
        "n_components": [None, Interval(Integral, 1, None, closed="left")],
        "n_random_features": [StrOptions({"auto"}),
                              Interval(Integral, 1, None, closed="left")],
        "threshold": [StrOptions({"auto", "paper"})],
        "refine": [None, StrOptions({"once", "auto"}),
                   Interval(Integral, 1, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [None, Interval(Real, 0, None, closed="left")],
        "gamma": [None, Interval(Real, 0, None, closed="neither")],
        "communication_efficient": ["boolean"],
        "coreset_size": [Interval(Integral, 1, None, closed="left")],
        "party_keys": [StrOptions({"random_state", "os"})],
        "partition": "no_validation",
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __init__(self, n_clusters=8, *, n_components=None,
                 n_random_features="auto", threshold="auto", refine="once",
                 max_iter=300, tol=0.02, gamma=None, communication_efficient=True,
                 coreset_size=1000, party_keys="random_state", partition=None,
                 random_state=None, verbose=0):
        self.n_clusters = n_clusters
        self.n_components = n_components
        self.n_random_features = n_random_features
        self.threshold = threshold
        self.refine = refine
        self.max_iter = max_iter
        self.tol = tol
        self.gamma = gamma
        self.communication_efficient = communication_efficient
        self.coreset_size = coreset_size
        self.party_keys = party_keys
        self.partition = partition
        self.random_state = random_state
        self.verbose = verbose

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, sample_party=None, sample_weight=None):
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

        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative row weights, each held by the user holding the row.
            They weight the clustering of the embedding (line 19 of
            Algorithm 1): each user's local k-means and the sizes of its
            group means, hence the server's weighted k-means. The spectral
            embedding itself is the kernel matrix's, unweighted (so weights
            are not the same as repeated rows there). Equal weights give the
            unweighted model.

        Returns
        -------
        self : FederatedKernelKMeans
            Fitted estimator.
        """
        X = validate_data(self, X, dtype=np.float64, accept_sparse="csr")
        n_samples = X.shape[0]
        k = self.n_clusters
        if k > n_samples:
            raise ValueError(
                f"n_samples={n_samples} should be >= n_clusters={k}: there are "
                "more clusters than rows. Use fewer clusters.")
        n_distinct = n_distinct_rows(X)
        if n_distinct < k:
            raise ValueError(
                f"X has only {n_distinct} distinct rows, fewer than "
                f"n_clusters={k}: identical rows always share a cluster, so "
                f"at most {n_distinct} clusters can be non-empty. Use "
                f"n_clusters <= {n_distinct}.")
        s = k if self.n_components is None else self.n_components
        n_lambda = max(k + 2, s + 1)
        D = self.n_random_features
        if D == "auto":
            D = auto_random_features(k, n_lambda, n_samples)
        elif D < n_lambda:
            raise ValueError(
                f"n_random_features={D} is too small: the threshold lambda is "
                f"the {n_lambda}-th eigenvalue of the first iteration, which "
                f"needs at least {n_lambda} random features "
                "(max(n_clusters + 2, n_components + 1)).")
        partition = self._resolve_partition(X, sample_party)
        weights = self._row_weights(X, sample_weight)
        # the contract's group sizes: weight sums (floats) only when weighted
        self._privacy_weighted_ = weights is not None
        users = [_user(m) for m in range(partition.n_parties)]
        n_rows = [len(partition.rows(m)) for m in range(partition.n_parties)]
        n_groups = sum(n // MIN_GROUP for n in n_rows)
        if n_groups < k:
            raise ValueError(
                f"n_samples={n_samples} rows over {len(users)} user(s) are too "
                f"few for n_clusters={k}: each user summarises its rows by "
                f"means of at least {MIN_GROUP} rows (no raw row is sent), "
                f"which gives only {n_groups} summaries. Use fewer clusters, "
                "fewer users or more rows.")
        # The server would refuse such a user on its row count; refusing here
        # means no party starts.
        check_user_rows(n_rows, users)
        seeds = party_seeds(self.random_state, len(users) + 3)
        draw_key = self.party_keys == "os"
        users_key = None if draw_key else users_key_from_seed(seeds[-1])
        states = {"server": dict(n_rows=[])}
        # The refinement's sums are weighted by the weights over their mean,
        # so that they stay below 2 N for the ring (the centers do not change).
        relative = None if weights is None else weights / weights.mean()
        for m, u in enumerate(users):
            rows = X[partition.rows(m)]
            states[u] = dict(X=rows, n_random_features=D, users_key=users_key,
                             B=np.zeros((rows.shape[0], 0)), kmeans_seed=seeds[m],
                             sample_weight=(None if weights is None
                                            else weights[partition.rows(m)]),
                             refine_weight=(None if relative is None
                                            else relative[partition.rows(m)]))
        with self._federation(states) as fed:
            out = run_protocol(
                fed, users, gamma=self.gamma, draw_key=draw_key,
                communication_efficient=self.communication_efficient,
                max_iter=self.max_iter, tol=self.tol, n_lambda=n_lambda,
                n_components=s, n_random_features=D,
                threshold=self.threshold, n_samples=n_samples,
                n_clusters=k, coreset_size=self.coreset_size,
                seeds=dict(server=seeds[-3], lanczos=seeds[-2]),
                n_oos_features=min(D * self.max_iter, _MAX_OOS_FEATURES),
                verbose=self.verbose, monitor=getattr(self, "_monitor", None),
                refine=self.refine)

        labels = np.empty(n_samples, dtype=np.int64)
        for m, lab in enumerate(out["labels"]):
            labels[partition.rows(m)] = lab
        # Centers that won no row go last, so the labels are 0..n_used-1.
        used = np.unique(labels)
        order = np.concatenate([used, np.setdiff1d(np.arange(k), used)])
        self.labels_ = np.argsort(order)[labels].astype(np.int64)
        refined = out["refined_centers"] is not None
        self.cluster_centers_ = np.asarray(
            out["refined_centers"] if refined else out["centers"])[order]
        self.n_refine_iter_ = len(out["refine_moves"])
        self.refine_moves_ = np.asarray(out["refine_moves"], dtype=np.int64)
        # Clusters that never held a row in the refinement are never nearest.
        self._refined_alive = (np.asarray(out["refined_alive"])[order]
                               if refined else None)
        self.gamma_ = out["gamma"]
        self.threshold_ = float(out["threshold"])
        self.eigenvalues_ = np.asarray(out["eigenvalues"])
        self.n_components_ = len(self.eigenvalues_)
        self.embedding_map_ = out["embedding_map"]
        # The users' key stays with the users: the estimator acts for them
        # when it predicts (it never reaches the server).
        self._users_key = out["users_key"]
        # Each user's labels at every release of the refinement's totals,
        # then its final labels (users' own records, kept for the audit).
        self._refine_history = out["refine_history"]
        self.n_random_features_ = int(D)
        self._n_features_out = k  # transform: distances to the k centers
        self.n_iter_ = len(out["trace"])
        self.embedding_changes_ = np.asarray(out["changes"], dtype=float)
        self.communication_by_iteration_ = list(out["per_iteration"])
        self.n_lanczos_iter_ = np.array([q for q, _ in out["trace"]])
        self.ranks_ = np.array([r for _, r in out["trace"]])
        return self

    def fit_predict(self, X, y=None, sample_party=None, sample_weight=None):
        """Fit and return the cluster of each training row (``labels_``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training rows, split over the users by the partition.

        y : Ignored
            Not used, present for API consistency.

        sample_party : array-like of int of shape (n_samples,), default=None
            The user that holds each row.

        sample_weight : array-like of shape (n_samples,), default=None
            Row weights (see :meth:`fit`).

        Returns
        -------
        labels : ndarray of shape (n_samples,)
        """
        return self.fit(X, sample_party=sample_party,
                        sample_weight=sample_weight).labels_

    def _row_weights(self, X, sample_weight):
        """Validated weights, or None when they change nothing."""
        w = check_row_weights(sample_weight, X)
        return None if w is None or np.all(w == w[0]) else w

    def transform(self, X):
        """Distance of each row to each cluster center, in the embedding.

        As :meth:`sklearn.cluster.KMeans.transform`, in the space where the
        centers live: the kernel embedding ``h(x)`` (the out-of-sample map),
        so ``predict`` is the ``argmin`` of each row. Each user embeds only
        its own rows; nothing is sent.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            New rows, embedded through the out-of-sample map.

        Returns
        -------
        distances : ndarray of shape (n_samples, n_clusters)
        """
        return np.sqrt(self._squared_distances(X))

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

    def _squared_distances(self, X):
        """``||h(x) - c_j||^2`` of each row to each center, by the users."""
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64,
                          accept_sparse="csr")
        n_users = min(self.partition_.n_parties, X.shape[0])
        owners = HorizontalPartition(n_users).resolve(X)
        states = {_user(m): dict(X=X[owners.rows(m)], gamma=self.gamma_,
                                 users_key=self._users_key)
                  for m in range(n_users)}
        dist = np.empty((X.shape[0], len(self.cluster_centers_)))
        with self._federation(states, record=False) as fed:
            # No message: every user already holds the published map and
            # centers, and embeds only the rows it owns.
            if getattr(self, "_refined_alive", None) is not None:
                # The refined centers live in the map's random features.
                results = fed.gather(
                    fed[_user(m)].call(user_feature_distances,
                                       self.cluster_centers_,
                                       self.embedding_map_.shape[1],
                                       self._refined_alive)
                    for m in range(n_users))
            else:
                results = fed.gather(
                    fed[_user(m)].call(user_embed_and_assign,
                                       self.embedding_map_,
                                       self.cluster_centers_)
                    for m in range(n_users))
        for m, d in enumerate(results):
            dist[owners.rows(m)] = d
        return dist

    def _embed_and_assign(self, X):
        dist = self._squared_distances(X)
        labels = np.argmin(dist, axis=1).astype(np.int64)
        return labels, dist[np.arange(len(labels)), labels]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    # -- privacy hooks (skfed.privacy.check_messages and audit) ---------------

    def _privacy_contract(self):
        return kernel_kmeans_contract(self)

    def _privacy_secrets(self, X, y=None, **fit_params):
        """Each user's rows (from the base class) and its row sum and mean.

        A plaintext vector equal to a user's sum or mean of rows is what the
        unmasked moments of the default ``gamma`` used to send; with kind
        ``"rows"`` the semantic check flags it like a raw row.
        """
        secrets = list(super()._privacy_secrets(X, y, **fit_params))
        X = np.asarray(X, dtype=float)
        for m in range(self.partition_.n_parties):
            rows = X[self.partition_.rows(m)]
            secrets.append(Secret(
                f"user{m}", "rows", f"sum and mean of user{m}'s rows",
                np.vstack([rows.sum(axis=0), rows.mean(axis=0)])))
        return secrets

    def _privacy_attacks(self):
        return [row_reconstruction, refinement_differences, totals_inversion,
                map_inversion]
