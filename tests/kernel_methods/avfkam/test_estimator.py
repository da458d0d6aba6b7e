"""AVFKAMRanker: the protocol against a central reference, asynchrony,
stragglers, privacy, bad input and the sklearn surface."""

import itertools
import pickle

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.datasets import make_classification
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import GridSearchCV, train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from skfed.base import party_seeds
from skfed.federation import record_messages
from skfed.kernel_approximation import keyed_directions
from skfed.kernel_methods import AVFKAMRanker
from skfed.kernel_methods._avfkam import _protocol as protocol
from skfed.kernel_methods._vertical_features import (
    party_name,
    reference_features,
    resolve_party_keys,
)
from skfed.losses import get_loss
from skfed.partition import VerticalPartition
from skfed.privacy import check_messages


SMALL = dict(n_random_features=150, batch_size=8, features_per_step=16,
             max_iter=120)


def _data(n=160, d=6, seed=0, weights=(0.85,)):
    X, y = make_classification(n_samples=n, n_features=d, n_informative=4,
                               n_redundant=0, weights=list(weights),
                               random_state=seed)
    return StandardScaler().fit_transform(X), y


def _central_features(X, ids, names, receiver, basis_seed, key_seeds, gamma):
    """phi_j(x) as the masked protocol defines it, computed in one place
    (each party's directions and phases from its key, party_keys="random_state")."""
    part = VerticalPartition(len(names)).resolve(X)
    keys = resolve_party_keys("random_state", key_seeds)
    return reference_features(X, part, keys, ids, receiver, basis_seed, "rbf",
                              gamma)


def _reference_synchronous(X, y, est, q, active):
    """The synchronous algorithm (eq. 5-6, rounds) in plain numpy."""
    seeds = party_seeds(est.random_state, 2 + 2 * q)
    basis_seed, offset_seeds, loop_seeds = seeds[0], seeds[2:2 + q], seeds[2 + q:]
    names = [party_name(k) for k in range(q)]
    gamma = 1.0 / (X.shape[1] * X.var())
    D = est.n_random_features
    # the active parties split the pool: seed j belongs to rank j mod m
    pools = {a: protocol.sub_pool(D, r, len(active)) for r, a in enumerate(active)}
    Z = {a: _central_features(X, pools[a], names, party_name(a), basis_seed,
                              offset_seeds, gamma) for a in active}
    w = {a: np.zeros(len(pools[a])) for a in active}
    rng = {a: np.random.RandomState(loop_seeds[a]) for a in active}
    ys = np.where(y == 1, 1.0, -1.0)
    pos, neg = np.flatnonzero(ys > 0), np.flatnonzero(ys < 0)
    loss = get_loss(est.loss, pairwise=True)
    lr = est.learning_rate_  # "auto" resolved by the fit
    factor = 1 - lr * est.alpha
    m, done = len(active), 0
    drawn = np.zeros(len(y), dtype=bool)
    while done < est.max_iter:
        workers = active[:est.max_iter - done]
        new = {}
        for a in workers:
            p = pos[rng[a].randint(len(pos), size=est.batch_size)]
            n = neg[rng[a].randint(len(neg), size=est.batch_size)]
            drawn[p] = drawn[n] = True
            j = rng[a].choice(len(pools[a]), size=est.features_per_step,
                              replace=False)
            f = sum(Z[b][np.r_[p, n]] @ w[b] for b in active)
            slope = loss.derivative(f[:len(p)] - f[len(p):])
            diff = Z[a][np.ix_(p, j)] - Z[a][np.ix_(n, j)]
            new[a] = (j, -lr * (slope @ diff) / (len(p) * len(j)))
        for b in active:
            w[b] *= factor ** len(workers)
        for a, (j, alpha) in new.items():
            np.add.at(w[a], j, alpha)
        done += len(workers)
    # The rows whose features the parties keep: with one active party only
    # those its training draws; with several, every row.
    kept = drawn if len(active) == 1 else np.ones(len(y), dtype=bool)
    return w, Z, pools, kept


def _pool_coef(store, pool):
    """A fitted store's coefficients over the party's share of the pool."""
    out = np.zeros(len(pool))
    out[np.searchsorted(pool, store.feature_ids)] = store.coef[:, 0]
    return out


