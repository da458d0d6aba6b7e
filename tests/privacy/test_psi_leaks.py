"""Planted leaks in the private set intersection, and their clean runs.

Each leak is a monkeypatched party step; the test asserts that the audit
catches it (a contract violation, or the ``id_linking`` / ``set_sizes``
attack well above its ``chance`` column) and that the honest protocol,
audited the same way, is clean.
"""

import random
import warnings

import gmpy2
import numpy as np
import pytest

import skfed
from skfed.alignment import DHGroup, PSIAudit
from skfed.alignment import _psi
from skfed.crypto import InsecureKeyWarning
from skfed.privacy import audit

from ..alignment.conftest import TEST_PRIME_512

VICTIM = "party1"


@pytest.fixture(autouse=True)
def _small_group_allowed():
    with skfed.config_context(allow_insecure_keys=True), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureKeyWarning)
        yield


@pytest.fixture
def group():
    return DHGroup(TEST_PRIME_512, "test512")


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
    honest = _psi._blind_own_ids

    def step(state):
        if state.name != VICTIM:
            return honest(state)
        state.stash["key"] = _psi._draw_key(state)
        order = _psi._secret_permutation(len(state.ids))
        state.stash["order"] = order
        ids = [state.ids[i] for i in order]
        return _psi._as_message(send(state, ids))
    return step


@pytest.mark.parametrize("n_parties", [2, 3])
def test_a_party_sending_its_hashed_ids_unblinded_is_linked(group, monkeypatch,
                                                            n_parties):
    # The party skips its own exponentiation: H(x) leaves it bare.
    monkeypatch.setattr(_psi, "_blind_own_ids", _unblinded(
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
        key = gmpy2.mpz(random.Random(0).getrandbits(255) | (1 << 255))
        if state.key_log is not None:
            state.key_log[state.name] = key
        return key

    monkeypatch.setattr(_psi, "_draw_key", seeded_key)
    sets = _sets(3)
    report = audit(PSIAudit(group=group), sets)
    assert report.estimator.intersection_ == sorted(set.intersection(*map(set, sets)))
    linking = _rows(report, "id_linking")
    # Every party names every other party's ids outside the intersection
    # (and so every sub-intersection, which only the hub should count).
    assert (linking.value == 1.0).all()
    assert (linking.value > linking.chance + 0.4).all()
