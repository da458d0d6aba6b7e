"""The accumulation attack: every row-indexed vector a party received.

Hand-made messages with a known answer first (what is read, what is not,
the quadratic step), then the estimators: HyFDCA's squared norms (the
planted leak of ``dual_curvature="row_norm"``) flagged and their absence
not, FDSKL and AVFKAM sending nothing row-indexed in the clear (a leak
planted in their messages is caught), SecureBoost's instance spaces telling
a passive party about the other parties' columns (the paper's section 7).
"""

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, make_classification
from sklearn.preprocessing import StandardScaler

from skfed.base import PrivacyMixin
from skfed.crypto import PlaintextPublicKey, generate_keypair
from skfed.federation import Message, record_messages
from skfed.partition import HorizontalPartition, VerticalPartition
from skfed.privacy import (Ciphertext, Contract, Inherent, Masked, Public,
                           Rule, audit)
from skfed.privacy._accumulation import (accumulation, row_vectors,
                                         stack_scores)

RNG = np.random.RandomState(0)
N = 120
XV = StandardScaler().fit_transform(RNG.normal(size=(N, 6)) @ RNG.normal(
    size=(6, 6)))


def _rows(table, metric, attacker=None, victim=None):
    rows = table[table.metric == metric] if hasattr(table, "metric") else [
        r for r in table if r["metric"] == metric]
    if hasattr(rows, "attacker"):
        if attacker is not None:
            rows = rows[rows.attacker == attacker]
        if victim is not None:
            rows = rows[rows.victim == victim]
        return rows
    return [r for r in rows
            if (attacker is None or r["attacker"] == attacker)
            and (victim is None or r["victim"] == victim)]


class _Vertical(PrivacyMixin):
    """Three parties holding two columns each of ``XV``, and a contract of
    one phase per element kind."""

    _partition_kind = "vertical"
    encryption = None

    def __init__(self, X=XV, kind="vertical"):
        self._partition_kind = kind
        part = (VerticalPartition(3) if kind == "vertical"
                else HorizontalPartition(3))
        self.partition_ = part.resolve(X)

    def _privacy_contract(self):
        return Contract("handmade", [
            Rule("plain", "*", "*", (Inherent("a vector"),)),
            Rule("masked", "*", "*", (Masked("a masked vector"),)),
            Rule("public", "*", "*", (Public("public"),)),
            Rule("enc/active", "*", "*", (Ciphertext("active", "c"),)),
            Rule("enc/passive", "*", "*", (Ciphertext("passive", "c"),)),
        ])


def _message(phase, *payload, sender="party1", receiver="party0"):
    return Message(sender, receiver, phase, 0, 0, 0, tuple(payload))


def _span(est, messages, attacker="party0", victim="party1"):
    rows = _rows(accumulation(est, messages, XV), "span_r2", attacker, victim)
    return rows[0]["value"] if rows else None


def test_a_victim_column_sent_in_the_clear_is_in_the_span():
    est = _Vertical()
    column = XV[:, est.partition_.columns(1)[0]]
    rows = accumulation(est, [_message("plain", 3.0 * column + 1.0)], XV)
    assert _rows(rows, "vectors", "party0")[0]["value"] == 1
    assert _rows(rows, "rank", "party0")[0]["value"] == 1
    span = _rows(rows, "span_r2", "party0", "party1")[0]
    # one of party1's two columns exactly, the other as far as it correlates
    assert span["value"] > 0.5 > span["chance"]
    assert _rows(rows, "vectors", "party1")[0]["value"] == 0
    # both victim columns: the whole block
    both = [_message("plain", XV[:, j]) for j in est.partition_.columns(1)]
    assert _span(est, both) == pytest.approx(1.0)