@pytest.mark.parametrize("q, active", [(2, (0,)), (3, (0, 2))])
def test_synchronous_fit_equals_central_reference(q, active):
    X, y = _data()
    est = AVFKAMRanker(VerticalPartition(q, active_parties=active),
                       asynchronous=False, random_state=3,
                       **{**SMALL, "max_iter": 41})
    est.fit(X, y)
    w, Z, pools, kept = _reference_synchronous(X, y, est, q, list(active))
    for a in active:
        # angles are added in Z_{2^32} (resolution 1.5e-9 rad)
        np.testing.assert_allclose(
            _pool_coef(est.coefficient_stores_[a], pools[a]), w[a],
            rtol=1e-6, atol=1e-9)
    for k in range(q):
        if k not in active:
            assert len(est.coefficient_stores_[k]) == 0
    f = sum(Z[a] @ w[a] for a in active)
    fk, yk = f[kept], y[kept]
    slope, expected_threshold, _ = protocol.platt_scaling(fk, yk == 1)
    # (the kept features are float32: 7 digits)
    assert est.threshold_ == pytest.approx(expected_threshold, rel=1e-5, abs=1e-7)
    assert est.calibration_slope_ == pytest.approx(slope, rel=1e-4)
    # prediction on the training rows recomputes the same features (in
    # float64: the coefficients learnt from float32 features agree to ~1e-7)
    np.testing.assert_allclose(est.decision_function(X), f - expected_threshold,
                               atol=1e-6)
    assert est.n_iter_ == 41
    assert sum(est.n_iter_per_party_.values()) == 41


def test_asynchronous_with_one_active_party_equals_synchronous():
    X, y = _data()
    a = AVFKAMRanker(3, random_state=0, **SMALL).fit(X, y)
    s = AVFKAMRanker(3, random_state=0, asynchronous=False, **SMALL).fit(X, y)
    np.testing.assert_array_equal(a.coefficient_stores_[0].dense_coef,
                                  s.coefficient_stores_[0].dense_coef)
    assert not a.__sklearn_tags__().non_deterministic


def test_one_step_is_the_hand_computed_update():
    # f = 0 before the first step, so d = 0 and l'(0) = -2: every coefficient
    # is 2 lr (phi_j(x+) - phi_j(x-)) averaged over pairs, over seeds.
    X, y = _data()
    est = AVFKAMRanker(2, random_state=1, max_iter=1, n_random_features=50,
                       batch_size=1, features_per_step=1, learning_rate=0.3,
                       asynchronous=False).fit(X, y)
    w, Z, _, _ = _reference_synchronous(X, y, est, 2, [0])
    j = np.flatnonzero(w[0])
    assert len(j) == 1 and est.coefficient_stores_[0].feature_ids.tolist() == j.tolist()
    coef = est.coefficient_stores_[0].coef[0, 0]
    ratio = coef / (2 * 0.3)
    # ratio must be phi_j(x+) - phi_j(x-) for some positive and negative row
    diffs = Z[0][y == 1, j[0]][:, None] - Z[0][y == 0, j[0]][None, :]
    assert np.min(np.abs(diffs - ratio)) < 1e-7


def test_auc_close_to_centralized_kernel_baseline():
    X, y = make_classification(n_samples=500, n_features=8, n_informative=5,
                               weights=[0.9], random_state=2)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.4, stratify=y,
                                          random_state=0)
    scaler = StandardScaler().fit(Xtr)
    Xtr, Xte = scaler.transform(Xtr), scaler.transform(Xte)
    svc = SVC(gamma="scale", class_weight="balanced").fit(Xtr, ytr)
    base = roc_auc_score(yte, svc.decision_function(Xte))
    est = AVFKAMRanker(VerticalPartition(4, active_parties=(0, 1)),
                       random_state=0, max_iter=400).fit(Xtr, ytr)
    assert est.gamma_ == pytest.approx(1 / (8 * Xtr.var()))
    assert est.score(Xte, yte) > base - 0.02
    assert est.score(Xte, yte) == roc_auc_score(yte, est.decision_function(Xte))


