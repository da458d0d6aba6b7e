"""The contract checker on hand-made messages (no estimator involved)."""

import numpy as np
import pytest

from skfed.crypto import generate_keypair
from skfed.federation import Federation, Message, record_messages
from skfed.federation.secure_sum import RingEncoder, secure_sum
from skfed.privacy import secure_sum_rules
from skfed.privacy import (
    Ciphertext,
    Contract,
    Inherent,
    Masked,
    Public,
    Rule,
    Secret,
    check_messages,
)

rng = np.random.RandomState(0)
X = rng.normal(size=(40, 3))
Y = (X[:, 0] > 0).astype(float)


class _Protocol:
    """Stands in for a fitted estimator: two parties, one contract."""

    encryption = "paillier"

    def _privacy_contract(self):
        return Contract("toy", [
            Rule("grad", "active", "passive", (Ciphertext("active"),)),
            Rule("hist", "passive", "active", (Ciphertext("active"),)),
            Rule("masked", "passive", "active", (Masked("ring mask"),)),
            Rule("leaves", "passive", "active",
                 (Inherent("split side", exempt=("columns",)),)),
            Rule("setup", "*", "*", (Public("sizes", dtype="i"),)),
        ])

    def _privacy_roles(self):
        return {"a": {"active"}, "p": {"passive"}}

    def _privacy_secrets(self, X, y=None):
        return [Secret("p", "columns", "columns of p", X[:, 1:]),
                Secret("a", "columns", "columns of a", X[:, :1]),
                Secret("a", "labels", "labels", y),
                Secret("p", "rows", "rows of p", X[:5, 1:])]


@pytest.fixture(scope="module")
def keys():
    return generate_keypair(key_size=512)


def msg(sender, receiver, phase, *payload):
    return Message(sender, receiver, phase, 0, 0, 0, tuple(payload))


def test_clean_messages_pass(keys):
    public_key, _ = keys
    grad = public_key.encrypt(Y)
    hist = grad[:3].rerandomize()
    messages = [msg("a", "p", "setup", 40), msg("a", "p", "grad", grad),
                msg("p", "a", "hist", hist),
                msg("p", "a", "masked", rng.uniform(size=40))]
    assert check_messages(_Protocol(), messages, X, Y) == []


def test_undeclared_phase_and_wrong_roles(keys):
    found = check_messages(_Protocol(), [msg("a", "p", "gossip", 1),
                                         msg("a", "p", "hist", 1)])
    assert "undeclared phase 'gossip'" in found[0].found
    assert "from ['active'] to ['passive']" in found[1].found
    assert len(found) == 2 and found[1].index == 1


def test_extra_element_holding_labels_is_caught(keys):
    public_key, _ = keys
    found = check_messages(_Protocol(), [
        msg("a", "p", "grad", public_key.encrypt(Y), Y.astype(np.int64))], X, Y)
    assert len(found) == 1
    assert "2 payload element(s) where the rule declares 1" in found[0].found
    assert "ciphertext under active's key" in found[0].allowed


def test_plaintext_where_ciphertext_declared(keys):
    found = check_messages(_Protocol(), [msg("a", "p", "grad", Y * 2**20)])
    assert "a plaintext float64 array of shape (40,) where a ciphertext" \
        in found[0].found


def test_ciphertext_where_plaintext_declared_and_dtype(keys):
    public_key, _ = keys
    found = check_messages(_Protocol(), [
        msg("p", "a", "masked", public_key.encrypt(Y)),
        msg("a", "p", "setup", 1.5)])
    assert "where masked value is declared" in found[0].found
    assert "dtype kind 'f' where 'i' is declared" in found[1].found


def test_missing_rerandomisation_is_caught(keys):
    public_key, _ = keys
    grad = public_key.encrypt(Y)
    # a one-row "histogram" that was not re-randomised is the row's ciphertext
    stale = grad[[4]]
    found = check_messages(_Protocol(), [msg("a", "p", "grad", grad),
                                         msg("p", "a", "hist", stale)])
    assert len(found) == 1 and "itself sent before" in found[0].found
    fresh = grad[[4]].rerandomize()
    assert check_messages(_Protocol(), [msg("a", "p", "grad", grad),
                                        msg("p", "a", "hist", fresh)]) == []


