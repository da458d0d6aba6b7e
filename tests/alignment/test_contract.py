"""The PSI privacy contract, the parties' roles and PSIAudit."""

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone

from skfed.alignment import PSIAudit, align
from skfed.alignment._contract import CONTRACT, psi_roles
from skfed.federation import Message, record_messages
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
    checker = PSIAudit(party_names=list(tables), hub="bank")
    assert check_messages(checker, rec.messages) == []
    # The same messages held against the wrong hub break the role rules
    # (the shop is neither hub nor L, so may not send positions).
    wrong = check_messages(PSIAudit(party_names=list(tables), hub="insurer"),
                           rec.messages)
    assert wrong and all(v.phase == "reveal positions" for v in wrong)
    with pytest.raises(ValueError, match="needs party_names"):
        check_messages(PSIAudit(), rec.messages)


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
    forged = [
        # an extra element: the sender's raw ids next to the blinded ones
        _forged(first, payload=(values, ids)),
        # a phase the protocol does not have
        _forged(first, phase="share ids"),
        # plaintext integers where group elements are declared
        _forged(first, payload=(np.arange(len(values)),)),
        # positions from someone who is not a party of the run
        _forged(messages[-1], sender="eve"),
    ]
    found = check_messages(fitted, messages + forged)
    assert [v.index for v in found] == list(range(len(messages),
                                                  len(messages) + 4))
    assert "2 payload element(s)" in found[0].found
    assert "undeclared phase 'share ids'" in found[1].found
    assert "dtype kind 'i'" in found[2].found
    assert "['eve']" in found[3].found


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