def test_asynchronous_runs_are_close():
    X, y = _data(n=240)
    part = VerticalPartition(3, active_parties=(0, 1))
    # Each active party draws from its half of the pool: when thread timing
    # gives one party nearly every update (seen 180/20 under load), the model
    # lives on that half, so the halves must not be tiny (75 seeds each gave
    # 0.94 against 0.97; 150 each stay within 0.005 at either extreme).
    est = AVFKAMRanker(part, random_state=0,
                       **{**SMALL, "max_iter": 200, "n_random_features": 300})
    assert est.__sklearn_tags__().non_deterministic
    assert not est.set_params(asynchronous=False).__sklearn_tags__().non_deterministic
    aucs = []
    for _ in range(3):
        fitted = clone(est).set_params(asynchronous=True).fit(X, y)
        assert fitted.n_iter_ == 200
        assert all(v > 0 for v in fitted.n_iter_per_party_.values())
        aucs.append(fitted.score(X, y))
    assert max(aucs) - min(aucs) < 0.02


def test_party_delays_as_dict_and_checkpoints():
    X, y = _data()
    est = AVFKAMRanker(2, party_delays={0: 2}, random_state=0, **SMALL).fit(X, y)
    assert est.checkpoint_iters_[-1] == est.n_iter_
    assert np.all(np.diff(est.checkpoint_times_) >= 0)
    stages = list(est.staged_decision_function(X))
    assert len(stages) == len(est.checkpoint_iters_)
    np.testing.assert_allclose(stages[-1], est.decision_function(X))


def _shares_a_column(arr, reference, tol=1e-8):
    """Whether some column of ``arr`` equals some column of ``reference``."""
    gaps = np.abs(arr[:, :, None] - reference[:, None, :]).max(axis=0)
    return bool((gaps < tol).any())


def test_shares_a_column_detects_a_leak():
    rng = np.random.RandomState(0)
    ref = rng.normal(size=(5, 3))
    assert _shares_a_column(np.c_[rng.normal(size=5), ref[:, 2]], ref)
    assert not _shares_a_column(ref + 1e-3, ref)


@pytest.mark.parametrize("asynchronous", [True, False])
def test_privacy_of_recorded_messages(asynchronous):
    X, y = _data(n=60, d=6)
    q, active = 4, (0, 1)
    part = VerticalPartition(q, active_parties=active)
    est = AVFKAMRanker(part, asynchronous=asynchronous, random_state=0,
                       **{**SMALL, "n_random_features": 40, "max_iter": 20})
    with record_messages() as rec:
        est.fit(X, y)
        est.decision_function(X[:7])
    resolved = est.partition_
    ids = np.arange(40)
    partial = [X[:, resolved.columns(k)] @ keyed_directions(
        est._party_keys[k], len(resolved.columns(k)), ids, "rbf", est.gamma_)
        for k in range(q)]
    forbidden = []  # sums of unmasked partial products of a proper subset
    for r in range(1, q):
        for subset in itertools.combinations(range(q), r):
            forbidden.append(sum(partial[k] for k in subset))
    labels = [y, 1 - y, np.where(y == 1, 1.0, -1.0), np.where(y == 1, -1.0, 1.0)]
    checked = 0
    assert rec.messages
    for m in rec.messages:
        arrays = [np.asarray(a, dtype=float) for a in m.payload
                  if isinstance(a, np.ndarray)]
        receiver = int(m.receiver.removeprefix("party"))
        if receiver not in active:
            # passive parties take no part in training: no row ids, no scores
            assert not m.phase.startswith(("train", "threshold")), m.phase
        for arr in arrays:
            if arr.ndim != 2 or arr.shape[0] != X.shape[0]:
                continue
            checked += 1
            for k in range(q):
                if k != receiver:
                    assert not _shares_a_column(arr, X[:, resolved.columns(k)])
            for bad in forbidden:
                assert not _shares_a_column(arr, bad), "unmasked partial product"
        for arr in arrays:
            if arr.shape == y.shape and receiver not in active:
                for lab in labels:
                    assert not np.array_equal(arr, lab), "labels to a passive party"
    assert checked >= 4  # the masked sums of the preprocessing were inspected
    phases = {m.phase for m in rec.messages}
    assert {"preprocess/T1", "preprocess/T2", "train/scores",
            "train/decay"} <= phases
    # passive parties did receive the masked preprocessing sums
    assert any(m.receiver == "party2" for m in rec.messages)


