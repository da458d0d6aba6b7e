import numpy as np
import pytest

from skfed.federation import (
    AngleEncoder,
    Federation,
    are_totally_different,
    balanced_tree,
    child_sets,
    choose_excluded,
    masked_tree_sum,
    record_messages,
    subtree_leaf_sets,
    totally_different_trees,
    tree_broadcast,
    tree_leader,
    tree_leaves,
    tree_sum,
    unmaskable,
)


def _names(q):
    return [f"p{i}" for i in range(q)]


def test_balanced_tree_has_log_depth_and_all_leaves():
    for q in range(1, 17):
        tree = balanced_tree(_names(q))
        assert tree_leaves(tree) == _names(q)
        assert tree_leader(tree) == "p0"

        def depth(t):
            return 1 + max(map(depth, t)) if isinstance(t, tuple) else 0
        assert depth(tree) == int(np.ceil(np.log2(q))) if q > 1 else depth(tree) == 0


@pytest.mark.parametrize("q", [1, 2, 3, 5, 8])
def test_tree_sum_is_exact_and_takes_q_minus_1_messages(q):
    rng = np.random.RandomState(q)
    values = {p: rng.normal(size=4) for p in _names(q)}
    with Federation({p: {"v": v} for p, v in values.items()}) as fed:
        local = {p: fed[p].call(lambda s: s.v) for p in _names(q)}
        total = tree_sum(fed, balanced_tree(_names(q)), local, phase="sum")
        total = total.result() if hasattr(total, "result") else total
        summary = fed.summary()
    np.testing.assert_allclose(total, sum(values.values()))
    assert summary.total_messages == q - 1


def test_tree_broadcast_reaches_every_party_once():
    names = _names(6)
    with record_messages() as rec:
        with Federation({p: {} for p in names}) as fed:
            def store(state, value):
                state.seed = value
                return value
            out = tree_broadcast(fed, balanced_tree(names), 1234, store,
                                 phase="seed")
            assert fed.gather(out[p] for p in names) == [1234] * 6
            assert fed.gather(fed[p].call(lambda s: s.seed) for p in names) == \
                [1234] * 6
    received = sorted(m.receiver for m in rec.messages)
    assert received == names[1:]


@pytest.mark.parametrize("q", [2, 3, 4, 5, 6, 7, 9])
def test_totally_different_trees(q):
    names = _names(q)
    for excluded in names[1:]:
        t1, t2 = totally_different_trees(names, "p0", excluded, random_state=0)
        assert sorted(tree_leaves(t1)) == sorted(names)
        assert sorted(tree_leaves(t2)) == sorted(set(names) - {excluded})
        assert tree_leader(t1) == tree_leader(t2) == "p0"
        assert are_totally_different(t1, t2)
        # l' sends no mask: it leads the receiver's only T1 child
        assert t1[0] == "p0" and tree_leader(t1[1]) == excluded


def test_totally_different_definition():
    assert not are_totally_different((("a", "b"), "c"), ("a", "b"))
    assert are_totally_different((("a", "c"), "b"), ("a", "b"))
    assert subtree_leaf_sets((("a", "b"), "c")) == {
        frozenset("ab"), frozenset("abc")}


@pytest.mark.parametrize("q", [2, 3, 4, 6])
def test_masked_sum_is_exact_and_leaks_no_partial_sum(q):
    names = _names(q)
    rng = np.random.RandomState(q)
    values = {p: rng.normal(size=3) for p in names}
    offsets = {p: rng.uniform(0, 2 * np.pi, size=3) for p in names}
    excluded = choose_excluded(names, "p0", 0)
    trees = totally_different_trees(names, "p0", excluded, random_state=0)
    states = {p: {"v": values[p], "b": offsets[p]} for p in names}
    with record_messages() as rec:
        with Federation(states) as fed:
            result = masked_tree_sum(fed, trees, lambda s: (s.v, s.b)).result()
    # exact: sum of values plus the excluded party's offset (FDSKL Lemma 1)
    np.testing.assert_allclose(result, sum(values.values()) + offsets[excluded])

    # No party's raw value ever crosses: every T1 message is a masked sum.
    t1_msgs = [m for m in rec.messages if m.phase.endswith("/T1")]
    t2_msgs = [m for m in rec.messages if m.phase.endswith("/T2")]
    assert len(t1_msgs) == q - 1 and len(t2_msgs) == max(q - 2, 0)
    for m in rec.messages:
        for p in names:
            assert not np.allclose(m.payload[0], values[p])
    # Whatever a receiver gets over T1 (a masked partial sum of some leaf set
    # S) can never be unmasked with what it gets over T2 (offset sums of
    # other leaf sets): no T2 message carries the offset sum of a T1 set.
    def leafsets_of(tree):
        return [s for s in subtree_leaf_sets(tree)] + [frozenset([x])
                                                      for x in tree_leaves(tree)]
    t1_sets = leafsets_of(trees[0])
    for m in t2_msgs:
        for s in t1_sets:
            if len(s) > 1:
                assert not np.allclose(m.payload[0], sum(offsets[p] for p in s))


def test_masked_sum_needs_receiver_led_trees():
    with Federation({"a": {}, "b": {}, "c": {}}) as fed:
        with pytest.raises(ValueError, match="led by the receiving party"):
            masked_tree_sum(fed, (("a", "b"), ("b", "c")), lambda s: (0, 0))


