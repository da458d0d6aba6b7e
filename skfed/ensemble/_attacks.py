"""What an honest-but-curious party of SecureBoost can learn.

Two attacks on a fitted :class:`~skfed.ensemble.SecureBoostClassifier` or
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
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import copy
from numbers import Integral

import numpy as np

from ..base import party_seeds
from .._privacy_core import attack_row

__all__ = ["deshuffle", "leaf_purity"]


def _names(estimator):
    names = estimator._privacy_party_names()
    active = names[estimator.partition_.active_parties[0]]
    return names, active, [p for p in names if p != active]


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
    from ._privacy import training_rows

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
