"""What an honest-but-curious party of SecureBoost can learn.

Four attacks on a fitted :class:`~skfed.ensemble.SecureBoostClassifier` or
:class:`~skfed.ensemble.SecureBoostRegressor`, each played by one party with
what that party holds (its own columns, the labels if it is the active
party, the messages it received and sent) and public knowledge (the
partition, the hyperparameters including ``random_state``, and skfed's code);
the other parties' data only scores the attack.

``deshuffle`` (attacker: the active party; victim: each passive party)
    A passive party sends the sums of its split candidates in a secret order
    under random ids, so that the active party, which decrypts them, cannot
    tell which feature and threshold each one is. The attack tries to undo
    the order of every tree: it regenerates the permutation and ids the way
    skfed drew them before they came from the party's CSPRNG (``random_state``
    -> per-party seed -> ``default_rng([seed, round, output])``) and keeps the
    regenerated permutation if its ids equal the ones received; it reads ids
    that are positions (a permutation of ``0..n-1``) as positions; otherwise
    it guesses that the order was left as is. Metric ``fraction``: of every
    candidate of every tree, the share whose guessed candidate has the true
    (feature, bin). ``chance``: what a uniformly random order gets,
    ``sum_l n_l**2 / n**2`` per tree with ``n_l`` the candidates sharing
    (feature, bin) ``l`` (about ``1 / n``). A guessed position is enough: the
    root's left sums of a new tree are, up to a constant hessian in round 1,
    row counts that grow with the bin and fall back at each feature's first
    candidate, so they split the canonical order into features.

    Scoring needs the true orders, which never leave their owner: a fit made
    while messages are recorded (as :func:`~skfed.privacy.audit` does) keeps
    them aside for this purpose (``_audit_log``).

``leaf_purity`` (attacker: each passive party; victim: the active party)
    Section 7 of the paper: the instance spaces a passive party sees while
    helping to grow the first tree group rows that tend to share a label.
    The attacker forms the finest partition of the training rows it can
    from every row set it saw for that tree (the instance spaces of the nodes
    it built histograms for, of the splits it was asked for, and the left
    rows it answered): two rows are in one group when no set separates them.
    Metric ``mean_purity`` (classifier): the paper's weighted mean leaf
    purity of these groups, ``sum_j n_j / n * max_c theta_jc``, which is the
    accuracy of an attacker who also learns each group's majority label (a
    bank that knows a few customers' outcomes); ``chance`` is the majority
    class share (one group: nothing learnt). Regressor: metric ``r2`` of the
    group means of the target, chance 0. Reported for the first tree
    (``tree 1``) and, when it is a later one (``active_only_rounds``,
    RL-SecureBoost), for the first tree the attacker helped to grow. Small
    groups raise the purity by themselves: read it beside ``chance``.

``subset_sum`` (attacker: the active party; victim: each passive party)
    The active party knows the gradient rows of every node and its own
    fixed-point gradients ``(qg_i, qh_i)`` (exact integers, about 40 bits of
    precision), and decrypts every candidate's left sums ``(G, H) = sum over
    {i in node : x_f(i) <= t}`` of ``(qg_i, qh_i)``. For a node of ``n``
    gradient rows this is a subset-sum instance over ``2**n`` subsets whose
    sums are spread over about ``2**80`` values, so the subset with the
    received sums is unique (up to rows with equal gradients, below), and it
    is the set of the node's rows on the left of the passive party's
    (anonymous) threshold: an exact ``x_f(i) <= t`` indicator for each of
    those rows. The attack searches it by meet-in-the-middle (the sums of
    every subset of each half of the node's rows, matched through a linear
    64-bit hash of the pair, then checked exactly), for every row set of at
    most ``max_rows`` gradient rows whose sums the active party holds or can
    subtract its way to (each node with sums, decrypted or derived, and each
    node minus the largest such nodes inside it), and every distinct candidate
    sum of that set. Rows with equal ``(qg, qh)`` (rows that shared every leaf
    so far and their label: all rows of a class in round 1 of a log-loss fit)
    are interchangeable, so the search runs over how many rows of each such
    class go left; when one count vector has the sums, the rows of classes
    taken whole or not at all are fixed, the others not.

    Metric ``fraction``: per tree, the share of the passive party's training
    rows whose side of some passive threshold the attack fixed exactly, from a
    unique solution that fixes rows on both sides of it (an empty or full left
    set tells nothing the totals do not); one row for the mean over trees
    (``fraction``), one for the worst tree (``fraction_worst_tree``).
    ``chance``: the same fraction for an attacker who guesses, for every
    distinct candidate sum that splits a row set of ``n`` rows, one of the
    ``2**n - 2`` subsets that split it, uniformly:
    ``1 - prod (1 - 1 / (2**n - 2))`` over those candidates and the row's
    sets, averaged over rows.
    Scoring needs the passive parties' bins and candidate orders, kept aside
    only while messages are recorded (``_audit_log``), as for ``deshuffle``;
    the attacker's own view (gradients, node rows and decrypted sums) is
    logged by the active party in the same fits.

    The defence is ``min_passive_rows`` (:class:`~._histogram.RevealedNodes`):
    a passive party reveals no sums from which one over fewer gradient rows
    can be formed, so with the default no node is small enough for this
    search.

``side_fixing`` (attacker: the active party; victim: each passive party)
    ``subset_sum`` needs a small row set; a large one is as weak when one
    side of a threshold is small. For every row set whose sums the active
    party holds (as above: nodes, and nodes minus the largest held nodes
    inside them, same candidate = same threshold within a tree) and every
    distinct sum of a candidate it holds for every set used, the attack
    looks for the one multiset of at most :data:`SIDE_ROWS` (3) rows, by
    class of equal ``(qg, qh)``, whose sums are the left sum (a small left
    side) or the set's total minus it (a small right side): the sums of
    every single row and pair are tabled, a triple is a row plus a tabled
    pair. A unique match that leaves rows on both sides fixes the side of
    that threshold for every row of the set (classes taken whole or not at
    all), a candidate ``x_f(i) <= t`` for each; it is checked against the
    owner's bins, and a match the truth contradicts counts as wrong.

    Metrics, per tree, over the passive party's training rows:
    ``fraction_sides`` (mean over trees) and ``fraction_sides_worst_tree``:
    the share of rows with a side of some threshold fixed;
    ``fraction_isolated``: the share of rows found on a small side.
    ``chance``: a guesser who picks, for every distinct candidate sum of a
    set of ``n`` rows that has a side of 1 to 3 rows, one of the
    ``2 * sum_{j <= 3} C(n, j)`` small sides uniformly, combined over sums
    and sets as for ``subset_sum``. The shipped search covers one sum at a
    time; the difference of two candidate sums of one feature (the rows
    between two thresholds) is what ``min_passive_side``'s gap rule bounds,
    and differences across features are not searched.

    The defence is ``min_passive_side`` (:class:`~._histogram.SideLedger`):
    no revealed candidate has a side, or a gap to the previous revealed
    threshold, of 1 to ``min_passive_side - 1`` rows in any set the active
    party can reach.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import copy
from math import comb
from numbers import Integral

import numpy as np

from ..base import party_seeds
from .._privacy_core import attack_row
from ._binning import BinMapper
from ._sampling import training_rows

__all__ = ["deshuffle", "leaf_purity", "subset_sum", "invert_sums", "node_results",
           "MAX_ROWS", "side_fixing", "side_results", "SIDE_ROWS"]


def _names(estimator):
    names = estimator._privacy_party_names()
    active = names[estimator.partition_.active_parties[0]]
    return names, active, [p for p in names if p != active]


# -- deshuffle ---------------------------------------------------------------
def _candidate_ids_by_tree(messages, active, passive):
    """``{tree key: ids}`` the active party received from ``passive``.

    The ids come with the first ``histogram/sums`` of each tree; the tree is
    the one of the ``histogram/rows`` request the active party sent before
    (the passive party answers its requests in order).
    """
    keys = [tuple(int(v) for v in m.payload[0]) for m in messages
            if m.phase == "histogram/rows" and m.sender == active
            and m.receiver == passive]
    sums = [m.payload[0] for m in messages
            if m.phase == "histogram/sums" and m.sender == passive
            and m.receiver == active]
    out = {}
    for key, ids in zip(keys, sums):
        if ids is not None and key not in out:
            out[key] = np.asarray(ids)
    return out


def _seed_guesses(estimator):
    """The per-party seeds an attacker who knows ``random_state`` computes."""
    random_state = estimator.random_state
    if random_state is None:
        return []
    if not isinstance(random_state, Integral):
        random_state = copy.deepcopy(random_state)
    return party_seeds(random_state, estimator.partition_.n_parties + 1)


def _guess_order(ids, tree_key, seeds):
    """The attacker's guess of the canonical candidate in each message slot."""
    n = ids.size
    for seed in seeds:
        rng = np.random.default_rng([seed, *tree_key])
        order = rng.permutation(n)
        regenerated = rng.choice(2**62, size=n, replace=False).astype(np.int64)
        if np.array_equal(regenerated, ids):
            return order
    if np.array_equal(np.sort(ids), np.arange(n)):
        return ids.astype(np.intp)
    return np.arange(n)


