"""``subset_sum``: the active party inverts the candidate sums of small nodes.

Attacker: the active party; victim: each passive party. The active party
knows the gradient rows of every node and its own fixed-point gradients
``(qg_i, qh_i)`` (exact integers, about 40 bits of precision), and decrypts
every candidate's left sums ``(G, H) = sum over {i in node : x_f(i) <= t}``
of ``(qg_i, qh_i)``. For a node of ``n`` gradient rows this is a subset-sum
instance over ``2**n`` subsets whose sums are spread over about ``2**80``
values, so the subset with the received sums is almost always unique, and it
is the set of the node's rows on the left of the passive party's (anonymous)
threshold: an exact ``x_f(i) <= t`` indicator for each of those rows. The
attack searches it by meet-in-the-middle (the sums of every subset of each
half of the node's rows, matched through a linear 64-bit hash of the pair,
then checked exactly), for every node of at most ``max_rows`` gradient rows
and every distinct candidate sum the active party holds for it, decrypted
or derived by subtraction. Round 1 of a binary log-loss fit has only two
gradient values, so its sums have many solutions: only unique ones count.

Metric ``fraction``: per tree, the share of the passive party's training
rows for which some node holding the row has a candidate whose left set the
attack recovered exactly and which splits the node (neither empty nor every
row: those sums tell nothing the totals do not); one row for the mean over
trees, one for the worst tree. ``chance``: the same fraction for an attacker
who guesses, for every distinct candidate sum that splits a node of ``n``
rows, one of the ``2**n - 2`` subsets that split it, uniformly:
``1 - prod (1 - 1 / (2**n - 2))`` over those candidates and the row's
nodes, averaged over rows. Scoring needs the passive parties' bins and candidate orders, kept
aside only while messages are recorded (``_audit_log``), as for
``deshuffle``; the attacker's own view (gradients, node rows and decrypted
sums) is logged by the active party in the same fits.

The defence is ``min_passive_rows`` (:mod:`._small_nodes`): a passive party
reveals no sums from which one over fewer gradient rows can be formed, so
with the default no node is small enough for this search.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np

from .._privacy_core import attack_row
from ._attacks import _audit_log, _names
from ._binning import BinMapper
from ._privacy import training_rows

__all__ = ["subset_sum", "invert_sums", "MAX_ROWS"]

#: Largest node (gradient rows) the shipped search tries: two halves of
#: 2**12 subsets. A patient attacker goes further (2**20 per half is a
#: laptop's work), which the default ``min_passive_rows`` allows for.
MAX_ROWS = 24
_HASH = np.uint64(0x9E3779B97F4A7C15)  # odd: (g, h) -> g * K + h mod 2**64
_CHUNK = 1 << 22                       # candidate x half-subset pairs per block


def _subset_sums(g, h):
    """Sums of every subset of the rows (bit ``j`` of the index: row ``j``)."""
    sg, sh = np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64)
    for a, b in zip(g, h):
        sg, sh = np.concatenate([sg, sg + a]), np.concatenate([sh, sh + b])
    return sg, sh


def _key(g, h):
    with np.errstate(over="ignore"):
        return g.astype(np.uint64) * _HASH + h.astype(np.uint64)


def invert_sums(g, h, targets_g, targets_h):
    """The unique subset of rows with each target sum, by meet-in-the-middle.

    Parameters
    ----------
    g, h : ndarray of int64 of shape (n,)
        The rows' fixed-point gradients and hessians.
    targets_g, targets_h : ndarray of int64 of shape (m,)
        Candidate left sums.

    Returns
    -------
    subsets : ndarray of bool of shape (m, n)
        Row membership of the solution of each target.
    unique : ndarray of bool of shape (m,)
        Whether exactly one subset has the target sums.
    """
    g, h = np.asarray(g, dtype=np.int64), np.asarray(h, dtype=np.int64)
    n, m = g.size, len(targets_g)
    half = n // 2
    lg, lh = _subset_sums(g[:half], h[:half])
    rg, rh = _subset_sums(g[half:], h[half:])
    right_keys = _key(rg, rh)
    order = np.argsort(right_keys, kind="stable")
    right_sorted = right_keys[order]
    left_keys = _key(lg, lh)
    target_keys = _key(np.asarray(targets_g), np.asarray(targets_h))
    subsets = np.zeros((m, n), dtype=bool)
    unique = np.zeros(m, dtype=bool)
    per_block = max(1, _CHUNK // left_keys.size)
    bits = np.arange(n)
    for start in range(0, m, per_block):
        stop = min(m, start + per_block)
        with np.errstate(over="ignore"):
            need = target_keys[start:stop, None] - left_keys[None, :]
        lo = np.searchsorted(right_sorted, need, side="left")
        hi = np.searchsorted(right_sorted, need, side="right")
        for row, c in enumerate(range(start, stop)):
            hits = np.flatnonzero(hi[row] > lo[row])
            found = []
            for left in hits:
                for slot in range(lo[row, left], hi[row, left]):
                    right = order[slot]
                    # The hash is linear, not injective: check exactly.
                    if (lg[left] + rg[right] == targets_g[c]
                            and lh[left] + rh[right] == targets_h[c]):
                        found.append((left, right))
                if len(found) > 1:
                    break
            if len(found) == 1:
                left, right = found[0]
                subsets[c, :half] = (left >> bits[:half]) & 1
                subsets[c, half:] = (right >> bits[:n - half]) & 1
                unique[c] = True
    return subsets, unique


def _first_output(values):
    values = np.asarray(values)
    return values[:, 0] if values.ndim == 2 else values


def _true_left(passive_log, bins, missing_bin, slots, rows):
    """Owner's truth: which of ``rows`` go left of each candidate slot."""
    order = passive_log["order"]
    canonical = order[slots]
    f = passive_log["features"][canonical]
    b = passive_log["bins"][canonical]
    missing_left = passive_log["missing_left"][canonical]
    values = bins[rows][:, f]  # (n rows, n slots)
    left = values <= b[None, :]
    left |= (values == missing_bin) & missing_left[None, :]
    return left.T


