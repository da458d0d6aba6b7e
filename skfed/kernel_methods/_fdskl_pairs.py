"""FDSKL's Algorithms 2 and 3 on the parties: which (row, feature) pairs a
step needs, each party's share of them, and the owner's saved partial sums.

Functions named ``_party_*`` and ``_owner_*`` run on one party's thread (see
:mod:`._fdskl_protocol`, whose driver calls them). The needed pairs are a
function of the public history, so every party enumerates them in the same
order: the steps' rows by increasing *start* (the owner's feature count at
the row's last visit), in blocks, row-major within a block.

Local compute is a few matrix products per step: a party projects blocks of
rows on blocks of its directions (``X_G omega_G``); the owner takes the
cosines of every received pair at once, multiplies them with its
coefficients, and adds the result to the partial sums it saves per row
(``sum_j alpha_j phi_j(x_i)`` in the raw units of its
:class:`~._vertical_features.CoefficientStore`: coefficients only ever
decay, all by one factor, so the store's running scale brings a saved sum up
to date). No Python loop runs over features or pairs.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import sys

import numpy as np
import scipy.sparse as sp

from ._vertical_features import _UNITS_PER_RADIAN, ring_angles

__all__ = []


#: a block of rows may span this share of unneeded pairs (the owner's
#: rectangle of cosines over the block's widest need, and a sparse block's
#: product) to save the per-block overhead
_SLACK = 0.25

#: adding it to a float below 2^51 in magnitude rounds it to an integer (to
#: nearest, ties to even, as np.rint) held in two's complement by the low
#: bits of the mantissa
_ROUND_MAGIC = 1.5 * 2.0**52
_LITTLE_ENDIAN = sys.byteorder == "little"


def _ring_units(units, bound):
    """:func:`ring_angles` of angles in ring units whose magnitude is at
    most ``bound``, rounded in place.

    Below ``2^50`` the ring element is read off the low 32 bits of
    ``units + 1.5 * 2^52`` (two passes instead of a range check and three
    casts; the same elements).
    """
    if bound < 2.0**50 and _LITTLE_ENDIAN:
        units += _ROUND_MAGIC
        return units.view(np.uint32)[::2].copy()
    return ring_angles(units, scaled=True)


def _angle_bound(state, phased):
    """A bound of this party's ``|omega^T x (+ b)|`` in ring units."""
    x_max = getattr(state, "x_abs_max", None)
    if x_max is None:
        data = state.X.data if sp.issparse(state.X) else state.X
        x_max = state.x_abs_max = float(np.abs(data).max(initial=0.0))
    return (x_max * state.omega_l1 + (2 * np.pi if phased else 0.0)) * _UNITS_PER_RADIAN


def _row_blocks(start, width):
    """The step's rows in blocks for :func:`_pairs` (a public order).

    Rows by increasing start; consecutive rows that share a start form a
    unit, and units are merged while the block's dense rectangle (every row
    over the first row's features) has at most ``_SLACK`` of unneeded pairs.
    Returns a list of ``(idx, exact)``: the rows' positions in the step, and
    whether they all share one start.
    """
    order = np.argsort(start, kind="stable")
    units = np.split(order, np.flatnonzero(np.diff(start[order])) + 1)
    blocks, current, need = [], [], 0
    for unit in units:
        n_need = (width - int(start[unit[0]])) * len(unit)
        if current:
            rows = sum(len(u) for u in current) + len(unit)
            dense = (width - int(start[current[0][0]])) * rows
            if dense - need - n_need <= _SLACK * (need + n_need):
                current.append(unit)
                need += n_need
                continue
            blocks.append(current)
        current, need = [unit], n_need
    if current:
        blocks.append(current)
    return [(np.concatenate(b), len(b) == 1) for b in blocks]


def _pairs(state, owner, excluded):
    """:func:`_pair_blocks` as a list, computed once per step (the owner
    enumerates a group twice: for its share, then to take the sums)."""
    memo = state.step.setdefault("pairs", {})
    if (owner, excluded) not in memo:
        memo[owner, excluded] = list(_pair_blocks(state, owner, excluded))
    return memo[owner, excluded]