def _audit_log(estimator, attack):
    log = getattr(estimator, "_audit_log", None)
    if log is None:
        raise ValueError(
            f"{attack} scores its guesses against the passive parties' secret "
            "candidate orders, which a fit keeps aside only while messages are "
            "recorded: run it through skfed.privacy.audit, or fit inside "
            "skfed.federation.record_messages().")
    return log


def deshuffle(estimator, messages, X, y=None, **fit_params):
    """The active party undoes the passive parties' candidate shuffles.

    See the module docstring for the attack, the metric and ``chance``.

    Returns
    -------
    list of dict
        One :func:`~skfed.privacy.attack_row` per passive party that sent
        candidates.
    """
    names, active, passives = _names(estimator)
    log = _audit_log(estimator, "deshuffle")
    seeds = _seed_guesses(estimator)
    rows = []
    for passive in passives:
        received = _candidate_ids_by_tree(messages, active, passive)
        truth = log.get(passive)
        if not received or truth is None:
            continue
        features, bins = truth["features"], truth["bins"]
        # Candidates sharing (feature, bin): the missing-left twin of a bin.
        label = features.astype(np.int64) * 1024 + bins.astype(np.int64)
        _, counts = np.unique(label, return_counts=True)
        chance_per_tree = float(np.sum(counts.astype(float) ** 2) / label.size)
        hits = expected = total = 0.0
        for tree_key, order, ids in truth["trees"]:
            got = received.get(tuple(tree_key))
            if got is None:
                continue
            # The true slot -> candidate map is the owner's; the ids the
            # active party received are the ones the owner drew.
            if not np.array_equal(got, ids):
                raise ValueError(f"candidate ids of {passive} for tree {tree_key} "
                                 "differ from the ones it drew")
            guess = _guess_order(got, tree_key, seeds)
            hits += float(np.sum(label[guess] == label[order]))
            expected += chance_per_tree
            total += order.size
        if total == 0:
            continue
        n_trees = len(received)
        rows.append(attack_row(
            "deshuffle", active, passive,
            f"(feature, bin) of {label.size} candidates x {n_trees} trees",
            "fraction", hits / total, expected / total))
    return rows