def test_logistic_loss_and_pandas_column_groups_in_grid_search():
    X, y = _data()
    df = pd.DataFrame(X, columns=[f"c{i}" for i in range(X.shape[1])])
    part = VerticalPartition([["c0", "c1"], ["c2", "c3"], ["c4", "c5"]],
                             active_parties=(0, 2))
    pipe = make_pipeline(StandardScaler().set_output(transform="pandas"),
                         AVFKAMRanker(part, loss="logistic", random_state=0,
                                      asynchronous=False, **SMALL))
    grid = GridSearchCV(pipe, {"avfkamranker__learning_rate": [0.1, 0.4]}, cv=2)
    grid.fit(df, y)
    ranker = grid.best_estimator_[-1]
    assert list(ranker.feature_names_in_) == list(df.columns)
    assert ranker.partition_.column_groups == [[0, 1], [2, 3], [4, 5]]
    # GridSearchCV's default scoring is the estimator's score: ROC AUC
    auc = roc_auc_score(y, grid.best_estimator_.decision_function(df))
    assert grid.best_estimator_.score(df, y) == pytest.approx(auc)
    assert auc > 0.85


def test_pickle_round_trip():
    X, y = _data()
    est = AVFKAMRanker(2, random_state=0, **SMALL).fit(X, y)
    again = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(again.decision_function(X),
                                  est.decision_function(X))
    np.testing.assert_array_equal(again.predict(X), est.predict(X))
    assert set(np.unique(est.predict(X))) <= set(est.classes_)


def test_string_labels_rank_the_second_class():
    X, y = _data()
    labels = np.array(["no", "yes"])[y]
    est = AVFKAMRanker(2, random_state=0, **SMALL).fit(X, labels)
    assert est.classes_.tolist() == ["no", "yes"]
    assert est.score(X, labels) > 0.85


@pytest.mark.parametrize("params, y_kind, match", [
    ({}, "multiclass", "Only binary classification"),
    ({}, "single", "one class"),
    ({"party_delays": [1, 2, 3]}, "binary", "one per party"),
    ({"party_delays": [1, 0.5]}, "binary", ">= 1"),
    ({"n_random_features": 1,
      "partition": VerticalPartition(2, active_parties=(0, 1))}, "binary",
     "below the number of active"),
    ({"party_delays": {5: 2}}, "binary", "names party 5"),
    ({"loss": "hinge"}, "binary", "loss"),
    ({"learning_rate": 0}, "binary", "learning_rate"),
])
def test_bad_input_errors(params, y_kind, match):
    X, y = _data()
    if y_kind == "multiclass":
        y = np.arange(len(y)) % 3
    elif y_kind == "single":
        y = np.zeros(len(y))
    with pytest.raises(ValueError, match=match):
        AVFKAMRanker(**{"partition": 2, **SMALL, **params}).fit(X, y)


@pytest.mark.parametrize("asynchronous", [True, False])
def test_failure_in_a_party_is_reported_with_its_name(monkeypatch, asynchronous):
    def broken(state, *args):
        if state.index == 1:
            raise FloatingPointError("boom")
        return original(state, *args)

    original = protocol.prepare_update
    monkeypatch.setattr(protocol, "prepare_update", broken)
    if asynchronous:
        monkeypatch.setattr(protocol, "update", lambda state, f, s, factor:
                            broken(state, f, s))
    X, y = _data()
    est = AVFKAMRanker(VerticalPartition(3, active_parties=(0, 1)),
                       asynchronous=asynchronous, **SMALL)
    with pytest.raises(RuntimeError, match="party1.*boom|boom.*party1"):
        est.fit(X, y)


def test_privacy_check_would_catch_unmasked_sums(monkeypatch):
    # Negative control: without the fresh ring masks the T1 partial sums are
    # plain partial products (as angles), and the column check finds them.
    from skfed.federation import aggregation

    monkeypatch.setattr(aggregation, "_fresh_mask",
                        lambda shape, dtype: np.zeros(shape, dtype=dtype))
    X, y = _data(n=60, d=6)
    est = AVFKAMRanker(VerticalPartition(4, active_parties=(0, 1)),
                       random_state=0, **{**SMALL, "n_random_features": 40,
                                          "max_iter": 5})
    with record_messages() as rec:
        est.fit(X, y)
    part = est.partition_
    partial = [np.mod(X[:, part.columns(k)] @ keyed_directions(
        est._party_keys[k], len(part.columns(k)), np.arange(40), "rbf",
        est.gamma_), 2 * np.pi) for k in range(4)]
    turn = 2 * np.pi / 2.0**32
    assert any(_shares_a_column(a.astype(float) * turn, partial[k], tol=1e-6)
               for m in rec.messages if m.phase == "preprocess/T1"
               for a in m.payload if isinstance(a, np.ndarray)
               for k in range(4))


