"""``distance_mds`` on FDSKL and AVFKAM: the receiver's kernel estimate gives
the other parties' block up to a rotation; inner nodes get nothing unless a
leak is planted. Also the audit's random_state-known row."""

from types import SimpleNamespace

import numpy as np
import pytest
from sklearn.metrics.pairwise import euclidean_distances

from skfed.federation import aggregation
from skfed.kernel_methods import _vertical_features

from skfed.kernel_methods._attacks import (
    classical_mds,
    column_reconstruction_known_seed,
    distance_mds,
    kernel_from_angles,
    procrustes_rotation,
    squared_distances,
)

from .test_attacks import FAILED, SUCCEEDED, _data, _fit, _receiver, fitted


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
