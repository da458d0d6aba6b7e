"""HyFDCAClassifier: convergence to the centralised optimum with defaults,
the step safeguard, encryption that does not change the result, the
protocol's messages, partitions, and the sklearn plumbing."""

import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import minimize, minimize_scalar
from sklearn import config_context
from sklearn.datasets import load_breast_cancer, load_iris
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC

from skfed.crypto import (EncryptedArray, OUPublicKey, PackedEncoder,
                          PaillierPublicKey)
from skfed.federation import record_messages
from skfed.linear_model import HyFDCAClassifier
from skfed.exceptions import DivergenceError
from skfed.linear_model._protocol import PRECISION_BITS, slots_per_plaintext
from skfed.linear_model._dual import (conjugate_values, dual_step,
                                             loss_values)
from skfed.partition import (HorizontalPartition, HybridPartition,
                             VerticalPartition)


# -- data and centralised references ---------------------------------------

def _breast_cancer():
    X, y = load_breast_cancer(return_X_y=True)
    return StandardScaler().fit_transform(X), y


def _small():
    X, y = _breast_cancer()
    return X[::4], y[::4]


def primal(w, X, y, lam, loss="hinge", b=0.0):
    signs = np.where(y == np.unique(y)[1], 1.0, -1.0)
    return 0.5 * lam * (w @ w + b * b) + loss_values(
        loss, signs * (X @ w + b)).mean()


def model_primal(clf, X, y, loss="hinge"):
    return primal(clf.coef_.ravel(), X, y, clf.alpha, loss,
                  float(clf.intercept_[0]))


def hinge_optimum(X, y, lam, fit_intercept=True):
    """P* of the hinge objective from liblinear at a tight tolerance (the
    intercept a regularised constant column, ``C = 1 / (lambda N)``)."""
    svc = LinearSVC(loss="hinge", C=1.0 / (lam * len(y)),
                    fit_intercept=fit_intercept, intercept_scaling=1.0,
                    tol=1e-10, max_iter=200_000).fit(X, y)
    return primal(svc.coef_.ravel(), X, y, lam,
                  b=float(svc.intercept_[0]) if fit_intercept else 0.0), svc


def smooth_optimum(X, y, lam, loss):
    """P* of a smooth loss (squared hinge, logistic) with a regularised
    intercept column, by L-BFGS on the primal."""
    Z = np.hstack([X, np.ones((len(X), 1))])
    signs = np.where(y == np.unique(y)[1], 1.0, -1.0)

    def f(w):
        m = signs * (Z @ w)
        if loss == "logistic":
            g = -signs / (1.0 + np.exp(m))
        else:
            g = -signs * np.maximum(0.0, 1.0 - m)
        return (0.5 * lam * w @ w + loss_values(loss, m).mean(),
                lam * w + Z.T @ g / len(y))

    res = minimize(f, np.zeros(Z.shape[1]), jac=True, method="L-BFGS-B",
                   options=dict(gtol=1e-12, ftol=1e-15, maxiter=10_000))
    return res.fun


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
    a = np.array([0.2, 0.5, 0.9])
    b, c = np.array([0.5, 3.0, -1.0]), np.array([2.0, 1.0, 0.5])
    np.testing.assert_allclose(dual_step("hinge", a, b, c), [0.45, 0.0, 1.0])


# -- convergence with defaults --------------------------------------------------

