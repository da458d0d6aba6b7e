"""The kernel estimators at scale, in small: FDSKL's traffic per step and
bounded checks, max_iter="auto", the pool of features; AVFKAM's kept
features; kernel k-means' peak arrays. (The sizes themselves are in
benchmarks/bench_scale.py.)"""

import tracemalloc
from types import SimpleNamespace

import numpy as np
import pytest
from sklearn.datasets import make_classification

from skfed._privacy_core._check import public_sizes
from skfed.cluster import _dspgd
from skfed.federation import record_messages
from skfed.kernel_methods import AVFKAMRanker, FDSKLClassifier, FDSKLRegressor
from skfed.kernel_methods._avfkam import _protocol as avfkam_protocol
from skfed.kernel_methods._fdskl import _estimator as fdskl_estimator
from skfed.kernel_methods._fdskl._contract import fdskl_contract
from skfed.partition import VerticalPartition
from skfed.privacy import check_messages

from .fdskl.test_estimator import _binary_data, _central_fdskl


# ----------------------------------------------------------------- FDSKL

@pytest.mark.parametrize("q, active, pool, m", [
    (2, (0,), 6, 3),        # the pool wraps at a step boundary
    (3, (0, 2), 7, 3),      # mid-step, with two owners taking turns
    (3, (1,), 9, 9),        # every pool feature at every step
])
def test_pool_model_equals_the_centralized_steps(q, active, pool, m):
    X, y = _binary_data()
    params = dict(loss="logistic", learning_rate=2.0, alpha=0.01, max_iter=12,
                  batch_size=16, n_components_per_iter=m, gamma=0.3)
    clf = FDSKLClassifier(partition=VerticalPartition(q, active_parties=active),
                          random_state=7, n_components=pool, **params).fit(X, y)
    decision = _central_fdskl(
        X, np.where(y == 1, 1.0, -1.0)[:, None], q, active, 7, "logistic",
        params["learning_rate"], params["alpha"], params["max_iter"],
        params["batch_size"], m, "rbf", 0.3, pool=pool)
    np.testing.assert_allclose(clf.decision_function(X), decision(X)[:, 0],
                               rtol=1e-6, atol=1e-7)
    # each owner keeps one coefficient per pool feature it touched
    for store in clf.coef_stores_:
        if store is not None:
            assert len(store) == len(np.unique(store.feature_ids)) <= pool
    assert clf.n_components_ <= pool * len(active)


def _pool_fit(n, **params):
    X, y = make_classification(n, 6, n_informative=4, random_state=0)
    return FDSKLClassifier(partition=3, n_components=48,
                           n_components_per_iter=48, batch_size=16,
                           max_iter=20, early_stopping=False, random_state=0,
                           **params).fit(X, y)


def test_bytes_per_step_do_not_grow_with_the_rows():
    # With a pool each step costs B rows x n_components pairs, at any n.
    small, large = _pool_fit(200), _pool_fit(1600)
    for phase in ("step/features/T1", "step/features/T2", "step/decision"):
        assert (large.communication_.by_phase[phase]["bytes"]
                == small.communication_.by_phase[phase]["bytes"])
    ratio = large.communication_.total_bytes / small.communication_.total_bytes
    assert ratio < 1.01
    # The fresh features of the paper's loop: a step re-evaluates every
    # earlier feature at rows seen for the first time, so the traffic of
    # the same steps is larger on more rows (the rows of the small table
    # come back, with their saved sums).
    X, y = make_classification(1600, 6, n_informative=4, random_state=0)
    fresh = [FDSKLClassifier(partition=3, batch_size=16, max_iter=20,
                             early_stopping=False, random_state=0)
             .fit(X[:n], y[:n]).communication_.total_bytes for n in (40, 1600)]
    assert fresh[1] > 1.5 * fresh[0]


def test_checks_score_a_bounded_sample_of_held_out_rows(monkeypatch):
    monkeypatch.setattr(fdskl_estimator, "MAX_VALIDATION_ROWS", 30)
    X, y = make_classification(600, 6, n_informative=4, random_state=0)
    with record_messages() as rec:
        clf = FDSKLClassifier(partition=2, early_stopping=True,
                              validation_fraction=0.5, batch_size=16,
                              max_iter=30, random_state=0).fit(X, y)
    # f of a step's rows goes to the label holder: its batch, and at a
    # check the 30 held-out rows (every party adds them itself)
    sizes = {len(m.payload[0]) for m in rec.messages
             if m.phase == "step/decision"}
    assert sizes == {16, 16 + 30}
    assert len(clf.validation_score_) > 1


def test_max_iter_auto_counts_epochs_with_a_floor():
    clf = FDSKLClassifier(max_iter="auto")
    assert clf._resolve_max_iter(256, 8_000) == 500            # the floor
    assert clf._resolve_max_iter(256, 64_000) == 1250          # 5 epochs
    assert clf._resolve_max_iter(100, 10_001) == 501
    assert FDSKLClassifier(max_iter=70)._resolve_max_iter(256, 10**6) == 70
    X, y = _binary_data(n=200)
    fitted = FDSKLClassifier(partition=2, max_iter="auto", batch_size=100,
                             n_components_per_iter=2, random_state=0).fit(X, y)
    assert fitted.n_iter_ == 500


