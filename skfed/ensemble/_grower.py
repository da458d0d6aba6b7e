"""Growing one tree across the parties, level by level.

:func:`grow_tree` is the driver: it reads as Algorithms 1 and 2 of the paper
do, each step naming the party that acts. The functions it calls on the
active party (``plan_level``, ``find_splits``, ``split_node``,
``finish_tree``) keep the tree under construction in the active party's
state: instance spaces, gradient sums, the candidate sums it decrypted, and
the leaf weights, which never leave it.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import time

import numpy as np

from ..federation import Local

from ._histogram import (
    active_receive_candidates,
    own_candidate_sums,
    passive_histograms,
)
from ._predictor import Tree
from ._sampling import tree_columns
from ._split import break_tie, passive_split, record_split, split_gains

__all__ = ["grow_tree", "passive_coverage"]


class _Node:
    """A node under construction (active party only)."""

    def __init__(self, rows, positions, depth, parent=None):
        self.rows = rows            # every training row in the node
        self.positions = positions  # indices of its gradient (sampled) rows
        self.depth = depth
        self.parent = parent
        self.sibling = None
        self.candidates = {}        # party -> (G_left, H_left) int64
        self.shown = {}             # party -> candidates whose sums it sent
        self.built = False


class _TreeBuild:
    def __init__(self, tree_key, rows, positions):
        self.key = tree_key
        self.nodes = [_Node(rows, positions, 0)]
        self.frontier = [0]
        self.candidate_ids = {}
        self.tree = Tree()
        self.tree.add_node()


def start_tree(state, tree_key, output, use_passives):
    """Active party: open a tree for output ``output`` over all training rows."""
    n_rows = state.bins.shape[0]
    rows = np.arange(n_rows)
    positions = state.position[rows]
    state.tree = _TreeBuild(tuple(tree_key), rows, positions[positions >= 0])
    state.tree.output = output
    state.tree.use_passives = use_passives
    # The tree's fixed-point gradients: one output, or (output < 0) every
    # class at once for a multi-output tree, shape (n_gradient_rows, K).
    if output >= 0:
        state.tree.qg, state.tree.qh = state.qg[output], state.qh[output]
        state.tree.scales = state.exponents[output]
    else:
        state.tree.qg = np.stack(state.qg, axis=1)
        state.tree.qh = np.stack(state.qh, axis=1)
        state.tree.scales = tuple(np.array(s) for s in zip(*state.exponents))
    # colsample_bytree: the active party offers only this tree's own columns.
    features = tree_columns(state.seed, tuple(tree_key), state.bins.shape[1],
                            state.colsample)
    state.tree.own_allowed = np.isin(state.cand_features, features)
    if state.audit_log is not None:  # an audit: the attacker's own gradients
        state.audit_log.append({"key": tuple(tree_key), "qg": state.tree.qg,
                                "qh": state.tree.qh, "nodes": []})
    return None


def plan_level(state, passives):
    """Active party: which frontier nodes each passive party must build.

    Of two siblings only the one with fewer gradient rows is built; the other
    is derived by subtraction. A passive party that withheld the parent's
    sums (``min_passive_rows``) is asked for both siblings, since nothing can
    be subtracted. Returns ``{party: (node ids, their rows)}``.
    """
    tree = state.tree
    tree.next_frontier = []
    smaller, pairs = [], []
    for node_id in tree.frontier:
        node = tree.nodes[node_id]
        sibling = node.sibling
        if sibling is None:
            smaller.append(node_id)
            pairs.append((node_id,))
        elif node_id < sibling:
            other = tree.nodes[sibling]
            smaller.append(node_id if node.positions.size <= other.positions.size
                           else sibling)
            pairs.append((node_id, sibling))
    for node_id in smaller:
        tree.nodes[node_id].built = True
    plans = {}
    for party in passives:
        build = []
        for pair, built in zip(pairs, smaller):
            parent = tree.nodes[pair[0]].parent
            derivable = (parent is not None
                         and party in tree.nodes[parent].candidates)
            build.extend([built] if derivable or len(pair) == 1 else pair)
        plans[party] = (build, [_row_ids(state, tree.nodes[i].rows) for i in build])
    return plans


def _row_ids(state, rows):
    """Row ids as sent (int32, 4 bytes each); None for every training row."""
    return None if rows.size == state.bins.shape[0] else rows.astype(np.int32)


def find_splits(state, params):
    """Active party: best split of every frontier node (eq. 3), or a leaf.

    Returns
    -------
    decisions : list of (node id, party, candidate ids, rows)
        For nodes won by a passive party (the ids of every candidate with the
        best gain, usually one); the active party's own winners are split
        here directly, leaves are left as they are.
    """
    tree = state.tree
    qg, qh = tree.qg, tree.qh
    scale_g, scale_h = tree.scales
    own = state.name
    # Own candidate sums of built nodes, then every party's derived siblings.
    for node_id in tree.frontier:
        node = tree.nodes[node_id]
        if node.built:
            gradient_rows = node.rows[state.position[node.rows] >= 0]
            node.candidates[own] = own_candidate_sums(
                state, qg[node.positions], qh[node.positions], gradient_rows,
                state.with_counts)
    for node_id in tree.frontier:
        node = tree.nodes[node_id]
        if node.parent is None:
            continue
        parent, sibling = tree.nodes[node.parent], tree.nodes[node.sibling]
        for party, sums in parent.candidates.items():
            # Parties that withheld the sibling's sums (min_passive_rows)
            # have none to subtract.
            if party not in node.candidates and party in sibling.candidates:
                node.candidates[party] = tuple(
                    a - b for a, b in zip(sums, sibling.candidates[party]))
                # min_passive_side: a difference only where both were sent.
                shown = [s.shown[party] for s in (parent, sibling)
                         if party in s.shown]
                if shown:
                    node.shown[party] = np.logical_and.reduce(shown)
    if state.audit_log is not None:
        _log_candidates(state)
    if tree.use_passives:
        _count_withheld(state)
    decisions = []
    for node_id in tree.frontier:
        node = tree.nodes[node_id]
        g_total = qg[node.positions].sum(axis=0)
        h_total = qh[node.positions].sum(axis=0)
        n_total = node.positions.size
        best = (-np.inf, None, None, None)
        # Fixed order (own party, then passive parties by name): ties break
        # the same way in every run and in both encryption modes.
        for party in [own] + sorted(p for p in node.candidates if p != own):
            g, h = node.candidates[party][:2]
            if g.size == 0:
                continue
            gains = split_gains(
                np.ldexp(g.astype(np.float64), scale_g),
                np.ldexp(h.astype(np.float64), scale_h),
                np.ldexp(np.float64(g_total), scale_g),
                np.ldexp(np.float64(h_total), scale_h),
                params["reg_lambda"], params["gamma"], params["min_child_weight"])
            if party == own:
                gains[~tree.own_allowed] = -np.inf
            elif party in node.shown:  # candidates the party did not send
                gains[~node.shown[party]] = -np.inf
            if len(node.candidates[party]) == 3:
                # min_samples_leaf, from the count slot.
                counts = node.candidates[party][2]
                smaller_child = np.minimum(counts, n_total - counts)
                small = smaller_child < params["min_samples_leaf"]
                gains[small] = -np.inf
            c = int(np.argmax(gains))
            if gains[c] > best[0]:
                best = (float(gains[c]), party, c, gains)
        gain, party, c, gains = best
        if party is None or not gain > 0:
            continue
        tied = np.flatnonzero(gains == gains[c])
        if party == own:
            f, b, missing_left = break_tie(state, tied)
            record_id, left = record_split(state, f, b, missing_left, node.rows)
            feature = state.columns[f]
            split_node(state, node_id, own, record_id, left, gain=gain, feature=feature)
        else:
            # A passive party's candidates arrive in a secret random order, so
            # the first best one is random: send every candidate with the best
            # gain and let the owner pick by its own (feature, bin) order.
            # The fitted model then does not depend on the permutation.
            decisions.append((node_id, party, tree.candidate_ids[party][tied],
                              _row_ids(state, node.rows)))
    return decisions


def _count_withheld(state):
    """Active party: per passive party, the frontier nodes searched for a
    split and their gradient rows, and of those the ones it sent no sums for
    (``min_passive_rows``), roots apart.

    The active party knows this anyway (it decrypts what it is sent); the
    counts let the estimator tell its caller when a passive party was left
    out of most of the fit (:func:`~._estimator.warn_if_withheld`).
    """
    tree = state.tree
    for party in state.party_index:
        if party == state.name:
            continue
        counts = state.passive_coverage.setdefault(party, dict.fromkeys(
            ("nodes", "withheld", "rows", "rows_withheld", "roots",
             "roots_withheld"), 0))
        for node_id in tree.frontier:
            node = tree.nodes[node_id]
            withheld = party not in node.candidates
            counts["nodes"] += 1
            counts["withheld"] += withheld
            counts["rows"] += node.positions.size
            counts["rows_withheld"] += node.positions.size * withheld
            if node.parent is None:
                counts["roots"] += 1
                counts["roots_withheld"] += withheld


def passive_coverage(state):
    """Active party: the counts of :func:`_count_withheld` over the fit."""
    return {party: dict(counts)
            for party, counts in state.passive_coverage.items()}


def _log_candidates(state):
    """During an audit only: what the active party now holds about each node.

    The frontier nodes' gradient rows and the passive parties' decrypted
    candidate sums, kept with the tree's fixed-point gradients (see
    :func:`start_tree`) so that :func:`~._attacks.subset_sum` can
    be played with exactly the active party's knowledge.
    """
    tree = state.tree
    for node_id in tree.frontier:
        node = tree.nodes[node_id]
        sums = {p: tuple(np.array(v) for v in s[:2]) + (
                    node.shown.get(p, np.ones(s[0].shape[0], dtype=bool)),)
                for p, s in node.candidates.items() if p != state.name}
        if sums:
            rows = node.rows[state.position[node.rows] >= 0]
            state.audit_log[-1]["nodes"].append((rows, node.positions, sums))


def split_node(state, node_id, party, record_id, left_rows, gain=np.nan, feature=-1):
    """Active party: split ``node_id`` by the owner's answer ``I_L``."""
    tree = state.tree
    node = tree.nodes[node_id]
    is_left = np.isin(node.rows, left_rows, assume_unique=True)
    children = []
    for mask in (is_left, ~is_left):
        rows = node.rows[mask]
        positions = state.position[rows]
        children.append(_Node(rows, positions[positions >= 0], node.depth + 1, node_id))
    left_id, right_id = len(tree.nodes), len(tree.nodes) + 1
    children[0].sibling, children[1].sibling = right_id, left_id
    tree.nodes.extend(children)
    tree.tree.split(node_id, state.party_index[party], record_id, gain, feature)
    tree.next_frontier.extend([left_id, right_id])
    return None


