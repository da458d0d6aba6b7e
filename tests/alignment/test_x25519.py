"""PSI on Curve25519: X25519 through ``cryptography``, hashing onto the curve,
points checked on receipt, batches in worker processes."""

import random

import gmpy2
import numpy as np
import pytest
from cryptography.hazmat.primitives.asymmetric.x25519 import (
    X25519PrivateKey,
    X25519PublicKey,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import skfed
from skfed.alignment import GROUPS, Curve25519Group, private_set_intersection
from skfed.alignment import _ids, _protocol, _x25519
from skfed.alignment._protocol import run_psi
from skfed.alignment._x25519 import LOW_ORDER_U, P, point_problem
from skfed.alignment._x25519 import common_positions
from skfed.federation import PartyError, record_messages

CURVE = GROUPS["curve25519"]


def _x25519_raw(key, u):
    return X25519PrivateKey.from_private_bytes(key).exchange(
        X25519PublicKey.from_public_bytes(u))


def _on_curve(u):
    return gmpy2.legendre((u**3 + 486662 * u**2 + u) % P, P) == 1


def test_the_binding_computes_rfc_7748_x25519():
    # RFC 7748, section 5.2, first test vector.
    key = bytes.fromhex(
        "a546e36bf0527c9d3b16154b82465edd62144c0ac1fc5a18506a2244ba449ac4")
    u = bytes.fromhex(
        "e6db6867583030db3594c1a424b15f7c726624ec26b3353b10a903a6d0ab1c4c")
    assert CURVE.raise_values([u], key)[0].hex() == (
        "c3da55379de9c6908e94ea4df28d084f32eccf03491c71f754b4075577a28552")


def test_keys_commute_on_hashed_ids_and_stay_on_the_curve():
    keys = [CURVE.random_exponent() for _ in range(3)]
    assert len(set(keys)) == 3 and all(len(k) == 32 for k in keys)
    points = CURVE.hash_ids(range(50))
    forward = CURVE.raise_values(CURVE.raise_values(CURVE.raise_values(
        points, keys[0]), keys[1]), keys[2])
    backward = CURVE.raise_values(CURVE.raise_values(CURVE.raise_values(
        points, keys[2]), keys[0]), keys[1])
    assert forward == backward and len(set(forward)) == 50
    assert all(point_problem(v) is None for v in forward)


def test_hash_lands_on_the_curve_and_separates_types():
    ids = [0, 1, 2**80, -(2**70), "0", "1", "", "ünïcode", b"raw"]
    points = CURVE.hash_ids(ids)
    assert all(len(h) == 32 and point_problem(h) is None for h in points)
    assert len(set(points)) == len(ids)  # 1 and "1" hash apart
    assert CURVE.hash_ids([np.int64(1), 1]) == [points[1], points[1]]
    # Uniform over the curve: the u-coordinates' top bits spread evenly.
    many = CURVE.hash_ids(range(2000))
    u = np.array([int.from_bytes(h, "little") / P for h in many])
    assert abs(u.mean() - 0.5) < 0.03 and 0.25 < u.std() < 0.33
    # Half the masked first candidates are twist points, which are skipped.
    first = [_x25519.hashlib.blake2b(
        CURVE._domain + _ids.encode_id(x) + (0).to_bytes(4, "big")).digest()[:32]
        for x in range(2000)]
    on_curve = [_on_curve(int.from_bytes(d, "little") & (2**255 - 1))
                for d in first]
    assert 0.45 < np.mean(on_curve) < 0.55


def test_small_order_points_are_exactly_those_x25519_refuses():
    key = CURVE.random_exponent()
    for u in sorted(LOW_ORDER_U) + [P - 1, P, P + 1]:
        encoded = u.to_bytes(32, "little")
        with pytest.raises(ValueError):  # the all-zero output, refused
            _x25519_raw(key, encoded)
        assert point_problem(encoded) is not None
    assert "small order" in point_problem((1).to_bytes(32, "little"))
    assert "twist" in point_problem((P - 1).to_bytes(32, "little"))
    assert "canonical" in point_problem((P + 1).to_bytes(32, "little"))
    assert "31 bytes" in point_problem(bytes(31))
    # The top bit of u is set: not canonical, refused (X25519 would mask it).
    assert "canonical" in point_problem(bytes(31) + b"\x89")


def test_exponent_bits_other_than_256_are_refused():
    with pytest.raises(ValueError, match="does not apply to group='curve25519'"):
        private_set_intersection([[1, 2], [2, 3]], exponent_bits=512)
    assert private_set_intersection([[1, 2], [2, 3]], exponent_bits=None) == [2]


def _adversarial_sets(rng):
    """Ids that stress the encoding: big and negative integers, and strings
    that differ by a byte, by case, by a trailing NUL or by normalisation."""
    ints = [0, 1, -1, 2**63 - 1, 2**63, -(2**63), 2**200 + 7, 10**30]
    strings = ["", " ", "a", "A", "a\x00", "a\x00\x00", "é", "e\u0301",
               "x" * 1000, "0", "00", "id-1", "id-01"]
    out = []
    for base in (ints, strings):
        sets = [rng.sample(base, len(base) - 2) for _ in range(3)]
        out.append(sets)
    return out


@pytest.mark.parametrize("n_parties", [2, 3, 4])
def test_same_intersection_as_the_modp_group(small_group, n_parties):
    rng = random.Random(n_parties)
    sets = [rng.sample(range(200), 120) for _ in range(n_parties)]
    truth = sorted(set.intersection(*map(set, sets)))
    assert truth
    for hub in range(n_parties):
        curve = private_set_intersection(sets, hub=hub)
        assert curve == private_set_intersection(sets, hub=hub,
                                                 group=small_group) == truth
    for sets in _adversarial_sets(rng):
        sets = sets[:n_parties] if n_parties < 4 else sets + [sets[0]]
        truth = set.intersection(*map(set, sets))
        assert set(private_set_intersection(sets)) == truth
        assert private_set_intersection(sets) == private_set_intersection(
            sets, group=small_group)


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sets(st.one_of(st.integers(-2**70, 2**70)), min_size=1,
                        max_size=10), min_size=2, max_size=4),
       st.integers(0, 3))
