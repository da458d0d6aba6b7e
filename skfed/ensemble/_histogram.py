"""Gradient histograms: who computes what (Algorithm 1 of the paper).

- The *passive* party sums encrypted gradient pairs per feature and bin over
  a node's rows (sparse-aware, below), turns them into cumulative "left of
  threshold" sums, one per split candidate, shuffles the candidates under
  random ids (a fresh permutation per tree), packs several per ciphertext
  and re-randomises them, once, just before they are sent
  (:func:`passive_histograms`), for the nodes it may reveal (below). In
  plaintext mode the same sums are int64 bincounts of every row.
- The *active* party decrypts them (:func:`active_receive_candidates`) and
  computes the same sums in plaintext for its own columns
  (:func:`own_candidate_sums`).

Histogram subtraction: per pair of sibling nodes only the child with fewer
gradient rows is built; the active party derives the sibling's candidate sums
as ``parent - child``. Cumulative sums are linear in the rows, and a tree uses
one candidate order, so the subtraction is exact and costs the passive party
nothing (the paper's encrypted subtraction would cost as many ciphertexts as
building the sibling, which is what we avoid sending and decrypting).

Candidate order is (feature, bin, missing side) ordered with all "missing
right" candidates first (:meth:`BinMapper.candidates`).

Sparse-aware encrypted sums (:class:`NodeBins`, :func:`candidate_sums`). A
node's encrypted histogram costs one ciphertext product (a multiplication
modulo ``n**2``) per row and feature when every bin is summed. Most of that
is avoidable: per feature, the bin holding the most rows of the node (the
zero bin of a sparse or one-hot column) is derived instead of summed,

    ``E(hist[f, mode]) = E(total) * E(sum of the other bins of f)**-1``,

where ``E(total)``, the node's sum over all its rows, is built once per node
and shared by every feature. A feature then costs one product per row *off*
its most frequent bin, plus one modular inverse. The sums are the
same integers either way (Paillier adds modulo ``n``, and every bin sum,
derived or not, is a sum of the node's rows), so the model does not change.

The remaining (row, feature) pairs go to the shared grouped products of
:func:`skfed.crypto._group_sum.raw_group_sum`: features whose rows often
coincide share one joint histogram (a row costs one product per group of
features, not per feature), over worker threads. The node total is one more
column of those products (every row in one bin), so it joins a group and
costs almost nothing. On the a9a-shaped benchmark table (62 binary columns
per party, 14 ones per row in all) the root costs ~3.5 products per row
instead of 62 (the dense histogram) or ~8 (sparse alone).

Which bin is derived depends only on the passive party's own bins of the
node's rows; nothing about it leaves the party, and the candidate sums it
sends are the same plaintexts as a fully summed histogram's (re-randomised
by :func:`~._packing.pack_candidates`).

Which nodes a passive party reveals (``min_passive_rows``,
:class:`RevealedNodes`). The active party knows the rows of every node and
its own fixed-point gradients, so a decrypted left sum ``(G_left, H_left)``
of a node with few gradient rows is a subset-sum instance it can solve: the
unique subset of the node's rows with those sums is the set of rows with
``x_f <= t`` for the passive party's (anonymous) feature ``f`` and threshold
``t`` (:func:`~._attacks.subset_sum`). A passive party therefore
withholds its sums for nodes it cannot reveal safely, deciding from row
counts it knows itself.

Counting only the revealed node is not enough: the active party subtracts
(a sibling's sums are the parent's minus the built child's), so what it can
compute is every sum over a union of *atoms*, where an atom is a revealed
node minus the revealed nodes inside it (the revealed nodes of a tree form a
nested family, and their indicator vectors span exactly the unions of these
disjoint atoms). :class:`RevealedNodes` keeps every non-empty atom at
``min_rows`` gradient rows or more: a node is revealed only if it holds at
least ``min_rows`` gradient rows and leaves its nearest revealed ancestor's
atom empty or still at ``min_rows`` or more. The same bookkeeping replays a
recorded fit in the contract's check (:class:`~._contract.MinPassiveRows`).

Which candidates of a revealed node follow (``min_passive_side``,
:class:`SideLedger`). Bounding the rows of every reachable set is not
enough: a candidate's left sum splits a set in two, and a side of one to
three rows is a small subset sum the active party solves
(:func:`~._attacks.side_fixing`), which fixes the side of that threshold
for every row of the set. The passive party therefore sends, per revealed
node, only the sums of candidates whose sides (and gaps to the previous
revealed threshold of the same feature) hold 0 or at least ``min_side``
rows in every set the active party can reach with them, plus the mask of
which ones follow; the active party scores the others ``-inf`` and derives a
sibling's candidate only where the parent and the built child both sent
it. Fewer candidates also mean fewer ciphertexts to pack and decrypt.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import itertools
import secrets

import gmpy2
import numpy as np

from ..crypto import EncryptedArray, PlaintextArray, concatenate
from ..crypto._group_sum import feature_groups, raw_group_sum
from ..crypto._raw import object_array
from ._binning import BinMapper
from ._packing import histogram_sums, pack_candidates, unpack_candidates
from ._sampling import tree_columns

__all__ = [
    "setup_party",
    "passive_receive_gradients",
    "passive_histograms",
    "active_receive_candidates",
    "own_candidate_sums",
    "RevealedNodes",
    "SideLedger",
    "MAX_CHECK_SETS",
    "NodeBins",
    "candidate_sums",
]

_ONE = gmpy2.mpz(1)  # the encryption of 0 without randomness (an empty sum)


def setup_party(state, max_bins):
    """Every party: bin its own columns; list its split candidates."""
    state.mapper = BinMapper(max_bins, state.seed).fit(state.X)
    state.bins = state.mapper.transform(state.X)
    state.cand_features, state.cand_bins, state.cand_missing_left = (
        state.mapper.candidates())
    # The lookup table: record id -> (feature, threshold, missing_left).
    state.records = []
    return None


def passive_receive_gradients(state, layout, sample_rows, encrypted):
    """Passive party: keep this round's encrypted gradient pairs.

    ``encrypted[k]`` holds one ciphertext per row of ``sample_rows`` for
    output ``k`` (one per class for multiclass); ``sample_rows=None`` means
    every training row.
    """
    state.layout = layout
    state.encrypted = encrypted
    n_rows = state.bins.shape[0]
    sample_rows = np.arange(n_rows) if sample_rows is None else sample_rows
    state.position = np.full(n_rows, -1, dtype=np.intp)
    state.position[sample_rows] = np.arange(sample_rows.size)
    return None


def _tree_order(state, tree_key):
    """The candidate permutation and random ids of this tree (kept by the owner).

    Both are protocol secrets: they come from a generator seeded from the
    operating system's CSPRNG here, on the passive party, at the tree's first
    level, never from ``random_state`` (whoever knows the seed would otherwise
    regenerate them and read off every candidate's feature and bin). They do
    not shape the model: the active party scores candidates whatever their
    order, and the owner breaks ties between equal gains by its own candidate
    order (:func:`~._split.passive_split`).

    Returns ``(order, ids, new)``; ``new`` is True on the tree's first level.
    """
    new = state.stash.get("tree_key") != tree_key
    if new:
        rng = np.random.default_rng(secrets.randbits(128))
        n = state.cand_features.size
        state.stash["tree_key"] = tree_key
        state.stash["order"] = rng.permutation(n)
        # Ids are random (not positions), unique, and meaningless to others.
        state.stash["ids"] = rng.choice(2**62, size=n, replace=False).astype(np.int64)
    return state.stash["order"], state.stash["ids"], new


class RevealedNodes:
    """One passive party's revealed nodes of one tree.

    Parameters
    ----------
    min_rows : int
        Smallest allowed atom (gradient rows); 0 reveals every node (the
        paper's protocol).
    """

    def __init__(self, min_rows):
        self.min_rows = int(min_rows)
        self.owner = np.full(0, -1, dtype=np.intp)  # innermost revealed node
        self.atoms = []                             # its rows in no sub-node

    def _grow(self, rows):
        size = int(rows.max()) + 1 if rows.size else 0
        if size > self.owner.size:
            self.owner = np.concatenate(
                [self.owner, np.full(size - self.owner.size, -1, dtype=np.intp)])

    def problem(self, rows):
        """Why revealing the node of gradient rows ``rows`` is unsafe, or None."""
        if self.min_rows <= 0:
            return None
        rows = np.asarray(rows, dtype=np.intp)
        if rows.size < self.min_rows:
            return f"a node of {rows.size} gradient rows"
        self._grow(rows)
        owners, counts = np.unique(self.owner[rows], return_counts=True)
        for owner, count in zip(owners, counts):
            left = self.atoms[owner] - count if owner >= 0 else 0
            if 0 < left < self.min_rows:
                return (f"a node of {rows.size} gradient rows whose revealed "
                        f"ancestor would keep {left} rows in no revealed "
                        "node (derivable by subtraction)")
        return None

    def add(self, rows):
        """Record the node of gradient rows ``rows`` as revealed."""
        if self.min_rows <= 0:
            return
        rows = np.asarray(rows, dtype=np.intp)
        self._grow(rows)
        owners, counts = np.unique(self.owner[rows], return_counts=True)
        for owner, count in zip(owners, counts):
            if owner >= 0:
                self.atoms[owner] -= int(count)
        self.owner[rows] = len(self.atoms)
        self.atoms.append(int(rows.size))

    def reveal(self, rows):
        """Record and return True if the node may be revealed, else False."""
        if self.problem(rows) is not None:
            return False
        self.add(rows)
        return True


#: Most check sets a passive party weighs for one node (min_passive_side);
#: a node that would need more is withheld (safe, and only reached by
#: trees deeper than 8 levels whose nodes still hold ``min_passive_rows``).
MAX_CHECK_SETS = 512


def _ok(counts, minimum):
    """Counts that are 0 or at least ``minimum`` (vectorised)."""
    return (counts == 0) | (counts >= minimum)


class SideLedger:
    """One passive party's revealed candidates of one tree (``min_passive_side``).

    :class:`RevealedNodes` bounds the rows of every set the active party can
    subtract its way to; inside such a set, a candidate's left sum still
    splits the rows in two, and a side of one to three rows is a subset sum
    the active party solves at once (:func:`~._attacks.side_fixing`). The
    ledger decides, per revealed node, which candidates' sums follow: in
    threshold order along each chain (one feature and missing side), a
    candidate is revealed only if in every *check set* the rows left of it,
    right of it, and between it and the chain's previous revealed threshold
    the set can use are each 0 or at least ``min_side``; a "missing left"
    candidate also needs the set's missing rows of its feature to be 0 or
    at least ``min_side`` (its sum minus the "missing right" one of the
    same bin is their sum).

    Check sets are what the active party reaches with one candidate's sums:
    the node itself and, for every revealed set ``a`` holding it, ``a``
    minus the node minus any choice of the largest revealed sets inside
    ``a`` disjoint from the node, each usable for the candidates revealed
    in every set it subtracts. After a node, the ledger records it and
    ``a - node`` for its nearest revealed ``a`` (the derived sibling when
    ``a`` is the parent) with the candidates revealed in both. A node that
    needs more than ``max_sets`` check sets is withheld. Everything is
    decided from the passive party's own bins of rows it was sent, so the
    contract's check replays it (:class:`~._contract.MinPassiveRows`).

    Parameters
    ----------
    min_side : int
        Smallest allowed side; 1 or less reveals every candidate.
    max_sets : int, default=MAX_CHECK_SETS
    """

    def __init__(self, min_side, max_sets=MAX_CHECK_SETS):
        self.min_side = int(min_side)
        self.max_sets = int(max_sets)
        self.entries = []  # (frozenset of rows, rows array, revealed mask)

    def check_sets(self, rows):
        """``[(rows, usable mask or None)]`` for a node of gradient rows
        ``rows``, or None when there are more than ``max_sets``."""
        rows_set = frozenset(np.asarray(rows).tolist())
        found = {}
        budget = self.max_sets
        for a_set, _, a_mask in self.entries:
            if not rows_set < a_set:
                continue
            inside = [(d_set, d_mask) for d_set, _, d_mask in self.entries
                      if d_set < a_set and not d_set & rows_set]
            inside = [(d_set, d_mask) for d_set, d_mask in inside
                      if not any(d_set < e_set for e_set, _ in inside)]
            budget -= 2 ** len(inside)
            if budget < 0:
                return None
            rest = a_set - rows_set
            for r in range(len(inside) + 1):
                for sub in itertools.combinations(inside, r):
                    left = rest.difference(*(d for d, _ in sub))
                    if not left:
                        continue
                    usable = a_mask.copy()
                    for _, d_mask in sub:
                        usable &= d_mask
                    found[left] = found[left] | usable if left in found else usable
        sets = [(np.asarray(rows, dtype=np.intp), None)]
        sets += [(np.fromiter(sorted(s), dtype=np.intp, count=len(s)), usable)
                 for s, usable in found.items()]
        return sets

    def walk(self, row_bins, rows, features, bins, missing_left, missing_bin,
             mask=None):
        """Greedy choice (``mask`` None), or the candidates of ``mask`` that break
        the rule.

        Parameters
        ----------
        row_bins : ndarray of shape (n_training_rows, n_columns)
            The party's bin indices of its columns.
        rows : ndarray of int
            The node's gradient rows.
        features, bins, missing_left : ndarray
            Each candidate's column (into ``row_bins``), bin and missing side.
        missing_bin : int
        mask : ndarray of bool, optional
            Candidates revealed (to check, instead of choosing).

        Returns
        -------
        ndarray of bool, or None
            Chosen: the revealed candidates (None: withhold the node: too
            many check sets). Checked: the revealed candidates that break the
            rule (all of them when there are too many check sets).
        """
        n = features.size
        if self.min_side <= 1:
            return np.ones(n, dtype=bool) if mask is None else np.zeros(n, dtype=bool)
        sets = self.check_sets(rows)
        if sets is None:
            return None if mask is None else np.asarray(mask, dtype=bool).copy()
        width = missing_bin + 1
        used, column = np.unique(features, return_inverse=True)
        lefts, missing, totals, usable = [], [], [], []
        for set_rows, set_usable in sets:
            codes = row_bins[np.ix_(set_rows, used)] + width * np.arange(used.size)
            hist = np.bincount(codes.ravel(), minlength=width * used.size)
            hist = hist.reshape(used.size, width)
            cum = np.cumsum(hist, axis=1)
            left = cum[column, bins] + np.where(missing_left,
                                                hist[column, missing_bin], 0)
            lefts.append(left)
            missing.append(hist[column, missing_bin])
            totals.append(set_rows.size)
            usable.append(np.ones(n, dtype=bool) if set_usable is None
                          else set_usable)
        lefts, missing = np.array(lefts), np.array(missing)
        totals, usable = np.array(totals), np.array(usable)
        m = self.min_side
        safe = _ok(lefts, m) & _ok(totals[:, None] - lefts, m)
        safe &= ~missing_left | _ok(missing, m)
        out = np.zeros(n, dtype=bool)
        chains = features.astype(np.int64) * 2 + missing_left
        for chain in np.unique(chains):
            members = np.flatnonzero(chains == chain)
            members = members[np.argsort(bins[members], kind="stable")]
            previous = np.zeros(len(sets), dtype=np.int64)
            for c in members.tolist():
                use = usable[:, c]
                ok = ~use | (safe[:, c] & _ok(lefts[:, c] - previous, m))
                shown = bool(ok.all()) if mask is None else bool(mask[c])
                if mask is None:
                    out[c] = shown
                elif shown and not ok.all():
                    out[c] = True
                if shown:
                    previous = np.where(use, lefts[:, c], previous)
        return out

    def add(self, rows, mask):
        """Record a revealed node and its candidates, and what subtraction
        from its nearest revealed set gives (with the candidates of both)."""
        rows = np.asarray(rows, dtype=np.intp)
        rows_set = frozenset(rows.tolist())
        holders = [e for e in self.entries if rows_set < e[0]]
        self.entries.append((rows_set, rows, np.asarray(mask, dtype=bool).copy()))
        if holders:
            a_set, _, a_mask = min(holders, key=lambda e: len(e[0]))
            rest = a_set - rows_set
            self.entries.append((rest, np.fromiter(sorted(rest), dtype=np.intp,
                                                   count=len(rest)),
                                 a_mask & mask))


def passive_histograms(state, tree_key, output, node_rows, n_jobs=None):
    """Passive party: encrypted candidate sums for each requested node.

    Parameters
    ----------
    tree_key : tuple of int
        ``(round, output)``; a new key draws a new candidate permutation.
    output : int
        Which encrypted gradient array (class) to use.
    node_rows : list of ndarray or None
        Instance space of each node to build (all training rows of the node;
        None for every training row, the root).

    Returns
    -------
    ids : ndarray of int64 or None
        Random candidate ids, in the order of every message; sent with the
        tree's first level only (None afterwards).
    revealed : ndarray of bool
        Per requested node, whether its sums follow: a node is withheld when
        revealing it would let the active party compute sums over fewer than
        ``min_passive_rows`` gradient rows (:class:`RevealedNodes`), which the
        party decides from row counts alone.
    shown : list of ndarray of bool, or None
        Per revealed node, which candidates' sums follow, in the order of
        ``ids`` (:class:`SideLedger`, ``min_passive_side``); None when every
        candidate's do (``min_passive_side`` below 2, or
        ``min_passive_rows=0``: the paper's protocol).
    messages : list of EncryptedArray
        Per revealed node, packed and re-randomised candidate sums of the
        shown candidates, in the order of ``ids``.
    """
    order, ids, new = _tree_order(state, tree_key)
    min_side = getattr(state, "min_passive_side", 0)
    sided = state.min_passive_rows > 0 and min_side > 1
    if new:
        state.stash["revealed"] = RevealedNodes(state.min_passive_rows)
        state.stash["sides"] = SideLedger(min_side) if sided else None
        # colsample_bytree: this tree's own columns (model randomness, the
        # party's seed); candidates of other columns are neither built nor
        # sent, and their ids are dropped with them.
        features = tree_columns(state.seed, tree_key, state.bins.shape[1],
                                state.colsample)
        keep = np.isin(state.cand_features[order], features)
        order, ids = order[keep], ids[keep]
        state.stash.update(order=order, ids=ids, features=features,
                           selected=np.sort(order))
    features, selected = state.stash["features"], state.stash["selected"]
    if new and getattr(state, "audit_log", None) is not None:
        # Only while messages are recorded (an audit): the owner notes its
        # secret order so the audit can *score* the deshuffle attack. It
        # never enters a message.
        state.audit_log.append((tuple(tree_key), order.copy(), ids.copy()))
    missing_bin = state.mapper.missing_bin
    # Candidates of the tree's columns in canonical order ("missing right"
    # ones first), then sent in the owner's secret order.
    column_of = np.full(state.bins.shape[1], -1, dtype=np.intp)
    column_of[features] = np.arange(features.size)
    f_all = column_of[state.cand_features[selected]]
    b_all = state.cand_bins[selected]
    right = ~state.cand_missing_left[selected]
    secret_order = np.searchsorted(selected, order)
    # output < 0: a multi-output tree, one message per ciphertext group.
    groups = range(len(state.encrypted)) if output < 0 else [output]
    layouts = np.asarray(state.layout)
    messages, shown = [], []
    revealed = np.zeros(len(node_rows), dtype=bool)
    nodes, sides = state.stash["revealed"], state.stash["sides"]
    for i, rows in enumerate(node_rows):
        rows = np.arange(state.bins.shape[0]) if rows is None else rows
        positions = state.position[rows]
        keep = positions >= 0  # rows without gradients were not sampled
        if nodes.problem(rows[keep]) is not None:
            continue
        mask = None
        if sides is not None:
            # Which candidates' sums may follow (min_passive_side); none, or
            # too many sets to weigh: the node is withheld as a whole.
            mask = sides.walk(state.bins, rows[keep], state.cand_features[selected],
                              b_all, ~right, missing_bin)
            if mask is None or not mask.any():
                continue
            sides.add(rows[keep], mask)
            shown.append(mask[secret_order])
        nodes.add(rows[keep])
        revealed[i] = True
        bins = state.bins[rows[keep]][:, features]
        plan = None
        per_group = []
        for group in groups:
            encrypted = state.encrypted[group]
            if isinstance(encrypted, PlaintextArray):
                candidates = _dense_candidates(encrypted[positions[keep]], bins,
                                               f_all, b_all, right, missing_bin)
            else:
                # Sparse-aware: each feature's fullest bin is derived from
                # the node total (see NodeBins).
                plan = plan or NodeBins(bins, missing_bin + 1)
                key = encrypted.public_key
                hist = plan.histogram(encrypted.ciphertexts[positions[keep]],
                                      key.ciphertext_modulus, n_jobs)
                candidates = candidate_sums(hist, f_all, b_all, ~right, missing_bin,
                                            key)
            layout = layouts[group] if layouts.ndim == 2 else layouts
            sent = secret_order if mask is None else secret_order[mask[secret_order]]
            per_group.append(pack_candidates(candidates[sent], layout, n_jobs))
        messages.append(per_group if output < 0 else per_group[0])
    return ((ids if new else None), revealed,
            (shown if sides is not None else None), messages)


class NodeBins:
    """The passive party's plan for one node: which (row, feature) pairs to sum.

    Built once per node from the party's plaintext bins and shared by every
    ciphertext array summed over the node (one per output group of a
    multi-output tree).

    Parameters
    ----------
    bins : ndarray of shape (n_rows, n_features)
        Bin indices of the node's gradient rows (the tree's columns).
    n_groups : int
        Bins per feature, the missing bin included (``missing_bin + 1``).
    """

    def __init__(self, bins, n_groups):
        n_rows, n_features = bins.shape
        self.n_rows, self.n_features, self.n_groups = n_rows, n_features, n_groups
        bins = bins.astype(np.intp)
        counts = np.zeros((n_features, n_groups), dtype=np.intp)
        for f in range(n_features):
            counts[f] = np.bincount(bins[:, f], minlength=n_groups)
        # The derived bin of each feature: the one with the most rows.
        self.mode = counts.argmax(axis=1)
        counts[np.arange(n_features), self.mode] = 0
        self.summed = [np.flatnonzero(row).tolist() for row in counts]
        # Features constant in the node (frequent deep in a tree) need no
        # products at all: their one bin is the node total.
        self.varying = np.flatnonzero(counts.any(axis=1))
        # Group ids for the grouped products: the fullest bins are skipped
        # (-1), and column 0, every row in group 0, is the node total.
        self.ids = np.empty((n_rows, self.varying.size + 1), dtype=np.intp)
        self.ids[:, 0] = 0
        self.ids[:, 1:] = np.where(bins[:, self.varying] != self.mode[self.varying],
                                   bins[:, self.varying], -1)

    @property
    def n_products(self):
        """Ciphertext products this node costs (before the per-feature inverses)."""
        return sum(group.cost() for group in feature_groups(self.ids, self.n_groups))

    def histogram(self, ciphertexts, nsquare, n_jobs=None):
        """Raw encrypted histogram, a list of ``n_features`` lists of ``n_groups``.

        Parameters
        ----------
        ciphertexts : ndarray of object, shape (n_rows,)
            Raw ciphertexts of the node's gradient rows, in the order of
            ``bins``.
        nsquare : mpz
        n_jobs : int or None
        """
        if self.n_rows == 0:
            return [[_ONE] * self.n_groups for _ in range(self.n_features)]
        # Features sharing row products where that saves products (see
        # skfed.crypto._group_sum.feature_groups); the node total rides along.
        sums = raw_group_sum(ciphertexts, self.ids, self.n_groups, nsquare, n_jobs)
        total = sums[0, 0]
        hist = [[_ONE] * self.n_groups for _ in range(self.n_features)]
        for column, f in enumerate(self.varying.tolist(), start=1):
            hist[f] = sums[column].tolist()
        for f, row in enumerate(hist):
            rest = None
            for b in self.summed[f]:
                rest = row[b] if rest is None else rest * row[b] % nsquare
            row[self.mode[f]] = (total if rest is None else
                                 total * gmpy2.invert(rest, nsquare) % nsquare)
        return hist


def candidate_sums(hist, features, bins, missing_left, missing_bin, public_key):
    """Left sums of candidates from a raw histogram (see :func:`NodeBins.histogram`).

    Cumulative sums run once per feature and only up to the feature's last
    candidate bin; a "missing left" candidate adds the feature's missing bin
    to the cumulative sum (one product each).

    Parameters
    ----------
    hist : list of lists of mpz
    features, bins : ndarray of int
        Column (index into ``hist``) and bin ``v`` of each candidate
        ("bin <= v goes left").
    missing_left : ndarray of bool
    missing_bin : int
    public_key : PaillierPublicKey or OUPublicKey

    Returns
    -------
    EncryptedArray of shape (n_candidates,)
    """
    nsquare = public_key.ciphertext_modulus
    last = np.full(len(hist), -1, dtype=np.intp)
    np.maximum.at(last, features, bins)
    cumulative = {}
    for f in np.flatnonzero(last >= 0).tolist():
        acc, run = None, []
        for h in hist[f][:last[f] + 1]:
            acc = h if acc is None else (acc if h == 1 else acc * h % nsquare)
            run.append(acc)
        cumulative[f] = run
    out = object_array([
        cumulative[f][v] * hist[f][missing_bin] % nsquare if left
        else cumulative[f][v]
        for f, v, left in zip(features.tolist(), bins.tolist(), missing_left.tolist())
    ], (features.size,))
    return EncryptedArray(public_key, out, 0, is_integer=True)


def _dense_candidates(encrypted, bins, f_all, b_all, right, missing_bin):
    """Candidate left sums from a full histogram (plaintext mode), canonical order."""
    hist = histogram_sums(encrypted, bins, missing_bin + 1)
    # Cumulative sums over bins: left sums of every threshold.
    columns = [hist[:, 0]]
    for b in range(1, missing_bin):
        columns.append(columns[-1] + hist[:, b])
    cum = _stack(columns)
    candidates = cum[f_all[right], b_all[right]]
    if not right.all():
        f, v = f_all[~right], b_all[~right]
        with_missing = cum[f, v] + hist[f, np.full(f.size, missing_bin)]
        candidates = concatenate([candidates, with_missing])
    return candidates


def _stack(columns):
    """Stack per-bin arrays ``(n_features,)`` into ``(n_features, n_bins)``."""
    # A plaintext histogram keeps its (g, h[, count]) axis last.
    expanded = [c.reshape(c.shape[0], 1, *c.shape[1:])
                if isinstance(c, PlaintextArray)
                else c.reshape(c.shape[0], 1) for c in columns]
    return concatenate(expanded, axis=1)


def active_receive_candidates(state, party, ids, revealed, shown, messages,
                              node_ids):
    """Active party: decrypt a passive party's candidate sums, per revealed node.

    Candidates the party did not show (``min_passive_side``) get sums 0 and
    are marked in the node's ``shown`` (the active party scores them
    ``-inf``; see :func:`~._grower.find_splits`).
    """
    if ids is not None:
        state.tree.candidate_ids[party] = ids
    n_candidates = state.tree.candidate_ids[party].size
    node_ids = np.asarray(node_ids)[np.asarray(revealed, dtype=bool)]
    if node_ids.size != len(messages) or (
            shown is not None and len(shown) != len(messages)):
        raise ValueError(f"{party} sent sums for {len(messages)} node(s) and "
                         f"flagged {node_ids.size} as revealed.")
    for i, (node, message) in enumerate(zip(node_ids, messages)):
        mask = None
        if shown is not None:
            mask = np.asarray(shown[i], dtype=bool)
            if mask.shape != (n_candidates,):
                raise ValueError(f"{party} flagged {mask.size} candidate(s) of "
                                 f"a tree of {n_candidates}.")
        n_sent = n_candidates if mask is None else int(mask.sum())
        if not isinstance(message, list):
            sums = unpack_candidates(state.private_key, message, n_sent,
                                     state.layout, state.n_jobs)
        else:  # multi-output: one message per group of outputs
            parts = [unpack_candidates(state.private_key, part, n_sent,
                                       layout, state.n_jobs)
                     for part, layout in zip(message, state.group_layouts)]
            sums = tuple(np.column_stack([p[j].reshape(n_sent, -1)
                                          for p in parts]) for j in range(2))
            sums += parts[0][2:]  # the count slot rides with group 0
        if mask is not None:
            sums = tuple(_scatter(v, mask) for v in sums)
            state.tree.nodes[node].shown[party] = mask
        state.tree.nodes[node].candidates[party] = sums
    return None


def _scatter(values, mask):
    """``values`` of the shown candidates placed in a zero array of all."""
    out = np.zeros((mask.size,) + values.shape[1:], dtype=values.dtype)
    out[mask] = values
    return out


def own_candidate_sums(state, qg, qh, rows, with_counts):
    """Active party: its own candidate sums over ``rows`` (gradient rows only).

    Integer sums computed through float64 bincounts: every partial sum is an
    integer below 2**52, so they are exact (see :mod:`._packing`).

    Returns ``(G_left, H_left)`` or ``(G_left, H_left, count_left)``; with
    ``qg`` and ``qh`` of shape ``(n, K)`` (a multi-output tree), ``G_left``
    and ``H_left`` have shape ``(n_candidates, K)``.
    """
    if qg.ndim == 2:
        per_output = [own_candidate_sums(state, qg[:, k], qh[:, k], rows,
                                         with_counts and k == 0)
                      for k in range(qg.shape[1])]
        return (np.column_stack([s[0] for s in per_output]),
                np.column_stack([s[1] for s in per_output])) + per_output[0][2:]
    bins = state.bins[rows]
    n_groups = state.mapper.missing_bin + 1
    n_features = bins.shape[1]
    weights = [qg.astype(np.float64), qh.astype(np.float64)]
    if with_counts:
        weights.append(np.ones(qg.size))
    hists = [np.empty((n_features, n_groups)) for _ in weights]
    for f in range(n_features):
        for hist, w in zip(hists, weights):
            hist[f] = np.bincount(bins[:, f], weights=w, minlength=n_groups)
    out = []
    for hist in hists:
        cum = np.cumsum(hist[:, :-1], axis=1)
        left = cum[state.cand_features, state.cand_bins]
        left = left + np.where(state.cand_missing_left,
                               hist[state.cand_features, -1], 0.0)
        out.append(left.astype(np.int64))
    return tuple(out)
