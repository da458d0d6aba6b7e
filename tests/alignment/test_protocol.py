"""The Diffie-Hellman PSI protocol: routes, correctness, messages, errors."""

import random
import threading
from functools import reduce

import gmpy2
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
import numpy as np
import pytest

import skfed
from skfed.alignment import DHGroup, private_set_intersection
from skfed.alignment._protocol import _routes, _schedule, run_psi
from skfed.federation import record_messages

from .conftest import TEST_PRIME_512


@pytest.mark.parametrize("n_parties", [2, 3, 4])
def test_intersection_matches_sets_for_every_hub(small_group, n_parties):
    rng = random.Random(n_parties)
    sets = [rng.sample(range(100), 60) for _ in range(n_parties)]
    truth = sorted(set.intersection(*map(set, sets)))
    assert truth  # the test would be weak on an empty intersection
    for hub in range(n_parties):
        assert private_set_intersection(sets, hub=hub, group=small_group) == truth


def test_full_length_keys_string_ids_and_empty_intersection(small_group):
    a, b = ["x", "y", "z"], ["z", "y", "w"]
    assert private_set_intersection([a, b], group=small_group,
                                    exponent_bits=None) == ["y", "z"]
    assert private_set_intersection([["x"], ["w"], ["x", "w"]],
                                    group=small_group) == []


def test_default_group_is_curve25519_and_3072_bits_stays_available():
    with skfed.config_context(allow_insecure_keys=False):
        result, communication = private_set_intersection(
            [[1, 2, 3], [3, 2, 9]], return_communication=True)
        assert result == [2, 3]
        # Each blinded id is a 32-byte point; each party's set crosses once,
        # and the hub's comes back from the other party.
        blinded = communication.by_phase["exponentiate ids"]
        assert blinded["messages"] == 3 and blinded["scalars"] == 9
        assert blinded["bytes"] == 9 * 32
        # The same messages in the 3072-bit group: 384 bytes per element.
        result, communication = private_set_intersection(
            [[1, 2, 3], [3, 2, 9]], group="modp3072", return_communication=True)
        assert result == [2, 3]
        blinded3072 = communication.by_phase["exponentiate ids"]
        assert {k: blinded3072[k] for k in ("messages", "scalars")} == \
            {k: blinded[k] for k in ("messages", "scalars")}
        assert 9 * 376 < blinded3072["bytes"] <= 9 * 384
        assert communication.by_phase["reveal positions"]["messages"] == 3


def test_routes_visit_every_party_once_and_end_at_the_hub():
    for n in range(2, 6):
        for hub in range(n):
            routes = _routes(n, hub)
            for owner, route in routes.items():
                assert sorted(route + [owner]) == list(range(n))
                assert (route[-1] == hub) == (owner != hub)


class RecordingGroup(DHGroup):
    """The test group, remembering which party drew which secret key."""

    def __init__(self):
        super().__init__(TEST_PRIME_512, "test512")
        self.keys = {}

    def random_exponent(self, bits=256):
        key = super().random_exponent(bits)
        name = threading.current_thread().name.removeprefix("skfed-party-")
        self.keys[name] = key
        return key