def test_intersection_property(sets, hub):
    sets = [sorted(s) for s in sets]
    hub = hub % len(sets)
    expected = sorted(set.intersection(*map(set, sets)))
    assert private_set_intersection(sets, hub=hub) == expected


@pytest.mark.parametrize("sets, error, match", [
    ([[1, 2, 1], [1]], ValueError, "party 0 has duplicate ids.*1 repeated, e.g. 1"),
    ([["a", "b"], ["b", "b", "c", "c"]], ValueError,
     "party 1 has duplicate ids.*2 repeated, e.g. 'b', 'c'"),
    ([[np.int64(5), 5], [5]], ValueError, "duplicate ids"),
    ([[1, 2], ["1", "2"]], TypeError, "different types"),
])
def test_duplicates_and_mixed_types_are_refused_as_in_every_group(sets, error,
                                                                  match):
    with pytest.raises(error, match=match):
        private_set_intersection(sets)


def test_messages_carry_points_only_and_keys_stay_with_their_party():
    names = ["bank", "insurer", "shop"]
    rng = random.Random(0)
    universe = [f"customer-{i:04d}" for i in range(80)]
    sets = [rng.sample(universe, 50) for _ in range(3)]
    keys = {}
    with record_messages() as rec:
        rows, communication = run_psi(sets, hub=1, party_names=names,
                                      key_log=keys)
    truth = set.intersection(*map(set, sets))
    for k, r in enumerate(rows):
        assert {sets[k][i] for i in r} == truth
    assert communication.total_messages == len(rec.messages)

    hashed = dict(zip(universe, CURVE.hash_ids(universe)))
    bare = set(hashed.values())
    finished = {}
    for x, h in hashed.items():
        for name in names:
            h = CURVE.raise_values([h], keys[name])[0]
        finished[h] = x
    for m in rec.messages:
        item = m.payload[0]
        if m.phase != "exponentiate ids":
            assert item.dtype == np.int64 and len(item) == len(truth)
            continue
        assert item.dtype == np.dtype("V32") and item.ndim == 1
        values = set(item.tolist())
        assert not values & bare  # never a bare hash
        complete = values & set(finished)
        # Only the hub gets fully blinded values, only its own set's, from L.
        assert not complete or (m.receiver == "insurer" and m.sender == "shop"
                                and {finished[v] for v in complete} == set(sets[1]))
    # Each party's first message is in a secret random order.
    for k, name in enumerate(names):
        first = [m for m in rec.messages if m.sender == name][0]
        blind = dict(zip(CURVE.raise_values([hashed[x] for x in sets[k]],
                                            keys[name]), sets[k]))
        assert [blind[v] for v in first.payload[0].tolist()] != sets[k]


class _Corrupt:
    """A party step wrapper: the named party corrupts value 3 of what it
    sends (one 32-byte item, or the whole array)."""

    def __init__(self, step, party, how):
        self.step, self.party, self.how = step, party, how

    def __call__(self, state, *args):
        out = self.step(state, *args)
        if state.name != self.party:
            return out
        if self.how == "wrong length":
            return np.frombuffer(out.tobytes()[:31 * len(out)], dtype="V31")
        if self.how == "object array":
            return np.array(out.tolist(), dtype=object)
        out = out.copy()
        u = {"small order": 1, "all zero": 0, "twist": 2,
             "not canonical": P + 3}[self.how]
        out.view(np.uint8).reshape(-1, 32)[3] = np.frombuffer(
            u.to_bytes(32, "little"), dtype=np.uint8)
        return out