def test_repeats_and_key_owner(keys):
    public_key, _ = keys
    other, _ = generate_keypair(key_size=512)
    grad = public_key.encrypt(Y)
    found = check_messages(_Protocol(), [
        msg("a", "p", "grad", grad), msg("a", "p", "grad", grad),
        msg("a", "p", "grad", public_key.encrypt(np.zeros(2))[[0, 0]])])
    assert "already received" in found[0].found
    assert "repeated inside one message" in found[1].found

    class Mislabelled(_Protocol):
        def _privacy_contract(self):
            return Contract("toy", [
                Rule("grad", "active", "passive", (Ciphertext("active"),)),
                Rule("hist", "passive", "active", (Ciphertext("passive"),))])

    found = check_messages(Mislabelled(), [
        msg("a", "p", "grad", grad),
        msg("p", "a", "hist", public_key.encrypt(Y[:2]))])
    assert "first declared as active's" in found[0].found
    assert check_messages(Mislabelled(), [
        msg("a", "p", "grad", grad),
        msg("p", "a", "hist", other.encrypt(Y[:2]))]) == []


def test_semantic_affine_image_of_another_partys_column():
    leak = 3.0 * X[:, 2] - 7.0
    found = check_messages(_Protocol(), [msg("p", "a", "masked", leak)], X, Y)
    assert len(found) == 1
    assert "affine image" in found[0].found and "p's columns" in found[0].found
    assert "column 1" in found[0].found
    # without the data the checker cannot know, and says nothing
    assert check_messages(_Protocol(), [msg("p", "a", "masked", leak)]) == []
    # a transposed 2-D payload is found along its matching axis
    found = check_messages(_Protocol(), [
        msg("p", "a", "masked", np.vstack([rng.normal(size=40), leak]))], X, Y)
    assert len(found) == 1
    # a party's own data coming back to it is not a leak
    assert check_messages(_Protocol(), [
        msg("a", "p", "setup", np.round(100 * leak).astype(int))], X, Y) == []


def test_semantic_labels_and_exemptions():
    labels = Y.astype(np.int64) * 5 + 1
    found = check_messages(_Protocol(), [msg("a", "p", "setup", labels)], X, Y)
    assert any("a's labels" in v.found for v in found)
    # an inherent exposure is exempt only for the kinds it names
    ok = check_messages(_Protocol(), [msg("p", "a", "leaves", X[:, 1] > 99)], X, Y)
    assert ok == []
    side = (X[:, 1] > 0).astype(float)
    assert check_messages(_Protocol(), [msg("p", "a", "leaves", side)], X, Y) == []


def test_semantic_private_row():
    found = check_messages(_Protocol(), [msg("p", "a", "masked", X[3, 1:])], X, Y)
    assert len(found) == 1 and "private row 3" in found[0].found
    noisy = X[3, 1:] + 0.1
    assert check_messages(_Protocol(), [msg("p", "a", "masked", noisy)], X, Y) == []


def test_contract_table_lists_rules():
    table = _Protocol()._privacy_contract().table()
    assert "phase 'grad' active -> passive: (ciphertext under active's key)" in table


# --- secure sum -----------------------------------------------------------

def _secure_total(values, encoder):
    states = {f"u{i}": {"v": v} for i, v in enumerate(values)}
    states["server"] = {}
    with record_messages() as rec, Federation(states) as fed:
        total = secure_sum(fed, [f"u{i}" for i in range(len(values))],
                           "server", lambda st: st.v, phase="moments",
                           encoder=encoder).result()
    return total, rec.messages


