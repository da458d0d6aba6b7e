"""The PSI privacy contract, the parties' roles and PSIAudit."""

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone

from skfed.alignment import GROUPS, PSIAudit, align
from skfed.alignment._contract import CONTRACT, psi_contract, psi_roles
from skfed.federation import record_messages
from skfed.privacy import audit, check_messages


def test_roles_name_the_hub_and_the_party_that_shuffles_its_set():
    assert psi_roles(["a", "b"], 0) == {"a": {"party", "hub"},
                                        "b": {"party", "last"}}
    roles = psi_roles(["a", "b", "c", "d"], "c")
    assert roles["c"] == {"party", "hub"} and roles["d"] == {"party", "last"}
    assert roles["a"] == roles["b"] == {"party"}
    with pytest.raises(ValueError, match="not one of the parties"):
        psi_roles(["a", "b"], "z")
    with pytest.raises(ValueError, match="party index"):
        psi_roles(["a", "b"], 2)


def test_contract_declares_every_phase_of_a_run(small_group):
    sets = [list(range(0, 60, 2)), list(range(0, 60, 3)), list(range(0, 60, 5))]
    with record_messages() as rec:
        fitted = PSIAudit(group=small_group, hub=1).fit(sets)
    assert fitted.intersection_ == list(range(0, 60, 30))
    assert {m.phase for m in rec.messages} == set(CONTRACT.phases())
    assert check_messages(fitted, rec.messages) == []
    # Secret exponents are drawn per party and run (CSPRNG), never shared.
    again = clone(fitted).fit(sets)
    keys = list(fitted.keys_.values()) + list(again.keys_.values())
    assert len(set(keys)) == 6 and all(k.bit_length() == 256 for k in keys)


def test_messages_recorded_around_align_are_checked_without_a_fit(small_group):
    rng = np.random.default_rng(0)
    tables = {
        "shop": pd.DataFrame({"id": rng.permutation(40), "visits": rng.random(40)}),
        "bank": pd.DataFrame({"id": rng.permutation(50), "income": rng.random(50),
                              "default": rng.integers(0, 2, 50)}),
        "insurer": pd.DataFrame({"id": rng.permutation(45), "claims": rng.random(45)}),
    }
    with record_messages() as rec:
        align(tables, label="default", group=small_group)
    checker = PSIAudit(party_names=list(tables), hub="bank", group=small_group)
    assert check_messages(checker, rec.messages) == []
    # The same messages held against the wrong hub break the role rules
    # (the shop is neither hub nor L, so may not send positions).
    wrong = check_messages(PSIAudit(party_names=list(tables), hub="insurer",
                                    group=small_group), rec.messages)
    assert wrong and all(v.phase == "reveal positions" for v in wrong)
    # ... and against the default group's contract, every set is in the
    # wrong encoding (integers modulo p where 32-byte points are declared).
    other = check_messages(PSIAudit(party_names=list(tables), hub="bank"),
                           rec.messages)
    assert len(other) == 7 and all("dtype kind 'O'" in v.found for v in other)
    with pytest.raises(ValueError, match="needs party_names"):
        check_messages(PSIAudit(), rec.messages)


