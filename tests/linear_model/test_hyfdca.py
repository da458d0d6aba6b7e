"""HyFDCAClassifier: convergence to the centralised optimum, privacy of the
recorded messages, partitions, and the sklearn plumbing."""

import pickle

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import minimize, minimize_scalar
from sklearn import config_context
from sklearn.datasets import load_breast_cancer, load_iris, make_classification
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC

from skfed.crypto import EncryptedArray
from skfed.federation import record_messages
from skfed.linear_model import HyFDCAClassifier
from skfed.linear_model._hyfdca_protocol import (conjugate_values, dual_step,
                                                 loss_values)
from skfed.partition import (HorizontalPartition, HybridPartition,
                             VerticalPartition)


# -- data and centralised references ---------------------------------------

def _breast_cancer():
    X, y = load_breast_cancer(return_X_y=True)
    return StandardScaler().fit_transform(X), y


def _make_classification():
    return make_classification(n_samples=400, n_features=20, n_informative=10,
                               random_state=0)


def _sparse_high_dim():
    # 300 rows, 1000 columns, 2% non-zeros: nearly orthogonal rows.
    rng = np.random.RandomState(0)
    X = np.where(rng.rand(300, 1000) < 0.02, rng.randn(300, 1000), 0.0)
    y = (X @ rng.randn(1000) + 0.1 * rng.randn(300) > 0).astype(int)
    return X, y


def primal(w, X, y, lam, loss="hinge", b=0.0):
    signs = np.where(y == np.unique(y)[1], 1.0, -1.0)
    return 0.5 * lam * (w @ w + b * b) + loss_values(
        loss, signs * (X @ w + b)).mean()


def hinge_optimum(X, y, lam):
    """P* and w* of the hinge objective from liblinear at a tight tolerance
    (``C = 1 / (lambda N)`` gives exactly our objective times 1/(lambda N))."""
    svc = LinearSVC(loss="hinge", C=1.0 / (lam * len(y)), fit_intercept=False,
                    tol=1e-10, max_iter=200_000).fit(X, y)
    w = svc.coef_.ravel()
    return primal(w, X, y, lam), w


def smooth_optimum(X, y, lam, loss):
    """P* of a smooth loss (squared hinge, logistic) by L-BFGS on the primal."""
    signs = np.where(y == np.unique(y)[1], 1.0, -1.0)

    def f(w):
        m = signs * (X @ w)
        if loss == "logistic":
            g = -signs / (1.0 + np.exp(m))
        else:
            g = -signs * np.maximum(0.0, 1.0 - m)
        return (0.5 * lam * w @ w + loss_values(loss, m).mean(),
                lam * w + X.T @ g / len(y))

    res = minimize(f, np.zeros(X.shape[1]), jac=True, method="L-BFGS-B",
                   options=dict(gtol=1e-12, ftol=1e-15, maxiter=10_000))
    return res.fun


def relative_suboptimality(clf, X, y, lam, p_star, loss="hinge"):
    return (primal(clf.coef_.ravel(), X, y, lam, loss) - p_star) / p_star


# -- the local dual step, by hand ---------------------------------------------

@pytest.mark.parametrize("loss", ["hinge", "squared_hinge", "logistic"])
def test_dual_step_maximises_the_one_dimensional_subproblem(loss):
    rng = np.random.RandomState(0)
    upper = 1.0 if loss != "squared_hinge" else 10.0
    for _ in range(20):
        a = rng.uniform(0.01, 0.99)
        b, c = rng.normal(scale=2.0), rng.uniform(0.05, 5.0)

        def objective(x):
            return -(conjugate_values(loss, x) - (x - a) * b - 0.5 * c * (x - a) ** 2)

        ref = minimize_scalar(objective, bounds=(0.0, upper), method="bounded",
                              options=dict(xatol=1e-12)).x
        got = dual_step(loss, np.array([a]), np.array([b]), np.array([c]))[0]
        assert objective(got) <= objective(ref) + 1e-10
        assert got == pytest.approx(ref, abs=1e-5)