deshuffle.attack_name = "deshuffle"


# -- leaf_purity -------------------------------------------------------------
def _row_sets(messages, active, passive, tree_key):
    """Every set of training rows ``passive`` saw for one tree (row ids)."""
    sets = []
    choices = [m for m in messages if m.phase == "split/choice"
               and m.sender == active and m.receiver == passive]
    answers = [m for m in messages if m.phase == "split/answer"
               and m.sender == passive and m.receiver == active]
    for m in messages:
        if (m.phase == "histogram/rows" and m.receiver == passive
                and tuple(int(v) for v in m.payload[0]) == tree_key):
            sets.extend(r for r in m.payload[2] if r is not None)
    # The i-th answer is to the i-th choice: the owner answers in order.
    for choice, answer in zip(choices, answers):
        if tuple(int(v) for v in choice.payload[0]) == tree_key:
            if choice.payload[2] is not None:
                sets.append(choice.payload[2])
            sets.append(answer.payload[1])
    return sets


def _groups(n_rows, sets):
    """Group id of every row: rows no set separates share a group."""
    if not sets:
        return np.zeros(n_rows, dtype=np.intp)
    member = np.zeros((n_rows, len(sets)), dtype=bool)
    for j, rows in enumerate(sets):
        member[np.asarray(rows, dtype=np.intp), j] = True
    _, groups = np.unique(np.packbits(member, axis=1), axis=0, return_inverse=True)
    return groups.ravel()