def _pair_blocks(state, owner, excluded):
    """The needed pairs of a group, as rectangles of rows x features.

    The group is the owner's features whose ``l'`` is ``excluded`` (all of
    them when there is one party). A row needs the group's features from
    its *start* on (the owner's feature count at its last visit; 0 for a
    row never seen or past the budget), and the rows of one earlier step
    share their start: so the step's rows, taken by increasing start (a
    public order: every party derives it from the public history), fall in
    a few blocks that each need the same features. Yields ``(idx, cols)``
    per block: the rows' positions in the step and the columns (positions
    in the owner's list). Concatenated row-major, the blocks list the pairs
    of a masked sum; nothing that is not needed is computed or sent.

    Blocks of rows with nearby starts are merged (:func:`_row_blocks`); such
    a block also yields its units (``None`` for a rectangle): per run of
    rows that share a start, ``(first row, end row, first column)`` in the
    block, and its pairs are each row's columns from its unit's first,
    row-major.
    """
    start, width = state.step["requests"][owner]
    if excluded is None:
        group = np.arange(width)
    else:
        group = _group(state.history[owner], excluded, width)
    for idx, exact in state.step["blocks"][owner]:
        cols = group[np.searchsorted(group, start[idx[0]]):]
        if not len(cols):
            continue
        if exact:
            yield idx, cols, None
            continue
        # idx is sorted by start: runs of one start, each a suffix of cols.
        starts = start[idx]
        bounds = np.concatenate([[0], np.flatnonzero(np.diff(starts)) + 1,
                                 [len(idx)]])
        firsts = np.searchsorted(cols, starts[bounds[:-1]])
        yield idx, cols, [(int(lo), int(hi), int(f)) for lo, hi, f in
                          zip(bounds[:-1], bounds[1:], firsts) if f < len(cols)]


def _group(hist, excluded, width):
    """Positions of the owner's first ``width`` features whose ``l'`` is
    ``excluded``, extended from the last step's (features only append)."""
    groups = hist.groups
    seen, group = groups.get(excluded, (0, np.empty(0, dtype=np.int64)))
    if width > seen:
        new = np.flatnonzero(hist.excluded[seen:width] == excluded) + seen
        group = np.concatenate([group, new])
        groups[excluded] = (width, group)
    return group[:np.searchsorted(group, width)]


def _n_pairs(idx, cols, units):
    """Pairs of a block of :func:`_pairs`."""
    if units is None:
        return len(idx) * len(cols)
    return sum((hi - lo) * (len(cols) - f) for lo, hi, f in units)


def _take(v, units):
    """The needed pairs of a block's rectangle ``v``, row-major."""
    if units is None:
        return v.ravel()
    return np.concatenate([v[lo:hi, f:].ravel() for lo, hi, f in units])


def _project(X_block, omega, ids, scale=1.0):
    """``X_block @ omega[:, ids] * scale``, dense, without copying all of
    ``omega``.

    For sparse rows only the directions of the columns they use are taken
    (a wide sparse block touches few of its columns), so the cost follows
    the nonzeros, not the width of the party's block. ``scale`` multiplies
    the directions taken (cheaper than the product's entries).
    """
    if not sp.issparse(X_block):
        return X_block @ (omega[:, ids] * scale)
    X_block = sp.csr_matrix(X_block)
    used, local = np.unique(X_block.indices, return_inverse=True)
    X_block = sp.csr_matrix((X_block.data, local.ravel(), X_block.indptr),
                            shape=(X_block.shape[0], len(used)))
    return np.asarray(X_block @ (omega[np.ix_(used, ids)] * scale))


def _party_pair_projection(state, owner, excluded):
    """Algorithm 3, lines 2-3, on the needed pairs of one owner's group.

    Returns ``(omega_G^T x_G, b^l)`` per pair; the masked-sum helper sends
    their sum up ``T1`` and keeps ``b^l`` for ``T2``.
    """
    rows, ids_of = state.step["rows"], state.history[owner].ids
    # In a masked sum (``state.ring``) the shares leave as ring elements and
    # only l' adds its phases (the others' would not cancel); with one party
    # the phase is added here. The privacy replay's surrogate party (no
    # ``ring``) gets values and phases apart, one per pair.
    ring = getattr(state, "ring", False)
    phased = excluded is None or (ring and state.index == excluded)
    blocks = _pairs(state, owner, excluded)
    # Ring shares are computed in ring units at once (the directions and
    # phases scaled, not the products), straight into the share's buffer
    # (a product per run of rows that share a start), rounded in place.
    scale = _UNITS_PER_RADIAN if ring else 1.0
    values = np.empty(sum(_n_pairs(*block) for block in blocks))
    offsets, done = [], 0
    for idx, cols, need in blocks:
        ids = ids_of[cols]
        X_block = state.X[rows[idx]]
        if not (ring or phased):  # the privacy replay's surrogate party
            offsets.append(_take(np.broadcast_to(
                state.offsets[ids], (len(idx), len(cols))), need))
        if sp.issparse(X_block):
            v = _project(X_block, state.omega, ids, scale)
        else:
            directions = state.omega[:, ids] * scale
        phases = state.offsets[ids] * scale if phased else None
        for lo, hi, f in ([(0, len(idx), 0)] if need is None else need):
            out = values[done:done + (hi - lo) * (len(cols) - f)].reshape(hi - lo, -1)
            if sp.issparse(X_block):
                out[...] = v[lo:hi, f:]
            else:
                np.matmul(X_block[lo:hi], directions[:, f:], out=out)
            if phased:
                out += phases[f:]
            done += out.size
    if ring:
        return _ring_units(values, _angle_bound(state, phased)), None
    if phased:
        return values, None
    return values, np.concatenate(offsets) if offsets else np.empty(0)


