"""Split finding (Algorithm 2): scoring on the active party, lookup on the owner.

The active party scores every candidate of every party with eq. 3 from the
left sums it decrypted (or computed, for its own columns) and the node's
totals; the right sums are ``total - left``. It tells the winning party only
the winning candidate's random id (the ids of all candidates with the best
gain, in the rare case of a tie; the owner takes the first in its own
order). The owner turns the id into
``(feature, threshold, missing side)``, stores it under a new record id in
its lookup table, and answers with the record id and the node's left rows
(:func:`passive_split`). The threshold and the feature never leave it.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
import scipy.sparse as sp

__all__ = ["split_gains", "apply_lookup", "passive_split", "record_split",
           "break_tie"]


def split_gains(g_left, h_left, g_total, h_total, reg_lambda, gamma, min_child_weight):
    """Eq. 3 of the paper for arrays of candidates (``-inf`` where invalid).

    ``min_child_weight`` bounds each child's hessian sum from below, and
    children must have a positive hessian sum (so both hold rows).
    """
    g_right = g_total - g_left
    h_right = h_total - h_left
    if np.ndim(g_left) == 2:
        # Multi-output tree: the gains of the K outputs add up (each output
        # term as eq. 3); hessian constraints apply to the summed hessians.
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = [np.where(h + reg_lambda > 0, g**2 / (h + reg_lambda), 0.0)
                     for g, h in ((g_left, h_left), (g_right, h_right),
                                  (g_total, h_total))]
        gain = 0.5 * (terms[0] + terms[1] - terms[2]).sum(axis=1) - gamma
        h_left, h_right = h_left.sum(axis=1), h_right.sum(axis=1)
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            gain = 0.5 * (g_left**2 / (h_left + reg_lambda)
                          + g_right**2 / (h_right + reg_lambda)
                          - g_total**2 / (h_total + reg_lambda)) - gamma
    valid = ((h_left >= min_child_weight) & (h_right >= min_child_weight)
             & (h_left > 0) & (h_right > 0) & np.isfinite(gain))
    return np.where(valid, gain, -np.inf)


def record_split(state, feature, bin_index, missing_left, rows):
    """Owner: store a split in its lookup table; return ``(record id, left rows)``.

    For a feature that had no missing value when binned, missing values at
    prediction time follow the child with more training rows (as sklearn's
    HistGradientBoosting does); the owner decides, nobody else learns it.
    """
    bins = state.bins[rows, feature]
    go_left = bins <= bin_index
    if missing_left:
        go_left |= bins == state.mapper.missing_bin
    if not state.mapper.has_missing_[feature]:
        missing_left = bool(2 * go_left.sum() > rows.size)
    threshold = state.mapper.threshold(feature, bin_index)
    state.records.append((int(feature), threshold, bool(missing_left)))
    return len(state.records) - 1, rows[go_left].astype(np.int32)


def passive_split(state, tree_key, candidate_ids, rows):
    """Passive party: the active party chose ``candidate_ids`` for a node.

    ``candidate_ids`` are the random ids of the candidates with the best
    gain (usually one). Of several, the owner chooses by its own candidate
    order (:func:`break_tie`), so that ties are broken the same way whatever
    the secret permutation of this tree.

    Returns
    -------
    record_id : int
    left_rows : ndarray of int
        The node's rows that go left (the paper's ``I_L``).

    ``rows`` is the node's instance space (None for every training row).
    """
    if state.stash.get("tree_key") != tuple(tree_key):
        raise ValueError("Split request for a tree this party did not build.")
    order, ids = state.stash["order"], state.stash["ids"]
    candidate_ids = np.atleast_1d(np.asarray(candidate_ids, dtype=np.int64))
    slots = np.flatnonzero(np.isin(ids, candidate_ids))
    if candidate_ids.size == 0 or slots.size != np.unique(candidate_ids).size:
        raise ValueError(f"Unknown split candidate id(s) {candidate_ids.tolist()}.")
    rows = np.arange(state.bins.shape[0]) if rows is None else rows
    return record_split(state, *break_tie(state, order[slots]), rows)


def break_tie(state, tied):
    """The owner's choice among tied candidates: ``(feature, bin, missing_left)``.

    Ties come from bins that are empty in the node: neighbouring thresholds
    of one feature then send the same rows left. The owner keeps the first
    feature (and missing side) of its own candidate order and, of that
    feature's tied thresholds, the middle one, which lies mid-gap between the
    node's values (what a uniformly random pick gives on average).
    """
    tied = np.sort(np.asarray(tied))
    first = tied[0]
    same = tied[(state.cand_features[tied] == state.cand_features[first])
                & (state.cand_missing_left[tied] == state.cand_missing_left[first])]
    c = same[(same.size - 1) // 2]
    return state.cand_features[c], state.cand_bins[c], state.cand_missing_left[c]


def apply_lookup(records, X, record_ids, rows):
    """Evaluate lookup-table records on raw values: True where the row goes left.

    Parameters
    ----------
    records : list of (feature, threshold, missing_left)
    X : ndarray
        The owner's own columns.
    record_ids, rows : ndarray of int
        One query per element.
    """
    record_ids = np.asarray(record_ids, dtype=np.intp)
    rows = np.asarray(rows, dtype=np.intp)
    if record_ids.size == 0:
        return np.zeros(0, dtype=bool)
    table = np.asarray([(f, t, m) for f, t, m in records], dtype=np.float64)
    table = table.reshape(-1, 3)
    features = table[record_ids, 0].astype(np.intp)
    values = X[rows, features]
    if sp.issparse(X):  # a sparse block: its zeros are values
        values = np.asarray(values.todense() if sp.issparse(values)
                            else values, dtype=np.float64).ravel()
    missing = np.isnan(values)
    with np.errstate(invalid="ignore"):
        go_left = values <= table[record_ids, 1]
    return np.where(missing, table[record_ids, 2].astype(bool), go_left)
