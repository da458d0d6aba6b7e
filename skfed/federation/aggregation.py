"""Tree-structured sums over parties, and the masked two-tree sum.

Trees are nested pairs of party names, e.g. ``(("a", "b"), ("c", "d"))``. The
*leader* of a subtree is its leftmost leaf: at every inner node the leader of
the right child sends its partial sum to the leader of the left child, so the
whole sum arrives at the leftmost leaf in ``ceil(log2 q)`` rounds, and every
round's sends run in parallel (Zhang et al., 2018, as used by FDSKL and
AVFKAM).

The masked sum is FDSKL's Algorithm 3: every party adds a private random
offset ``b^l`` to its value and the masked values are summed over a tree
``T1``; the sum of all offsets but one (party ``l'``'s) is then removed with a
second tree ``T2`` over the other parties. ``T1`` and ``T2`` are *totally
different* (no subtree with more than one leaf in common, FDSKL Definition 2),
so no party can subtract a ``T2`` partial sum of offsets from a ``T1`` partial
sum of masked values and learn another party's unmasked partial value.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import itertools
import operator

from sklearn.utils import check_random_state

from .party import Local

__all__ = [
    "balanced_tree",
    "tree_leaves",
    "tree_leader",
    "subtree_leaf_sets",
    "are_totally_different",
    "totally_different_trees",
    "child_sets",
    "unmaskable",
    "tree_sum",
    "tree_broadcast",
    "masked_tree_sum",
    "choose_excluded",
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


def _tree_pair_candidates(receiver, others, rest, rng, max_tries):
    orders1 = (itertools.permutations(others) if len(others) <= 6 else
               (rng.permutation(others).tolist() for _ in range(max_tries)))
    for order1 in orders1:
        # The receiver's only T1 child holds l', whose offset never travels,
        # so the receiver cannot cancel anything it gets over T1.
        t1 = (receiver, balanced_tree(list(order1)))
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
    partial sum (checked with :func:`unmaskable`).

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
    others = [p for p in parties if p != receiver]
    rest = [p for p in others if p != excluded]
    rng = check_random_state(random_state)
    for t1, t2 in _tree_pair_candidates(receiver, others, rest, rng, max_tries):
        if are_totally_different(t1, t2) and not unmaskable(t1, t2):
            return t1, t2
    raise RuntimeError(
        f"Found no safe pair of trees over {len(parties)} parties.")


def _combine(state, own, incoming, op):
    return op(own, incoming)


def _value(item):
    return item.result() if hasattr(item, "result") else item


def tree_sum(fed, tree, contributions, phase=None, op=operator.add):
    """Sum the parties' contributions up ``tree``; the root leader gets it.

    Parameters
    ----------
    fed : Federation

    tree : nested tuple of party names

    contributions : dict of str to value or PartyFuture
        Each party's own contribution (already held by that party).

    phase : str, optional
        Accounting label of the messages.

    op : callable, default=operator.add
        How a leader combines its partial sum with an incoming one.

    Returns
    -------
    PartyFuture or value
        The total, held by ``tree_leader(tree)``.
    """
    partial = {}

    def height(node):
        return 1 + max(height(c) for c in node) if isinstance(node, tuple) else 0

    nodes = []

    def collect(node):
        if isinstance(node, tuple):
            for child in node:
                collect(child)
            nodes.append(node)

    collect(tree)
    for leaf in tree_leaves(tree):
        partial[leaf] = contributions[leaf]
    # Every node of one height combines in parallel: one round per level.
    for level in sorted({height(n) for n in nodes}):
        pending = []
        for node in nodes:
            if height(node) != level:
                continue
            left, right = tree_leader(node[0]), tree_leader(node[1])
            own, incoming = _value(partial[left]), _value(partial[right])
            pending.append((left, fed[left].call(
                _combine, Local(own), incoming, Local(op), sender=right,
                phase=phase)))
        for left, future in pending:
            partial[left] = future
    return partial[tree_leader(tree)]


def tree_broadcast(fed, tree, value, fn, phase=None):
    """Send ``value`` from the root leader down ``tree`` (reverse order).

    Every party runs ``fn(state, value)`` once: the root on its own value,
    the others on the message from their parent's leader.

    Returns
    -------
    dict of str to PartyFuture
        Each party's result of ``fn``.
    """
    root = tree_leader(tree)
    out = {root: fed[root].call(fn, value, phase=phase)}

    def descend(node):
        if isinstance(node, tuple):
            left, right = tree_leader(node[0]), tree_leader(node[1])
            out[right] = fed[right].call(fn, value, sender=left, phase=phase)
            for child in node:
                descend(child)

    descend(tree)
    return out


def _mask_locally(state, local, key, *args):
    value, offset = local(state, *args)
    state.stash[key] = offset
    return value + offset


def _pop_offset(state, key):
    return state.stash.pop(key)


def _subtract(state, total, offsets):
    return total - offsets


_mask_keys = itertools.count()


def masked_tree_sum(fed, trees, local, *args, phase="masked-sum", sender=None):
    """FDSKL Algorithm 3: the sum of all values plus one party's offset.

    Parameters
    ----------
    fed : Federation

    trees : (tree, tree)
        ``(T1, T2)`` from :func:`totally_different_trees`; ``T1`` spans every
        party, ``T2`` every party but the excluded one ``l'``.

    local : callable
        ``local(state, *args) -> (value, offset)``, run on every party; the
        offset stays with the party until it is summed over ``T2``.

    *args
        Passed to ``local`` on every party (a broadcast message, e.g. a seed).

    sender : str, optional
        The party that broadcasts ``args``; they are then counted as its
        messages to every other party (phase ``"<phase>/request"``). Leave it
        ``None`` when the protocol has already sent them.

    Returns
    -------
    PartyFuture
        ``sum_l value_l + offset_{l'}``, held by the receiver (the leader of
        both trees). Nobody else learns a partial sum of unmasked values.
    """
    t1, t2 = trees
    receiver = tree_leader(t1)
    if tree_leader(t2) != receiver:
        raise ValueError("Both trees must be led by the receiving party.")
    parties1, parties2 = tree_leaves(t1), tree_leaves(t2)
    key = ("masked-sum", next(_mask_keys))
    masked = {p: fed[p].call(_mask_locally, Local(local), Local(key), *args,
                             sender=sender, phase=f"{phase}/request")
              for p in parties1}
    xi = tree_sum(fed, t1, masked, phase=f"{phase}/T1")
    # l' keeps its offset: it becomes the feature's phase b (FDSKL Lemma 1).
    for p in set(parties1) - set(parties2):
        fed[p].call(_pop_offset, key)
    offsets = {p: fed[p].call(_pop_offset, key) for p in parties2}
    b_bar = tree_sum(fed, t2, offsets, phase=f"{phase}/T2")
    return fed[receiver].call(_subtract, Local(_value(xi)), Local(_value(b_bar)),
                              phase=phase)


def choose_excluded(parties, receiver, random_state):
    """Draw ``l'`` uniformly among the parties other than the receiver."""
    others = [p for p in parties if p != receiver]
    if not others:
        raise ValueError("A masked sum needs at least two parties.")
    rng = check_random_state(random_state)
    return others[int(rng.randint(len(others)))]

