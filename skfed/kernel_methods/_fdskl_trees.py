"""Tree pairs for Algorithm 3 under which no party can unmask a partial sum.

In Algorithm 3 a party ``u`` receives, over ``T1``, the masked sums
``v_S + b_S`` of the subtrees ``S`` that send to it, and over ``T2`` the
offset sums ``b_C`` of the subtrees ``C`` that send to it; it also knows its
own ``b_u``. It learns an unmasked partial sum ``v_S`` as soon as some union
of its ``T1`` child sets equals some union of its ``T2`` child sets.

Definition 2 of the paper ("totally different": no common subtree with more
than one leaf) does not rule that out for *single* leaves or for the
receiver: with the receiver as leftmost leaf of two balanced trees, a party
``x`` that sends straight to the receiver in both trees gives it ``v_x + b_x``
and ``b_x``. For three parties every balanced pair has the flaw. The pairs
built here make the receiver's only ``T1`` child the subtree of all other
parties (it contains ``l'``, whose offset is never sent), and are checked
node by node with the exact criterion above.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import itertools
from functools import lru_cache

import numpy as np

from ..federation import are_totally_different, balanced_tree, tree_leader, tree_leaves

__all__ = ["child_sets", "unmaskable", "leak_free_trees"]


def child_sets(tree):
    """For every party, the leaf sets of the subtrees that send to it."""
    out = {leaf: [] for leaf in tree_leaves(tree)}

    def visit(node):
        if isinstance(node, tuple):
            left, right = node
            out[tree_leader(left)].append(frozenset(tree_leaves(right)))
            visit(left)
            visit(right)

    visit(tree)
    return out


def unmaskable(t1, t2):
    """Parties able to unmask a partial sum, with what they learn.

    Returns a list of ``(party, set_of_parties)``: ``party`` can compute the
    unmasked ``sum_{l in set} omega_l^T x_l``.
    """
    s_of, c_of = child_sets(t1), child_sets(t2)
    found = []
    for u in s_of:
        sets1, sets2 = s_of[u], c_of.get(u, [])
        # Sets on each side are disjoint, so a cancelling family is a union
        # of connected components of the "shares a party" relation; a
        # component cancels when both sides cover the same parties.
        parent = {}

        def find(p):
            while parent.setdefault(p, p) != p:
                p = parent[p]
            return p

        for group in [*sets1, *sets2]:
            first, *rest = sorted(group)
            for p in rest:
                parent[find(p)] = find(first)
        comps = {}
        for side, sets in ((0, sets1), (1, sets2)):
            for group in sets:
                entry = comps.setdefault(find(next(iter(group))), (set(), set()))
                entry[side].update(group)
        for left, right in comps.values():
            if left and left == right:
                found.append((u, frozenset(left)))
    return found


def _candidates(names, receiver, excluded, max_tries=2000):
    others = [p for p in names if p != receiver]
    rest = [p for p in others if p != excluded]
    if len(others) <= 6:
        orders1 = itertools.permutations(others)
    else:
        rng = np.random.RandomState(0)
        orders1 = (rng.permutation(others).tolist() for _ in range(max_tries))
    for order1 in orders1:
        # The receiver's only T1 child holds l', whose offset is never sent.
        t1 = (receiver, balanced_tree(list(order1)))
        orders2 = itertools.permutations(rest) if len(rest) <= 5 else [rest]
        for order2 in orders2:
            shapes = [balanced_tree([receiver, *order2])]
            if order2:
                shapes.append((receiver, balanced_tree(list(order2))))
            for t2 in shapes:
                yield t1, t2


@lru_cache(maxsize=256)
def _search(names, receiver, excluded):
    for t1, t2 in _candidates(list(names), receiver, excluded):
        if are_totally_different(t1, t2) and not unmaskable(t1, t2):
            return t1, t2
    raise RuntimeError(
        f"Found no leak-free pair of trees over {len(names)} parties.")


def leak_free_trees(names, receiver, excluded):
    """``(T1, T2)`` for Algorithm 3, both led by ``receiver``, leak-free."""
    names = tuple(names)
    if receiver not in names or excluded not in names or receiver == excluded:
        raise ValueError(
            "receiver and excluded must be two different parties of the tree.")
    return _search(names, receiver, excluded)