def test_what_is_hidden_or_not_the_receivers_is_not_read():
    est = _Vertical()
    block = XV[:, est.partition_.columns(1)]
    public = PlaintextPublicKey()
    hidden = [
        _message("masked", block[:, 0]),
        _message("plain", (block[:, 0] * 2**20).astype(np.uint64)),  # ring
        _message("enc/passive", public.encrypt(block[:, 0])),  # not its key
        _message("plain", np.arange(N)),  # ids of every row: no indicator
    ]
    vectors, _ = row_vectors(est, hidden, XV)
    assert vectors["party0"] == []
    # the same vector as a ciphertext under the receiver's (active) key
    readable = [_message("enc/active", public.encrypt(block[:, 0]))]
    assert _span(est, readable) > 0.5


def test_ciphertexts_are_read_with_the_logged_key_or_counted():
    est = _Vertical()
    block = XV[:, est.partition_.columns(1)]
    public, private = generate_keypair(512, warn=False)
    messages = [_message("enc/active", public.encrypt(block[:, j]))
                for j in range(2)]
    rows = accumulation(est, messages, XV)
    assert _rows(rows, "undecrypted", "party0")[0]["value"] == 2
    assert _rows(rows, "vectors", "party0")[0]["value"] == 0
    est._audit_log = {"keys": {"party0": private}}
    rows = accumulation(est, messages, XV)
    assert not _rows(rows, "undecrypted", "party0")
    span = _rows(rows, "span_r2", "party0", "party1")[0]["value"]
    assert span == pytest.approx(1.0)


def test_id_sets_are_indicators_and_minibatches_are_scattered():
    est = _Vertical()
    column = XV[:, est.partition_.columns(2)[0]]
    order = np.argsort(column)
    # instance spaces: the rows below each quantile of a victim column
    sets = [np.sort(order[:k]) for k in range(10, N, 10)]
    rows = accumulation(est, [_message("plain", s) for s in sets], XV)
    span = _rows(rows, "span_r2", "party0", "party2")[0]
    assert span["value"] > span["chance"] + 0.2
    # a float vector as long as the last id set: the values of those rows
    batch = np.sort(RNG.choice(N, 40, replace=False))
    messages = [_message("public", batch), _message("plain", column[batch])]
    vectors, _ = row_vectors(est, messages, XV)
    (phase, vector), = vectors["party0"]
    np.testing.assert_allclose(vector[batch], column[batch])
    assert not np.any(np.delete(vector, batch))


def test_undeclared_messages_are_read_as_plaintext():
    est = _Vertical()
    block = XV[:, est.partition_.columns(1)]
    messages = [_message("nowhere in the contract", block[:, j])
                for j in range(2)]
    assert _span(est, messages) == pytest.approx(1.0)


def test_a_quadratic_form_of_a_span_fixes_the_metric():
    """Products ``B w_t`` span the victim block; its squared row norms then
    fix ``G``, hence the block up to a rotation (gram_r2 1). Random values
    in place of the norms fix nothing."""
    own = XV[:, :2]
    victim = XV[:, 2:6]
    products = [("products", victim @ RNG.normal(size=4)) for _ in range(6)]
    norms = ("norms", np.einsum("ij,ij->i", victim, victim))
    scores = stack_scores(products + [norms], own, victim)
    assert scores["gram_r2"] == pytest.approx(1.0)
    assert scores["gram_chance"] < 0.5
    assert "'norms' on the span of 'products'" == scores["metric_from"]
    # the norms including the attacker's own part: it subtracts its own
    total = ("norms", norms[1] + np.einsum("ij,ij->i", own, own))
    assert stack_scores(products + [total], own, victim)["gram_r2"] \
        == pytest.approx(1.0)
    noise = ("norms", RNG.normal(size=N) ** 2)
    scores = stack_scores(products + [noise], own, victim)
    assert np.isnan(scores["gram_r2"]) and scores["metric_from"] == ""
    assert scores["span_r2"] == pytest.approx(1.0)


def test_a_horizontal_split_is_not_attacked():
    est = _Vertical(kind="horizontal")
    assert accumulation(est, [_message("plain", XV[:40, 0],
                                       sender="user1", receiver="user0")],
                        XV) == []


# -- the estimators -------------------------------------------------------------