def test_auto_settings_choose_the_pool_above_10000_rows():
    # Up to 10,000 rows the defaults are the former ones (the paper's fresh
    # features); above, a pool of 2,000 updated whole at every step, in
    # batches of 32 for 5 epochs: at 64,000 rows (63,000 training rows
    # beside 1,000 held out) 9,844 steps of 32 x 2,000 pairs.
    fresh = (None, 32, 256)
    for n_samples, n_train in [(569, 569), (10_000, 10_000)]:
        assert FDSKLClassifier()._resolve_schedule(n_samples, n_train) == (
            *fresh, 500)
        assert FDSKLRegressor()._resolve_schedule(n_samples, n_train) == (
            *fresh, 800)
    assert FDSKLClassifier()._resolve_schedule(10_001, 9_001) == (
        2000, 2000, 32, 1407)
    assert FDSKLClassifier()._resolve_schedule(64_000, 63_000) == (
        2000, 2000, 32, 9844)
    assert FDSKLRegressor()._resolve_schedule(10**6, 999_000) == (
        2000, 2000, 32, 156_094)
    # The paper's loop stays selectable at any size: the former defaults
    # given explicitly, or the "auto" values that follow a given pool.
    former = dict(n_components=None, n_components_per_iter=32, batch_size=256,
                  max_iter=500)
    assert FDSKLClassifier(**former)._resolve_schedule(64_000, 63_000) == (
        *fresh, 500)
    assert FDSKLClassifier(n_components=None)._resolve_schedule(
        64_000, 63_000) == (*fresh, 1231)
    assert FDSKLClassifier(n_components=300)._resolve_schedule(500, 500) == (
        300, 300, 32, 500)
    assert FDSKLClassifier(n_components=300, n_components_per_iter=500,
                           batch_size=8)._resolve_schedule(500, 500) == (
        300, 300, 8, 500)


def test_default_step_traffic_does_not_grow_above_10000_rows():
    # The defaults above 10,000 rows: a step costs B x 2,000 pairs whatever
    # the rows (before, 256 rows x every fresh feature since each row's last
    # visit: 6.2 times the bytes per step of 8,000 rows at 64,000).
    X, y = make_classification(30_000, 6, n_informative=4, random_state=0)
    fits = [FDSKLClassifier(partition=3, max_iter=6, early_stopping=False,
                            random_state=0).fit(X[:n], y[:n])
            for n in (10_001, 30_000)]
    for fit in fits:
        assert (fit.pool_size_, fit.n_components_per_iter_, fit.batch_size_) == (
            2000, 2000, 32)
        assert fit.n_components_ == 2000
    for phase in ("step/features/T1", "step/features/T2", "step/decision"):
        assert (fits[0].communication_.by_phase[phase]["bytes"]
                == fits[1].communication_.by_phase[phase]["bytes"])
    # one Algorithm 3 sum per (row, feature) and party but the owner: 4
    # bytes per angle over T1 and T2, a step's 32 x 2,000 pairs at most
    per_step = fits[1].communication_.by_phase["step/features/T1"]["bytes"] / 6
    assert per_step <= 2 * 4 * 32 * 2000 * 1.01
    # At 10,000 rows the defaults are the former ones: the same model.
    former = dict(n_components=None, n_components_per_iter=32, batch_size=256)
    small = [FDSKLClassifier(partition=3, max_iter=6, random_state=0, **params)
             .fit(X[:10_000], y[:10_000]) for params in ({}, former)]
    assert small[0].pool_size_ is None
    np.testing.assert_array_equal(small[0].decision_function(X[:500]),
                                  small[1].decision_function(X[:500]))


def test_max_iter_auto_fit_holds_its_contract(monkeypatch):
    # max_iter="auto" (the default) is resolved in the contract's sizes
    # (it raised on int("auto") before); 5 epochs of 2 batches here.
    monkeypatch.setattr(FDSKLClassifier, "_auto_min_steps", 4)
    X, y = _binary_data(n=80)
    with record_messages() as rec:
        est = FDSKLClassifier(partition=3, max_iter="auto",
                              n_components_per_iter=2, batch_size=40,
                              random_state=0).fit(X, y)
    assert est.n_iter_ == 10
    assert list(check_messages(est, rec.messages, X, y)) == []
    # the size bound of a masked sum is enforced: rows x the 20 feature
    # ids (before, it could not be evaluated and was skipped)
    (rule,) = fdskl_contract(est).rules_for("step/features/T1")
    assert rule.elements[0].size_bound(public_sizes(est, X)) == 80 * 20


