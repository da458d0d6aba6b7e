"""Planted leaks in FDSKL and AVFKAM, and their clean counterparts.

Each leak is planted with a monkeypatch on the masked two-tree sum or on the
parties' keys, the estimator is fitted while recording, and the leak must be
detected by an attack of :mod:`skfed.kernel_methods._attacks` crossing its
threshold (or by :func:`~skfed.privacy.check_messages`); the clean fit must
not be.

- "paper": every party draws its block of omega from the public seed and the
  masks are constant per feature (zero), as in the float protocol before ring
  masks: everybody reconstructs everything.
- "zero masks": private keys, no masks: intermediate tree nodes receive
  unmasked partial sums; with a few known rows they recover the columns.
- "public directions": fresh masks, but directions from the public seed: the
  receiver solves the linear system; inner nodes still see only masks.
"""

from types import SimpleNamespace

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.metrics.pairwise import euclidean_distances
from sklearn.preprocessing import StandardScaler

from skfed.federation import aggregation, record_messages
from skfed.kernel_approximation import spectral_directions
from skfed.kernel_methods import AVFKAMRanker, FDSKLClassifier, _vertical_features
from skfed.kernel_methods._attacks import (
    classical_mds,
    column_reconstruction,
    column_reconstruction_known_rows,
    column_reconstruction_known_seed,
    distance_mds,
    distance_reconstruction,
    kernel_from_angles,
    kernel_views,
    procrustes_rotation,
    squared_distances,
)
from skfed.kernel_methods._fdskl import _protocol as fdskl_protocol
from skfed.partition import VerticalPartition
from skfed.privacy import check_messages


#: below this an attack has failed (issue 15's acceptance threshold)
FAILED = 0.1
#: above this an attack has succeeded
SUCCEEDED = 0.9


def _data(n=160, d=12):
    informative, redundant = (6, 2) if d >= 8 else (d, 0)
    X, y = make_classification(n_samples=n, n_features=d, n_informative=informative,
                               n_redundant=redundant, random_state=0)
    return StandardScaler().fit_transform(X), y


def _estimator(name, q=3, **params):
    if name == "fdskl":
        return FDSKLClassifier(partition=q, max_iter=8, batch_size=60,
                               n_components_per_iter=24, random_state=0, **params)
    return AVFKAMRanker(partition=q, n_random_features=120, max_iter=20,
                        batch_size=8, features_per_step=16, random_state=0,
                        **params)


def _public_directions(state, feature_ids):
    # The paper's scheme: every entry of omega from the seed all parties know.
    return spectral_directions(state.basis_seed, state.columns, feature_ids,
                               state.kernel, state.gamma)


def _fit(name, leak=None, q=3, **params):
    X, y = _data()
    est = _estimator(name, q, **params)
    with pytest.MonkeyPatch.context() as mp:
        if leak in ("paper", "zero masks"):
            mp.setattr(aggregation, "_fresh_mask",
                       lambda shape, dtype: np.zeros(shape, dtype=dtype))
        if leak in ("paper", "public directions"):
            for module in (_vertical_features, fdskl_protocol):
                mp.setattr(module, "party_directions", _public_directions)
        with record_messages() as rec:
            est.fit(X, y)
    return est, rec.messages, X, y


_FITS = {}


def fitted(name, leak=None, q=3):
    if (name, leak, q) not in _FITS:
        _FITS[name, leak, q] = _fit(name, leak, q)
    return _FITS[name, leak, q]


def _scores(rows):
    """``{(attacker, victim, target): value}``."""
    return {(r["attacker"], r["victim"], r["target"]): r["value"] for r in rows}


def _receiver(est):
    return f"party{est.partition_.active_parties[0]}"


def _victim_columns(est, attacker):
    names = [f"party{k}" for k in range(est.partition_.n_parties)]
    return {(p, int(c)) for p in names if p != attacker
            for c in est.partition_.columns(names.index(p))}