def finish_level(state):
    """Active party: move to the next level; drop statistics no longer needed."""
    tree = state.tree
    for node_id in tree.frontier:
        node = tree.nodes[node_id]
        if tree.tree.children_left[node_id] < 0:
            node.candidates, node.shown = {}, {}
    tree.frontier = tree.next_frontier
    tree.next_frontier = []
    return len(tree.frontier)


def finish_tree(state, learning_rate, reg_lambda):
    """Active party: leaf weights (eq. 4), kept here; update raw predictions."""
    tree = state.tree
    qg, qh = tree.qg, tree.qh
    scale_g, scale_h = tree.scales
    outputs = [tree.output] if tree.output >= 0 else list(range(qg.shape[1]))
    values = np.zeros((len(tree.nodes), len(outputs)))
    for node_id, node in enumerate(tree.nodes):
        node.candidates, node.shown = {}, {}
        if tree.tree.children_left[node_id] >= 0:
            continue
        g = np.ldexp(np.float64(qg[node.positions].sum(axis=0)), scale_g)
        h = np.ldexp(np.float64(qh[node.positions].sum(axis=0)), scale_h)
        with np.errstate(divide="ignore", invalid="ignore"):
            weight = np.where(h + reg_lambda > 0, -g / (h + reg_lambda), 0.0)
        values[node_id] = learning_rate * weight
        state.raw[node.rows[:, None], outputs] += learning_rate * weight
    finished = tree.tree.freeze()
    # A multi-output tree is kept as one tree per class sharing the same
    # splits (record ids), so prediction and staging stay per class.
    for j, k in enumerate(outputs):
        copy = Tree()
        for name in Tree._fields:
            setattr(copy, name, getattr(finished, name).copy())
        copy.value = values[:, j].copy()
        if j > 0:  # importances count each split once
            copy.feature[:] = -1
            copy.gain[:] = np.nan
        state.trees.append((k, copy))
    state.tree = None
    return None


