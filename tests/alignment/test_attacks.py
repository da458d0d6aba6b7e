"""Planted leaks in the private set intersection, and their clean runs.

Each leak is a monkeypatched party step; the test asserts that the audit
catches it (a contract violation, or the ``id_linking`` / ``set_sizes``
attack well above its ``chance`` column) and that the honest protocol,
audited the same way, is clean. Each runs in the default group (Curve25519)
and in a small MODP test group.
"""

import hashlib
import random
import warnings

import gmpy2
import numpy as np
import pytest

import skfed
from skfed.alignment import DHGroup, PSIAudit
from skfed.alignment import _ids, _protocol, _x25519
from skfed.crypto import InsecureKeyWarning
from skfed.federation import PartyError, record_messages
from skfed.privacy import audit, check_messages

from .conftest import TEST_PRIME_512

VICTIM = "party1"


@pytest.fixture(autouse=True)
def _small_group_allowed():
    with skfed.config_context(allow_insecure_keys=True), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureKeyWarning)
        yield


@pytest.fixture(params=["curve25519", "test512"])
def group(request):
    if request.param == "test512":
        return DHGroup(TEST_PRIME_512, "test512")
    return request.param


def _sets(n_parties, seed=0):
    rng = random.Random(seed)
    universe = [f"customer-{i:03d}" for i in range(120)]
    return [rng.sample(universe, 50) for _ in range(n_parties)]


def _rows(report, attack, attacker=None, victim=None):
    table = report.attacks
    table = table[table.attack == attack]
    if attacker is not None:
        table = table[table.attacker == attacker]
    if victim is not None:
        table = table[table.victim == victim]
    assert len(table), f"no {attack} row for {attacker} -> {victim}"
    return table


@pytest.mark.parametrize("n_parties", [2, 3])
def test_clean_run_is_clean_and_linking_stays_at_chance(group, n_parties):
    report = audit(PSIAudit(group=group), _sets(n_parties))
    assert report.violations == []
    linking = _rows(report, "id_linking")
    assert len(linking) == n_parties * (n_parties - 1)
    # Nothing linked: the attacker's named ids are a guess, scored as one.
    np.testing.assert_allclose(linking.value, linking.chance)
    assert (linking.chance < 0.6).all()
    # What is inherent to DH-PSI, measured: every set size, exactly.
    sizes = report.attacks[report.attacks.target == "size of its id set"]
    assert (sizes.value == 1.0).all() and (sizes.chance < 0.02).all()


def _unblinded(send):
    """A party step that lets VICTIM send ``send(state, ids)`` instead of
    its blinded ids."""
    honest = _protocol._blind_own_ids

    def step(state):
        if state.name != VICTIM:
            return honest(state)
        state.stash["key"] = _protocol._draw_key(state)
        order = _protocol._secret_permutation(len(state.ids))
        state.stash["order"] = order
        ids = [state.ids[i] for i in order]
        return state.group._to_message(send(state, ids))
    return step


@pytest.mark.parametrize("n_parties", [2, 3])
def test_a_party_sending_its_hashed_ids_unblinded_is_linked(group, monkeypatch,
                                                            n_parties):
    # The party skips its own exponentiation: H(x) leaves it bare.
    monkeypatch.setattr(_protocol, "_blind_own_ids", _unblinded(
        lambda state, ids: state.group.hash_ids(ids)))
    report = audit(PSIAudit(group=group), _sets(n_parties))
    # The first party on the victim's route names every id it holds.
    first = "party0" if n_parties == 2 else "party2"
    row = _rows(report, "id_linking", first, VICTIM).iloc[0]
    assert row.value == 1.0 and row.value > row.chance + 0.4
    # Nobody links the honest parties' ids.
    honest = report.attacks[(report.attacks.attack == "id_linking")
                            & (report.attacks.victim != VICTIM)]
    np.testing.assert_allclose(honest.value, honest.chance)


def test_parties_sharing_one_exponent_are_linked(group, monkeypatch):
    # The leak issue 15 describes: a protocol secret derived from a seed
    # everyone knows (here, every party's exponent from the same seed).
    def seeded_key(state):
        if isinstance(state.group, DHGroup):
            key = gmpy2.mpz(random.Random(0).getrandbits(255) | (1 << 255))
        else:  # an X25519 private key
            key = random.Random(0).randbytes(32)
        if state.key_log is not None:
            state.key_log[state.name] = key
        return key

    monkeypatch.setattr(_protocol, "_draw_key", seeded_key)
    sets = _sets(3)
    report = audit(PSIAudit(group=group), sets)
    assert report.estimator.intersection_ == sorted(set.intersection(*map(set, sets)))
    linking = _rows(report, "id_linking")
    # Every party names every other party's ids outside the intersection
    # (and so every sub-intersection, which only the hub should count).
    assert (linking.value == 1.0).all()
    assert (linking.value > linking.chance + 0.4).all()


def _masked_hash(domain, x):
    """Ids hashed to any 255-bit u, the curve's twist included (the shortcut
    the Curve25519 group refuses: X25519 keeps each point on its side)."""
    digest = bytearray(hashlib.blake2b(domain + _ids.encode_id(x),
                                       digest_size=32).digest())
    digest[31] &= 0x7F
    return bytes(digest)


def test_ids_hashed_onto_the_twist_are_refused_and_violate_the_contract(
        monkeypatch):
    # Half the ids of a u-line hash land on the twist, and a blinded twist
    # point stays on the twist: its Legendre symbol gives away one bit of
    # its id's hash. The receiver refuses it, naming the sender, and the
    # contract flags the recorded message.
    monkeypatch.setattr(_x25519, "_hash_to_curve", _masked_hash)
    sets = _sets(2)
    # (Both sets cross at once; whichever party checks first refuses.)
    with record_messages() as rec, \
            pytest.raises(PartyError, match=r"(party1 refused the points sent "
                          r"by party0|party0 refused the points sent by "
                          r"party1): value \d+ is on the quadratic twist"):
        PSIAudit().fit(sets)
    sent = [m for m in rec.messages if m.phase == "exponentiate ids"]
    assert sent  # recorded on delivery, before the receiver's check
    found = check_messages(PSIAudit(party_names=["party0", "party1"]), sent)
    assert len(found) == len(sent)
    assert all("quadratic twist" in v.found for v in found)


def test_ids_hashed_onto_the_curve_are_clean(monkeypatch):
    with record_messages() as rec:
        PSIAudit().fit(_sets(2))
    assert check_messages(PSIAudit(party_names=["party0", "party1"]),
                          rec.messages) == []