@pytest.mark.filterwarnings("ignore:.*held-out")
@pytest.mark.parametrize("early_stopping", [False, True])
@pytest.mark.parametrize("active", [(0,), (0, 2)])
@pytest.mark.parametrize("name", ["fdskl", "avfkam"])
def test_default_fits_satisfy_the_contract(name, active, early_stopping):
    X, y = _data(n=80)
    est = _estimator(name, early_stopping=early_stopping).set_params(
        partition=VerticalPartition(3, active_parties=active))
    with record_messages() as rec:
        est.fit(X, y)
        est.predict(X[:20])
    assert any(m.phase.startswith("predict/") for m in rec.messages)
    assert check_messages(est, rec.messages, X, y) == []


@pytest.mark.parametrize("name", ["fdskl", "avfkam"])
def test_contract_catches_float_masks_an_extra_element_and_a_new_phase(name):
    est, messages, X, y = fitted(name)
    i = next(k for k, m in enumerate(messages) if m.phase.endswith("/T1"))
    m = messages[i]
    forged = list(messages)
    forged[i] = m._replace(payload=(m.payload[0].astype(float),))
    forged.append(m._replace(payload=(m.payload[0], X[:, 5])))
    forged.append(m._replace(phase="step/gossip"))
    found = check_messages(est, forged, X, y)
    assert any(v.index == i and "dtype kind 'f'" in v.found for v in found)
    assert any(v.index == len(messages) for v in found)
    assert any("undeclared phase 'step/gossip'" in v.found for v in found)


@pytest.mark.parametrize("name", ["fdskl", "avfkam"])
def test_every_party_builds_its_views_from_what_it_received(name):
    est, messages, X, _ = fitted(name)
    views = kernel_views(est, messages, len(X))
    receiver = _receiver(est)
    kinds = {(v.attacker, v.kind) for v in views}
    assert (receiver, "result") in kinds
    # with three parties, one of the passive parties is an inner T1 node
    assert any(a != receiver and k == "T1" for a, k in kinds)
    for v in views:
        assert v.circular and np.all((v.values >= 0) & (v.values < 2 * np.pi))
        assert len(v.rows) == len(v.features) == len(v.values)


@pytest.mark.parametrize("q", [3, 5])
@pytest.mark.parametrize("name", ["fdskl", "avfkam"])
def test_column_reconstruction_fails_on_a_clean_fit(name, q):
    if name == "fdskl" and q == 5:
        pytest.skip("five parties: AVFKAM covers the deeper trees")
    est, messages, X, y = fitted(name, q=q)
    scores = _scores(column_reconstruction(est, messages, X, y))
    receiver = _receiver(est)
    # the receiver is scored on every column of every other party ...
    reached = {(victim, int(target.split()[1]))
               for (attacker, victim, target) in scores if attacker == receiver}
    assert reached == _victim_columns(est, receiver)
    # ... and at least one inner node of the trees is scored too
    assert {a for a, _, _ in scores} - {receiver}
    assert max(scores.values()) <= FAILED, max(scores.items(), key=lambda t: t[1])


@pytest.mark.parametrize("q", [3, 5])
@pytest.mark.parametrize("name", ["fdskl", "avfkam"])
def test_paper_masks_and_shared_directions_are_caught(name, q):
    # The negative control: the float protocol's leak, planted.
    if name == "fdskl" and q == 5:
        pytest.skip("five parties: AVFKAM covers the deeper trees")
    est, messages, X, y = fitted(name, "paper", q=q)
    scores = _scores(column_reconstruction(est, messages, X, y))
    receiver = _receiver(est)
    inner = {a for a, _, _ in scores} - {receiver}
    assert inner, "no inner node got anything to attack"
    for attacker in [receiver, *inner]:
        mine = [v for (a, _, _), v in scores.items() if a == attacker]
        assert min(mine) >= SUCCEEDED, (attacker, min(mine))
    # with five parties a passive inner node reads another passive party
    assert any(a != receiver and v != receiver for a, v, _ in scores)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["fdskl", "avfkam"])