def test_defaults_reach_the_centralised_optimum_without_warning():
    # Defaults: 2x2 grid, alpha=1e-2, one local pass, line search, tol=1e-3.
    X, y = _breast_cancer()
    p_star, svc = hinge_optimum(X, y, 1e-2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        clf = HyFDCAClassifier(encryption=None, random_state=0).fit(X, y)
    assert clf.n_iter_ < 300
    assert (model_primal(clf, X, y) - p_star) / p_star <= 1e-3
    # The server's certificate: P - D <= tol * D bounds the suboptimality.
    P, D = clf.objective_curve_[-1]
    assert 0 <= P - D <= 1e-3 * D and clf.duality_gap_ <= 1e-3
    assert np.mean(clf.predict(X) == svc.predict(X)) >= 0.99


@pytest.mark.parametrize("kwargs", [
    dict(partition=HybridPartition(3, 2)),
    dict(partition=HorizontalPartition(3)),
    dict(partition=VerticalPartition(3)),
    dict(partition=[[0, 1, 2, 3, 4], list(range(5, 30))]),
    dict(partition=HybridPartition(2, 2), local_iterations=40),
    dict(partition=HorizontalPartition(3), local_iterations=300),
])
def test_every_split_reaches_the_optimum(kwargs):
    X, y = _breast_cancer()
    p_star, _ = hinge_optimum(X, y, 1e-2, fit_intercept=False)
    clf = HyFDCAClassifier(fit_intercept=False, encryption=None,
                           random_state=0, **kwargs).fit(X, y)
    assert (model_primal(clf, X, y) - p_star) / p_star <= 1e-3


@pytest.mark.parametrize("partition, schedule", [
    (HybridPartition(2, 2), "random"), (HybridPartition(2, 2), "cyclic"),
    (HorizontalPartition(4), "random")])
def test_partial_participation_converges(partition, schedule):
    X, y = _breast_cancer()
    p_star, _ = hinge_optimum(X, y, 1e-2)
    clf = HyFDCAClassifier(partition, participation=0.5, schedule=schedule,
                           max_iter=3000, encryption=None,
                           random_state=0).fit(X, y)
    assert clf.n_iter_ < 3000
    assert (model_primal(clf, X, y) - p_star) / p_star <= 1e-3


@pytest.mark.parametrize("loss", ["squared_hinge", "logistic"])
def test_smooth_losses_reach_their_optimum(loss):
    X, y = _breast_cancer()
    p_star = smooth_optimum(X, y, 1e-2, loss)
    clf = HyFDCAClassifier(loss=loss, encryption=None,
                           random_state=0).fit(X, y)
    assert (model_primal(clf, X, y, loss) - p_star) / p_star <= 1e-3


def test_intercept_matches_liblinear_with_regularised_intercept():
    X, y = _breast_cancer()
    p_star, svc = hinge_optimum(X, y, 1e-2)
    clf = HyFDCAClassifier(tol=1e-5, encryption=None, random_state=0).fit(X, y)
    assert (model_primal(clf, X, y) - p_star) / p_star < 1e-5
    assert clf.intercept_[0] == pytest.approx(svc.intercept_[0], abs=0.02)


def test_multiclass_one_vs_rest():
    X, y = load_iris(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    lam = 0.05
    clf = HyFDCAClassifier(HybridPartition(2, 2, split="random", random_state=0),
                           alpha=lam, encryption=None, random_state=0).fit(X, y)
    assert clf.coef_.shape == (3, 4) and clf.intercept_.shape == (3,)
    for j in range(3):  # each task is the binary problem "class j vs rest"
        yj = (y == j).astype(int)
        p_star, _ = hinge_optimum(X, yj, lam)
        p = primal(clf.coef_[j], X, yj, lam, b=clf.intercept_[j])
        assert (p - p_star) / p_star < 2e-3
    assert clf.score(X, y) > 0.8


def test_tol_none_runs_max_iter_and_a_looser_tol_stops_sooner():
    X, y = _small()
    full = HyFDCAClassifier(max_iter=25, tol=None, encryption=None,
                            random_state=0).fit(X, y)
    assert full.n_iter_ == 25 and full.objective_curve_.shape == (25, 2)
    loose = HyFDCAClassifier(tol=1e-1, encryption=None, random_state=0).fit(X, y)
    tight = HyFDCAClassifier(tol=1e-4, encryption=None, random_state=0).fit(X, y)
    assert loose.n_iter_ < tight.n_iter_
    assert loose.duality_gap_ <= 1e-1 and tight.duality_gap_ <= 1e-4


def test_not_converging_warns_and_names_max_iter():
    X, y = _breast_cancer()
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        HyFDCAClassifier(max_iter=3, encryption=None, random_state=0).fit(X, y)


def test_the_dual_never_falls_with_the_line_search():
    X, y = _breast_cancer()
    clf = HyFDCAClassifier(alpha=1e-3, max_iter=60, tol=None, encryption=None,
                           random_state=0).fit(X, y)
    dual = clf.objective_curve_[:, 1]
    assert np.all(np.diff(dual) >= -1e-12)
    assert np.all(clf.objective_curve_[:, 0] >= dual - 1e-12)


def test_a_fixed_step_that_diverges_ends_in_a_clear_error():
    # The paper's constant step with every coordinate of every row moved at
    # once overshoots on correlated columns: an error naming step_size, and
    # a finite last good model; never NaN.
    X, y = _breast_cancer()
    clf = HyFDCAClassifier(step_size=1.0, encryption=None, random_state=0)
    with pytest.raises(DivergenceError, match="step_size") as info:
        clf.fit(X, y)
    assert isinstance(info.value, FloatingPointError)
    assert not hasattr(clf, "coef_")
    kept = info.value.estimator
    assert np.all(np.isfinite(kept.coef_))
    assert np.all(np.isfinite(kept.decision_function(X)))


def test_a_small_fixed_step_with_few_coordinates_still_works():
    # The paper's setting: gamma = 1 with a few coordinates per client.
    X, y = _small()
    clf = HyFDCAClassifier(step_size=1.0, local_iterations=2, max_iter=200,
                           tol=None, encryption=None, random_state=0).fit(X, y)
    assert clf.score(X, y) > 0.9


# -- encoding and encryption ------------------------------------------------------

# OU at 1024 bits packs 8 slots (336 bits): the key owner's CRT path.
@pytest.mark.parametrize("encryption, key_size", [
    ("paillier", 512), ("ou", 512), ("ou", 1024)])
@pytest.mark.parametrize("packing", [True, False])
@pytest.mark.parametrize("factor", [1.0, 1e8])
def test_encryption_does_not_change_the_result(packing, factor, encryption,
                                               key_size):
    # The fixed-point scale comes from the data: features multiplied by 1e8
    # are encoded as well as standardised ones.
    X, y = load_iris(return_X_y=True)
    X, y = factor * StandardScaler().fit_transform(X)[:60], y[:60]
    params = dict(partition=HybridPartition(2, 2, split="random", random_state=0),
                  max_iter=8, tol=None, random_state=0)
    plain = HyFDCAClassifier(encryption=None, packing=packing, **params).fit(X, y)
    secure = HyFDCAClassifier(packing=packing, encryption=encryption,
                              key_size=key_size, **params).fit(X, y)
    scale = np.max(np.abs(plain.coef_))
    np.testing.assert_allclose(secure.coef_, plain.coef_, atol=1e-8 * scale)
    np.testing.assert_allclose(secure.objective_curve_, plain.objective_curve_,
                               rtol=1e-8)
    assert secure.crypto_time_ > 0


@pytest.mark.parametrize("encryption, scheme", [("paillier", PaillierPublicKey),
                                                ("ou", OUPublicKey)])
def test_packing_fills_each_scheme_s_plaintext_without_overflow(encryption,
                                                                 scheme):
    # OU's plaintexts are a third of Paillier's (key_size // 3 - 3 bits):
    # fewer slots, and a packed sum over a row group's clients still fits.
    X, y = _small()
    with record_messages() as rec:
        clf = HyFDCAClassifier(max_iter=2, tol=None, key_size=512,
                               encryption=encryption, random_state=0).fit(X, y)
    part = clf.partition_
    sent = [m for m in rec.messages if m.phase == "inner products"]
    assert sent and all(isinstance(m.payload[0].public_key, scheme)
                        for m in sent)
    # The server adds the parts of the decryptor's partners: one here.
    n_slots = slots_per_plaintext(sent[0].payload[0].public_key,
                                  part.n_column_groups - 1)
    assert n_slots == {"paillier": 12, "ou": 3}[encryption]
    assert n_slots == PackedEncoder.max_slots(512, 1, PRECISION_BITS,
                                              encryption)
    for m in sent:
        (payload,) = m.payload
        rows = len(part.client_rows(int((m.receiver if m.sender == "server"
                                         else m.sender)[len("client"):])))
        assert payload.size == -(-rows // n_slots)
        assert payload.encoder.n_slots == n_slots
        assert payload.encoder.n_bits < int(payload.public_key.max_int).bit_length()


def test_data_that_cannot_be_encoded_fails_before_any_party_starts():
    X, y = _small()
    with record_messages() as rec:
        with pytest.raises(ValueError, match="rescale the features"):
            HyFDCAClassifier(key_size=512).fit(1e200 * X, y)
    assert rec.messages == []


def test_messages_of_an_encrypted_round():
    X, y = _small()
    with record_messages() as rec:
        clf = HyFDCAClassifier(max_iter=3, tol=None, key_size=512,
                               random_state=0).fit(X, y)
    part = clf.partition_
    by_phase = {}
    for m in rec.messages:
        by_phase.setdefault(m.phase, []).append(m)
    # Inner products and squared norms travel encrypted, both ways.
    for phase in ("inner products", "squared norms"):
        assert by_phase[phase]
        for m in by_phase[phase]:
            (payload,) = m.payload
            assert isinstance(payload, EncryptedArray)
    # The row groups' sums go to one client per row group, which decrypts
    # and shares them with its partners: one decryption per row group.
    rounds = clf.n_iter_ + 1  # the last w is evaluated once more
    returned = [m for m in by_phase["inner products"] if m.sender == "server"]
    assert len(returned) == part.n_row_groups * rounds
    for m in by_phase["inner products/shared"]:
        assert (part.client_cell(int(m.sender[len("client"):]))[0]
                == part.client_cell(int(m.receiver[len("client"):]))[0])
        assert m.payload[0].dtype.kind == "f"
    assert len(by_phase["inner products/shared"]) == (
        part.n_clients - part.n_row_groups) * rounds
    # The decryptor never encrypts its own part: only its partners send.
    uploaded = [m for m in by_phase["inner products"] if m.receiver == "server"]
    assert len(uploaded) == (part.n_clients - part.n_row_groups) * rounds
    decryptors = {m.receiver for m in returned}
    assert not decryptors & {m.sender for m in uploaded}
    # The squared norms (setup) take the same route, once.
    assert len(by_phase["squared norms"]) == part.n_clients
    assert len(by_phase["squared norms/shared"]) == (
        part.n_clients - part.n_row_groups)
    # The server receives one masked upload per client per secure sum; no
    # column group is ever alone in a 2x2 grid with everyone taking part.
    uploads = by_phase["direction/upload"]
    assert len(uploads) == part.n_clients * clf.n_iter_
    assert all(m.payload[0].dtype == np.uint64 for m in uploads)
    assert not any(p.endswith("/alone/upload") for p in by_phase)
    # A client only ever receives the weights of its own columns.
    for m in by_phase["primal weights"]:
        k = int(m.receiver[len("client"):])
        width = len(part.client_columns(k)) + (part.client_cell(k)[1] == 0)
        assert m.payload[0].shape == (width, 1)
    # No dual variable leaves a client: nothing a client sends has one value
    # per row in plaintext.
    for m in rec.messages:
        if m.sender.startswith("client"):
            for leaf in m.payload:
                if isinstance(leaf, np.ndarray) and leaf.dtype.kind == "f":
                    assert len(X) // 4 not in leaf.shape


def test_horizontal_split_needs_no_encryption():
    X, y = _small()
    with record_messages() as rec:
        clf = HyFDCAClassifier(HorizontalPartition(3), max_iter=5, tol=None,
                               key_size=512, random_state=0).fit(X, y)
    phases = set(clf.communication_.by_phase)
    assert "inner products" not in phases and "squared norms" not in phases
    assert clf.communication_.total_ciphertexts == 0
    assert {"direction/upload", "objective report/upload", "step"} <= phases
    assert not any(isinstance(p, EncryptedArray) for m in rec.messages
                   for p in m.payload)


def test_vertical_split_sends_each_client_part_alone():
    # One row group: each column group has a single client, whose weight
    # change the server sees (declared as such in the contract).
    X, y = _small()
    clf = HyFDCAClassifier(VerticalPartition(3), max_iter=3, tol=None,
                           encryption=None, random_state=0).fit(X, y)
    phases = clf.communication_.by_phase
    assert phases["direction/alone/upload"]["messages"] == 3 * clf.n_iter_
    assert "direction/upload" not in phases


def test_keys_do_not_come_from_random_state():
    X, y = _small()
    params = dict(max_iter=1, tol=None, key_size=512, random_state=0)
    moduli = []
    for _ in range(2):
        with record_messages() as rec:
            HyFDCAClassifier(**params).fit(X, y)
        m = next(m for m in rec.messages if m.phase == "inner products")
        moduli.append(int(m.payload[0].public_key.n))
    assert moduli[0] != moduli[1]


def test_masks_differ_between_fits_but_the_model_does_not():
    X, y = _small()
    fits, uploads = [], []
    for _ in range(2):
        with record_messages() as rec:
            fits.append(HyFDCAClassifier(HorizontalPartition(3), max_iter=5,
                                         tol=None, random_state=0).fit(X, y))
        uploads.append([m.payload[0] for m in rec.messages
                        if m.phase == "direction/upload"])
    np.testing.assert_array_equal(fits[0].coef_, fits[1].coef_)
    assert not np.array_equal(uploads[0][0], uploads[1][0])


# -- participation ------------------------------------------------------------------

@pytest.mark.parametrize("schedule", ["random", "cyclic"])
def test_only_row_groups_with_every_client_present_move(schedule):
    X, y = _small()
    with record_messages() as rec:
        clf = HyFDCAClassifier(HybridPartition(2, 2), participation=0.5,
                               schedule=schedule, max_iter=12, tol=None,
                               encryption=None, random_state=0).fit(X, y)
    part = clf.partition_
    # The clients of a round get their weights one after the other.
    rounds, previous = [], None
    for m in rec.messages:
        if m.phase == "primal weights":
            if previous != "primal weights":
                rounds.append(set())
            rounds[-1].add(int(m.receiver[len("client"):]))
        previous = m.phase
    assert rounds
    for active in rounds:  # whole row groups only
        for k in active:
            assert set(part.clients_of_row_group(part.client_cell(k)[0])) <= active
    if schedule == "cyclic":  # the row groups take turns
        assert rounds[:4] == [{0, 1}, {2, 3}, {0, 1}, {2, 3}]


def test_partial_participation_on_a_vertical_split_needs_the_paper_solver():
    X, y = _small()
    with pytest.raises(ValueError,
                       match="participation=0.5 on a split with one row group.*"
                             "needs solver='paper'"):
        HyFDCAClassifier(VerticalPartition(2), participation=0.5,
                         encryption=None).fit(X, y)


# -- sklearn plumbing ---------------------------------------------------------------

def test_deterministic_and_pickles():
    X, y = _small()
    a = HyFDCAClassifier(max_iter=30, tol=None, encryption=None,
                         participation=0.5, random_state=3).fit(X, y)
    b = HyFDCAClassifier(max_iter=30, tol=None, encryption=None,
                         participation=0.5, random_state=3).fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    c = pickle.loads(pickle.dumps(a))
    np.testing.assert_array_equal(c.predict(X), a.predict(X))
    assert c.communication_ == a.communication_


def test_dataframe_with_named_column_groups_and_pipeline():
    X, y = _small()
    df = pd.DataFrame(X[:, :4], columns=["a", "b", "c", "d"])
    clf = HyFDCAClassifier(HybridPartition(2, [["a", "c"], ["b", "d"]]),
                           encryption=None, random_state=0).fit(df, y)
    assert clf.partition_.client_columns(1).tolist() == [1, 3]
    assert clf.feature_names_in_.tolist() == ["a", "b", "c", "d"]
    pipe = make_pipeline(StandardScaler(), HyFDCAClassifier(
        encryption=None, random_state=0))
    assert pipe.fit(X, y).score(X, y) > 0.9


def test_sample_party_metadata_sets_row_groups_and_routes():
    X, y = _small()
    groups = np.arange(len(y)) % 3
    clf = HyFDCAClassifier(HybridPartition(3, 2), max_iter=30, tol=None,
                           encryption=None, random_state=0)
    clf.fit(X, y, sample_party=groups)
    np.testing.assert_array_equal(clf.partition_.owners, groups)
    assert cross_val_score(clf, X, y, cv=3).mean() > 0.9  # rule-based split
    with config_context(enable_metadata_routing=True):
        routed = HyFDCAClassifier(HybridPartition(3, 2), max_iter=30, tol=None,
                                  encryption=None,
                                  random_state=0).set_fit_request(
                                      sample_party=True)
        scores = cross_val_score(routed, X, y, cv=3,
                                 params={"sample_party": groups})
        assert scores.mean() > 0.9
        search = GridSearchCV(routed, {"alpha": [1e-2, 1e-1]}, cv=2)
        search.fit(X, y, sample_party=groups)
        assert search.best_params_["alpha"] in (1e-2, 1e-1)


@pytest.mark.parametrize("partition, sample_party, match", [
    (3, None, "HybridPartition"),
    (HybridPartition(2, [[0, 1], [1, 2]]), None, "more than one group"),
    (HybridPartition(2, [[0, 1]]), None, "in no group"),
    (HybridPartition(200, 2), None, "Cannot split"),
    (HybridPartition(2, 2), "mixed", "must sort together"),
    (HybridPartition(2, 2), "short", "one party per row"),
    (HybridPartition(3, 2), "zeros", "hold.*no rows"),
    (VerticalPartition(2), "zeros", "partition is vertical"),
    (VerticalPartition("a"), None, "must be None, a number of parties"),
])
def test_bad_partitions_give_clear_errors(partition, sample_party, match):
    X, y = _small()
    n = len(y)
    sample_party = {None: None,
                    "mixed": np.array(["a", 1] * (n // 2) + ["a"] * (n % 2),
                                      dtype=object),
                    "short": np.zeros(n - 1, dtype=int),
                    "zeros": np.zeros(n, dtype=int)}[sample_party]
    clf = HyFDCAClassifier(partition, encryption=None, max_iter=2)
    with pytest.raises(ValueError, match=match):
        clf.fit(X[:, :3], y, sample_party=sample_party)


def test_single_class_is_refused():
    X, _ = _small()
    with pytest.raises(ValueError, match="class"):
        HyFDCAClassifier(encryption=None).fit(X, np.zeros(len(X)))


def test_report_shares_keep_double_the_ring_precision():
    # Each report entry travels rounded to the ring plus its scaled rounding
    # error: the decoded total of three shares keeps ~2x the fractional
    # bits, and a non-finite value is sent as 0 and counted.
    from types import SimpleNamespace

    from skfed.federation.secure_sum import RingEncoder
    from skfed.linear_model._reports import client_report, split_total

    rng = np.random.RandomState(0)
    grid = np.array([0.0, 1.0])
    encoder = RingEncoder.for_bound(1e15, n_terms=3)
    shares, exact = [], 0.0
    for i in range(3):
        margins = rng.normal(size=(50, 1)) * 30
        client = SimpleNamespace(
            s=np.ones((50, 1)), loss="hinge", margins=margins,
            point=rng.uniform(size=(50, 1)), direction=np.zeros((50, 1)),
            loss_sum=np.zeros(1), conj_sum=np.zeros(1), report=None)
        if i == 2:
            client.margins[0] = np.nan
        share = client_report(client, grid, 1e15, encoder.frac_bits)
        shares.append(encoder.encode(share))
        if i < 2:
            exact += np.maximum(0, 1 - margins).sum()
    total = split_total(encoder.decode(sum(shares)), encoder.frac_bits)
    assert encoder.frac_bits <= 12  # alone: ~2e-4 absolute at best
    assert total[-1, 0] == 1.0  # one value flagged (task 0's loss)
    f = encoder.frac_bits
    # rounded alone: errors up to 3 * 2**-(f + 1); with the shares' rounding
    # errors: 3 * 2**-(2 f + 2)
    assert abs(total[0, 0] - exact) <= 3 * 2.0 ** -(2 * f + 2)
