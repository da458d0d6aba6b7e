"""Trees as arrays, and federated inference (section 5 of the paper).

The active party holds every tree's structure: for each internal node the
owner (party index) and the owner's record id; and for each leaf its weight.
The owner of a node holds the record ``(feature, threshold, missing side)``.

Inference is batched over all rows and all trees at once: the active party
moves every (row, tree) pair through its own nodes as far as it can, then
asks each passive party, in one message, "which way do these rows go at
these records?"; the answers move the pairs on. Every round moves each
pair at least one level down, so the number of rounds is bounded by the
depth of the trees, not by rows x trees.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np

from ..federation import Local
from ._split import apply_lookup

__all__ = ["Tree", "federated_raw_predict"]


class Tree:
    """One tree as parallel arrays (node 0 is the root).

    Attributes
    ----------
    children_left, children_right : ndarray of int
        ``-1`` for leaves.
    owner : ndarray of int
        Party index of the split's owner (``-1`` for leaves).
    record : ndarray of int
        Record id in the owner's lookup table.
    value : ndarray of float
        Leaf weight times the learning rate (0 for internal nodes).
    gain : ndarray of float
        Split gain, only for the active party's own splits (NaN otherwise).
    feature : ndarray of int
        Column of ``X``, only for the active party's own splits (-1 otherwise).
    """

    _fields = ("children_left", "children_right", "owner", "record", "value",
               "gain", "feature")

    def __init__(self):
        for name in self._fields:
            setattr(self, name, [])

    def add_node(self):
        for name, default in zip(self._fields, (-1, -1, -1, -1, 0.0, np.nan, -1)):
            getattr(self, name).append(default)
        return len(self.children_left) - 1

    def split(self, node, owner, record, gain, feature):
        self.children_left[node] = self.add_node()
        self.children_right[node] = self.add_node()
        self.owner[node], self.record[node] = int(owner), int(record)
        self.gain[node], self.feature[node] = float(gain), int(feature)

    def freeze(self):
        for name in self._fields:
            dtype = np.float64 if name in ("value", "gain") else np.intp
            setattr(self, name, np.asarray(getattr(self, name), dtype=dtype))
        return self

    @property
    def n_nodes(self):
        return len(self.children_left)

    @property
    def max_depth(self):
        depth = np.zeros(self.n_nodes, dtype=np.intp)
        for node in range(self.n_nodes):
            for child in (self.children_left[node], self.children_right[node]):
                if child >= 0:
                    depth[child] = depth[node] + 1
        return int(depth.max())


def _concatenate(trees):
    """All trees as one forest of global node indices, plus each root."""
    offsets = np.cumsum([0] + [t.n_nodes for t in trees])
    left = np.concatenate([np.where(t.children_left >= 0, t.children_left + o, -1)
                           for t, o in zip(trees, offsets)])
    right = np.concatenate([np.where(t.children_right >= 0, t.children_right + o, -1)
                            for t, o in zip(trees, offsets)])
    owner = np.concatenate([t.owner for t in trees])
    record = np.concatenate([t.record for t in trees])
    value = np.concatenate([t.value for t in trees])
    return left, right, owner, record, value, offsets[:-1]


def start_walk(state, dataset, tree_indices):
    """Active party: put every (row, tree) pair at its tree's root."""
    trees = [state.trees[i][1] for i in tree_indices]
    outputs = np.array([state.trees[i][0] for i in tree_indices], dtype=np.intp)
    forest = _concatenate(trees)
    n_rows = state.datasets[dataset].shape[0]
    state.stash["walk"] = {
        "dataset": dataset, "forest": forest, "outputs": outputs,
        "position": np.tile(forest[5], (n_rows, 1)), "queries": {},
    }
    return None


def walk(state):
    """Active party: descend through own nodes; return the queries for others.

    Returns
    -------
    queries : dict of party index -> (record ids, rows)
    """
    w = state.stash["walk"]
    left, right, owner, record, _, _ = w["forest"]
    position = w["position"]
    X = state.datasets[w["dataset"]]
    own = state.party_index[state.name]
    while True:
        at = (left[position] >= 0) & (owner[position] == own)
        if not at.any():
            break
        rows, trees = np.nonzero(at)
        nodes = position[rows, trees]
        go_left = apply_lookup(state.records, X, record[nodes], rows)
        position[rows, trees] = np.where(go_left, left[nodes], right[nodes])
    queries = {}
    w["queries"] = {}
    for party in np.unique(owner[position][left[position] >= 0]).tolist():
        rows, trees = np.nonzero((left[position] >= 0) & (owner[position] == party))
        w["queries"][party] = (rows, trees)
        queries[party] = (record[position[rows, trees]].astype(np.int32),
                          rows.astype(np.int32))
    return queries


def answer_queries(state, dataset, record_ids, rows):
    """Passive party: which way each queried row goes at each queried record."""
    return apply_lookup(state.records, state.datasets[dataset], record_ids, rows)


def advance(state, party, go_left):
    """Active party: move the queried pairs by the owner's answers."""
    w = state.stash["walk"]
    left, right = w["forest"][0], w["forest"][1]
    rows, trees = w["queries"].pop(party)
    nodes = w["position"][rows, trees]
    w["position"][rows, trees] = np.where(go_left, left[nodes], right[nodes])
    return None


def finish_walk(state, n_outputs, per_tree=False):
    """Active party: sum of the leaf weights reached, per output.

    With ``per_tree``, the weight reached in each tree, shape (n_rows, n_trees).
    """
    w = state.stash.pop("walk")
    value = w["forest"][4]
    leaves = value[w["position"]]
    if per_tree:
        return leaves
    out = np.zeros((leaves.shape[0], n_outputs))
    for k in range(n_outputs):
        out[:, k] = leaves[:, w["outputs"] == k].sum(axis=1)
    return out


def federated_raw_predict(fed, active, names, dataset, tree_indices, n_outputs,
                          per_tree=False):
    """Driver: sum of the given trees' outputs for every row of ``dataset``.

    ``names[k]`` is the name of party ``k``. At most ``max_depth`` rounds of
    queries to the passive parties, whatever the number of rows and trees.
    """
    A = fed[active]
    A.call(start_walk, dataset, tree_indices, phase="predict").result()
    while True:
        queries = A.call(walk, phase="predict").result()
        if not queries:
            break
        replies = {k: fed[names[k]].call(answer_queries, dataset, *q, sender=active,
                                         phase="predict/query")
                   for k, q in queries.items()}
        fed.gather([A.call(advance, Local(k), reply.result(), sender=names[k],
                           phase="predict/answer")
                    for k, reply in replies.items()])
    return A.call(finish_walk, n_outputs, per_tree, phase="predict").result()
