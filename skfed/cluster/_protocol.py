"""The protocol of federated kernel k-means (Algorithm 1), and its contract.

The data are split by rows: user ``m`` holds ``X[m]``; a server with no data
coordinates. :func:`run_protocol` strings the steps together:

1. setup (:mod:`._setup`): row counts, the users' key, the kernel width;
2. DSPGD with CEM (:func:`dspgd_with_cem`, lines 4-18), or the plain DSPGD of
   section 4.1 (:mod:`._plain_dspgd`), kept for the communication comparison;
3. the distributed linear k-means of line 19 (:mod:`._coreset`);
4. the out-of-sample map (:func:`out_of_sample_map`).

Every sum the server needs over users -- the Lanczos products
``sum_m W_t[m]^T W_t[m] c``, the moments behind the default ``gamma``, the
embedding overlaps of the stopping rule and ``H^T A'`` -- is a secure sum
(:func:`~skfed.federation.secure_sum.secure_sum`): each user's upload is
masked by pairwise ring masks and only the total decodes. Appendix B allows
it: with CEM the distributed Lanczos needs the product ``W_t^T W_t c`` and
nothing per user. :func:`kernel_kmeans_contract` declares every message.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np

from .._progress import Progress
from ..federation import CommunicationSummary, protocol_rounds
from ..federation.secure_sum import RingEncoder, secure_sum
from . import _dspgd as dspgd
from ._coreset import distributed_kmeans
from ._dspgd import (PHASE_CONVERGENCE, PHASE_EIGENPAIRS, PHASE_ITERATION,
                     PHASE_LANCZOS, SERVER)
from ._lanczos import server_collect
from ._plain_dspgd import dspgd_without_cem
from ._setup import setup, user_key

__all__ = [
    "dspgd_uploads",
    "dspgd_with_cem",
    "out_of_sample_map",
    "run_protocol",
    "ring_encoder",
    "kernel_kmeans_contract",
]

def dspgd_uploads(estimator):
    """Floats each user uploaded in each DSPGD iteration (the paper's measure).

    Parameters
    ----------
    estimator : FederatedKernelKMeans or list of CommunicationSummary
        A fitted estimator (its ``communication_by_iteration_`` is read), or
        that list itself.

    Returns
    -------
    uploads : dict
        ``{t: {user: n_floats}}``: scalars sent by each user to the server in
        the Lanczos phase of DSPGD iteration ``t`` (``"dspgd:
        lanczos/upload"``, the masked products; with
        ``communication_efficient=False`` also ``"dspgd: lanczos/rows"``,
        the per-row products).
    """
    per_iteration = getattr(estimator, "communication_by_iteration_",
                            estimator)
    if isinstance(per_iteration, CommunicationSummary):
        raise TypeError(
            "dspgd_uploads needs the fitted FederatedKernelKMeans (or its "
            "communication_by_iteration_), not communication_: that one "
            "groups the messages by protocol phase, over all iterations.")
    out = {}
    for t, summary in enumerate(per_iteration, start=1):
        out[t] = {}
        for sender, receiver, phase, _, scalars, _, _ in summary.records:
            if receiver == SERVER and phase.startswith(PHASE_LANCZOS + "/"):
                out[t][sender] = out[t].get(sender, 0) + scalars
    return out


def ring_encoder(bound):
    """Fixed point for sums whose total is at most ``bound`` in magnitude."""
    return RingEncoder.for_bound(bound, margin_bits=3)


def dspgd_with_cem(fed, users, *, max_iter, tol, n_lambda, n_components,
                   n_random_features, n_samples, lanczos_seed, gamma,
                   lambda_margin, verbose, monitor):
    """Algorithm 1, lines 4-18, with the stopping rule.

    Returns ``(lambda, eigenvalues of H's columns, trace, changes,
    per_iteration)``; ``trace`` holds ``(Q_t, r_{t+1})`` per iteration and
    ``per_iteration`` the message counts of each iteration.
    """
    s = n_components
    fed.gather(fed[u].call(_set_state, "s", s) for u in users)
    gram = ring_encoder(2.0 * n_samples)
    overlap_encoder = ring_encoder(1.0)
    lam, trace, changes, previous = None, [], [], None
    per_iteration, counted = [], fed.summary()
    progress = Progress("FederatedKernelKMeans", max_iter, verbose, fed=fed,
                        unit="iteration")
    for t in protocol_rounds(range(1, max_iter + 1)):
        eta = 1.0 / t
        # Lines 6-9: every user draws A_t[m] and forms W_t[m] (the server only
        # announces the iteration).
        dims = fed.gather(fed[u].call(dspgd.user_form_w, t, eta, sender=SERVER,
                                      phase=PHASE_ITERATION) for u in users)

        # Line 10: DLA on W_t^T W_t = sum_m W_t[m]^T W_t[m] (D + r_t square):
        # the server broadcasts c and receives only the masked sum of the
        # users' W_t[m]^T W_t[m] c (appendix B needs nothing per user).
        def matvec(c):
            total = secure_sum(fed, users, SERVER, dspgd.user_gram_product, c,
                               phase=PHASE_LANCZOS, encoder=gram,
                               sender=SERVER)
            fed[SERVER].call(server_collect, total.result()).result()

        q, lam, shrink, theta, V = dspgd.server_eigenpairs(
            fed, dims[0], matvec, t=t, lam=lam, eta=eta, n_lambda=n_lambda,
            s=s, seed=lanczos_seed, gamma=gamma, margin=lambda_margin)
        # Lines 11-14: the server broadcasts the eigenpairs; each user forms
        # its rows of the eigenvectors and of B_{t+1} (soft threshold).
        fed.gather(fed[u].call(dspgd.user_update_from_eigenpairs, theta, V,
                               shrink, sender=SERVER, phase=PHASE_EIGENPAIRS)
                   for u in users)
        rank = int(np.sum(theta > shrink))
        trace.append((q, rank))
        values = theta[:s] + (1.0 - eta) * lam
        if monitor is not None:
            monitor(t, theta + (1.0 - eta) * lam,
                    fed.gather(fed[u].call(_evaluation_only_rows) for u in users))
        if previous is not None and tol is not None:
            # Stopping rule: the change of the embedding's Gram matrix,
            # from the masked sum of the users' s x s overlaps.
            overlap = secure_sum(fed, users, SERVER, dspgd.user_embedding_overlap,
                                 phase=PHASE_CONVERGENCE,
                                 encoder=overlap_encoder).result()
            change = fed[SERVER].call(dspgd.server_embedding_change, overlap,
                                      values, previous).result()
            dspgd.check_finite([change], t, gamma)
            changes.append(change)
        progress.report(
            t, (f"embedding change {changes[-1]:.2e}" if changes else
                "embedding change n/a") + f" ({q} Lanczos steps, rank {rank})",
            last=dspgd.converged(changes, tol))
        previous = values
        counts, counted = dspgd.iteration_counts(fed, counted)
        per_iteration.append(counts)
        if dspgd.converged(changes, tol):
            break
    else:
        dspgd.warn_not_converged(changes, tol, max_iter, n_random_features,
                                 lambda_margin)
    # Lines 16-18: each user builds its rows of H.
    scales = np.sqrt(values)
    fed.gather(fed[u].call(dspgd.user_build_h, scales, sender=SERVER,
                           phase="dspgd: build H") for u in users)
    return lam, values, trace, changes, per_iteration


def _set_state(state, name, value):
    setattr(state, name, value)


def _evaluation_only_rows(state):
    # Not a protocol message: the benchmark's recovery-error curve reads the
    # users' eigenvector rows through this local call.
    return state.U


# -- out-of-sample map, labels, prediction ----------------------------------------

def out_of_sample_map(fed, users, eigenvalues, n_features, n_samples):
    """Users' ``H[m]^T A'[m]`` summed with masks; the server publishes ``P``."""
    phase = "oos: embedding map"
    total = secure_sum(fed, users, SERVER, dspgd.user_oos_moment, n_features,
                       phase=phase, encoder=ring_encoder(2.0 * n_samples))
    P = fed[SERVER].call(dspgd.server_oos_map, total.result(), eigenvalues,
                         n_features).result()
    if np.shape(P) != np.shape(total.result()):  # would predict wrongly
        raise ValueError(f"The server's embedding map has shape {np.shape(P)}, "
                         f"expected {np.shape(total.result())}.")
    fed.gather(fed[u].call(dspgd.user_receive_map, P, sender=SERVER, phase=phase)
               for u in users)
    return P


def _user_labels(state):
    # The output of the protocol: each user's own labels, handed to its owner.
    return state.labels


def user_embed_and_assign(state, embedding_map, centers):
    """Prediction on a user: embed its new rows; squared distances to every
    published center (the nearest is the row's cluster)."""
    dist = np.empty((state.X.shape[0], len(centers)))
    # By blocks of rows: the new rows' features never exist all at once.
    for rows, A in dspgd.feature_blocks(state.X, dspgd.oos_seed(state.users_key),
                                        state.gamma, embedding_map.shape[1]):
        E = A @ embedding_map.T
        dist[rows] = ((E[:, None, :] - centers[None]) ** 2).sum(axis=-1)
    return dist


def run_protocol(fed, users, *, gamma, draw_key, communication_efficient,
                 max_iter, tol, n_lambda, n_components, n_random_features,
                 threshold, n_samples, n_clusters, coreset_size, seeds,
                 n_oos_features, verbose, monitor):
    """Algorithm 1 from setup to the published map; returns a dict of results."""
    gamma = setup(fed, users, gamma, draw_key=draw_key)
    common = dict(max_iter=max_iter, n_lambda=n_lambda,
                  n_components=n_components,
                  n_random_features=n_random_features,
                  lanczos_seed=seeds["lanczos"],
                  lambda_margin=dspgd.lambda_margin(threshold,
                                                    n_random_features),
                  verbose=verbose, monitor=monitor, n_samples=n_samples)
    if communication_efficient:
        lam, eigenvalues, trace, changes, per_iteration = dspgd_with_cem(
            fed, users, tol=tol, gamma=gamma, **common)
    else:
        lam, eigenvalues, trace, changes, per_iteration = dspgd_without_cem(
            fed, users, tol=tol, gamma=gamma, **common)
    # Line 19: distributed linear k-means over the rows of H.
    centers = distributed_kmeans(fed, SERVER, users, n_clusters=n_clusters,
                                 coreset_size=coreset_size, seed=seeds["server"])
    embedding_map = out_of_sample_map(fed, users, eigenvalues, n_oos_features,
                                      n_samples)
    labels = fed.gather(fed[u].call(_user_labels) for u in users)
    return dict(gamma=gamma, threshold=lam, eigenvalues=eigenvalues,
                trace=trace, changes=changes, per_iteration=per_iteration,
                centers=centers,
                embedding_map=embedding_map, labels=labels,
                users_key=fed[users[0]].call(user_key).result())


# -- the privacy contract -----------------------------------------------------------

def kernel_kmeans_contract(estimator):
    """What every message of a fit may contain (``predict`` sends none).

    Roles: ``"user"`` (every user, also ``"party"``) and ``"server"``.
    Prediction runs on the user that owns the new rows, with the map and
    centers it already holds, so the contract has no predict phase and a
    predict that sent anything would be an undeclared phase.
    """
    from .._privacy_core import (Aggregate, Contract, Inherent, OwnShare,
                                 Public, RandomIds, Rule, secure_sum_rules)
    from .._privacy_core import SEED_SIZE
    from ._coreset import MIN_GROUP, check_group_sizes
    from ._setup import MIN_USER_ROWS

    from ._setup import _N_BUCKETS

    def masked_sum(phase, what, max_size):
        rule = secure_sum_rules(phase, "user", "server", max_size)[1]
        rule.note = f"{what}: uniform in the ring, only the total decodes"
        return rule

    def public(note, max_size=1):
        return Public(note, max_size=max_size)

    # Sizes: the Lanczos dimension D + r_t (r_t <= D), s components, the
    # published map's shape.
    dim = "2 * est.n_random_features_"
    s = "est.n_components_"
    rules = [
        Rule("*/keys", "user", "user",
             (RandomIds("pair seed of the secure sum", dtype="u",
                        max_size=SEED_SIZE),),
             note="one 128-bit seed per pair of users, from the sender's CSPRNG"),
        Rule("setup: row counts", "user", "server",
             (Public("the user's row count", dtype="iu", max_size=1),),
             note="the server splits the coreset budget by row counts"),
        Rule("setup: users' key", "user", "user",
             (RandomIds("the users' feature key", dtype="u",
                        max_size=SEED_SIZE),),
             note="party_keys='os': the first user's CSPRNG; never to the server"),
        masked_sum("setup: scale", "one-hot power-of-two bucket of the moments",
                   _N_BUCKETS),
        Rule("setup: scale", "server", "user",
             (public("the common power-of-two scale"),)),
        masked_sum("setup: moments", "(Q sum x, sum ||x||^2), Q from the users' key "
                   "(x zero-padded to a power of two)", "2 * features + 1"),
        Rule("setup: gamma", "server", "user", (public("the kernel width"),)),
        Rule(PHASE_ITERATION, "server", "user",
             (public("t"), public("eta_t")),
             note="the iteration t and eta_t"),
        Rule(PHASE_EIGENPAIRS, "server", "user",
             (public("theta", dim), public("V", f"{dim} * {dim}"),
              public("the threshold")),
             note="the Ritz pairs (theta, V) and the threshold eta_t lambda"),
        Rule(f"{PHASE_LANCZOS}/request", "server", "user",
             (public("the server's Lanczos vector c_q", dim),)),
        masked_sum(PHASE_LANCZOS, "W_t[m]^T W_t[m] c_q", dim),
        masked_sum(PHASE_CONVERGENCE, "the overlap U_t[m]^T U_{t-1}[m]",
                   f"{s} * {s}"),
        Rule("dspgd: build H", "server", "user",
             (public("the scales of H's columns", s),)),
        Rule("kmeans: local costs", "user", "server",
             (Aggregate(MIN_USER_ROWS, "cost of the user's local k-means on "
                        "its rows of H", max_size=1),)),
        Rule("kmeans: budgets", "server", "user",
             (public("the user's number of group means"),)),
        Rule("kmeans: coreset", "user", "server",
             (Aggregate(MIN_GROUP, "group means of the user's rows of H",
                        max_size=f"est.coreset_size * {s}"),
              Aggregate(MIN_GROUP, "the group sizes: row counts, or with "
                        "sample_weight the groups' weight sums",
                        dtype="iuf", max_size="est.coreset_size",
                        validate=check_group_sizes)),
             note=f"every group averages at least {MIN_GROUP} rows (whole "
                  "row counts are checked)"),
        Rule("kmeans: centers", "server", "user",
             (public("the k centers in the embedding space",
                     f"est.n_clusters * {s}"),)),
        masked_sum("oos: embedding map", "H[m]^T A'[m]",
                   "est.embedding_map_.size"),
        Rule("oos: embedding map", "server", "user",
             (public("the published map P", "est.embedding_map_.size"),)),
    ]
    if not estimator.communication_efficient:
        rules += [
            Rule(PHASE_ITERATION, "server", "user", (public("t"),),
                 note="plain DSPGD announces the iteration t only"),
            Rule(PHASE_LANCZOS, "server", "user",
                 (public("the user's part c_q[m], or the sum A_t^T c_q",
                         f"rows + {dim}"),)),
            Rule(f"{PHASE_LANCZOS}/rows", "user", "server",
                 (Inherent("A_t[m] A_t^T c_q, one value per row of the user: "
                           "plain DSPGD (section 4.1) concatenates them",
                           exempt=("columns", "rows"), max_size="rows"),),
                 note="plain DSPGD only: per-row values the paper's server "
                      "needs; CEM removes them"),
            Rule("dspgd: rows of H", "server", "user",
                 (OwnShare("the user's own rows of H, which the server "
                           "holds in plain DSPGD", max_size=f"rows * {s}"),)),
        ]
    return Contract("federated kernel k-means", rules)
