"""Gradient histograms: who computes what (Algorithm 1 of the paper).

- The *passive* party sums encrypted gradient pairs per feature and bin over
  a node's rows (sparse-aware: each feature's fullest bin is the node total
  minus the others, :mod:`._sparse_histogram`), turns them into cumulative
  "left of threshold" sums, one per split candidate, shuffles the candidates
  under random ids (a fresh permutation per tree), packs several per
  ciphertext and re-randomises them, once, just before they are sent
  (:func:`passive_histograms`). In plaintext mode the same sums are int64
  bincounts of every row.
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
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import secrets

import numpy as np

from ..crypto import PlaintextArray, concatenate
from ._binning import BinMapper
from ._packing import histogram_sums, pack_candidates, unpack_candidates
from ._sampling import tree_columns
from ._small_nodes import RevealedNodes
from ._sparse_histogram import NodeBins, candidate_sums

__all__ = [
    "setup_party",
    "passive_receive_gradients",
    "passive_histograms",
    "active_receive_candidates",
    "own_candidate_sums",
]


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
        ``min_passive_rows`` gradient rows (:mod:`._small_nodes`), which the
        party decides from row counts alone.
    messages : list of EncryptedArray
        Per revealed node, packed and re-randomised candidate sums.
    """
    order, ids, new = _tree_order(state, tree_key)
    if new:
        state.stash["revealed"] = RevealedNodes(state.min_passive_rows)
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
    messages = []
    revealed = np.zeros(len(node_rows), dtype=bool)
    for i, rows in enumerate(node_rows):
        rows = np.arange(state.bins.shape[0]) if rows is None else rows
        positions = state.position[rows]
        keep = positions >= 0  # rows without gradients were not sampled
        revealed[i] = state.stash["revealed"].reveal(rows[keep])
        if not revealed[i]:
            continue
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
                # the node total (see _sparse_histogram).
                plan = plan or NodeBins(bins, missing_bin + 1)
                key = encrypted.public_key
                hist = plan.histogram(encrypted.ciphertexts[positions[keep]],
                                      key.ciphertext_modulus, n_jobs)
                candidates = candidate_sums(hist, f_all, b_all, ~right, missing_bin,
                                            key)
            layout = layouts[group] if layouts.ndim == 2 else layouts
            per_group.append(pack_candidates(candidates[secret_order], layout,
                                             n_jobs))
        messages.append(per_group if output < 0 else per_group[0])
    return (ids if new else None), revealed, messages


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


def active_receive_candidates(state, party, ids, revealed, messages, node_ids):
    """Active party: decrypt a passive party's candidate sums, per revealed node."""
    if ids is not None:
        state.tree.candidate_ids[party] = ids
    n_candidates = state.tree.candidate_ids[party].size
    node_ids = np.asarray(node_ids)[np.asarray(revealed, dtype=bool)]
    if node_ids.size != len(messages):
        raise ValueError(f"{party} sent sums for {len(messages)} node(s) and "
                         f"flagged {node_ids.size} as revealed.")
    for node, message in zip(node_ids, messages):
        if not isinstance(message, list):
            sums = unpack_candidates(state.private_key, message, n_candidates,
                                     state.layout, state.n_jobs)
        else:  # multi-output: one message per group of outputs
            parts = [unpack_candidates(state.private_key, part, n_candidates,
                                       layout, state.n_jobs)
                     for part, layout in zip(message, state.group_layouts)]
            sums = tuple(np.column_stack([p[j].reshape(n_candidates, -1)
                                          for p in parts]) for j in range(2))
            sums += parts[0][2:]  # the count slot rides with group 0
        state.tree.nodes[node].candidates[party] = sums
    return None


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