def test_pooled_store_sums_per_seed_decays_lazily_and_unpickles_writable():
    store = protocol.PooledCoefficientStore(5)
    store.add([1, 3], [1.0, 2.0])
    store.decay(0.5)
    store.add([3], [4.0])
    np.testing.assert_allclose(store.dense_coef, [0, 0.5, 0, 5.0, 0])
    assert store.feature_ids.tolist() == [1, 3] and len(store) == 2
    np.testing.assert_allclose(store.coef.ravel(), [0.5, 5.0])
    # a backend may unpickle the party's store with read-only arrays (Ray's
    # object store does): the store must still take updates in place
    attributes = pickle.loads(pickle.dumps(store.__dict__))
    for name in ("_dense", "_used"):
        attributes[name].setflags(write=False)
    again = object.__new__(protocol.PooledCoefficientStore)
    again.__setstate__(attributes)
    again.add([0], [1.0])
    np.testing.assert_allclose(again.dense_coef, [1.0, 0.5, 0, 5.0, 0])


# --------------------------------------------------------------------------
# Step size, divergence guard and early stopping (issue 16).
# --------------------------------------------------------------------------

def test_auto_learning_rate():
    X, y = _data()
    est = AVFKAMRanker(2, random_state=0, **SMALL).fit(X, y)
    # (1 - d)^2 has S = 2; (phi(x+) - phi(x-))^2 <= 8 with mean <= 2: the
    # curvature bound 1 / (S c + alpha), or the random-feature noise bound
    # B m / (S kappa n) with n = min(160 rows, 150 pool features).
    curvature = 1 / (2 * (2 + 6 / (8 * 16)) + est.alpha)  # default alpha
    noise = 8 * 16 / (2 * 2 * 150)
    assert est.learning_rate_ == pytest.approx(min(curvature, noise))
    big = AVFKAMRanker(2, random_state=0, **{**SMALL, "batch_size": 64,
                                             "max_iter": 2}).fit(X, y)
    assert big.learning_rate_ == pytest.approx(
        1 / (2 * (2 + 6 / (64 * 16)) + est.alpha))
    exact = AVFKAMRanker(2, random_state=0, batch_size=1, features_per_step=1,
                         max_iter=2, n_random_features=150).fit(X, y)
    # The paper's loop: the random-feature noise bound B m / (S kappa n),
    # n the smaller of the 160 rows and the pool of 150 features.
    assert exact.learning_rate_ == pytest.approx(1 / (2 * 2 * 150))


def test_impossible_decay_is_refused_before_any_party_starts():
    X, y = _data()
    with record_messages() as rec, pytest.raises(ValueError,
                                                 match="learning_rate \\* alpha"):
        AVFKAMRanker(2, learning_rate=10.0, alpha=0.2, **SMALL).fit(X, y)
    assert rec.messages == []


@pytest.mark.parametrize("asynchronous", [True, False])
def test_forced_divergence_ends_in_a_clear_error(asynchronous):
    X, y = _data()
    est = AVFKAMRanker(VerticalPartition(3, active_parties=(0, 1)),
                       learning_rate=20.0, asynchronous=asynchronous,
                       random_state=0, **SMALL)
    with pytest.raises(FloatingPointError, match="diverged at step") as info:
        est.fit(X, y)
    assert "learning_rate=20" in str(info.value)
    kept = info.value.estimator
    # The kept iterate's raw scores f are sane (threshold_ is Platt's: far
    # off when a weak early iterate barely ranks the rows).
    f = kept.decision_function(X) + kept.threshold_
    assert np.all(np.isfinite(f)) and np.abs(f).max() < 1e3
    assert kept.n_iter_ < info.value.step