def _passive_bins(estimator, X, y, party):
    """The passive party's bin indices of the training rows (for scoring)."""
    X = np.asarray(X, dtype=np.float64)
    codes = None if y is None else estimator._encoded_target(y)
    X_train = X[training_rows(estimator, X.shape[0], codes)]
    columns = X_train[:, estimator.partition_.columns(party)]
    seed = estimator._model_seeds[party]
    mapper = BinMapper(estimator.max_bins, seed).fit(columns)
    return mapper.transform(columns), mapper.missing_bin


def subset_sum(estimator, messages, X, y=None, **fit_params):
    """The active party recovers threshold indicators of small nodes' rows.

    See the module docstring for the attack, the metric and ``chance``.

    Returns
    -------
    list of dict
        Two :func:`~skfed.privacy.attack_row` per passive party (mean over
        trees, worst tree).
    """
    names, active, passives = _names(estimator)
    log = _audit_log(estimator, "subset_sum")
    view = log.get(active)
    if view is None:
        return []
    rows_out = []
    for passive in passives:
        truth = log.get(passive)
        if truth is None:
            continue
        bins, missing_bin = _passive_bins(estimator, X, y, names.index(passive))
        orders = {tuple(key): order for key, order, _ in truth["trees"]}
        n_rows = bins.shape[0]
        fractions, chances, solved, wrong = [], [], 0, 0
        for tree in view["trees"]:
            if tree["key"] not in orders:
                continue  # grown without the passive parties
            qg, qh = _first_output(tree["qg"]), _first_output(tree["qh"])
            passive_log = dict(truth, order=orders[tree["key"]])
            recovered = np.zeros(n_rows, dtype=bool)
            log_miss = np.zeros(n_rows)  # log P(a guesser never hits the row)
            for rows, positions, sums in tree["nodes"]:
                if passive not in sums or not 0 < rows.size <= MAX_ROWS:
                    continue
                G, H = (_first_output(v) for v in sums[passive])
                pairs, slots = np.unique(np.column_stack([G, H]), axis=0,
                                         return_index=True)
                subsets, unique = invert_sums(qg[positions], qh[positions],
                                              pairs[:, 0], pairs[:, 1])
                sizes = subsets.sum(axis=1)
                useful = unique & (sizes > 0) & (sizes < rows.size)
                true_left = _true_left(passive_log, bins, missing_bin, slots, rows)
                exact = np.all(subsets == true_left, axis=1)
                true_sizes = true_left.sum(axis=1)
                splitting = int(np.sum((true_sizes > 0) & (true_sizes < rows.size)))
                solved += int(useful.sum())
                wrong += int((useful & ~exact).sum())
                if np.any(useful & exact):
                    recovered[rows] = True
                if splitting:
                    log_miss[rows] += splitting * np.log1p(-1.0 / (2.0**rows.size - 2))
            fractions.append(recovered.mean())
            chances.append(float(np.mean(-np.expm1(log_miss))))
        if not fractions:
            continue
        what = (f"x_f(i) <= t of its rows, nodes of <= {MAX_ROWS} rows "
                f"({solved} sums inverted, {wrong} wrong)")
        rows_out.append(attack_row(
            "subset_sum", active, passive,
            f"{what}, mean of {len(fractions)} trees", "fraction",
            float(np.mean(fractions)), float(np.mean(chances))))
        worst = int(np.argmax(fractions))
        rows_out.append(attack_row(
            "subset_sum", active, passive, f"{what}, worst tree", "fraction",
            float(fractions[worst]), float(chances[worst])))
    return rows_out


subset_sum.attack_name = "subset_sum"