def test_default_contract_declares_32_byte_points_and_checks_them():
    sets = [list(range(0, 60, 2)), list(range(0, 60, 3)), list(range(0, 60, 5))]
    with record_messages() as rec:
        fitted = PSIAudit(hub=2).fit(sets)
    assert fitted.intersection_ == [0, 30]
    assert psi_contract("curve25519").phases() == CONTRACT.phases()
    assert check_messages(fitted, rec.messages) == []
    sets_ = [m for m in rec.messages if m.phase == "exponentiate ids"]
    assert all(m.payload[0].dtype == np.dtype("V32") and m.payload[0].ndim == 1
               for m in sets_)
    # One item per point: N points count N scalars and 32 N bytes.
    assert all(m.n_scalars == len(m.payload[0]) and m.n_bytes == 32 * m.n_scalars
               for m in sets_)
    keys = list(fitted.keys_.values())
    assert len(set(keys)) == 3 and all(len(k) == 32 for k in keys)

    first = sets_[0]
    values = first.payload[0].copy()
    raw = values.view(np.uint8).reshape(-1, 32)
    twist = values.copy()
    twist.view(np.uint8).reshape(-1, 32)[0] = np.frombuffer(
        (2).to_bytes(32, "little"), dtype=np.uint8)  # u = 2 is on the twist
    low = values.copy()
    low.view(np.uint8).reshape(-1, 32)[1] = 0  # u = 0: small order
    forged = [
        first._replace(payload=(twist,)),
        first._replace(payload=(low,)),
        first._replace(payload=(raw,)),  # (n, 32) uint8: not one item per point
        first._replace(payload=(values.astype("V31"),)),
    ]
    found = check_messages(fitted, list(rec.messages) + forged)
    by_index = {}
    for v in found:
        by_index.setdefault(v.index - len(rec.messages), []).append(v.found)
    assert sorted(by_index) == [0, 1, 2, 3]
    assert "value 0 is on the quadratic twist" in by_index[0][0]
    assert "value 1 is a point of small order" in by_index[1][0]
    # 32 bytes per point: the wrong dtype, and 32 times the values declared
    assert "dtype kind 'u'" in by_index[2][0]
    assert "960 value(s) where at most 30 (rows)" in by_index[2][1]
    assert "not a 1-D array of 32-byte points" in by_index[3][0]
    # A MODP run's messages are checked against the MODP encoding.
    assert psi_contract(GROUPS["modp3072"]).rules[0].elements[0].dtype == "O"


def _forged(message, **changes):
    return message._replace(**changes)


def test_forged_messages_are_violations(small_group):
    sets = [["ann", "bob", "eve", "joe"], ["bob", "eve", "kim"]]
    with record_messages() as rec:
        fitted = PSIAudit(group=small_group).fit(sets)
    messages = list(rec.messages)
    first = messages[0]
    values = first.payload[0]
    ids = np.array(sets[0], dtype=object)
    too_big = values.copy()
    too_big[0] = small_group.p + 1
    forged = [
        # an extra element: the sender's raw ids next to the blinded ones
        _forged(first, payload=(values, ids)),
        # a phase the protocol does not have
        _forged(first, phase="share ids"),
        # plaintext integers where group elements are declared
        _forged(first, payload=(np.arange(len(values)),)),
        # positions from someone who is not a party of the run
        _forged(messages[-1], sender="eve"),
        # a value outside the group's range
        _forged(first, payload=(too_big,)),
    ]
    found = check_messages(fitted, messages + forged)
    assert [v.index for v in found] == list(range(len(messages),
                                                  len(messages) + 5))
    assert "2 payload element(s)" in found[0].found
    assert "undeclared phase 'share ids'" in found[1].found
    assert "dtype kind 'i'" in found[2].found
    assert "['eve']" in found[3].found
    assert "value 0 (512-bit) is not an integer between 1 and p" in found[4].found


def test_audit_reports_what_is_inherent_and_nothing_more(small_group):
    sets = [list(range(0, 90, 2)), list(range(0, 90, 3)), list(range(0, 90, 5))]
    report = audit(PSIAudit(group=small_group), sets)
    assert report.violations == []
    table = report.attacks
    assert list(table.columns) == ["attack", "attacker", "victim", "target",
                                   "metric", "value", "chance"]
    sizes = table[(table.attack == "set_sizes")
                  & (table.target == "size of its id set")]
    # Every party learns every other party's set size (inherent to DH-PSI).
    assert len(sizes) == 6 and (sizes.value == 1.0).all()
    assert (sizes.chance < 0.01).all()
    shared = table[table.target == "number of ids they share"]
    # Only the hub counts the sub-intersections.
    assert set(shared[shared.value == 1.0].attacker) == {"party0"}
    assert len(shared[shared.attacker == "party0"]) == 3
    linking = table[table.attack == "id_linking"]
    assert len(linking) == 6 and (linking.chance > 0).all()
    np.testing.assert_allclose(linking.value, linking.chance)