def test_secure_sum_is_exact_and_uploads_hide_values():
    values = [rng.normal(size=(6, 2)) for _ in range(3)]
    encoder = RingEncoder(frac_bits=40)
    total, messages = _secure_total(values, encoder)
    expected = sum(encoder.decode(encoder.encode(v)) for v in values)
    np.testing.assert_array_equal(total, expected)
    uploads = [m for m in messages if m.phase == "moments/upload"]
    assert [m.receiver for m in uploads] == ["server"] * 3
    keys_sent = [m for m in messages if m.phase == "moments/keys"]
    assert len(keys_sent) == 3 and all(m.receiver != "server" for m in keys_sent)
    # every upload looks uniform in the ring, whatever the value
    for m, value in zip(uploads, values):
        decoded = encoder.decode(m.payload[0])
        assert np.min(np.abs(decoded)) > 1.0  # ~2^23 in magnitude, not ~1
        assert not np.allclose(decoded, value)
    # fresh masks every run, same total
    total2, messages2 = _secure_total(values, encoder)
    np.testing.assert_array_equal(total, total2)
    first = [m.payload[0] for m in messages if m.phase == "moments/upload"]
    second = [m.payload[0] for m in messages2 if m.phase == "moments/upload"]
    assert not any(np.array_equal(a, b) for a, b in zip(first, second))


def test_secure_sum_contract_rules():
    class Sum(_Protocol):
        def _privacy_contract(self):
            return Contract("sum", secure_sum_rules("moments", "user", "server"))

        def _privacy_roles(self):
            return {"u0": {"user"}, "u1": {"user"}, "u2": {"user"},
                    "server": {"server"}}

    values = [rng.normal(size=4) for _ in range(3)]
    _, messages = _secure_total(values, RingEncoder(frac_bits=30))
    assert check_messages(Sum(), messages) == []
    # an unmasked upload (a planted leak) is caught: wrong dtype, and rows
    leaked = list(messages)
    upload = next(i for i, m in enumerate(leaked) if m.phase == "moments/upload")
    leaked[upload] = leaked[upload]._replace(payload=(values[0],))
    found = check_messages(Sum(), leaked)
    assert len(found) == 1 and "dtype kind 'f' where 'u'" in found[0].found


def test_ring_encoder_overflow_and_bounds():
    encoder = RingEncoder.for_bound(1e6, n_terms=10)
    assert encoder.max_abs >= 1e7
    with pytest.raises(OverflowError, match="fewer fractional bits"):
        RingEncoder(frac_bits=60).encode(np.array([8.0]))
    with pytest.raises(ValueError, match="non-finite"):
        RingEncoder().encode(np.array([np.nan]))


def test_element_validator_reports_its_problem():
    def group_elements(leaf):
        if np.asarray(leaf).dtype != object:
            return None
        if any(int(v) < 2**64 for v in np.asarray(leaf).ravel()):
            return "values too small to be group elements (raw ids?)"
        return None

    class Validated(_Protocol):
        def _privacy_contract(self):
            return Contract("psi", [Rule("exp", "*", "*", (
                Masked("blinded ids", dtype="O", validate=group_elements),))])

    good = np.array([2**200 + i for i in range(3)], dtype=object)
    bad = np.array([17, 2**200, 4], dtype=object)
    assert check_messages(Validated(), [msg("a", "p", "exp", good)]) == []
    found = check_messages(Validated(), [msg("a", "p", "exp", bad)])
    assert len(found) == 1 and "raw ids?" in found[0].found


def test_semantic_checks_accept_sparse_input():
    import scipy.sparse as sp

    from skfed.kernel_methods import FDSKLClassifier
    from skfed.partition import VerticalPartition

    Xs = sp.csr_matrix(np.where(np.abs(X) > 0.5, X, 0.0))
    with record_messages() as rec:
        model = FDSKLClassifier(VerticalPartition(3), max_iter=10,
                                random_state=0).fit(Xs, Y)
    assert check_messages(model, rec.messages, Xs, Y) == []
    assert len(model._privacy_secrets(Xs, Y)) == 4  # 3 column blocks, labels


def test_audit_accepts_sparse_input():
    import scipy.sparse as sp

    from skfed.kernel_methods import FDSKLClassifier
    from skfed.partition import VerticalPartition
    from skfed.privacy import audit

    Xs = sp.csr_matrix(np.where(np.abs(X) > 0.5, X, 0.0))
    report = audit(FDSKLClassifier(VerticalPartition(3), max_iter=10,
                                   random_state=0), Xs, Y)
    assert report.violations == []
    assert len(report.attacks) > 0