def test_hinge_step_is_the_papers_closed_form_with_the_row_norm():
    # a' = clip(a + lambda N (1 - y x^T w) / ||x||^2, 0, 1), c = ||x||^2/(lambda N)
    a, b, c = np.array([0.2, 0.5, 0.9]), np.array([0.5, 3.0, -1.0]), np.array([2.0, 1.0, 0.5])
    np.testing.assert_allclose(dual_step("hinge", a, b, c), [0.45, 0.0, 1.0])


# -- convergence to the centralised optimum --------------------------------------

@pytest.mark.parametrize("data, lam, H, rounds", [
    (_breast_cancer, 0.1, 10, 500),
    (_make_classification, 0.1, 10, 700),
    # Nearly orthogonal rows: many parallel coordinates per round are safe
    # (H is the paper's one tuned hyperparameter).
    (_sparse_high_dim, 0.01, 40, 200),
])
def test_converges_to_centralised_hinge_optimum(data, lam, H, rounds):
    X, y = data()
    p_star, w_star = hinge_optimum(X, y, lam)
    clf = HyFDCAClassifier(HybridPartition(2, 2), alpha=lam, max_iter=rounds,
                           local_iterations=H, tol=None, fit_intercept=False,
                           encryption=None, random_state=0).fit(X, y)
    assert relative_suboptimality(clf, X, y, lam, p_star) < 1e-3
    gap = clf.objective_curve_[:, 0] - clf.objective_curve_[:, 1]
    assert np.all(gap > -1e-12)
    assert gap[-1] < 1e-2 * gap[10]
    # The server's primal values are the real P(w_t); the published model is
    # the iterate with the smallest one.
    assert clf.objective_curve_[:, 0].min() == pytest.approx(
        primal(clf.coef_.ravel(), X, y, lam), rel=1e-10)
    central = np.where(X @ w_star > 0, clf.classes_[1], clf.classes_[0])
    assert np.mean(clf.predict(X) == central) >= 0.99


@pytest.mark.parametrize("kwargs", [
    dict(partition=HybridPartition(3, 2)),
    dict(partition=HorizontalPartition(3)),
    dict(partition=VerticalPartition(3)),
    dict(partition=[[0, 1, 2, 3, 4], list(range(5, 30))]),
    dict(partition=HybridPartition(2, 2), participation=0.5),
    dict(partition=HybridPartition(2, 2, split="random", random_state=1),
         participation=0.5, schedule="cyclic"),
    dict(partition=VerticalPartition(4), participation=0.5, schedule="cyclic",
         local_iterations=20),
])
def test_every_split_and_participation_reaches_the_optimum(kwargs):
    X, y = _breast_cancer()
    lam = 0.1
    p_star, _ = hinge_optimum(X, y, lam)
    clf = HyFDCAClassifier(alpha=lam, max_iter=600, tol=None,
                           fit_intercept=False, encryption=None,
                           random_state=0, **kwargs).fit(X, y)
    assert relative_suboptimality(clf, X, y, lam, p_star) < 1e-3


@pytest.mark.parametrize("loss", ["squared_hinge", "logistic"])
def test_smooth_losses_reach_their_optimum(loss):
    X, y = _breast_cancer()
    lam = 0.05
    p_star = smooth_optimum(X, y, lam, loss)
    clf = HyFDCAClassifier(HybridPartition(2, 2), loss=loss, alpha=lam,
                           max_iter=300, tol=None, fit_intercept=False,
                           encryption=None, random_state=0).fit(X, y)
    assert relative_suboptimality(clf, X, y, lam, p_star, loss) < 1e-3


def test_tol_stops_on_the_duality_gap():
    X, y = _breast_cancer()
    clf = HyFDCAClassifier(alpha=0.1, max_iter=2000, tol=1e-3,
                           encryption=None, random_state=0).fit(X, y)
    assert clf.n_iter_ < 2000
    assert clf.objective_curve_.shape == (clf.n_iter_ + 1, 2)
    P, D = clf.objective_curve_[-1]
    assert P - D <= 1e-3 * P
    assert (clf.objective_curve_[:-1, 0] - clf.objective_curve_[:-1, 1]
            > 1e-3 * clf.objective_curve_[:-1, 0]).all()