def _score_groups(groups, target, classification):
    """``(value, chance)``: mean purity, or the r2 of the group means."""
    if classification:
        table = np.zeros((groups.max() + 1, int(target.max()) + 1))
        np.add.at(table, (groups, target), 1)
        return (float(table.max(axis=1).sum() / target.size),
                float(np.bincount(target).max() / target.size))
    total = float(np.sum((target - target.mean()) ** 2))
    sums = np.bincount(groups, weights=target)
    counts = np.bincount(groups)
    within = float(np.sum(target ** 2) - np.sum(sums ** 2 / np.maximum(counts, 1)))
    return (1.0 - within / total if total > 0 else 0.0), 0.0


def leaf_purity(estimator, messages, X, y=None, **fit_params):
    """Label purity of the row groups a passive party sees in the first tree.

    See the module docstring for the attack, the metric and ``chance``.

    Returns
    -------
    list of dict
        One :func:`~skfed.privacy.attack_row` per passive party (two when
        its first shared tree is not the first tree).
    """
    if y is None:
        return []
    names, active, passives = _names(estimator)
    classification = hasattr(estimator, "classes_")
    target = estimator._encoded_target(y)
    target = target[training_rows(estimator, np.asarray(X).shape[0], target)]
    n_rows = target.size
    first = (0, 0)
    rows = []
    for passive in passives:
        shared = sorted({tuple(int(v) for v in m.payload[0]) for m in messages
                         if m.phase == "histogram/rows" and m.receiver == passive})
        keys = [first] + ([shared[0]] if shared and shared[0] != first else [])
        for tree_key in keys:
            groups = _groups(n_rows, _row_sets(messages, active, passive, tree_key))
            value, chance = _score_groups(groups, target, classification)
            what = ("tree 1" if tree_key == first else
                    f"first shared tree (round {tree_key[0] + 1})")
            n_groups = int(groups.max()) + 1
            rows.append(attack_row(
                "leaf_purity", passive, active,
                f"{'labels' if classification else 'target'}, {what}: "
                f"{n_groups} row group{'s' if n_groups > 1 else ''}",
                "mean_purity" if classification else "r2", value, chance))
    return rows


leaf_purity.attack_name = "leaf_purity"


