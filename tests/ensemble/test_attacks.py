"""What an honest-but-curious party of SecureBoost can still infer: the attacks.

``deshuffle`` stays at chance on a clean fit and reads every candidate when
the candidate order comes from ``random_state`` (planted); ``leaf_purity``
(the paper's section 7) learns nothing from RL-SecureBoost's first tree
unless its leaves are sent (planted, a well-formed message only the attack
sees).

``subset_sum``: the active party knows each node's rows and its exact
fixed-point gradients, so the candidate sums of a small node are a
subset-sum problem whose answer is which rows lie left of a passive
threshold. With the paper's protocol (``min_passive_rows=0``) the attack
recovers such indicators and the contract's ``MinPassiveRows`` check flags
the fit (negative control); with the default the attack finds nothing to
search and the fit is clean.

``side_fixing``: inside a revealed node, a candidate whose left (or right)
side holds 1 to 3 rows is a small subset sum the active party solves, which
fixes the side of that threshold for every row of the node. With the node
rule alone (``min_passive_side=0``) most rows of a passive party have a side
fixed in every tree and the contract's replay of the side rule flags the
fit; with the default side bound the attack fixes at most 1% per tree and
the fit is clean.
"""

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, make_classification

from skfed.ensemble import SecureBoostClassifier
from skfed.ensemble import _grower, _histogram, _protocol
from skfed.ensemble._attacks import _SmallSides, invert_sums
from skfed.ensemble._histogram import RevealedNodes
from skfed.privacy import audit

X, Y = make_classification(240, 10, n_informative=5, random_state=0)
SMALL = dict(n_estimators=2, max_depth=3, key_size=512, random_state=0)


# -- deshuffle ----------------------------------------------------------------

def test_clean_fit_deshuffle_at_chance():
    report = audit(SecureBoostClassifier(**{**SMALL, "n_estimators": 3},
                                         partition=3), X, Y)
    rows = report.attacks[report.attacks.attack == "deshuffle"]
    assert len(rows) == 2
    assert np.all(np.abs(rows.value - rows.chance) <= 0.05)
    assert report.violations == []


def _seeded_tree_order(state, tree_key):
    """How skfed drew the candidate order before: from random_state."""
    new = state.stash.get("tree_key") != tree_key
    if new:
        rng = np.random.default_rng([state.seed, *tree_key])
        n = state.cand_features.size
        state.stash["tree_key"] = tree_key
        state.stash["order"] = rng.permutation(n)
        state.stash["ids"] = rng.choice(2**62, size=n, replace=False).astype(np.int64)
    return state.stash["order"], state.stash["ids"], new


def test_candidate_ids_from_random_state(monkeypatch):
    monkeypatch.setattr(_histogram, "_tree_order", _seeded_tree_order)
    report = audit(SecureBoostClassifier(**{**SMALL, "n_estimators": 3},
                                         partition=3), X, Y)
    rows = report.attacks[report.attacks.attack == "deshuffle"]
    assert len(rows) == 2
    assert np.all(rows.value >= 0.95) and np.all(rows.chance < 0.05)


# -- leaf purity (paper section 7) --------------------------------------------

RL = dict(n_estimators=2, max_depth=3, encryption=None, random_state=0,
          active_only_rounds=1)


def _first_tree(report):
    rows = report.attacks[report.attacks.attack == "leaf_purity"]
    return rows[rows.target.str.contains("tree 1")]


def test_rl_secureboost_first_tree_tells_passive_parties_nothing():
    first = _first_tree(audit(SecureBoostClassifier(**RL), X, Y))
    assert len(first) == 1
    assert first.value.iloc[0] == pytest.approx(first.chance.iloc[0])