def test_zero_masks_are_caught_by_inner_nodes_with_known_rows(name):
    clean = _scores(column_reconstruction_known_rows(*fitted(name)))
    est, messages, X, y = fitted(name, "zero masks")
    leaky = _scores(column_reconstruction_known_rows(est, messages, X, y))
    receiver = _receiver(est)
    inner_clean = [v for (a, _, _), v in clean.items() if a != receiver]
    inner_leaky = [v for (a, _, _), v in leaky.items() if a != receiver]
    assert inner_clean and max(inner_clean) <= FAILED
    assert inner_leaky and min(inner_leaky) >= SUCCEEDED
    # without known rows the private directions still protect the columns
    plain = _scores(column_reconstruction(est, messages, X, y))
    assert max(plain.values()) <= FAILED


@pytest.mark.parametrize("name", ["fdskl", "avfkam"])
def test_public_directions_are_caught_at_the_receiver(name):
    est, messages, X, y = fitted(name, "public directions")
    scores = _scores(column_reconstruction(est, messages, X, y))
    receiver = _receiver(est)
    at_receiver = [v for (a, _, _), v in scores.items() if a == receiver]
    elsewhere = [v for (a, _, _), v in scores.items() if a != receiver]
    assert min(at_receiver) >= SUCCEEDED
    assert max(elsewhere) <= FAILED  # the fresh masks still protect them


@pytest.mark.parametrize("name", ["fdskl", "avfkam"])
def test_distances_stay_visible_to_the_receiver_only(name):
    # Inherent to kernel learning on shared rows: the receiver of
    # omega^T x + b estimates the kernel of the other parties' block.
    est, messages, X, y = fitted(name)
    scores = _scores(distance_reconstruction(est, messages, X, y))
    receiver = _receiver(est)
    assert max(v for (a, _, _), v in scores.items() if a == receiver) >= 0.5
    assert max(v for (a, _, _), v in scores.items() if a != receiver) <= 0.2
    leaky = _scores(distance_reconstruction(*fitted(name, "zero masks")))
    assert min(v for (a, _, _), v in leaky.items() if a != receiver) >= SUCCEEDED


@pytest.mark.parametrize("name", ["fdskl", "avfkam"])
def test_same_seed_same_predictions_fresh_masks_every_fit(name):
    a, msgs_a, X, _ = _fit(name)
    b, msgs_b, _, _ = _fit(name)
    np.testing.assert_array_equal(a.decision_function(X), b.decision_function(X))
    t1_a = [m.payload[0] for m in msgs_a if m.phase.endswith("/T1")]
    t1_b = [m.payload[0] for m in msgs_b if m.phase.endswith("/T1")]
    assert len(t1_a) == len(t1_b) > 0
    for pa, pb in zip(t1_a, t1_b):
        assert pa.shape == pb.shape
        if pa.size:
            assert np.mean(pa == pb) < 0.01


@pytest.mark.parametrize("name", ["fdskl", "avfkam"])
def test_os_keys_are_each_partys_own_and_change_the_model(name):
    X, y = _data()
    fits = [_estimator(name, party_keys="os").fit(X, y) for _ in range(2)]
    keys = [f._party_keys for f in fits]
    assert all(isinstance(k, bytes) and len(k) == 32 for k in keys[0])
    assert len(set(keys[0])) == 3 and not set(keys[0]) & set(keys[1])
    scores = [f.decision_function(X) for f in fits]
    assert not np.allclose(scores[0], scores[1])
    # the kept keys make prediction consistent with the fit
    np.testing.assert_array_equal(scores[0], fits[0].decision_function(X))
    seeded = _estimator(name).fit(X, y)
    assert seeded._party_keys == _estimator(name).fit(X, y)._party_keys


@pytest.mark.slow
@pytest.mark.parametrize("name", ["fdskl", "avfkam"])
def test_keys_from_random_state_fall_to_who_knows_it_os_keys_do_not(name):
    # party_keys="random_state" (simulation): the seed gives every key.
    est, messages, X, y = fitted(name)
    scores = _scores(column_reconstruction(est, messages, X, y,
                                           knows_random_state=True))
    receiver = _receiver(est)
    assert min(v for (a, _, _), v in scores.items() if a == receiver) >= SUCCEEDED
    # party_keys="os" (deployment): the same knowledge gives nothing.
    est, messages, X, y = _fit(name, party_keys="os")
    scores = _scores(column_reconstruction(est, messages, X, y,
                                           knows_random_state=True))
    assert max(scores.values()) <= FAILED