def test_paper_exact_loop_converges_by_default():
    # One pair and one feature per step, the paper's loop: the former fixed
    # step (0.2) diverges; "auto" converges.
    X, y = _data(n=120)
    kw = dict(batch_size=1, features_per_step=1, n_random_features=100,
              max_iter=3000, random_state=0)
    est = AVFKAMRanker(2, **kw).fit(X, y)
    assert est.score(X, y) > 0.85
    with pytest.raises(FloatingPointError):
        AVFKAMRanker(2, learning_rate=0.2, **kw).fit(X, y)


def test_early_stopping_stays_with_the_active_parties():
    X, y = _data(n=300)
    part = VerticalPartition(3, active_parties=(0, 1))
    est = AVFKAMRanker(part, early_stopping=True, n_iter_no_change=3,
                       tol=1e-3, asynchronous=False, random_state=0,
                       **{**SMALL, "max_iter": 2000})
    with record_messages() as rec:
        est.fit(X, y)
    assert est.n_iter_ < 2000
    assert len(est.validation_score_) >= 4
    assert np.all((est.validation_score_ > 0.5) & (est.validation_score_ <= 1))
    # The split is the active parties' alone: the passive party gets no
    # message about validation, and the same phases as without it.
    to_passive = {m.phase for m in rec.messages if m.receiver == "party2"}
    assert not any(p.startswith("validation") for p in to_passive)
    assert to_passive <= {"gamma/moments", "gamma/broadcast", "preprocess/T1",
                          "preprocess/T2", "preprocess/request"}
    assert {"validation/request", "validation/scores"} <= {
        m.phase for m in rec.messages}
    # Every message, the validation ones included, obeys the contract.
    assert check_messages(est, rec.messages, X, y) == []


def test_batch_size_is_capped_at_the_training_rows():
    # batch_size=1e6 on 60 rows used to draw a million pairs per update
    # (minutes); a batch larger than the rows is the batch of all of them.
    X, y = _data(n=60)
    params = dict(SMALL, max_iter=3, early_stopping=False, random_state=0)
    capped = AVFKAMRanker(2, **{**params, "batch_size": 10**6}).fit(X, y)
    rows = AVFKAMRanker(2, **{**params, "batch_size": 60}).fit(X, y)
    np.testing.assert_array_equal(capped.decision_function(X),
                                  rows.decision_function(X))


def _platt_reference(f, positive):
    """Platt's fit by a plain grid-free Newton method, independently."""
    n_pos, n_neg = positive.sum(), (~positive).sum()
    t = np.where(positive, (n_pos + 1) / (n_pos + 2), 1 / (n_neg + 2))
    a, b = 0.0, 0.0
    for _ in range(100):
        p = 1 / (1 + np.exp(-(a * f + b)))
        g = np.array([(p - t) @ f, (p - t).sum()])
        w = p * (1 - p)
        H = np.array([[w @ (f * f), w @ f], [w @ f, w.sum()]])
        a, b = np.array([a, b]) - np.linalg.solve(H, g)
    return a, -b / a


def test_platt_scaling_matches_a_newton_fit():
    rng = np.random.default_rng(0)
    positive = rng.random(300) < 0.1
    f = rng.normal(size=300) + 1.5 * positive
    a, t, base = protocol.platt_scaling(f * 7.0 + 3.0, positive)
    a_ref, t_ref = _platt_reference(f, positive)
    assert a * 7.0 == pytest.approx(a_ref, rel=1e-4)
    assert (t - 3.0) / 7.0 == pytest.approx(t_ref, rel=1e-4, abs=1e-4)
    # Scores that rank the negatives higher carry no usable signal.
    a, t, base = protocol.platt_scaling(-f, positive)
    assert a == 0.0 and base == pytest.approx((positive.sum() + 1) / 302)
    assert t > (-f).max()


