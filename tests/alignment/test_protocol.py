"""The Diffie-Hellman PSI protocol: groups, hashing, correctness, privacy."""

import random
import threading
from functools import reduce

import gmpy2
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
import numpy as np
import pytest

import skfed
from skfed.alignment import GROUPS, DHGroup, private_set_intersection
from skfed.alignment._protocol import _routes, _schedule, run_psi
from skfed.crypto import InsecureKeyWarning
from skfed.federation import record_messages

from .conftest import TEST_PRIME_512


@pytest.mark.parametrize("name, bits", [("modp2048", 2048), ("modp3072", 3072)])
def test_named_groups_are_safe_primes_of_their_size(name, bits):
    group = GROUPS[name]
    assert group.bits == bits
    assert gmpy2.is_prime(group.p, 30) and gmpy2.is_prime(group.q, 30)
    # RFC 3526 primes start and end with 64 one bits.
    assert group.p >> (bits - 64) == 2**64 - 1 and group.p % 2**64 == 2**64 - 1


def test_dhgroup_rejects_numbers_that_are_not_safe_primes():
    with pytest.raises(ValueError, match="safe prime"):
        DHGroup(2**127 - 1)  # prime, but (p - 1) / 2 is not
    with pytest.raises(ValueError, match="safe prime"):
        DHGroup(TEST_PRIME_512 + 2)
    with pytest.raises(ValueError, match="not a known group"):
        private_set_intersection([[1], [1]], group="modp1024")


def test_hash_lands_in_the_prime_order_subgroup(small_group):
    ids = [0, 1, 2**80, "0", "1", "", "ünïcode", b"raw"]
    hashed = small_group.hash_ids(ids)
    p, q = small_group.p, small_group.q
    assert all(1 < h < p and gmpy2.powmod(h, q, p) == 1 for h in hashed)
    assert len(set(hashed)) == len(ids)  # 1 and "1" hash apart
    # Deterministic, and numpy integers hash like Python integers.
    assert small_group.hash_ids([np.int64(1), 1]) == [hashed[1], hashed[1]]
    # Another group name separates the hashes even for the same prime.
    other = DHGroup(TEST_PRIME_512, "other")
    assert other.hash_ids([1]) != small_group.hash_ids([1])


def test_hash_outputs_look_uniform_over_the_subgroup(small_group):
    # A squared uniform element is a quadratic residue; its top bits spread
    # evenly: the mean of h / p over many ids is close to 1/2.
    hashed = small_group.hash_ids(range(2000))
    ratios = np.array([float(h) / float(small_group.p) for h in hashed])
    assert abs(ratios.mean() - 0.5) < 0.03
    assert 0.15 < ratios.std() < 0.45


def test_random_exponent_lengths(small_group):
    keys = [small_group.random_exponent(128) for _ in range(50)]
    assert all(k.bit_length() == 128 for k in keys) and len(set(keys)) == 50
    full = [small_group.random_exponent(None) for _ in range(50)]
    assert all(1 <= k < small_group.q for k in full)
    assert max(k.bit_length() for k in full) > 500


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


@pytest.mark.parametrize("name, strength", [("modp2048", 112), ("modp3072", 128),
                                            ("curve25519", 128)])
def test_security_strength_of_the_named_groups(name, strength, small_group):
    assert GROUPS[name].security_bits == strength
    assert small_group.security_bits == 0  # below NIST's 1024-bit row


def test_groups_below_128_bit_security_are_refused():
    with skfed.config_context(allow_insecure_keys=False):
        with pytest.raises(ValueError, match=r"'modp2048' gives about 112-bit "
                           r"security.*Use group='curve25519'.*'modp3072'"):
            private_set_intersection([[1, 2], [2, 3]], group="modp2048")
        with pytest.raises(ValueError, match=r"'test512' gives less than "
                           r"80-bit security.*allow_insecure_keys=True"):
            private_set_intersection([[1, 2], [2, 3]],
                                     group=DHGroup(TEST_PRIME_512, "test512"))
        with pytest.raises(ValueError, match=r"exponent_bits=224 gives about "
                           r"112-bit security.*exponent_bits=256"):
            private_set_intersection([[1, 2], [2, 3]], exponent_bits=224,
                                     group="modp3072")


def test_opting_in_allows_the_2048_bit_group_but_never_tiny_exponents():
    with skfed.config_context(allow_insecure_keys=True):
        with pytest.warns(InsecureKeyWarning, match=r"'modp2048'.*112-bit.*"
                          r"exponent_bits=160 gives about 80-bit"):
            assert private_set_intersection([[1, 2], [2, 3]], group="modp2048",
                                            exponent_bits=160) == [2]
        with pytest.raises(ValueError, match="too short"):
            private_set_intersection([[1, 2], [2, 3]], exponent_bits=127)


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