# -- subset_sum --------------------------------------------------------------
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
    by subtraction. Yields ``(rows, positions, G, H, shown)``: ``shown``
    marks the candidates whose sums it holds for every set used
    (``min_passive_side``).
    """
    held = [(rows, positions, *(_first_output(v) for v in sums[passive][:2]),
             np.asarray(sums[passive][2], dtype=bool))
            for rows, positions, sums in nodes if passive in sums]
    sets = [set(rows.tolist()) for rows, *_ in held]
    for i, (rows, positions, G, H, shown) in enumerate(held):
        yield rows, positions, G, H, shown
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
                   H - sum(held[j][3] for j in largest),
                   np.logical_and.reduce([shown] + [held[j][4] for j in largest]))


def _tree_views(estimator, X, y, passive, attack):
    """What :func:`subset_sum` and :func:`side_fixing` play each tree on.

    ``(bins, missing_bin, trees)``: the passive party's binned training
    columns (to score against) and, per tree it took part in, ``(tree, qg,
    qh, owner)``: the active party's record of the tree, its first output's
    gradient and hessian integers, and the passive party's log with that
    tree's secret candidate order. None when the audit log holds either
    party's side.
    """
    names, active, _ = _names(estimator)
    log = _audit_log(estimator, attack)
    view, truth = log.get(active), log.get(passive)
    if view is None or truth is None:
        return None
    bins, missing_bin = _passive_bins(estimator, X, y, names.index(passive))
    orders = {tuple(key): order for key, order, _ in truth["trees"]}
    trees = [(tree, _first_output(tree["qg"]), _first_output(tree["qh"]),
              dict(truth, order=orders[tree["key"]]))
             for tree in view["trees"]
             if tree["key"] in orders]  # others grew without the passive parties
    return bins, missing_bin, trees


def node_results(estimator, X, y, passive, max_rows=MAX_ROWS):
    """Play the attack on every tree; yield one record per attacked node.

    Yields ``(tree key, rows, recovered, splitting, solved, wrong)``: the
    node's gradient rows (training row ids), those whose side of some
    threshold the attack fixed exactly, and how many distinct candidate
    sums split the node (truth), were inverted uniquely to rows on both
    sides, and were inverted wrongly. A tree starts with a record whose
    ``rows`` is None. Used by :func:`subset_sum` and by the benchmark.
    """
    views = _tree_views(estimator, X, y, passive, "subset_sum")
    if views is None:
        return
    bins, missing_bin, trees = views
    for tree, qg, qh, passive_log in trees:
        yield tree["key"], None, None, 0, 0, 0  # marks a tree
        for rows, positions, G, H, shown in _targets(tree["nodes"], passive):
            if not 0 < rows.size <= max_rows or not shown.any():
                continue
            slots = np.flatnonzero(shown)
            pairs, first = np.unique(np.column_stack([G[slots], H[slots]]),
                                     axis=0, return_index=True)
            slots = slots[first]
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


# -- side_fixing -------------------------------------------------------------
#: Largest side (rows) :func:`side_fixing` looks for.
SIDE_ROWS = 3
#: Largest row set it searches: the pair table grows as the square of the
#: set's distinct gradients.
MAX_SIDE_SET = 2048


class _SmallSides:
    """Every multiset of 1 to 3 rows of a set, by class of equal ``(g, h)``.

    ``find`` returns, for each target sum, the class counts of the one
    multiset with that sum (None when there is none or several).
    """

    def __init__(self, g, h):
        pairs, members, sizes = np.unique(np.column_stack([g, h]), axis=0,
                                          return_inverse=True, return_counts=True)
        self.g, self.h = pairs[:, 0], pairs[:, 1]
        self.members, self.sizes = members.ravel(), sizes
        self.keys = _key(self.g, self.h)
        i, j = np.triu_indices(self.g.size)
        ok = (i != j) | (sizes[i] >= 2)
        self.pair_i, self.pair_j = i[ok], j[ok]
        pair_keys = self.keys[self.pair_i] + self.keys[self.pair_j]
        self.pair_order = np.argsort(pair_keys, kind="stable")
        self.pair_keys = pair_keys[self.pair_order]
        self.single_order = np.argsort(self.keys, kind="stable")
        self.single_keys = self.keys[self.single_order]

    def find(self, target_g, target_h):
        target_g = np.asarray(target_g, dtype=np.int64)
        target_h = np.asarray(target_h, dtype=np.int64)
        wanted = _key(target_g, target_h)
        found = [set() for _ in range(wanted.size)]
        # One row, two rows.
        for sorted_keys, order, combo in (
                (self.single_keys, self.single_order, lambda s: (s,)),
                (self.pair_keys, self.pair_order,
                 lambda s: (self.pair_i[s], self.pair_j[s]))):
            lo = np.searchsorted(sorted_keys, wanted, side="left")
            hi = np.searchsorted(sorted_keys, wanted, side="right")
            for t in np.flatnonzero(hi > lo).tolist():
                for slot in order[lo[t]:hi[t]].tolist():
                    found[t].add(tuple(sorted(int(c) for c in combo(slot))))
        # Three rows: one class plus a pair, looked up as target - class.
        with np.errstate(over="ignore"):
            rest = wanted[:, None] - self.keys[None, :]
        lo = np.searchsorted(self.pair_keys, rest, side="left")
        hi = np.searchsorted(self.pair_keys, rest, side="right")
        for t, c in zip(*np.nonzero(hi > lo)):
            for slot in self.pair_order[lo[t, c]:hi[t, c]].tolist():
                found[t].add(tuple(sorted(
                    (int(c), int(self.pair_i[slot]), int(self.pair_j[slot])))))
        out = []
        for t, combos in enumerate(found):
            exact = []
            for combo in combos:
                counts = np.bincount(combo, minlength=self.sizes.size)
                # The hash is linear, not injective: check exactly.
                if (np.all(counts <= self.sizes)
                        and int(counts @ self.g) == int(target_g[t])
                        and int(counts @ self.h) == int(target_h[t])):
                    exact.append(counts)
            out.append(exact[0] if len(exact) == 1 else None)
        return out

    def sides(self, counts):
        """Rows known on the small side, rows known on the other side."""
        taken = counts[self.members]
        return taken == self.sizes[self.members], taken == 0


def _guess_options(n, k=SIDE_ROWS):
    """How many small sides a guesser picks from in a set of ``n`` rows."""
    from_math = sum(comb(n, j) for j in range(1, min(k, n - 1) + 1))
    return 2.0 * max(from_math, 1)


def side_results(estimator, X, y, passive, max_rows=MAX_SIDE_SET):
    """Play :func:`side_fixing` on every tree; yield one record per tree.

    Yields ``(tree key, fixed, isolated, chance_fixed, chance_isolated, hits,
    wrong)`` over the training rows: rows whose side of some threshold the
    attack fixed, rows inside a small side it found, a guesser's chance of
    each per row, and how many sums were inverted right and wrong. Used by
    :func:`side_fixing` and by the benchmark.
    """
    views = _tree_views(estimator, X, y, passive, "side_fixing")
    if views is None:
        return
    bins, missing_bin, trees = views
    n_rows = bins.shape[0]
    for tree, qg, qh, owner in trees:
        fixed = np.zeros(n_rows, dtype=bool)
        isolated = np.zeros(n_rows, dtype=bool)
        miss_fixed, miss_isolated = np.zeros(n_rows), np.zeros(n_rows)
        hits = wrong = 0
        for rows, positions, G, H, shown in _targets(tree["nodes"], passive):
            if not 2 <= rows.size <= max_rows or not shown.any():
                continue
            g, h = qg[positions], qh[positions]
            slots = np.flatnonzero(shown)
            sums, first = np.unique(np.column_stack([G[slots], H[slots]]),
                                    axis=0, return_index=True)
            slots = slots[first]
            true_left = _true_left(owner, bins, missing_bin, slots, rows)
            # A guesser: one of the small sides, uniformly, per sum that has one.
            sizes = true_left.sum(axis=1)
            small = np.minimum(sizes, rows.size - sizes)
            p_miss = np.log1p(-1.0 / _guess_options(rows.size))
            has = (small >= 1) & (small <= SIDE_ROWS)
            miss_fixed[rows] += int(has.sum()) * p_miss
            for c in np.flatnonzero(has):
                side = true_left[c] if sizes[c] == small[c] else ~true_left[c]
                miss_isolated[rows[side]] += p_miss
            search = _SmallSides(g, h)
            total_g, total_h = int(g.sum()), int(h.sum())
            for is_left in (True, False):
                target_g = sums[:, 0] if is_left else total_g - sums[:, 0]
                target_h = sums[:, 1] if is_left else total_h - sums[:, 1]
                for c, counts in enumerate(search.find(target_g, target_h)):
                    if counts is None:
                        continue
                    near, far = search.sides(counts)
                    if not near.any() or not far.any():
                        continue
                    truth_side = true_left[c] if is_left else ~true_left[c]
                    if np.any(near & ~truth_side) or np.any(far & truth_side):
                        wrong += 1
                        continue
                    hits += 1
                    fixed[rows[near | far]] = True
                    isolated[rows[near]] = True
        yield (tree["key"], fixed, isolated, -np.expm1(miss_fixed),
               -np.expm1(miss_isolated), hits, wrong)


def side_fixing(estimator, messages, X, y=None, *, max_rows=MAX_SIDE_SET,
                **fit_params):
    """The active party fixes the sides of passive thresholds from small sides.

    See the module docstring for the attack, the metrics and ``chance``.

    Returns
    -------
    list of dict
        Three :func:`~skfed.privacy.attack_row` per passive party (rows with
        a side fixed: mean over trees and worst tree; rows isolated: mean).
    """
    _, active, passives = _names(estimator)
    out = []
    for passive in passives:
        fixed, isolated, chance_fixed, chance_isolated = [], [], [], []
        hits = wrong = 0
        for _, f, i, cf, ci, n_hits, n_wrong in side_results(
                estimator, X, y, passive, max_rows):
            fixed.append(f.mean())
            isolated.append(i.mean())
            chance_fixed.append(cf.mean())
            chance_isolated.append(ci.mean())
            hits, wrong = hits + n_hits, wrong + n_wrong
        if not fixed:
            continue
        what = (f"x_f(i) <= t of its rows, sides of <= {SIDE_ROWS} rows "
                f"({hits} sums inverted, {wrong} wrong)")
        worst = int(np.argmax(fixed))
        out += [
            attack_row("side_fixing", active, passive,
                       f"{what}, mean of {len(fixed)} trees", "fraction_sides",
                       float(np.mean(fixed)), float(np.mean(chance_fixed))),
            attack_row("side_fixing", active, passive, f"{what}, worst tree",
                       "fraction_sides_worst_tree", fixed[worst],
                       chance_fixed[worst]),
            attack_row("side_fixing", active, passive,
                       f"rows alone on a side of <= {SIDE_ROWS}, mean of "
                       f"{len(fixed)} trees", "fraction_isolated",
                       float(np.mean(isolated)), float(np.mean(chance_isolated))),
        ]
    return out


side_fixing.attack_name = "side_fixing"