def test_predict_matches_the_calibrated_probability_on_imbalanced_data():
    # At a 6% positive rate predict used to mark 24% of rows positive (the
    # midpoint of the classes' mean scores); there was no predict_proba.
    X, y = make_classification(600, 8, n_informative=4, weights=[0.94],
                               flip_y=0.01, random_state=1)
    X = StandardScaler().fit_transform(X)
    Xtr, Xte, ytr, yte = X[:400], X[400:], y[:400], y[400:]
    est = AVFKAMRanker(2, random_state=0, **{**SMALL, "max_iter": 300}).fit(Xtr, ytr)
    proba = est.predict_proba(Xte)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    pred = est.predict(Xte)
    np.testing.assert_array_equal(pred == 1, proba[:, 1] > 0.5)
    assert pred.mean() <= yte.mean() + 0.02
    assert abs(proba[:, 1].mean() - yte.mean()) < 0.05
    # The ranking (and the AUC score) is that of decision_function.
    assert roc_auc_score(yte, proba[:, 1]) == pytest.approx(est.score(Xte, yte))


def test_weighted_pairs_are_drawn_in_proportion_to_their_weights():
    class State:
        pass

    state = State()
    state.y = np.array([1.0, 1.0, 1.0, -1.0, -1.0])
    state.w = np.array([1.0, 3.0, 0.0, 2.0, 2.0])
    protocol.plan_steps(state, 0, 4000, 1, np.arange(4), 0)
    rows, _ = protocol._draw(state, np.random.RandomState(0), 4)
    positives, negatives = np.bincount(rows[:4000], minlength=5), \
        np.bincount(rows[4000:], minlength=5)
    assert positives[2] == 0 and abs(positives[1] / 4000 - 0.75) < 0.03
    assert abs(negatives[3] / 4000 - 0.5) < 0.03


def test_sample_weight_chooses_which_rows_the_ranking_follows():
    # Two halves with the same features and opposite labels: unweighted,
    # no ranking fits both; weighting one half out, the model ranks the
    # other one (there was no sample_weight).
    rng = np.random.default_rng(0)
    X = rng.normal(size=(240, 3))
    half = np.arange(240) < 120
    y = np.where(half, X[:, 0] > 0, X[:, 0] < 0).astype(int)
    params = dict(SMALL, max_iter=300, early_stopping=False, random_state=0)
    auc = {}
    for name, w in (("first", half * 1.0), ("second", (~half) * 1.0)):
        est = AVFKAMRanker(2, **params).fit(X, y, sample_weight=w)
        s = est.decision_function(X)
        auc[name] = (roc_auc_score(y[half], s[half]), roc_auc_score(y[~half], s[~half]))
    assert auc["first"][0] > 0.9 and auc["first"][1] < 0.1
    assert auc["second"][1] > 0.9 and auc["second"][0] < 0.1
    # Equal weights are the unweighted model.
    a = AVFKAMRanker(2, **params).fit(X, y, sample_weight=np.full(240, 2.0))
    b = AVFKAMRanker(2, **params).fit(X, y)
    np.testing.assert_array_equal(a.decision_function(X), b.decision_function(X))
    with pytest.raises(ValueError, match="0 on every positive row"):
        AVFKAMRanker(2, **params).fit(X, y, sample_weight=(y == 0) * 1.0)


# AVFKAMRanker's defaults on a held-out imbalanced table, against a
# balanced SVC (issue 19, item 6; the scale run is
# ``benchmarks/_avfkam_quality.py``).

#: the held-out AUC a default fit may trail SVC(class_weight="balanced") by
#: on this small table (the issue asks 0.01 on 5,000-10,000 rows; 100
#: held-out positives leave a split-to-split spread of about 0.01). Measured
#: +0.005; a fit cut to 20 steps trails by 0.03, a pool of 20 seeds by 0.08.
MARGIN = 0.02


@pytest.mark.slow
def test_default_fit_is_close_to_balanced_svc_on_held_out_rows():
    X, y = make_classification(n_samples=2000, n_features=10, n_informative=5,
                               weights=[0.9], random_state=0)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.5, stratify=y,
                                          random_state=0)
    # Scalers fitted on the training rows; one active party, so the
    # asynchronous loop is deterministic.
    svc = make_pipeline(StandardScaler(), SVC(class_weight="balanced"))
    ours = make_pipeline(StandardScaler(), AVFKAMRanker(2, random_state=0))
    base = roc_auc_score(yte, svc.fit(Xtr, ytr).decision_function(Xte))
    scores = ours.fit(Xtr, ytr).decision_function(Xte)
    assert np.all(np.isfinite(scores))
    assert roc_auc_score(yte, scores) > base - MARGIN, (base, ours.score(Xte, yte))