def test_totally_different_trees_bad_arguments():
    with pytest.raises(ValueError):
        totally_different_trees(["a", "b"], "a", "a")
    with pytest.raises(ValueError, match="at least two parties"):
        choose_excluded(["a"], "a", 0)


def test_all_small_orders_are_searched():
    # For q <= 7 every order of T1 is tried, so a pair always exists.
    for q in range(3, 7):
        names = _names(q)
        for excluded in names[1:]:
            t1, t2 = totally_different_trees(names, "p0", excluded, 1)
            assert are_totally_different(t1, t2)


@pytest.mark.parametrize("q", [2, 3, 4, 5, 6, 7, 9, 12])
def test_tree_pairs_let_no_party_unmask_a_partial_sum(q):
    names = _names(q)
    for receiver in (names[0], names[-1]):
        for excluded in names:
            if excluded == receiver:
                continue
            t1, t2 = totally_different_trees(names, receiver, excluded, 0)
            assert unmaskable(t1, t2) == []


def test_unmaskable_finds_the_single_leaf_flaw():
    # Both trees have "b" sending straight to "a": a gets v_b + b_b and b_b,
    # although the trees are totally different in the paper's sense.
    t1, t2 = (("a", "c"), "b"), ("a", "b")
    assert are_totally_different(t1, t2)
    assert ("a", frozenset("b")) in unmaskable(t1, t2)
    assert child_sets(t1) == {"a": [frozenset("b"), frozenset("c")], "b": [],
                              "c": []}


def _masked_run(q, values, offsets, excluded, encoder=None):
    names = _names(q)
    trees = totally_different_trees(names, "p0", excluded, random_state=0)
    states = {p: {"v": values[p], "b": offsets[p]} for p in names}
    with record_messages() as rec:
        with Federation(states) as fed:
            result = masked_tree_sum(fed, trees, lambda s: (s.v, s.b),
                                     encoder=encoder).result()
    return result, rec.messages, trees


@pytest.mark.parametrize("q", [3, 4, 5])
def test_masks_are_fresh_per_entry_and_per_run_and_cancel_exactly(q):
    names = _names(q)
    rng = np.random.RandomState(q)
    # Every row holds the same values: with one offset per column (the old
    # masks) the rows of every message would be equal too.
    values = {p: np.tile(rng.normal(size=(1, 4)), (50, 1)) for p in names}
    offsets = {p: rng.uniform(0, 2 * np.pi, size=4) for p in names}
    first, msgs1, (t1, t2) = _masked_run(q, values, offsets, names[-1])
    second, msgs2, _ = _masked_run(q, values, offsets, names[-1])
    np.testing.assert_array_equal(first, second)  # masks change nothing
    np.testing.assert_allclose(first, sum(values.values()) + offsets[names[-1]],
                               atol=1e-8)
    payloads = [m.payload[0] for m in msgs1 if m.phase.endswith(("/T1", "/T2"))]
    assert payloads and all(p.dtype == np.uint64 for p in payloads)
    for p in payloads:
        assert len(np.unique(p[:, 0])) == len(p)  # no two rows alike
    for a, b in zip(msgs1, msgs2):
        if a.phase.endswith(("/T1", "/T2")):
            assert not np.any(a.payload[0] == b.payload[0])
    # The excluded party sends only to the receiver, inside a sum of others.
    sent = {m.sender for m in msgs1 if m.phase.endswith("/T1")}
    assert all(m.receiver == "p0" for m in msgs1
               if m.sender == names[-1] and m.phase.endswith("/T1"))
    assert names[-1] in sent and len(tree_leaves(t1[1])) == q - 1


def test_masked_angles_wrap_and_use_the_encoders_ring():
    names = _names(3)
    values = {p: np.array([[1.0, 3.0]]) for p in names}
    offsets = {p: np.array([2.0, 6.0]) for p in names}
    for bits, dtype in ((32, np.uint32), (64, np.uint64)):
        result, msgs, _ = _masked_run(3, values, offsets, "p2",
                                      encoder=AngleEncoder(bits))
        np.testing.assert_allclose(result, np.mod([[5.0, 15.0]], 2 * np.pi),
                                   atol=1e-8)
        assert all(m.payload[0].dtype == dtype for m in msgs
                   if m.phase.endswith(("/T1", "/T2")))


def test_angle_encoder_round_trip_and_bad_input():
    theta = np.array([-7.0, 0.0, 1e-3, np.pi, 6.28318, 1e4])
    for bits, tol in ((32, 2e-9), (64, 1e-11)):
        enc = AngleEncoder(bits)
        back = enc.decode(enc.encode(theta))
        assert np.all((back >= 0) & (back < 2 * np.pi))
        np.testing.assert_allclose(np.cos(back), np.cos(theta), atol=tol)
        np.testing.assert_allclose(np.sin(back), np.sin(theta), atol=tol)
    with pytest.raises(ValueError, match="non-finite"):
        AngleEncoder().encode([np.nan])
    with pytest.raises(ValueError, match="bits"):
        AngleEncoder(16)


def test_masked_sum_refuses_a_t1_where_the_excluded_party_sends_alone():
    # T1 = (p0, (p1, p2)) with l' = p2: p2 would send its unmasked value
    # to p1 alone.
    with Federation({p: {} for p in _names(3)}) as fed:
        with pytest.raises(ValueError, match="led by the excluded party"):
            masked_tree_sum(fed, (("p0", ("p1", "p2")), ("p0", "p1")),
                            lambda s: (0.0, 0.0))