def _recorded(estimator, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with record_messages() as rec:
            estimator.fit(X, y)
    return estimator, rec.messages


def _hyfdca_data():
    X, y = make_classification(240, 12, n_informative=6, random_state=0)
    return StandardScaler().fit_transform(X), y


@pytest.mark.filterwarnings("ignore:dual_curvature='paper'")
@pytest.mark.parametrize("curvature", ["row_norm", "paper"])
def test_hyfdca_squared_norms_are_flagged_and_their_absence_is_not(curvature):
    """``dual_curvature="row_norm"`` sends every row's squared norm (the
    planted leak): with the inner products' span it fixes each partner's
    block up to a rotation. The paper's printed curvature sends none: no
    metric is fixed, the span stays (the paper's, declared inherent)."""
    from skfed.linear_model import HyFDCAClassifier
    from skfed.partition import HybridPartition

    X, y = _hyfdca_data()
    est = HyFDCAClassifier(HybridPartition(2, 2), encryption=None,
                           random_state=0, solver="paper",
                           dual_curvature=curvature, max_iter=20)
    report = audit(est, X, y, attacks=["accumulation"])
    assert report.violations == []
    table = report.attacks
    assert set(table.attack) == {"accumulation"}
    spans = table[table.metric == "span_r2"]
    assert len(spans) == 4 and (spans.value > 0.99).all()
    gram = table[table.metric == "gram_r2"]
    if curvature == "row_norm":
        assert sorted(gram.attacker) == [f"client{k}" for k in range(4)]
        assert (gram.value > 0.9).all() and (gram.chance < 0.5).all()
    else:
        assert gram.empty


def _kernel_estimator(name):
    from skfed.kernel_methods import AVFKAMRanker, FDSKLClassifier

    if name == "fdskl":
        return FDSKLClassifier(partition=3, max_iter=8, batch_size=60,
                               n_components_per_iter=24, random_state=0)
    return AVFKAMRanker(partition=3, n_random_features=120, max_iter=20,
                        batch_size=8, features_per_step=16, random_state=0)


@pytest.mark.parametrize("name", ["fdskl", "avfkam"])
def test_kernel_methods_send_nothing_row_indexed_in_the_clear(name):
    X, y = make_classification(160, 12, n_informative=6, random_state=0)
    X = StandardScaler().fit_transform(X)
    est, messages = _recorded(_kernel_estimator(name), X, y)
    rows = accumulation(est, messages, X)
    assert [(r["attacker"], r["metric"], r["value"]) for r in rows] == [
        (f"party{k}", "vectors", 0.0) for k in range(3)]
    # a victim column planted in a message of the fit is caught
    column = X[:, est.partition_.columns(2)[0]]
    planted = list(messages) + [Message("party2", "party1", "leak", 0, 0, 0,
                                        (column,))]
    rows = accumulation(est, planted, X)
    assert _rows(rows, "vectors", "party1")[0]["value"] == 1
    assert _rows(rows, "span_r2", "party1", "party2")[0]["value"] > 0.2


@pytest.mark.slow
def test_secureboost_instance_spaces_tell_a_passive_party_about_others():
    """Section 7 of the paper: the instance spaces a passive party receives
    group rows; beyond leaf purity, their span explains part of what its
    own columns leave of the other parties' columns."""
    from skfed.ensemble import SecureBoostClassifier

    X, y = load_breast_cancer(return_X_y=True)
    keep = np.sort(np.random.RandomState(0).choice(len(X), 300,
                                                   replace=False))
    X, y = StandardScaler().fit_transform(X[keep]), y[keep]
    est, messages = _recorded(SecureBoostClassifier(
        n_estimators=5, partition=3, encryption=None, random_state=0), X, y)
    rows = accumulation(est, messages, X)
    passive = [r for r in _rows(rows, "span_r2")
               if r["attacker"] != "party0"]
    assert len(passive) == 4
    best = max(passive, key=lambda r: r["value"] - r["chance"])
    assert best["value"] > best["chance"] + 0.2
    assert all(r["value"] > 0 for r in _rows(rows, "vectors")
               if r["attacker"] != "party0")
