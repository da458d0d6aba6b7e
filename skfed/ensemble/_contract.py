"""The privacy contract of SecureBoost: what every message may contain.

One rule per message of :func:`~._boosting.run_secureboost` (fit) and of
:func:`~._predictor.federated_raw_predict` (predict, and the validation
predictions of early stopping), by phase and direction. Roles: the label
holder is ``"active"``, every other party ``"passive"``.

What the paper (Cheng et al., sections 4, 5 and 7) accepts, declared as
:class:`~skfed.privacy.Inherent`: the passive party learns the instance
space (row ids) of every node it builds histograms for and of every split it
wins; the active party learns the instance space of every split (``I_L``)
and, at prediction time, which way each queried row goes at a passive
party's node. Everything the active party says about gradients travels
under its own key (Paillier, or Okamoto-Uchiyama with
``encryption="ou"``); everything a passive party says about its
columns before a split is chosen travels as re-randomised ciphertexts under
that key, in an order and under ids drawn from the passive party's own
CSPRNG.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

from .._privacy_core import Ciphertext, Contract, Inherent, Public, RandomIds, Rule

__all__ = ["CONTRACT"]

_TREE_KEY = Public("tree key (round, output)", dtype="i", max_size=2)
#: size bounds, from public sizes: one (h, g) pair per row and output; one
#: left sum per candidate (passive columns times bins), per node built
_PAIRS = "2 * rows * est.n_trees_per_iteration_"
_CANDIDATES = "features * est.max_bins"
_CANDIDATE_SUMS = "4 * features * est.max_bins * est.n_trees_per_iteration_"

CONTRACT = Contract("secureboost", rules=[
    # -- fit -------------------------------------------------------------------
    Rule("setup/key", sender="active", receiver="passive",
         elements=(Public("the active party's Paillier or OU public key",
                          max_size=1),),
         note="the private key never leaves the active party"),
    Rule("gradients", sender="active", receiver="passive",
         elements=(
             Public("packing layout: slot bits, values per ciphertext, slots "
                    "(from the row count and key size); one row per group of "
                    "classes for multi-output trees", dtype="i",
                    max_size="3 * est.n_trees_per_iteration_"),
             Inherent("ids of the rows carrying gradients this round; None "
                      "for every row. A uniform subsample is model randomness "
                      "(random_state); GOSS (goss_top_rate) sends the rows "
                      "with the largest |g h| mixed with a random share of "
                      "the others, so the passive party learns that union, "
                      "not which rows are the top ones (as in LightGBM's and "
                      "FATE's GOSS)", dtype="i", max_size="rows"),
             Ciphertext("active", "one packed (h, g) pair per sampled row, "
                        "per output (multi-output trees: the pairs of a group "
                        "of classes in one ciphertext, per group)",
                        max_size=_PAIRS),
         ),
         note="gradients and hessians only as fresh ciphertexts"),
    Rule("histogram/rows", sender="active", receiver="passive",
         elements=(
             _TREE_KEY,
             Public("output (class) of the tree", dtype="i", max_size=1),
             Inherent("row ids of the instance space of each node to build "
                      "(None: every row); the paper sends them", dtype="i",
                      max_size="rows"),
         ),
         note="section 7: the passive party learns the instance spaces"),
    Rule("histogram/sums", sender="passive", receiver="active",
         elements=(
             RandomIds("the tree's candidate ids, from the passive party's "
                       "CSPRNG (first level of each tree only, else None)",
                       dtype="i", max_size=_CANDIDATES),
             Ciphertext("active", "left-of-threshold sums of every candidate, "
                        "in the passive party's secret order, packed and "
                        "re-randomised", max_size=_CANDIDATE_SUMS),
         ),
         note="the active party decrypts anonymous candidate sums"),
    Rule("split/choice", sender="active", receiver="passive",
         elements=(
             _TREE_KEY,
             RandomIds("the receiver's own ids of the best candidate(s)",
                       dtype="i", max_size="rows"),
             Inherent("row ids of the node to split (None: every row)",
                      dtype="i", max_size="rows"),
         )),
    Rule("split/answer", sender="passive", receiver="active",
         elements=(
             Public("record id: a counter into the owner's lookup table",
                    dtype="i", max_size=1),
             Inherent("I_L, the node's rows that go left (row ids): the "
                      "paper's instance space of the split", dtype="i",
                      max_size="rows"),
         ),
         note="threshold and feature stay with the owner"),
    # -- predict (and early stopping's validation predictions during fit) -----
    Rule("predict/query", sender="active", receiver="passive",
         elements=(
             Public("which table: 'predict' or 'val'", text=7, max_size=1),
             Public("record ids of the receiver's nodes", dtype="i",
                    max_size="rows"),
             Public("row ids of the queried rows", dtype="i", max_size="rows",
                    query=True),
         )),
    Rule("predict/answer", sender="passive", receiver="active",
         elements=(
             Inherent("which way each queried row goes at the owner's node "
                      "(paper section 5)", dtype="b",
                      exempt=("columns", "bins"), max_size="rows"),
         ),
         note="a split on a binary column repeats the column: inherent"),
])