def test_intercept_matches_liblinear_with_regularised_intercept():
    X, y = _breast_cancer()
    lam = 0.1
    clf = HyFDCAClassifier(alpha=lam, max_iter=600, tol=None, encryption=None,
                           random_state=0).fit(X, y)
    svc = LinearSVC(loss="hinge", C=1 / (lam * len(y)), intercept_scaling=1.0,
                    tol=1e-10, max_iter=200_000).fit(X, y)
    p_star = primal(svc.coef_.ravel(), X, y, lam, b=svc.intercept_[0])
    p = primal(clf.coef_.ravel(), X, y, lam, b=clf.intercept_[0])
    assert (p - p_star) / p_star < 1e-3
    assert clf.intercept_[0] == pytest.approx(svc.intercept_[0], abs=0.05)


def test_multiclass_one_vs_rest():
    X, y = load_iris(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    lam = 0.05
    clf = HyFDCAClassifier(HybridPartition(2, 2, split="random", random_state=0),
                           alpha=lam, max_iter=400, tol=None, encryption=None,
                           random_state=0).fit(X, y)
    assert clf.coef_.shape == (3, 4) and clf.intercept_.shape == (3,)
    for j in range(3):  # each task is the binary problem "class j vs rest"
        yj = (y == j).astype(int)
        svc = LinearSVC(loss="hinge", C=1 / (lam * len(y)), tol=1e-10,
                        max_iter=200_000).fit(X, yj)
        p_star = primal(svc.coef_.ravel(), X, yj, lam, b=svc.intercept_[0])
        p = primal(clf.coef_[j], X, yj, lam, b=clf.intercept_[j])
        assert (p - p_star) / p_star < 1e-2
    assert clf.score(X, y) > 0.8


# -- encryption and privacy ---------------------------------------------------------

@pytest.mark.parametrize("packing", [True, False])
def test_encrypted_run_matches_plaintext_and_messages_respect_privacy(packing):
    X, y = load_iris(return_X_y=True)
    X, y = StandardScaler().fit_transform(X)[:60], y[:60]  # classes 0 and 1
    params = dict(partition=HybridPartition(2, 2, split="random", random_state=0),
                  alpha=0.1, max_iter=3, tol=None, key_size=384,
                  participation=0.75, random_state=0)
    plain = HyFDCAClassifier(encryption=None, **params).fit(X, y)
    with record_messages() as rec:
        secure = HyFDCAClassifier(encryption="paillier", packing=packing,
                                  **params).fit(X, y)
    # Fixed-point encodings: 2^-48 (alone) or 2^-40 (packed) per value.
    np.testing.assert_allclose(secure.coef_, plain.coef_, atol=1e-8)
    np.testing.assert_allclose(secure.objective_curve_, plain.objective_curve_,
                               atol=1e-8)
    assert secure.crypto_time_ > 0
    part = secure.partition_
    to_server = rec.received_by("server")
    # The server gets the duals and (partial) inner products only encrypted.
    for m in to_server:
        if m.phase in ("dual updates", "inner products", "squared norms"):
            assert all(isinstance(p, EncryptedArray) for p in m.payload), m.phase
        elif m.phase == "primal aggregation":  # w_hat_k: plaintext by the paper
            (w_hat,) = m.payload
            k = int(m.sender[len("client"):])
            assert w_hat.shape[0] == len(part.client_columns(k)) + (
                part.client_cell(k)[1] == 0)
        else:
            assert m.phase == "objective report"
            assert m.payload[0].size == 2  # two sums, one task
    assert {m.phase for m in to_server} >= {"dual updates", "inner products",
                                            "primal aggregation"}
    # A client gets the duals/inner products/norms of its own rows (encrypted)
    # and the weights of its own columns, nothing else.
    final_w = np.append(secure.coef_.ravel(), secure.intercept_[0])
    own_columns = {}
    for k in range(part.n_clients):
        own_rows = len(part.client_rows(k))
        own_cols = part.client_columns(k)
        if part.client_cell(k)[1] == 0:
            own_cols = np.append(own_cols, X.shape[1])
        own_columns[k] = own_cols
        received = rec.received_by(f"client{k}")
        assert received and all(m.sender == "server" for m in received)
        for m in received:
            (payload,) = m.payload
            if m.phase in ("send duals", "inner products", "squared norms"):
                # One value per own row, n_slots of them per ciphertext.
                assert isinstance(payload, EncryptedArray)
                assert (payload.encoder is not None) == packing
                slots = payload.encoder.n_slots if packing else 1
                assert payload.size == -(-own_rows // slots)
            elif m.phase == "primal weights":
                assert payload.shape == (len(own_cols), 1)
            else:
                assert m.phase == "step size" and np.ndim(payload) == 0
    # The last round's 3 participants got the published model's weights of
    # their columns.
    last = [m for m in rec.messages if m.phase == "primal weights"][-3:]
    for m in last:
        k = int(m.receiver[len("client"):])
        np.testing.assert_allclose(m.payload[0].ravel(), final_w[own_columns[k]])


def test_packing_refuses_values_beyond_its_bound():
    X, y = _breast_cancer()
    X, y = 1e7 * X[:40, :4], y[:40]
    with pytest.raises(Exception, match="packing=False"):
        HyFDCAClassifier(alpha=0.1, max_iter=2, key_size=256,
                         random_state=0).fit(X, y)


def test_horizontal_split_needs_no_secure_inner_product():
    X, y = _breast_cancer()
    clf = HyFDCAClassifier(HorizontalPartition(3), alpha=0.1, max_iter=5,
                           tol=None, encryption=None, random_state=0).fit(X, y)
    phases = set(clf.communication_.by_phase)
    assert "inner products" not in phases and "squared norms" not in phases
    assert {"dual updates", "send duals", "primal aggregation"} <= phases


def test_keys_do_not_come_from_random_state():
    X, y = _breast_cancer()
    X, y = X[:40, :4], y[:40]
    params = dict(alpha=0.1, max_iter=1, tol=None, key_size=256, random_state=0)
    moduli = []
    for _ in range(2):
        with record_messages() as rec:
            HyFDCAClassifier(**params).fit(X, y)
        m = next(m for m in rec.messages if m.phase == "dual updates")
        moduli.append(int(m.payload[0].public_key.n))
    assert moduli[0] != moduli[1]


@pytest.mark.parametrize("schedule", ["random", "cyclic"])
def test_participants_per_round_and_newcomers_catch_up(schedule):
    X, y = _small()
    with record_messages() as rec:
        clf = HyFDCAClassifier(HybridPartition(2, 2), alpha=0.1, max_iter=6,
                               tol=None, participation=0.5, schedule=schedule,
                               encryption=None, random_state=0).fit(X, y)
    senders = [m.sender for m in rec.messages if m.phase == "dual updates"]
    assert len(senders) == 2 * clf.n_iter_
    per_round = [set(senders[i:i + 2]) for i in range(0, len(senders), 2)]
    if schedule == "cyclic":
        assert per_round == [{"client0", "client1"}, {"client2", "client3"}] * 3
    else:
        assert len({frozenset(r) for r in per_round}) > 1
    # Clients absent last round first get enc(alpha) and send w_hat
    # (Algorithm 1's first PrimalAggregation); every participant gets the
    # duals again at the end of the round and sends w_hat.
    newcomers = sum(len(r - (per_round[t - 1] if t else set()))
                    for t, r in enumerate(per_round))
    phases = clf.communication_.by_phase
    assert phases["send duals"]["messages"] == newcomers + 2 * clf.n_iter_
    assert phases["primal aggregation"]["messages"] == newcomers + 2 * clf.n_iter_


# -- sklearn plumbing ---------------------------------------------------------------

def _small():
    X, y = _breast_cancer()
    return X[::4], y[::4]


def test_deterministic_and_pickles():
    X, y = _small()
    a = HyFDCAClassifier(alpha=0.1, max_iter=30, tol=None, encryption=None,
                         participation=0.5, random_state=3).fit(X, y)
    b = HyFDCAClassifier(alpha=0.1, max_iter=30, tol=None, encryption=None,
                         participation=0.5, random_state=3).fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    c = pickle.loads(pickle.dumps(a))
    np.testing.assert_array_equal(c.predict(X), a.predict(X))
    assert c.communication_ == a.communication_


def test_dataframe_with_named_column_groups_and_pipeline():
    X, y = _small()
    df = pd.DataFrame(X[:, :4], columns=["a", "b", "c", "d"])
    clf = HyFDCAClassifier(HybridPartition(2, [["a", "c"], ["b", "d"]]),
                           alpha=0.1, max_iter=50, tol=None, encryption=None,
                           random_state=0).fit(df, y)
    assert clf.partition_.client_columns(1).tolist() == [1, 3]
    assert clf.feature_names_in_.tolist() == ["a", "b", "c", "d"]
    pipe = make_pipeline(StandardScaler(), HyFDCAClassifier(
        alpha=0.1, max_iter=50, tol=None, encryption=None, random_state=0))
    assert pipe.fit(X, y).score(X, y) > 0.9


def test_sample_party_metadata_sets_row_groups_and_routes():
    X, y = _small()
    groups = np.arange(len(y)) % 3
    clf = HyFDCAClassifier(HybridPartition(3, 2), alpha=0.1, max_iter=30,
                           tol=None, encryption=None, random_state=0)
    clf.fit(X, y, sample_party=groups)
    np.testing.assert_array_equal(clf.partition_.owners, groups)
    assert cross_val_score(clf, X, y, cv=3).mean() > 0.9  # rule-based split
    with config_context(enable_metadata_routing=True):
        routed = HyFDCAClassifier(HybridPartition(3, 2), alpha=0.1,
                                  max_iter=30, tol=None, encryption=None,
                                  random_state=0).set_fit_request(
                                      sample_party=True)
        scores = cross_val_score(routed, X, y, cv=3,
                                 params={"sample_party": groups})
        assert scores.mean() > 0.9
        search = GridSearchCV(routed, {"local_iterations": [5, 10]}, cv=2)
        search.fit(X, y, sample_party=groups)
        assert search.best_params_["local_iterations"] in (5, 10)


@pytest.mark.parametrize("partition, sample_party, match", [
    (3, None, "HybridPartition"),
    (HybridPartition(2, [[0, 1], [1, 2]]), None, "more than one group"),
    (HybridPartition(2, [[0, 1]]), None, "in no group"),
    (HybridPartition(200, 2), None, "Cannot split"),
    (HybridPartition(2, 2), "float", "integer party ids"),
    (HybridPartition(2, 2), "short", "one party per row"),
    (HybridPartition(3, 2), "zeros", "hold.*no rows"),
    (VerticalPartition(2), "zeros", "partition is vertical"),
    (VerticalPartition("a"), None, "must be None, a number of parties"),
])
def test_bad_partitions_give_clear_errors(partition, sample_party, match):
    X, y = _small()
    n = len(y)
    sample_party = {None: None, "float": np.full(n, 0.5),
                    "short": np.zeros(n - 1, dtype=int),
                    "zeros": np.zeros(n, dtype=int)}[sample_party]
    clf = HyFDCAClassifier(partition, encryption=None, max_iter=2)
    with pytest.raises(ValueError, match=match):
        clf.fit(X[:, :3], y, sample_party=sample_party)


def test_single_class_is_refused():
    X, _ = _small()
    with pytest.raises(ValueError, match="class"):
        HyFDCAClassifier(encryption=None).fit(X, np.zeros(len(X)))