def test_leaves_of_the_first_tree_sent_to_passive_parties(monkeypatch):
    # RL-SecureBoost's promise broken: after the first tree (grown on the
    # active party's columns only), the active party tells every passive
    # party the instance space of each leaf, in a well-formed message.
    original_finish = _grower.finish_tree
    original_grow = _protocol.grow_tree

    def finish_tree(state, *args):
        tree = state.tree
        state.stash["leaves"] = [node.rows.astype(np.int32)
                                 for i, node in enumerate(tree.nodes)
                                 if tree.tree.children_left[i] < 0]
        return original_finish(state, *args)

    def leaves_of(state):
        return state.stash["leaves"]

    def ignore(state, *args):
        return None

    def grow_tree(fed, active, passives, tree_key, output, *args):
        original_grow(fed, active, passives, tree_key, output, *args)
        if tree_key[0] == 0:
            leaves = fed[active].call(leaves_of, phase="tree").result()
            fed.gather([fed[p].call(ignore, tree_key, output, leaves,
                                    sender=active, phase="histogram/rows")
                        for p in passives])

    monkeypatch.setattr(_grower, "finish_tree", finish_tree)
    monkeypatch.setattr(_protocol, "grow_tree", grow_tree)
    report = audit(SecureBoostClassifier(**RL), X, Y)
    first = _first_tree(report)
    assert report.violations == []  # well-formed: only the attack sees it
    assert first.value.iloc[0] >= first.chance.iloc[0] + 0.2


# -- subset_sum and min_passive_rows ------------------------------------------

X_SUB, Y_SUB = make_classification(300, 10, n_informative=5, random_state=0)
DEEP = dict(n_estimators=3, max_depth=6, partition=3, encryption=None,
            random_state=0)


def _subset_sum_rows(report):
    rows = report.attacks[report.attacks.attack == "subset_sum"]
    assert len(rows) == 4  # two passive parties: mean over trees, worst tree
    return rows


# -- the search, by hand ------------------------------------------------------

def test_invert_sums_by_hand():
    g = np.array([5, 9, 17, 33, 9])
    h = np.array([1, 1, 1, 1, 1])
    # {0, 2} is the only subset with g-sum 22 and 2 rows.
    left, known, counts = invert_sums(g, h, [22], [2])
    assert known[0].all() and left[0].tolist() == [True, False, True, False, False]
    assert counts[0].tolist() == [2, 3]
    # Rows 1 and 4 are interchangeable: one of them is left, which one is not
    # fixed; the other three rows are (right).
    left, known, counts = invert_sums(g, h, [9], [1])
    assert known[0].tolist() == [True, False, True, True, False]
    assert not left[0][known[0]].any() and counts[0].tolist() == [0, 3]
    # Two different subsets with the same sums: nothing is fixed.
    left, known, counts = invert_sums([1, 2, 3], [1, 1, 2], [3], [2])
    assert not known.any() and counts.tolist() == [[0, 0]]


# -- the attack: negative control, then the default ---------------------------

def test_paper_protocol_leaks_threshold_indicators_and_fails_the_contract():
    report = audit(SecureBoostClassifier(min_passive_rows=0, **DEEP), X_SUB, Y_SUB)
    rows = _subset_sum_rows(report)
    assert rows.value.min() > 0.05                 # 15-24% of rows per tree
    assert (rows.value > 5 * rows.chance).all()
    assert rows.target.str.contains(r"\(\d+ sums inverted, 0 wrong\)").all()
    flagged = [v for v in report.violations if v.phase == "histogram/sums"]
    assert flagged and len(flagged) == len(report.violations)
    assert "candidate sums of a node of" in flagged[0].found
    assert ">= 64 gradient rows" in flagged[0].allowed


def test_default_keeps_the_attack_below_one_percent_and_passes_the_contract():
    report = audit(SecureBoostClassifier(**DEEP), X_SUB, Y_SUB)
    rows = _subset_sum_rows(report)
    assert (rows.value <= 0.01).all()
    assert report.violations == []
    # The passive parties still win splits in the large nodes.
    assert sum(len(r) for r in report.estimator._records[1:]) > 0


def test_withholding_small_nodes_alone_is_not_enough(monkeypatch):
    # Planted: passive parties check only the node's own row count. A parent
    # revealed, its small child withheld, then the large child's two children
    # asked for directly: parent - grandchildren = the small child's sums.
    # With 25 rows, above the attack's search (24), only such differences
    # can be searched. The node rule alone (the side bound withholds most of
    # such a node's candidates too).
    estimator = SecureBoostClassifier(min_passive_rows=25, min_passive_side=0,
                                      **DEEP)
    honest = audit(estimator, X_SUB, Y_SUB)
    assert (_subset_sum_rows(honest).value == 0).all()

    class SizeOnly(RevealedNodes):
        def problem(self, rows):
            if self.min_rows > 0 and len(rows) < self.min_rows:
                return "small"
            return None

    monkeypatch.setattr(_histogram, "RevealedNodes", SizeOnly)
    report = audit(estimator, X_SUB, Y_SUB)
    assert any("derivable by subtraction" in v.found for v in report.violations)
    assert _subset_sum_rows(report).value.max() > 0.01


