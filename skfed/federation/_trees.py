"""Tree shapes for the tree sums: leaves, leaders, and safe pairs of trees.

Trees are nested pairs of party names, e.g. ``(("a", "b"), ("c", "d"))``; the
*leader* of a subtree is its leftmost leaf. This module holds the pure
combinatorics (no messages): balanced trees, the subtree sets of FDSKL's
Definition 2 (*totally different* trees), the stricter check that no party
can unmask a partial sum (:func:`unmaskable`), and the search for a pair of
trees for the masked sum. The sums themselves are in :mod:`.aggregation`.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import itertools

from sklearn.utils import check_random_state

__all__ = [
    "balanced_tree",
    "tree_leaves",
    "tree_leader",
    "subtree_leaf_sets",
    "are_totally_different",
    "totally_different_trees",
    "child_sets",
    "unmaskable",
]

def balanced_tree(leaves):
    """Pair neighbours level by level; the first leaf becomes the root leader.

    >>> balanced_tree(["a", "b", "c", "d", "e"])
    ((('a', 'b'), ('c', 'd')), 'e')
    """
    level = list(leaves)
    if not level:
        raise ValueError("A tree needs at least one party.")
    while len(level) > 1:
        level = [tuple(level[i:i + 2]) if i + 1 < len(level) else level[i]
                 for i in range(0, len(level), 2)]
    return level[0]


def tree_leaves(tree):
    """Leaves from left to right."""
    if isinstance(tree, tuple):
        return [leaf for child in tree for leaf in tree_leaves(child)]
    return [tree]


def tree_leader(tree):
    """The leftmost leaf, which receives the subtree's sum."""
    while isinstance(tree, tuple):
        tree = tree[0]
    return tree


def subtree_leaf_sets(tree):
    """Leaf sets of every subtree with more than one leaf."""
    out = set()

    def visit(node):
        if isinstance(node, tuple):
            leaves = frozenset(tree_leaves(node))
            out.add(leaves)
            for child in node:
                visit(child)

    visit(tree)
    return out


def are_totally_different(tree1, tree2):
    """FDSKL Definition 2: no subtree with more than one leaf in both."""
    return not (subtree_leaf_sets(tree1) & subtree_leaf_sets(tree2))


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
    """Who could unmask a partial sum in a masked sum over ``(t1, t2)``.

    Over ``t1`` a party ``u`` receives the masked sums ``v_S + b_S`` of the
    subtrees ``S`` that send to it, over ``t2`` the offset sums ``b_C`` of
    the subtrees ``C`` that send to it. It learns an unmasked ``v`` sum as
    soon as a union of its ``t1`` child sets equals a union of its ``t2``
    child sets. Definition 2 alone does not exclude this for single leaves:
    a party sending straight to the receiver in both trees gives it
    ``v_x + b_x`` and ``b_x``.

    Returns
    -------
    list of (party, frozenset)
        ``party`` can compute ``sum_{l in set} v_l``; empty when safe.
    """
    s_of, c_of = child_sets(t1), child_sets(t2)
    found = []
    for u in s_of:
        sets1, sets2 = s_of[u], c_of.get(u, [])
        # The sets on each side are disjoint, so a cancelling family is a
        # union of connected components of the "shares a party" relation; a
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
        components = {}
        for side, sets in ((0, sets1), (1, sets2)):
            for group in sets:
                entry = components.setdefault(find(next(iter(group))),
                                              (set(), set()))
                entry[side].update(group)
        for left, right in components.values():
            if left and left == right:
                found.append((u, frozenset(left)))
    return found


def _tree_pair_candidates(receiver, excluded, rest, rng, max_tries):
    orders1 = (itertools.permutations(rest) if len(rest) <= 6 else
               (rng.permutation(rest).tolist() for _ in range(max_tries)))
    for order1 in orders1:
        # The receiver's only T1 child is the subtree of all other parties,
        # led by l': l' sends no mask, so its value must reach nobody but
        # inside a sum carrying other parties' masks, and the receiver gets
        # one sum over T1 that nothing it gets over T2 cancels.
        t1 = (receiver, balanced_tree([excluded, *order1]))
        orders2 = (itertools.permutations(rest) if len(rest) <= 5 else
                   (rng.permutation(rest).tolist() for _ in range(20)))
        for order2 in orders2:
            yield t1, balanced_tree([receiver, *order2])
            if order2:
                yield t1, (receiver, balanced_tree(list(order2)))


def totally_different_trees(parties, receiver, excluded, random_state=None,
                            max_tries=2000):
    """Two trees for the masked sum, both led by ``receiver``.

    ``T1`` spans every party, ``T2`` every party but ``excluded``. The pair
    is totally different (FDSKL Definition 2) and, more strictly, no party
    can combine what it receives over the two trees into an unmasked
    partial sum (checked with :func:`unmaskable`). ``T1`` is
    ``(receiver, subtree of the others led by excluded)``, the shape
    :func:`masked_tree_sum` needs.

    Parameters
    ----------
    parties : sequence of str
        All parties (the leaves of ``T1``).

    receiver : str
        The party that gets both sums (leftmost leaf of both trees).

    excluded : str
        The party ``l'`` whose offset is *not* removed.

    random_state : int, RandomState instance or None
        Seeds the search over leaf orders for many parties (small
        federations are searched exhaustively, in a fixed order).

    Returns
    -------
    t1, t2 : tree
    """
    parties = list(parties)
    if receiver not in parties or excluded not in parties or receiver == excluded:
        raise ValueError(
            "receiver and excluded must be two different parties of the tree.")
    rest = [p for p in parties if p not in (receiver, excluded)]
    rng = check_random_state(random_state)
    for t1, t2 in _tree_pair_candidates(receiver, excluded, rest, rng, max_tries):
        if are_totally_different(t1, t2) and not unmaskable(t1, t2):
            return t1, t2
    raise RuntimeError(
        f"Found no safe pair of trees over {len(parties)} parties.")
