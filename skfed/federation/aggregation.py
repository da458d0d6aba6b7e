"""Tree-structured sums over parties, and the masked two-tree sum.

Trees are nested pairs of party names, e.g. ``(("a", "b"), ("c", "d"))``. The
*leader* of a subtree is its leftmost leaf: at every inner node the leader of
the right child sends its partial sum to the leader of the left child, so the
whole sum arrives at the leftmost leaf in ``ceil(log2 q)`` rounds, and every
round's sends run in parallel (Zhang et al., 2018, as used by FDSKL and
AVFKAM).

The masked sum is FDSKL's Algorithm 3 over a ring: every party but one adds
a uniform mask, fresh for every entry and drawn from its own CSPRNG, to its
value encoded in ``Z_{2^64}``; the masked values are summed over a tree
``T1`` and the masks over a second tree ``T2`` spanning every party but the
one, ``l'``, which sent no mask; the receiver subtracts. ``l'`` contributes
its value plus its own *offset*, which the result keeps (the feature's phase
``b`` of FDSKL Lemma 1). ``T1`` and ``T2`` are *totally different* (no
subtree with more than one leaf in common, FDSKL Definition 2) and checked
node by node, so no party can subtract a ``T2`` partial sum of masks from a
``T1`` partial sum of masked values; ``l'`` leads the receiver's only ``T1``
child, so its unmasked contribution only ever travels inside a sum that
carries the other parties' fresh masks.

The tree shapes come first, pure combinatorics with no message: balanced
trees (:func:`balanced_tree`), leaves and leaders, the subtree sets of FDSKL's
Definition 2 (:func:`are_totally_different`), the stricter check that no
party can unmask a partial sum (:func:`unmaskable`), and the search for a
pair of trees for the masked sum (:func:`totally_different_trees`); then the
sums that send messages over them.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import itertools
import operator
import os

import numpy as np
from sklearn.utils import check_random_state

from .party import Local
from .secure_sum import RingEncoder

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
    "AngleEncoder",
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


def _combine(state, own, incoming, op):
    return op(own, incoming)


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
            # A partial sum still being computed is passed on as it is: the
            # backend hands it party to party (see Party.call).
            pending.append((left, fed[left].call(
                _combine, Local(partial[left]), partial[right], Local(op),
                sender=right, phase=phase)))
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


class AngleEncoder:
    """Angles modulo ``2 pi`` as integers modulo ``2**bits``.

    The full turn is ``2**bits``: ``theta`` is stored as
    ``round(2**bits theta / (2 pi)) mod 2**bits``. Sums of encodings decode
    to the sum of the angles modulo ``2 pi``, which is all a cosine needs;
    and since adding a uniform element of the ring gives a uniform element
    whatever it is added to, a fresh uniform mask hides an angle perfectly
    (a one-time pad).

    Parameters
    ----------
    bits : {32, 64}, default=64
        Ring size: ``uint32`` (4 bytes per angle, resolution
        ``2 pi / 2**32 = 1.5e-9``) or ``uint64`` (8 bytes, the float's 53
        significant bits).

    Examples
    --------
    >>> import numpy as np
    >>> from skfed.federation import AngleEncoder
    >>> enc = AngleEncoder()
    >>> u = enc.encode(np.array([3.0, 5.0])) + enc.encode(np.array([4.0, -1.0]))
    >>> np.round(enc.decode(u), 6)
    array([0.716815, 4.      ])
    """

    _TURN = 2.0 * np.pi

    def __init__(self, bits=64):
        if bits not in (32, 64):
            raise ValueError(f"bits must be 32 or 64, got {bits!r}.")
        self.bits = bits
        self.dtype = np.dtype(np.uint32 if bits == 32 else np.uint64)

    def encode(self, angles):
        angles = np.asarray(angles, dtype=float)
        if not np.all(np.isfinite(angles)):
            raise ValueError("Cannot encode non-finite angles in the ring.")
        turns = angles / self._TURN
        turns = turns - np.floor(turns)
        if self.bits == 32:
            # A turn rounded up (2**32) wraps to 0 in the cast.
            return np.round(turns * 2.0**32).astype(np.uint64).astype(np.uint32)
        # 53 significant bits; 2**53 (a full turn) shifts out and wraps to 0.
        return np.round(turns * 2.0**53).astype(np.uint64) << np.uint64(11)

    def decode(self, ring_values):
        ring_values = np.asarray(ring_values, dtype=self.dtype)
        if self.bits == 32:
            return ring_values.astype(np.float64) * (self._TURN * 2.0**-32)
        return (ring_values >> np.uint64(11)).astype(np.float64) * (
            self._TURN * 2.0**-53)

    def __repr__(self):
        return f"AngleEncoder(bits={self.bits})"


#: the ring encoder of masked sums of plain numbers
_DEFAULT_ENCODER = RingEncoder(frac_bits=32)


def _ring_dtype(encoder):
    return np.dtype(getattr(encoder, "dtype", np.uint64))


def _to_ring(value, encoder, shape=None):
    value = np.asarray(value)
    if shape is not None:
        value = np.broadcast_to(value, shape)
    # Unsigned arrays of the ring's width are ring elements already.
    if value.dtype == _ring_dtype(encoder):
        return value.copy()
    return encoder.encode(value)


def _fresh_mask(shape, dtype):
    # The party's own CSPRNG (the operating system's), one uniform ring
    # element per entry and per call: never random_state, never reused.
    n = int(np.prod(shape, dtype=np.int64))
    return np.frombuffer(os.urandom(dtype.itemsize * n),
                         dtype=dtype).reshape(shape)


def _mask_locally(state, local, key, encoder, holds_offset, *args,
                  is_receiver=False):
    value, offset = local(state, *args)
    ring = _to_ring(value, encoder)
    if is_receiver:
        # The receiver's share never leaves it (it leads T1): no mask to
        # draw, and its T2 input is zero.
        state.stash[key] = 0
        return ring
    with np.errstate(over="ignore"):
        if holds_offset:
            # l': its value only ever travels inside sums that carry the
            # other parties' fresh masks; its offset is the one kept.
            if offset is not None:
                ring = ring + _to_ring(offset, encoder, ring.shape)
            return ring
        mask = _fresh_mask(ring.shape, ring.dtype)
        state.stash[key] = mask
        return ring + mask


def _pop_mask(state, key):
    return state.stash.pop(key)


def _unmask(state, total, masks, encoder):
    with np.errstate(over="ignore"):
        return encoder.decode(total - masks)


_mask_keys = itertools.count()


def masked_tree_sum(fed, trees, local, *args, phase="masked-sum", sender=None,
                    encoder=None):
    """FDSKL Algorithm 3: the sum of all values plus one party's offset.

    Parameters
    ----------
    fed : Federation

    trees : (tree, tree)
        ``(T1, T2)`` from :func:`totally_different_trees`; ``T1`` spans every
        party and is ``(receiver, subtree led by l')``, ``T2`` spans every
        party but the excluded one ``l'``.

    local : callable
        ``local(state, *args) -> (value, offset)``, run on every party. Only
        ``l'``'s offset is used (``None`` counts as zero); the others mask
        their value with fresh ring masks instead.

    *args
        Passed to ``local`` on every party (a broadcast message, e.g. a seed).

    sender : str, optional
        The party that broadcasts ``args``; they are then counted as its
        messages to every other party (phase ``"<phase>/request"``). Leave it
        ``None`` when the protocol has already sent them.

    encoder : RingEncoder or AngleEncoder, optional
        How values and offsets become ring elements (unsigned arrays of the
        ring's width are taken as they are). Default: fixed point in
        ``Z_{2^64}`` with 32 fractional bits, ``RingEncoder(frac_bits=32)``.
        FDSKL and AVFKAM use :class:`AngleEncoder` (sums modulo ``2 pi``).

    Returns
    -------
    PartyFuture
        ``sum_l value_l + offset_{l'}`` (decoded), held by the receiver (the
        leader of both trees). Nobody else learns a partial sum of values.

    Notes
    -----
    Every party but ``l'`` adds to its encoded value a uniform ring mask
    drawn from its own CSPRNG, fresh for every entry and every call, and
    keeps the mask; the masked values go up ``T1`` and the masks up ``T2``;
    the receiver subtracts the mask total, which cancels the masks exactly
    (ring arithmetic), so the result does not depend on them. Everything a
    party other than the receiver gets is uniform in the ring: a ``T1``
    partial sum never contains ``l'`` (which sends only to the receiver),
    so it carries at least one fresh mask; a ``T2`` partial sum is masks
    only; and the trees are chosen so that no party's ``T2`` inputs cancel
    its ``T1`` inputs (:func:`unmaskable`). The receiver gets one ``T1``
    sum (all other parties) and mask sums over ``T2``: nothing but the
    result. With two parties the result itself is ``l'``'s value plus its
    offset, as in the paper.

    Why ``l'`` sends no mask: its offset must stay constant across rows (in
    FDSKL it is the phase of a random feature, part of the model), so it
    cannot be a fresh mask, and a fresh mask of ``l'`` could not be removed
    over ``T2`` (``T2`` excludes ``l'``, Algorithm 3) without an extra
    message. Leading the receiver's only ``T1`` child, ``l'`` is never a
    lone sender, and the messages are those of the float version: the same
    count, one ring element per entry.
    """
    t1, t2 = trees
    receiver = tree_leader(t1)
    if tree_leader(t2) != receiver:
        raise ValueError("Both trees must be led by the receiving party.")
    parties1, parties2 = tree_leaves(t1), tree_leaves(t2)
    excluded = [p for p in parties1 if p not in set(parties2)]
    if len(excluded) > 1 or set(parties2) - set(parties1):
        raise ValueError("T2 must span every party of T1 but at most one (l').")
    if excluded and not (isinstance(t1, tuple) and len(t1) == 2
                         and t1[0] == receiver
                         and tree_leader(t1[1]) == excluded[0]):
        raise ValueError(
            f"T1 must be (receiver, subtree led by the excluded party "
            f"{excluded[0]!r}) so that its unmasked value never travels alone; "
            f"got {t1!r}. Build the trees with totally_different_trees.")
    encoder = _DEFAULT_ENCODER if encoder is None else encoder
    key = ("masked-sum", next(_mask_keys))
    masked = {p: fed[p].call(_mask_locally, Local(local), Local(key),
                             Local(encoder), Local(p in excluded), *args,
                             sender=sender, phase=f"{phase}/request",
                             **({"is_receiver": True} if p == receiver
                                else {}))
              for p in parties1}
    # Each party takes its mask out right after masking (its own calls, in
    # order), before any sum: a backend that runs a party's consecutive
    # calls together then runs both with the masking.
    masks = {p: fed[p].call(_pop_mask, key) for p in parties2}
    xi = tree_sum(fed, t1, masked, phase=f"{phase}/T1")
    mask_total = tree_sum(fed, t2, masks, phase=f"{phase}/T2")
    return fed[receiver].call(_unmask, Local(xi), Local(mask_total),
                              Local(encoder),
                              phase=phase)


def choose_excluded(parties, receiver, random_state):
    """Draw ``l'`` uniformly among the parties other than the receiver."""
    others = [p for p in parties if p != receiver]
    if not others:
        raise ValueError("A masked sum needs at least two parties.")
    rng = check_random_state(random_state)
    return others[int(rng.randint(len(others)))]

