"""The privacy contract of federated kernel k-means: what each message may carry.

A whitelist, phase by phase, of the messages of :mod:`._protocol`:
:func:`skfed.privacy.check_messages` holds recorded messages against it,
and :mod:`._attacks` measures what the server can still infer from messages
that keep it.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

from .._privacy_core import (SEED_SIZE, Aggregate, Contract, Inherent,
                             OwnShare, Public, RandomIds, Rule,
                             secure_sum_rules)
from ._coreset import MIN_GROUP, check_group_sizes
from ._dspgd import (PHASE_CONVERGENCE, PHASE_EIGENPAIRS, PHASE_ITERATION,
                     PHASE_LANCZOS)
from ._protocol import _N_BUCKETS, MIN_USER_ROWS
from ._refine import (PHASE_REFINE_MOVES, PHASE_REFINE_RELAY,
                      PHASE_REFINE_TOTALS)

__all__ = ["kernel_kmeans_contract"]


def kernel_kmeans_contract(estimator):
    """What every message of a fit may contain (``predict`` sends none).

    Roles: ``"user"`` (every user, also ``"party"``) and ``"server"``.
    Prediction runs on the user that owns the new rows, with the map and
    centers it already holds, so the contract has no predict phase and a
    predict that sent anything would be an undeclared phase.
    """
    def masked_sum(phase, what, max_size):
        rule = secure_sum_rules(phase, "user", "server", max_size)[1]
        rule.note = f"{what}: uniform in the ring, only the total decodes"
        return rule

    def public(note, max_size=1):
        return Public(note, max_size=max_size)

    # The group sizes are row counts (integers, each checked against
    # MIN_GROUP) unless the fit was weighted: weight sums (floats) then. A
    # float size in an unweighted fit could be anything (a 1.0: one row).
    if getattr(estimator, "_privacy_weighted_", False):
        sizes_note, sizes_dtype = ("the group sizes: the groups' weight sums "
                                   "(the fit had sample_weight)", "f")
    else:
        sizes_note, sizes_dtype = "the group sizes: row counts", "iu"

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
              Aggregate(MIN_GROUP, sizes_note, dtype=sizes_dtype,
                        max_size="est.coreset_size",
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
    if estimator.refine is not None:
        # skfed's Lloyd refinement on the map's random features (D' of them).
        centers = "est.n_clusters * est.embedding_map_.shape[1]"
        totals = secure_sum_rules(PHASE_REFINE_TOTALS, "user", "user",
                                  f"{centers} + est.n_clusters")[1]
        totals.note = ("sums of z(x) and row counts (or weight sums) by "
                       "cluster, to the first user: uniform in the ring, "
                       "only the total decodes; the server gets none")
        rules += [
            totals,
            Rule(PHASE_REFINE_RELAY, "user", "user",
                 (Aggregate(MIN_USER_ROWS, "the totals over every user's "
                            "rows: sums of z(x) and row counts by cluster",
                            max_size=f"{centers} + est.n_clusters"),),
                 note="the first user relays the decoded totals to the "
                      "other users (never to the server)"),
            masked_sum(PHASE_REFINE_MOVES, "how many of the user's rows "
                       "moved to another cluster", 1),
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