def test_zero_masks_over_one_column_parties_fail_the_contract_check():
    # Unmasked, a one-column party's T1 value is an affine image of its
    # column (as an angle read in two's complement): check_messages flags it.
    # (AVFKAM's sums are rows x features; FDSKL's are flattened (row,
    # feature) pairs, which the row-aligned check cannot read: the attacks
    # above cover FDSKL.)
    X, y = _data(n=80, d=3)
    X = X / 4  # small angles: no wrap around +-pi
    for leak, expected in ((None, False), ("zero masks", True)):
        est = _estimator("avfkam", gamma=1.0)
        with pytest.MonkeyPatch.context() as mp:
            if leak:
                mp.setattr(aggregation, "_fresh_mask",
                           lambda shape, dtype: np.zeros(shape, dtype=dtype))
            with record_messages() as rec:
                est.fit(X, y)
        found = [v for v in check_messages(est, rec.messages, X, y)
                 if "affine image" in v.found and "columns" in v.found]
        # the lone unmasked share a leaf sends to an inner T1 node (not the
        # receiver): an angle around 0, so it wraps unless read signed
        inner = [v for v in found if v.receiver != "party0"]
        assert bool(inner) == expected, found[:2]


@pytest.mark.filterwarnings("ignore:.*held-out")
@pytest.mark.parametrize("cache_size", [200, 0.01])
def test_the_replay_labels_every_fdskl_sum(cache_size):
    # Early stopping adds the held-out rows to some steps, and a small cache
    # recomputes the pairs of the rows past it: the replay (the protocol's
    # own bookkeeping run on the public history) labels every entry of
    # every recorded sum, and the planted leak is found through it.
    from skfed.kernel_methods._attacks import masked_sum_instances

    est, messages, X, y = _fit("fdskl", "paper", early_stopping=True,
                               cache_size=cache_size)
    sums = masked_sum_instances(est, messages, len(X))
    t1 = [m for m in messages if m.phase == "step/features/T1"]
    assert len(sums) * 2 == len(t1)
    held_out = est._privacy_public["validation_rows"]
    assert len(held_out) and any(np.isin(held_out, s.rows).all() for s in sums)
    scores = _scores(column_reconstruction(est, messages, X, y))
    assert min(scores.values()) >= SUCCEEDED


# ``distance_mds`` on FDSKL and AVFKAM: the receiver's kernel estimate gives
# the other parties' block up to a rotation; inner nodes get nothing unless a
# leak is planted. Also the audit's random_state-known row.

def _by_kind(rows):
    """``{(attacker, kind): [values]}``, kind from the target's brackets."""
    out = {}
    for r in rows:
        kind = r["target"].split("(")[1].rstrip(")")
        out.setdefault((r["attacker"], kind), []).append(r["value"])
    return out


def _aligned_r2(Y, T):
    Y, T = Y - Y.mean(axis=0), T - T.mean(axis=0)
    fit = Y @ procrustes_rotation(Y, T)
    return 1 - np.sum((fit - T) ** 2, axis=0) / np.sum(T**2, axis=0)


def test_mds_of_the_true_kernel_rebuilds_the_block():
    # the pipeline on a planted, exact view: with the true kernel, and with
    # 4,000 exact random features of it, the block comes back
    X, _ = _data(n=100, d=4)
    gamma = 0.1
    d2 = euclidean_distances(X, squared=True)
    exact = squared_distances(np.exp(-gamma * d2), np.full(d2.shape, 1e12), gamma)
    assert _aligned_r2(classical_mds(exact, 4), X).min() >= 0.999
    rng = np.random.RandomState(0)
    omega = rng.normal(scale=np.sqrt(2 * gamma), size=(4, 4000))
    V = (X @ omega + rng.uniform(0, 2 * np.pi, 4000)) % (2 * np.pi)
    rows, feats = np.divmod(np.arange(V.size), 4000)
    kernel, shared = kernel_from_angles(rows, feats, V.ravel(), 100, 4000)
    estimated = classical_mds(squared_distances(kernel, shared, gamma), 4)
    assert _aligned_r2(estimated, X).min() >= 0.9