def _owner_take_pairs(state, excluded, values):
    """The owner turns one group's ``omega^T x + b`` into ``phi`` (Alg. 2).

    ``values`` are the pairs of the group whose ``l'`` is ``excluded``. The
    cosines of a block of pairs are multiplied at once with the
    coefficients of their features and added to the step's sums; the
    features without a coefficient yet (this step's new ones, at the
    creator) are kept for the gradient. A group is taken as soon as its sum
    arrives, while the other parties already compute the next group's
    shares. Nothing leaves the owner.
    """
    me = state.names[state.index]
    step = state.step
    store = state.store
    n_coef, raw = len(store), store.raw_coef
    if "fresh" not in step:
        _, width = step["requests"][me]
        # The creator's features of this step, by position in its list
        # (fresh ones past n_coef; a pool's returning ones before it).
        new_pos = (step["new_pos"] if step.get("creator") == me
                   else np.empty(0, dtype=np.int64))
        step["fresh"] = np.zeros((len(step["rows"]), state.n_outputs))
        step["new_phi"] = np.zeros((len(step["rows"]), len(new_pos)))
        step["new_of"] = np.full(width, -1, dtype=np.int64)
        step["new_of"][new_pos] = np.arange(len(new_pos))
    fresh, new_phi, new_of = step["fresh"], step["new_phi"], step["new_of"]
    done = 0
    for idx, cols, need in _pairs(state, me, excluded):
        if need is None:
            k = len(idx) * len(cols)
            phi = np.cos(values[done:done + k]).reshape(len(idx), len(cols))
            done += k
        else:
            phi = np.zeros((len(idx), len(cols)))
            for lo, hi, f in need:
                k = (hi - lo) * (len(cols) - f)
                phi[lo:hi, f:] = np.cos(values[done:done + k]).reshape(
                    hi - lo, len(cols) - f)
                done += k
        split = int(np.searchsorted(cols, n_coef))
        if split:
            fresh[idx] += phi[:, :split] @ raw[cols[:split]]
        new = new_of[cols]
        taken = new >= 0
        if taken.any():
            new_phi[np.ix_(idx, new[taken])] = phi[:, taken]


def _owner_save_features(state):
    """The owner's ``f^l`` of the step's rows, and its saved sums (Alg. 2).

    A saved row adds the step's sum to its partial sum; a row past the
    budget (which received every feature) takes the step's sum as it is.
    """
    step = state.step
    if "fresh" not in step:  # no group had a pair for this owner
        _owner_take_pairs(state, None, np.empty(0))
    fresh = step.pop("fresh") * np.sqrt(2.0)
    step["new_phi"] *= np.sqrt(2.0)
    slots = state.cache_slot[step["rows"]]
    cached = slots >= 0
    if cached.any():
        state.partial[slots[cached]] += fresh[cached]
        fresh[cached] = state.partial[slots[cached]]
    step["local"] = fresh * state.store.scale


def _party_local_decision(state):
    """Algorithm 2: ``f^l(x_i)`` from the coefficients this party holds."""
    store = getattr(state, "store", None)
    n_rows = len(state.step["rows"])
    if store is None or len(store) == 0:
        return np.zeros((n_rows, state.n_outputs))
    return state.step["local"]


def _party_decay(state, factor):
    """Algorithm 1, line 10: every holder of coefficients scales them."""
    store = getattr(state, "store", None)
    if store is not None:
        folded = store.decay(factor)
        if folded != 1.0:  # the saved partial sums are in the raw units
            state.partial *= folded


def _owner_add(state, new_ids, coef):
    """Algorithm 1, line 9: the creator saves its new coefficients, and adds
    their terms to the saved partial sums of this step's saved rows."""
    state.store.add(new_ids, coef)
    rows = state.step["rows"]
    slots = state.cache_slot[rows]
    cached = slots >= 0
    if cached.any():  # (never with a pool: its rows are not saved)
        raw_new = state.store.raw_coef[-len(new_ids):]
        state.partial[slots[cached]] += state.step["new_phi"][cached] @ raw_new


def _sum_local(state, value_offset):
    value, offset = value_offset
    return value if offset is None else value + offset