@pytest.mark.parametrize("how, problem", [
    ("wrong length", r"an array of dtype \|V31 .*not a 1-D array of 32-byte"),
    ("object array", r"an array of dtype object .*not a 1-D array of 32-byte"),
    ("small order", r"value 3 is a point of small order"),
    ("all zero", r"value 3 is a point of small order"),
    ("twist", r"value 3 is on the quadratic twist"),
    ("not canonical", r"value 3 is not a canonical encoding"),
])
def test_invalid_points_are_refused_naming_the_sender(monkeypatch, how, problem):
    sets = [list(range(0, 40)), list(range(20, 60)), list(range(10, 50))]
    names = ["bank", "insurer", "shop"]
    # The shop blinds its own set badly; the insurer, next on its route,
    # refuses it (before applying its key).
    monkeypatch.setattr(_protocol, "_blind_own_ids",
                        _Corrupt(_protocol._blind_own_ids, "shop", how))
    with pytest.raises(PartyError, match="insurer refused the points sent by "
                       f"shop: {problem}") as raised:
        private_set_intersection(sets, party_names=names)
    assert raised.value.party == "insurer"
    assert raised.value.phase == "exponentiate ids"


def test_the_hub_checks_its_own_set_coming_back_from_l(monkeypatch):
    # L (the last stop of the hub's set) corrupts the set it hands back; the
    # hub applies no key to it, but checks it all the same.
    monkeypatch.setattr(_protocol, "_add_key", _Corrupt(_protocol._add_key, "shop", "twist"))
    with pytest.raises(PartyError, match="bank refused the points sent by shop: "
                       "value 3 is on the quadratic twist"):
        private_set_intersection([list(range(30))] * 2 + [list(range(5, 40))],
                                 party_names=["bank", "insurer", "shop"])


def test_a_hop_that_drops_a_value_is_refused(monkeypatch):
    step = _protocol._add_key

    def drop_one(state, values, permute, sender):
        out = step(state, values, permute, sender)
        return out[:-1] if state.name == "shop" else out

    monkeypatch.setattr(_protocol, "_add_key", drop_one)
    with pytest.raises(ValueError, match="Party 'shop' passed on 29 ids in "
                       "phase 'exponentiate ids' for a set of 30"):
        private_set_intersection([list(range(30))] * 2 + [list(range(5, 40))],
                                 party_names=["bank", "insurer", "shop"])


def test_worker_processes_give_the_same_answer_and_refuse_alike(monkeypatch):
    monkeypatch.setattr(_x25519, "_MIN_FORK_ITEMS", 0)
    monkeypatch.setattr(_x25519, "_BATCH", 7)
    sets = [list(range(0, 300, 2)), list(range(0, 300, 3)), list(range(0, 300, 5))]
    with record_messages() as rec:
        result = private_set_intersection(sets, n_jobs=2, hub=1)
    assert result == list(range(0, 300, 30))
    # Deterministic given the keys: the forked workers computed what the
    # party's own thread would have.
    first = rec.messages[0]
    assert first.phase == "exponentiate ids" and len(first.payload[0]) > 7
    monkeypatch.setattr(_protocol, "_blind_own_ids",
                        _Corrupt(_protocol._blind_own_ids, "party2", "twist"))
    with pytest.raises(PartyError, match="party0 refused the points sent by "
                       "party2: value 3 is on the quadratic twist"):
        private_set_intersection(sets, n_jobs=2, hub=1)


def test_worker_chunks_equal_the_in_thread_computation(monkeypatch):
    key = CURVE.random_exponent()
    points = CURVE._to_message(CURVE.hash_ids(range(50)))
    here = CURVE._exponentiate(points, key, None, "a", "b")
    monkeypatch.setattr(_x25519, "_MIN_FORK_ITEMS", 0)
    monkeypatch.setattr(_x25519, "_BATCH", 6)
    forked = CURVE._exponentiate(points, key, 3, "a", "b")
    assert forked.tobytes() == here.tobytes()
    assert here.tolist() == CURVE.raise_values(points.tolist(), key)


def test_common_positions_confirms_all_32_bytes():
    rng = np.random.default_rng(0)
    base = rng.integers(0, 256, size=(50, 32), dtype=np.uint8)
    a = base[:40].copy()
    b = base[10:].copy()
    # b's row 0 shares a's row 5's first 8 bytes, but differs afterwards:
    # a prefix match that is not a match.
    b[0, :8] = a[5, :8]
    as_points = [x.view("V32").ravel() for x in (a, b)]
    got = common_positions(dict(zip("ab", as_points)))
    expected = set(map(bytes, base[10:40])) - {bytes(base[10])}
    assert {bytes(a[i]) for i in got["a"]} == expected
    assert {bytes(b[i]) for i in got["b"]} == expected
    assert list(got["a"]) == sorted(got["a"])
    # A repeated prefix within one array: the exact fallback agrees.
    a[0, :8] = a[1, :8]
    as_points = [x.view("V32").ravel() for x in (a, b)]
    got = common_positions(dict(zip("ab", as_points)))
    assert {bytes(a[i]) for i in got["a"]} == expected


def test_curve_group_is_not_refused_and_needs_no_opt_in():
    with skfed.config_context(allow_insecure_keys=False):
        assert private_set_intersection([["x", "y"], ["y", "z"]]) == ["y"]
    assert repr(CURVE) == "Curve25519Group()" and CURVE == Curve25519Group()