def _pin_protocol_secrets(monkeypatch, seed=0):
    """Draw the parties' keys and the aggregation masks from a seeded
    generator (same distributions as the CSPRNG) for this test only.

    The inner nodes' oracle R^2 on masked sums is chance-level noise whose
    value moves with the masks and keys: over 40 fits with fresh CSPRNG
    draws it stayed under the 0.1 threshold in 39 (largest 0.109 and 0.113
    for FDSKL and AVFKAM), so with unpinned secrets the bound failed about
    one run in 40. Pinned, the check is reproducible and keeps the bound."""
    rng = np.random.RandomState(seed)
    monkeypatch.setattr(
        aggregation, "_fresh_mask",
        lambda shape, dtype: np.frombuffer(
            rng.bytes(dtype.itemsize * int(np.prod(shape, dtype=np.int64))),
            dtype=dtype).reshape(shape))
    monkeypatch.setattr(_vertical_features, "secrets",
                        SimpleNamespace(token_bytes=rng.bytes))


@pytest.mark.parametrize("name", ["fdskl", "avfkam"])
def test_the_receiver_gets_the_block_up_to_a_rotation_inner_nodes_nothing(
        name, monkeypatch):
    # a fit of its own: the shared cache's messages are read by other tests
    _pin_protocol_secrets(monkeypatch)
    est, messages, X, y = _fit(name, None, 3)
    rows = distance_mds(est, messages, X, y)
    scores = _by_kind(rows)
    receiver = _receiver(est)
    inner = {a for a, _ in scores} - {receiver}
    assert inner, "no inner node got anything to attack"
    # the receiver: an upper bound (oracle rotation), and without side
    # information well above a Gaussian guess
    assert np.mean(scores[receiver, "oracle rotation"]) >= 0.5
    chance = max(r["chance"] for r in rows if r["metric"] == "abs_corr")
    assert np.mean(scores[receiver, "ICA, no side information"]) >= chance + 0.3
    for a in inner:
        assert max(scores[a, "oracle rotation"]) <= FAILED
        assert np.mean(scores[a, "ICA, no side information"]) <= chance + 0.05


@pytest.mark.parametrize("name", ["fdskl", "avfkam"])
def test_unmasked_partial_sums_are_caught_by_inner_nodes(name):
    # The negative control: with the masks off, inner nodes receive
    # unmasked partial sums and embed the sending party's block.
    est, messages, X, y = fitted(name, "zero masks")
    scores = _by_kind(distance_mds(est, messages, X, y, n_known=12))
    inner = {a for a, _ in scores} - {_receiver(est)}
    assert inner
    for a in inner:
        assert np.mean(scores[a, "oracle rotation"]) >= 0.85
        assert min(scores[a, "oracle rotation"]) >= 0.75
        assert np.mean(scores[a, "12 known rows"]) >= 0.8


@pytest.mark.parametrize("name", ["fdskl", "avfkam"])
def test_the_audit_runs_both_settings_and_mds(name):
    est, messages, X, y = fitted(name)
    names = [getattr(a, "attack_name", a.__name__) for a in est._privacy_attacks()]
    assert {"column_reconstruction", "column_reconstruction_known_seed",
            "distance_mds"} <= set(names)
    # random_state=0 with party_keys="auto": keys from the seed, which the
    # attacker knows
    assert est.party_keys_ == "random_state"
    rows = column_reconstruction_known_seed(est, messages, X, y)
    assert {r["attack"] for r in rows} == {"column_reconstruction_known_seed"}
    receiver = _receiver(est)
    assert min(r["value"] for r in rows if r["attacker"] == receiver) >= SUCCEEDED