@pytest.mark.parametrize("min_passive_rows", [0, 64])
def test_paillier_same_sums_same_result(min_passive_rows):
    small = dict(DEEP, n_estimators=2, max_depth=4, key_size=512)
    plain = audit(SecureBoostClassifier(min_passive_rows=min_passive_rows, **small),
                  X_SUB, Y_SUB, attacks=["subset_sum"])
    secure = audit(SecureBoostClassifier(min_passive_rows=min_passive_rows,
                                         **{**small, "encryption": "paillier"}),
                   X_SUB, Y_SUB, attacks=["subset_sum"])
    np.testing.assert_array_equal(plain.attacks.value, secure.attacks.value)
    assert len(plain.violations) == len(secure.violations)
    assert (plain.attacks.value.max() > 0.01) == (min_passive_rows == 0)


# -- side_fixing and min_passive_side -----------------------------------------
# Breast cancer, 300 rows (the configuration): default nodes of 85 to
# 225 rows, many of whose candidates have 1 to 3 rows on one side.

def _breast_cancer_300():
    X, y = load_breast_cancer(return_X_y=True)
    keep = np.sort(np.random.RandomState(0).choice(len(X), 300, replace=False))
    return X[keep], y[keep]


X_BC, Y_BC = _breast_cancer_300()
SIDES = dict(n_estimators=2, max_depth=3, encryption=None, random_state=0)


def _side_rows(report):
    rows = report.attacks[report.attacks.attack == "side_fixing"]
    assert list(rows.metric) == ["fraction_sides", "fraction_sides_worst_tree",
                                 "fraction_isolated"]
    return rows.set_index("metric")


def test_side_fixing_without_the_side_bound_fixes_most_rows():
    # The node rule alone (min_passive_side=0): the leak.
    report = audit(SecureBoostClassifier(min_passive_side=0, **SIDES), X_BC, Y_BC,
                   attacks=["side_fixing"])
    rows = _side_rows(report)
    # Tree 1 has two gradient values (one per class): nothing is unique in
    # it. Tree 2: 95% of the rows (the issue: 65% mean, 100% worst tree).
    assert rows.value["fraction_sides_worst_tree"] > 0.9
    assert rows.value["fraction_sides"] > 0.4
    assert rows.value["fraction_isolated"] > 0.005
    assert (rows.value > 10 * rows.chance).all()
    assert rows.target.iloc[:2].str.contains(r"\(\d+ sums inverted, 0 wrong\)").all()
    # The replay of the side rule flags it; the node rule alone does not.
    assert report.violations
    assert all("rows in a set the active party reaches" in v.found
               for v in report.violations)


def test_side_bound_keeps_side_fixing_below_one_percent():
    report = audit(SecureBoostClassifier(**SIDES), X_BC, Y_BC,
                   attacks=["side_fixing", "subset_sum"])
    rows = _side_rows(report)
    assert rows.value["fraction_sides_worst_tree"] <= 0.01
    assert report.violations == []
    # The passive party still wins splits.
    assert sum(len(r) for r in report.estimator._records[1:]) > 0


def test_small_sides_search_by_hand():
    # Rows 0..5; (g, h) of rows 1 and 4 equal (interchangeable).
    g = np.array([5, 9, 17, 33, 9, 70])
    h = np.array([1, 1, 1, 1, 1, 1])
    search = _SmallSides(g, h)
    found = search.find([5 + 17, 9, 5 + 33 + 70, 1000, 9 + 9 + 5],
                        [2, 1, 3, 1, 3])
    near, far = search.sides(found[0])
    assert near.tolist() == [True, False, True, False, False, False]
    assert far.tolist() == [False, True, False, True, True, True]
    near, far = search.sides(found[1])  # one of rows 1 and 4: which is not fixed
    assert not near.any() and far.tolist() == [True, False, True, True, False, True]
    assert search.sides(found[2])[0].tolist() == [True, False, False, True, False, True]
    assert found[3] is None
    assert search.sides(found[4])[0].tolist() == [True, True, False, False, True, False]
    # Rows {0, 1} and row {2} both sum to (3, 2): nothing is fixed.
    assert _SmallSides([1, 2, 3], [1, 1, 2]).find([3], [2]) == [None]
