"""``subset_sum``: the active party inverts the candidate sums of small nodes.

Attacker: the active party; victim: each passive party. The active party
knows the gradient rows of every node and its own fixed-point gradients
``(qg_i, qh_i)`` (exact integers, about 40 bits of precision), and decrypts
every candidate's left sums ``(G, H) = sum over {i in node : x_f(i) <= t}``
of ``(qg_i, qh_i)``. For a node of ``n`` gradient rows this is a subset-sum
instance over ``2**n`` subsets whose sums are spread over about ``2**80``
values, so the subset with the received sums is unique (up to rows with
equal gradients, below), and it is the set of the node's rows on the left of the passive party's (anonymous)
threshold: an exact ``x_f(i) <= t`` indicator for each of those rows. The
attack searches it by meet-in-the-middle (the sums of every subset of each
half of the node's rows, matched through a linear 64-bit hash of the pair,
then checked exactly), for every row set of at most ``max_rows`` gradient
rows whose sums the active party holds or can subtract its way to (each
node with sums, decrypted or derived, and each node minus the largest such
nodes inside it), and every distinct candidate sum of that set. Rows with
equal ``(qg, qh)`` (rows that shared every leaf so far and their label:
all rows of a class in round 1 of a log-loss fit) are interchangeable, so
the search runs over how many rows of each such class go left; when one
count vector has the sums, the rows of classes taken whole or not at all
are fixed, the others not.

Metric ``fraction``: per tree, the share of the passive party's training
rows whose side of some passive threshold the attack fixed exactly, from a
unique solution that fixes rows on both sides of it (an empty or full left
set tells nothing the totals do not); one row for the mean over trees
(``fraction``), one for the worst tree (``fraction_worst_tree``). ``chance``: the same fraction for an attacker who
guesses, for every distinct candidate sum that splits a row set of ``n``
rows, one of the ``2**n - 2`` subsets that split it, uniformly:
``1 - prod (1 - 1 / (2**n - 2))`` over those candidates and the row's sets,
averaged over rows. Scoring needs the passive parties' bins and candidate
orders, kept aside only while messages are recorded (``_audit_log``), as
for ``deshuffle``; the attacker's own view (gradients, node rows and
decrypted sums) is logged by the active party in the same fits.

The defence is ``min_passive_rows`` (:class:`~._histogram.RevealedNodes`):
a passive party reveals no sums from which one over fewer gradient rows can
be formed, so with the default no node is small enough for this search.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np

from .._privacy_core import attack_row
from ._attacks import _audit_log, _names
from ._binning import BinMapper
from ._privacy import training_rows

__all__ = ["subset_sum", "invert_sums", "node_results", "MAX_ROWS"]

#: Largest node (gradient rows) the shipped search tries: two halves of
#: 2**12 subsets. A patient attacker goes further (2**20 per half is a
#: laptop's work), which the default ``min_passive_rows`` allows for.
MAX_ROWS = 24
_HASH = np.uint64(0x9E3779B97F4A7C15)  # odd: (g, h) -> g * K + h mod 2**64
_CHUNK = 1 << 22                       # candidate x half-subset pairs per block


def _count_sums(g, h, m):
    """Sums of every choice of ``k_j <= m_j`` rows of each class ``j``.

    Index ``i`` encodes the counts in mixed radix (class 0 fastest).
    """
    sg, sh = np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64)
    for a, b, count in zip(g, h, m):
        k = np.arange(count + 1, dtype=np.int64)[:, None]
        sg = (sg[None, :] + k * a).ravel()
        sh = (sh[None, :] + k * b).ravel()
    return sg, sh


def _counts(index, m):
    """Decode a mixed-radix index of :func:`_count_sums` into class counts."""
    out = np.empty(len(m), dtype=np.int64)
    for j, count in enumerate(m):
        index, out[j] = divmod(int(index), int(count) + 1)
    return out


def _key(g, h):
    with np.errstate(over="ignore"):
        return g.astype(np.uint64) * _HASH + h.astype(np.uint64)


def invert_sums(g, h, targets_g, targets_h):
    """Which rows the sums pin down, by meet-in-the-middle.

    Rows with equal ``(g, h)`` are interchangeable (rows that shared every
    leaf so far and a label have equal gradients), so the search runs over
    how many rows of each such class go left. When exactly one count vector
    has the target sums, the rows of a class taken whole or not at all are
    known; the others (some but not all of a class) are not.

    Parameters
    ----------
    g, h : ndarray of int64 of shape (n,)
        The rows' fixed-point gradients and hessians.
    targets_g, targets_h : ndarray of int64 of shape (m,)
        Candidate left sums.

    Returns
    -------
    left : ndarray of bool of shape (m, n)
        The solution's rows on the left (meaningful where ``known``).
    known : ndarray of bool of shape (m, n)
        Rows whose side the solution fixes (all False unless unique).
    counts : ndarray of int of shape (m, 2)
        Rows known left and known right per target (0, 0 unless unique).
    """
    g, h = np.asarray(g, dtype=np.int64), np.asarray(h, dtype=np.int64)
    targets_g = np.asarray(targets_g, dtype=np.int64)
    targets_h = np.asarray(targets_h, dtype=np.int64)
    pairs, members, sizes = np.unique(np.column_stack([g, h]), axis=0,
                                      return_inverse=True, return_counts=True)
    members = members.ravel()
    # Halves of about equal search space (product of (size + 1)).
    weight = np.cumsum(np.log2(sizes + 1.0))
    half = int(np.searchsorted(weight, weight[-1] / 2)) + 1 if sizes.size else 0
    half = min(half, sizes.size - 1) if sizes.size > 1 else sizes.size
    lg, lh = _count_sums(pairs[:half, 0], pairs[:half, 1], sizes[:half])
    rg, rh = _count_sums(pairs[half:, 0], pairs[half:, 1], sizes[half:])
    right_keys = _key(rg, rh)
    order = np.argsort(right_keys, kind="stable")
    right_sorted = right_keys[order]
    left_keys = _key(lg, lh)
    target_keys = _key(targets_g, targets_h)
    m, n = targets_g.size, g.size
    left = np.zeros((m, n), dtype=bool)
    known = np.zeros((m, n), dtype=bool)
    per_block = max(1, _CHUNK // left_keys.size)
    for start in range(0, m, per_block):
        stop = min(m, start + per_block)
        with np.errstate(over="ignore"):
            need = target_keys[start:stop, None] - left_keys[None, :]
        lo = np.searchsorted(right_sorted, need, side="left")
        hi = np.searchsorted(right_sorted, need, side="right")
        for row, c in enumerate(range(start, stop)):
            found = []
            for li in np.flatnonzero(hi[row] > lo[row]):
                for slot in range(lo[row, li], hi[row, li]):
                    ri = order[slot]
                    # The hash is linear, not injective: check exactly.
                    if (lg[li] + rg[ri] == targets_g[c]
                            and lh[li] + rh[ri] == targets_h[c]):
                        found.append((li, ri))
                if len(found) > 1:
                    break
            if len(found) != 1:
                continue
            li, ri = found[0]
            taken = np.concatenate([_counts(li, sizes[:half]),
                                    _counts(ri, sizes[half:])])
            whole = taken[members] == sizes[members]
            left[c] = whole
            known[c] = whole | (taken[members] == 0)
    counts = np.column_stack([(left & known).sum(axis=1),
                              (~left & known).sum(axis=1)])
    return left, known, counts


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


def _targets(nodes, passive):
    """Every row set whose candidate sums the active party can compute.

    The nodes it holds sums for (received or derived), and each one's *atom*:
    the node minus the largest held nodes inside it, whose sums it obtains
    by subtraction. Yields ``(rows, positions, G, H)``.
    """
    held = [(rows, positions, *(_first_output(v) for v in sums[passive]))
            for rows, positions, sums in nodes if passive in sums]
    sets = [set(rows.tolist()) for rows, *_ in held]
    for i, (rows, positions, G, H) in enumerate(held):
        yield rows, positions, G, H
        inside = [j for j in range(len(held))
                  if j != i and sets[j] < sets[i]]
        largest = [j for j in inside
                   if not any(sets[j] < sets[k] for k in inside if k != j)]
        if not largest:
            continue
        keep = ~np.isin(rows, np.concatenate([held[j][0] for j in largest]))
        if keep.any():
            yield (rows[keep], positions[keep],
                   G - sum(held[j][2] for j in largest),
                   H - sum(held[j][3] for j in largest))


def node_results(estimator, X, y, passive, max_rows=MAX_ROWS):
    """Play the attack on every tree; yield one record per attacked node.

    Yields ``(tree key, rows, recovered, splitting, solved, wrong)``: the
    node's gradient rows (training row ids), those whose side of some
    threshold the attack fixed exactly, and how many distinct candidate
    sums split the node (truth), were inverted uniquely to rows on both
    sides, and were inverted wrongly. A tree starts with a record whose
    ``rows`` is None. Used by :func:`subset_sum` and by the benchmark.
    """
    names, active, _ = _names(estimator)
    log = _audit_log(estimator, "subset_sum")
    view, truth = log.get(active), log.get(passive)
    if view is None or truth is None:
        return
    bins, missing_bin = _passive_bins(estimator, X, y, names.index(passive))
    orders = {tuple(key): order for key, order, _ in truth["trees"]}
    for tree in view["trees"]:
        if tree["key"] not in orders:
            continue  # grown without the passive parties
        qg, qh = _first_output(tree["qg"]), _first_output(tree["qh"])
        passive_log = dict(truth, order=orders[tree["key"]])
        yield tree["key"], None, None, 0, 0, 0  # marks a tree
        for rows, positions, G, H in _targets(tree["nodes"], passive):
            if not 0 < rows.size <= max_rows:
                continue
            pairs, slots = np.unique(np.column_stack([G, H]), axis=0,
                                     return_index=True)
            left, known, counts = invert_sums(qg[positions], qh[positions],
                                              pairs[:, 0], pairs[:, 1])
            # Useful: the sums fix rows on both sides (they split the node).
            useful = (counts[:, 0] > 0) & (counts[:, 1] > 0)
            true_left = _true_left(passive_log, bins, missing_bin, slots, rows)
            exact = np.all((left == true_left) | ~known, axis=1)
            true_sizes = true_left.sum(axis=1)
            splitting = int(np.sum((true_sizes > 0) & (true_sizes < rows.size)))
            hit = np.zeros(rows.size, dtype=bool)
            for c in np.flatnonzero(useful & exact):
                hit |= known[c]
            yield (tree["key"], rows, rows[hit], splitting,
                   int(useful.sum()), int((useful & ~exact).sum()))


def subset_sum(estimator, messages, X, y=None, *, max_rows=MAX_ROWS, **fit_params):
    """The active party recovers threshold indicators of small nodes' rows.

    See the module docstring for the attack, the metric and ``chance``.
    ``max_rows`` is the largest node searched (``2 * 2**(max_rows / 2)``
    subset sums per node).

    Returns
    -------
    list of dict
        Two :func:`~skfed.privacy.attack_row` per passive party (mean over
        trees, worst tree).
    """
    names, active, passives = _names(estimator)
    n_rows = training_rows(estimator, np.asarray(X).shape[0],
                           None if y is None else estimator._encoded_target(y)).size
    rows_out = []
    for passive in passives:
        fractions, chances, solved, wrong = [], [], 0, 0
        for _, rows, hit, splitting, n_solved, n_wrong in node_results(
                estimator, X, y, passive, max_rows):
            if rows is None:  # a new tree
                recovered = np.zeros(n_rows, dtype=bool)
                log_miss = np.zeros(n_rows)  # log P(a guesser never hits)
                fractions.append(0.0)
                chances.append(0.0)
                continue
            solved, wrong = solved + n_solved, wrong + n_wrong
            recovered[hit] = True
            if splitting:
                log_miss[rows] += splitting * np.log1p(-1.0 / (2.0**rows.size - 2))
            fractions[-1] = float(recovered.mean())
            chances[-1] = float(np.mean(-np.expm1(log_miss)))
        if not fractions:
            continue
        what = (f"x_f(i) <= t of its rows, row sets of <= {max_rows} rows "
                f"({solved} sums inverted, {wrong} wrong)")
        rows_out.append(attack_row(
            "subset_sum", active, passive,
            f"{what}, mean of {len(fractions)} trees", "fraction",
            float(np.mean(fractions)), float(np.mean(chances))))
        worst = int(np.argmax(fractions))
        rows_out.append(attack_row(
            "subset_sum", active, passive, f"{what}, worst tree", "fraction_worst_tree",
            fractions[worst], chances[worst]))
    return rows_out


subset_sum.attack_name = "subset_sum"
