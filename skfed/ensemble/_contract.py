"""The privacy contract of SecureBoost: what every message may contain.

One rule per message of :func:`~._protocol.run_secureboost` (fit) and of
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

import numpy as np

import dataclasses

from .._privacy_core import Ciphertext, Contract, Inherent, Public, RandomIds, Rule
from ._histogram import RevealedNodes, SideLedger

__all__ = ["CONTRACT", "MIN_PASSIVE_ROWS", "MIN_PASSIVE_SIDE", "MinPassiveRows",
           "contract_for"]

#: Default of ``min_passive_rows``, and the minimum the contract declares.
MIN_PASSIVE_ROWS = 64
#: Default of ``min_passive_side``, and the minimum the contract declares.
MIN_PASSIVE_SIDE = 16

_TREE_KEY = Public("tree key (round, output)", dtype="i", max_size=2)
#: size bounds, from public sizes: one (h, g) pair per row and output, plus
#: a count slot per row when leaves need row counts (min_samples_leaf > 1);
#: one left sum per candidate (passive columns times bins), per node built
_PAIRS = "(2 * est.n_trees_per_iteration_ + 1) * rows"
_CANDIDATES = "features * est.max_bins"
_CANDIDATE_SUMS = "4 * features * est.max_bins * est.n_trees_per_iteration_"

class MinPassiveRows:
    """Contract check: no revealed candidate sums over too few gradient rows.

    The element rules cannot see it (the sums are ciphertexts), so this
    check replays the fit: it pairs every ``histogram/sums`` answer of a
    passive party with the last ``histogram/rows`` request it received (one
    request is answered before the next is sent), takes each node's
    gradient rows from the last ``gradients`` message the party received,
    and holds the revealed nodes of each tree to
    :class:`~._histogram.RevealedNodes` with ``min_rows``: a node of fewer
    gradient rows, or one that lets the active party subtract its way to
    fewer, is a violation. A fit with ``min_passive_rows`` below
    ``min_rows`` (the paper's protocol at 0) shows up here.

    With ``min_side`` and the fit's audit log (a fit made while messages
    were recorded keeps each passive party's bins and secret candidate
    orders aside), the revealed candidates of each node are held to
    :class:`~._histogram.SideLedger` too: a candidate sent (flagged in the
    message's mask, or every candidate when no mask came) whose left side,
    right side, or gap to the previous revealed threshold in some set the
    active party can reach holds 1 to ``min_side - 1`` rows is a violation.
    Without the log only the node rule is replayed (the bins never leave
    their party).
    """

    def __init__(self, min_rows, min_side=0, audit_log=None):
        self.min_rows = int(min_rows)
        self.min_side = int(min_side)
        self.audit_log = audit_log

    def describe(self):
        sides = (f"; every candidate's sides and gaps 0 or >= {self.min_side} "
                 "rows in each set a subtraction reaches"
                 if self.min_side > 1 and self.audit_log else "")
        return (f"candidate sums over >= {self.min_rows} gradient rows, "
                "and none a subtraction brings below that" + sides)

    def _owner(self, party, tree_key):
        """``(bins, missing bin, candidates in message order)`` or None."""
        log = (self.audit_log or {}).get(party)
        if self.min_side <= 1 or not log or "row_bins" not in log:
            return None
        for key, order, _ in log["trees"]:
            if tuple(int(v) for v in key) == tree_key:
                return (log["row_bins"], log["missing_bin"], log["features"][order],
                        log["bins"][order], log["missing_left"][order])
        return None

    def __call__(self, messages, roles):
        def role(name, wanted):
            return wanted in roles.get(name, ())

        problems = []
        sampled, requests, ledgers = {}, {}, {}
        for index, m in enumerate(messages):
            payload = tuple(m.payload or ())
            if (m.phase == "gradients" and role(m.sender, "active")
                    and len(payload) == 3):
                # The row ids, or None and one ciphertext per training row.
                sampled[m.receiver] = (payload[1], len(payload[2][0]))
            elif (m.phase == "histogram/rows" and role(m.sender, "active")
                    and len(payload) == 3):
                # One request to a party is answered before the next.
                requests[m.receiver] = payload
            elif (m.phase == "histogram/sums" and role(m.sender, "passive")
                    and len(payload) == 4 and m.sender in requests):
                tree_key, _, node_rows = requests.pop(m.sender)
                tree_key = tuple(int(v) for v in np.ravel(tree_key))
                key = (m.sender, tree_key)
                if key not in ledgers:
                    ledgers[key] = (RevealedNodes(self.min_rows),
                                    SideLedger(self.min_side),
                                    self._owner(m.sender, tree_key))
                nodes, sides, owner = ledgers[key]
                revealed = np.ravel(payload[1]).astype(bool)
                masks = iter(payload[2] if payload[2] is not None else ())
                sample = sampled.get(m.sender, (None, 0))
                for rows, shown in zip(node_rows, revealed):
                    mask = next(masks, None) if shown else None
                    rows = _gradient_rows(rows, *sample) if shown else None
                    if rows is None:  # withheld, or malformed (flagged above)
                        continue
                    problem = nodes.problem(rows)
                    if problem is not None:
                        problems.append((index, f"candidate sums of {problem}"))
                    nodes.add(rows)
                    if owner is not None:
                        problems += [(index, p) for p in
                                     _side_problems(sides, owner, rows, mask)]
        return problems


def _side_problems(sides, owner, rows, mask):
    """Replay one node against the side rule; record it; list what breaks it."""
    row_bins, missing_bin, features, bins, missing_left = owner
    n = features.size
    try:
        sent = (np.ones(n, dtype=bool) if mask is None
                else np.asarray(mask, dtype=bool).reshape(n))
    except (TypeError, ValueError):
        return [f"a candidate mask of {np.size(mask)} values for {n} candidates"]
    broken = sides.walk(row_bins, rows, features, bins, missing_left, missing_bin,
                        sent)
    sides.add(rows, sent)
    if not broken.any():
        return []
    return [f"{int(broken.sum())} of {int(sent.sum())} candidate sums of a node "
            f"of {rows.size} gradient rows with a side (or a gap to the "
            f"previous threshold) of 1 to {sides.min_side - 1} rows in a set "
            "the active party reaches by subtraction"]


def _gradient_rows(rows, sample, n_rows):
    """Row ids of a node that carry gradients (``rows`` None: the root).

    None when the ids are not a flat integer array (the element rules
    report such a message; there is nothing to count).
    """
    try:
        if rows is None:
            return (np.arange(n_rows) if sample is None
                    else np.asarray(sample, dtype=np.intp).ravel())
        rows = np.asarray(rows, dtype=np.intp).ravel()
        if sample is None:
            return rows
        return rows[np.isin(rows, np.asarray(sample, dtype=np.intp))]
    except (TypeError, ValueError):
        return None


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
             Public("per requested node, whether its sums follow (a "
                    "function of the nodes' row counts, which both sides "
                    "know)", dtype="b", max_size="rows"),
             Public("per revealed node, which candidates' sums follow, in "
                    "the order of the ids (min_passive_side; None: all): a "
                    "function of the passive party's counts of the node's "
                    "rows on each side of its thresholds, no sum attached",
                    dtype="b", max_size="features * est.max_bins * rows"),
             Ciphertext("active", "left-of-threshold sums of the candidates "
                        "flagged, in the passive party's secret order, "
                        "packed and re-randomised, for the revealed nodes "
                        "only", max_size=_CANDIDATE_SUMS),
         ),
         note="the active party decrypts anonymous candidate sums; no sum "
              f"over fewer than {MIN_PASSIVE_ROWS} gradient rows, and no "
              f"side of a threshold of 1 to {MIN_PASSIVE_SIDE - 1} rows, can "
              "be formed from them (checked by MinPassiveRows)"),
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
             Inherent("record ids of the receiver's nodes each queried "
                      "row reaches: its path, hence which side of the other "
                      "parties' thresholds above it the row went (paper "
                      "section 5: the owner of each node is asked about "
                      "the rows that reach it)", dtype="i",
                      exempt=("columns", "bins"), max_size="rows"),
             Public("row ids of the queried rows", dtype="i", max_size="rows",
                    query=True),
         ),
         note="the record ids are a step function of the columns split "
              "on above the receiver's nodes (issue 37's step detector "
              "finds it): inherent"),
    Rule("predict/answer", sender="passive", receiver="active",
         elements=(
             Inherent("which way each queried row goes at the owner's node "
                      "(paper section 5)", dtype="b",
                      exempt=("columns", "bins"), max_size="rows"),
         ),
         note="a split on a binary column repeats the column: inherent"),
], checks=[MinPassiveRows(MIN_PASSIVE_ROWS, MIN_PASSIVE_SIDE)])


def contract_for(audit_log=None):
    """:data:`CONTRACT` with its replay given a fit's audit log (or None)."""
    return dataclasses.replace(CONTRACT, checks=[
        MinPassiveRows(MIN_PASSIVE_ROWS, MIN_PASSIVE_SIDE, audit_log)])