def grow_tree(fed, active, passives, tree_key, output, params, use_passives,
              clock=None):
    """Driver: grow one tree (Algorithms 1 and 2), level by level.

    Parameters
    ----------
    fed : Federation
    active : str
        The active party (label holder).
    passives : list of str
    tree_key : tuple ``(round, output)``
    output : int
        The class (or 0) whose gradients this tree fits.
    params : dict
        ``max_depth``, ``reg_lambda``, ``gamma``, ``min_child_weight``,
        ``learning_rate``, ``n_jobs``.
    use_passives : bool
        False for RL-SecureBoost's first trees: active party's columns only.
    clock : dict, optional
        Wall-clock seconds per step, accumulated (for ``verbose >= 2``).
    """
    clock = {} if clock is None else clock
    tick = time.perf_counter()

    def lap(step):
        nonlocal tick
        now = time.perf_counter()
        clock[step] = clock.get(step, 0.0) + now - tick
        tick = now

    A = fed[active]
    A.call(start_tree, tree_key, output, use_passives, phase="tree").result()
    helpers = passives if use_passives else []
    for _ in range(params["max_depth"]):
        # Active party: instance spaces of the nodes to build -> passive parties.
        plans = A.call(plan_level, helpers, phase="histogram").result()
        # Passive parties: encrypted, packed, shuffled candidate sums of the
        # nodes they may reveal (min_passive_rows).
        replies = {p: fed[p].call(passive_histograms, tree_key, output, plans[p][1],
                                  Local(params["n_jobs"]), sender=active,
                                  phase="histogram/rows")
                   for p in helpers}
        replies = {p: reply.result() for p, reply in replies.items()}
        lap("histograms")
        # Active party: decrypt (sibling sums come by subtraction).
        fed.gather([A.call(active_receive_candidates, Local(p), *replies[p],
                           Local(plans[p][0]), sender=p, phase="histogram/sums")
                    for p in helpers])
        lap("decrypt")
        # Active party: score all candidates with eq. 3; split its own winners.
        decisions = A.call(find_splits, params, phase="split").result()
        # Winning passive party: look up the candidate, record it, answer I_L.
        answers = [(node_id, party,
                    fed[party].call(passive_split, tree_key, candidate_ids, rows,
                                    sender=active, phase="split/choice"))
                   for node_id, party, candidate_ids, rows in decisions]
        fed.gather([A.call(split_node, Local(node_id), Local(party), *future.result(),
                           sender=party, phase="split/answer")
                    for node_id, party, future in answers])
        done = A.call(finish_level, phase="split").result() == 0
        lap("split")
        if done:
            break
    A.call(finish_tree, params["learning_rate"], params["reg_lambda"],
           phase="tree").result()
    lap("split")