def test_a_step_uses_at_most_the_pool():
    # n_components_per_iter is capped at the pool: every step updates the
    # whole pool of 4 features, as with n_components_per_iter=4
    X, y = _binary_data()
    params = dict(partition=2, n_components=4, max_iter=6, batch_size=16,
                  random_state=0)
    capped = FDSKLClassifier(n_components_per_iter=8, **params).fit(X, y)
    exact = FDSKLClassifier(n_components_per_iter=4, **params).fit(X, y)
    assert capped.n_components_ == 4
    np.testing.assert_array_equal(capped.decision_function(X),
                                  exact.decision_function(X))


# ---------------------------------------------------------------- AVFKAM

def test_avfkam_keeps_float32_features_of_the_rows_it_draws_only():
    rng = np.random.RandomState(0)
    y = np.where(rng.rand(5000) < 0.1, 1.0, -1.0)
    state = SimpleNamespace(y=y)
    seeds = np.arange(300)
    ids = avfkam_protocol.plan_steps(state, 1, 8, 16, seeds, 50,
                                     keep_all_rows=False)
    avfkam_protocol.start_features(state, len(ids))
    # at most 2 B rows per step are drawn: the kept block follows the steps
    assert state.Z.shape == (len(state.kept_rows), len(ids))
    assert len(state.kept_rows) <= 2 * 8 * 50 < len(y)
    assert state.Z.dtype == np.float32
    every = SimpleNamespace(y=y)
    avfkam_protocol.plan_steps(every, 1, 8, 16, seeds, 50)
    assert len(every.kept_rows) == len(y)  # several active parties


def test_avfkam_preprocessing_runs_in_chunks_of_rows(monkeypatch):
    monkeypatch.setattr(avfkam_protocol, "CHUNK_VALUES", 4000)
    X, y = make_classification(900, 6, weights=[0.8], random_state=0)
    with record_messages() as rec:
        est = AVFKAMRanker(partition=2, n_random_features=40, batch_size=4,
                           features_per_step=8, max_iter=20,
                           random_state=0).fit(X, y)
    n_ids = 40  # 20 steps x 8 seeds draw (nearly) all of them
    sums = [m for m in rec.messages if m.phase == "preprocess/T1"]
    chunk = avfkam_protocol.preprocess_chunk(n_ids)
    assert len(sums) >= -(-900 // chunk)
    # no message of the preprocessing carries more than a chunk of rows
    assert max(np.size(m.payload[0]) for m in sums) <= chunk * n_ids
    assert est.score(X, y) > 0.7


# ------------------------------------------------------- kernel k-means

def test_kernel_kmeans_w_is_built_in_place(monkeypatch):
    rng = np.random.RandomState(0)
    n, D, r = 4000, 100, 6
    state = SimpleNamespace(X=rng.normal(size=(n, 5)), B=rng.normal(size=(n, r)),
                            n_random_features=D, gamma=0.2,
                            users_key=b"k" * 32)
    eta = 0.25
    tracemalloc.start()
    _dspgd.user_form_w(state, 3, eta)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    W = state.W
    assert W.shape == (n, D + r)
    # W itself and one block of rows (about 2 million values), not copies
    # of the n x D features
    assert peak < W.nbytes + 9 * 2**21 + 2**20
    A = _dspgd.RandomFourierBasis(_dspgd.feature_seed(state.users_key, 3),
                                  gamma=0.2).transform(state.X, np.arange(D))
    np.testing.assert_allclose(W[:, :D], np.sqrt(eta / D) * A, rtol=1e-12,
                               atol=1e-14)
    np.testing.assert_allclose(W[:, D:], np.sqrt(1 - eta) * state.B)


def test_kernel_kmeans_out_of_sample_moment_by_blocks():
    rng = np.random.RandomState(1)
    n, width = 6000, 1000
    state = SimpleNamespace(X=rng.normal(size=(n, 4)), H=rng.normal(size=(n, 3)),
                            gamma=0.3, users_key=b"u" * 32)
    tracemalloc.start()
    total = _dspgd.user_oos_moment(state, width)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    # one block of features (2^21 values, and its finite check: a byte per
    # value), never the n x width matrix
    assert peak < 9 * 2**21 + 2**20 < 8 * n * width
    A = _dspgd.RandomFourierBasis(_dspgd.oos_seed(state.users_key),
                                  gamma=0.3).transform(state.X, np.arange(width))
    np.testing.assert_allclose(total, state.H.T @ A, rtol=1e-10, atol=1e-8)


def test_pool_sums_replay_and_the_contract_holds():
    # The privacy replay rebuilds every masked sum of a pool fit from the
    # public history (the seeds come back, one broadcast per step).
    from skfed.kernel_methods._attacks import masked_sum_instances
    from skfed.privacy import check_messages

    X, y = _binary_data(n=80)
    with record_messages() as rec:
        est = FDSKLClassifier(partition=3, n_components=10,
                              n_components_per_iter=4, max_iter=8,
                              batch_size=8, random_state=0).fit(X, y)
    sums = masked_sum_instances(est, rec.messages, len(X))
    t1 = [m for m in rec.messages if m.phase == "step/features/T1"]
    assert len(sums) * 2 == len(t1) > 0
    assert max(int(s.features.max()) for s in sums if len(s.features)) == 9
    assert list(check_messages(est, rec.messages, X, y)) == []