def test_messages_carry_no_id_and_each_party_learns_exactly_the_intersection():
    group = RecordingGroup()
    rng = random.Random(0)
    universe = [f"customer-{i:04d}" for i in range(80)]
    sets = [rng.sample(universe, 50) for _ in range(3)]
    truth = set.intersection(*map(set, sets))
    names = ["bank", "insurer", "shop"]
    hub = 1
    with record_messages() as rec:
        rows, communication = run_psi(sets, hub=hub, group=group,
                                      party_names=names)

    # Each party's output: its own rows holding exactly the intersection.
    for k, r in enumerate(rows):
        assert {sets[k][i] for i in r} == truth
    assert communication.total_messages == len(rec.messages)

    p, q = group.p, group.q
    key = {k: group.keys[names[k]] for k in range(3)}
    hashed = {x: h for x, h in zip(universe, group.hash_ids(universe))}
    full = reduce(lambda a, b: a * b % q, key.values())
    finished = {gmpy2.powmod(h, full, p): x for x, h in hashed.items()}
    bare = set(hashed.values())

    ids_and_hashes = set(universe) | bare
    for m in rec.messages:
        for item in m.payload:
            assert isinstance(item, np.ndarray)
            values = item.tolist()
            # No plaintext id, no bare hash of an id, ever.
            assert not ids_and_hashes & set(values)
            if item.dtype == object:  # blinded ids: group elements
                assert all(gmpy2.powmod(v, q, p) == 1 for v in values)
            else:  # positions into the receiver's own list
                assert m.phase == "reveal positions" and len(values) == len(truth)

    # Who sees fully exponentiated ids: only the hub, only its own set, and
    # shuffled by L, so it cannot map them back to its ids.
    last = names[_routes(3, hub)[hub][-1]]
    for m in rec.messages:
        if m.payload[0].dtype != object:
            continue
        complete = [finished[v] for v in m.payload[0].tolist() if v in finished]
        if m.receiver != names[hub]:
            assert not complete, f"{m.receiver} received finished ids"
        elif complete:
            assert m.sender == last and set(complete) == set(sets[hub])
            hub_first = [m2 for m2 in rec.messages if m2.sender == names[hub]][0]
            sent = {gmpy2.powmod(hashed[x], key[hub], p): x for x in sets[hub]}
            sent_order = [sent[v] for v in hub_first.payload[0].tolist()]
            assert complete != sent_order  # shuffled by L (fails w.p. 1/50!)

    # Each party's first message is in a secret random order, not its table's.
    for k, name in enumerate(names):
        first = [m for m in rec.messages if m.sender == name][0]
        blind = {gmpy2.powmod(hashed[x], key[k], p): x for x in sets[k]}
        assert len(first.payload[0]) == len(sets[k])
        assert [blind[v] for v in first.payload[0].tolist()] != sets[k]


def test_n_jobs_gives_the_same_answer(small_group):
    sets = [list(range(0, 300, 2)), list(range(0, 300, 3))]
    assert private_set_intersection(sets, group=small_group, n_jobs=2) == \
        list(range(0, 300, 6))


@pytest.mark.parametrize("sets, error, match", [
    ([[1, 2]], ValueError, "at least two parties"),
    ([[1, 2], []], ValueError, "Ids of party 1 are empty"),
    ([[1, 2, 1], [1]], ValueError, "duplicate ids"),
    ([[1, 2], ["1", "2"]], TypeError, "different types"),
    ([[1, "2"], [1]], TypeError, "mixes id types"),
    ([[1.5, 2.0], [1]], TypeError, "integers or strings"),
    ([[1, None], [1]], TypeError, "missing ids"),
])
def test_bad_sets_get_clear_errors(sets, error, match):
    with pytest.raises(error, match=match):
        private_set_intersection(sets)


def test_bad_hub():
    with pytest.raises(ValueError, match="hub=2"):
        private_set_intersection([[1], [1]], hub=2)


@pytest.mark.parametrize("kwargs, match", [
    ({"exponent_bits": 64}, "too short"),
    ({"exponent_bits": 256.0}, "too short"),
    ({"n_jobs": 0}, "n_jobs == 0"),
    ({"party_names": ["a", "a"]}, "distinct names"),
    ({"party_names": ["a"]}, "distinct names"),
])
def test_bad_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        private_set_intersection([[1], [1]], **kwargs)


@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sets(st.integers(0, 30), min_size=1, max_size=12),
                min_size=2, max_size=4),
       st.integers(0, 3))
def test_intersection_property(small_group, sets, hub):
    sets = [sorted(s) for s in sets]
    hub = hub % len(sets)
    expected = sorted(set.intersection(*map(set, sets)))
    assert private_set_intersection(sets, hub=hub, group=small_group) == expected


@pytest.mark.parametrize("n_parties, hub", [(2, 1), (3, 0), (4, 2)])
def test_messages_follow_the_public_schedule(small_group, n_parties, hub):
    # The attacks place each message's set by this schedule: it must be the
    # order in which the driver really sends them.
    sets = [list(range(k, 40 + 7 * k)) for k in range(n_parties)]
    names = [f"p{k}" for k in range(n_parties)]
    with record_messages() as rec:
        run_psi(sets, hub=hub, group=small_group, party_names=names)
    sent = [(m.sender, m.receiver, len(m.payload[0])) for m in rec.messages
            if m.phase == "exponentiate ids"]
    expected = [(names[s], names[r], len(sets[owner]))
                for owner, s, r in _schedule(n_parties, hub)]
    assert sent == expected
