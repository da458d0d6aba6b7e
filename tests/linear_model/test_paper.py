"""HyFDCAClassifier(solver="paper"): Algorithm 1 as published.

Convergence to liblinear's optimum at the paper's setting (issue 30's
acceptance), an independent numpy Algorithm 1 with Algorithms 3 and 5 fed
the same coordinate draws (issue 40), section 4.3's cyclic vertical
participation and per-client participation, the theorems' conditions,
the printed curvature, encryption that does not change the model, the
theorems' steps and divergence (the contract of its phases is tested in
``test_contract.py``).
"""

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, make_classification
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import Normalizer, StandardScaler
from sklearn.svm import LinearSVC

from skfed.base import party_seeds
from skfed.exceptions import DivergenceError
from skfed.federation import record_messages
from skfed.linear_model import HyFDCAClassifier
from skfed.linear_model._paper import (ClientParticipation, ColumnCycle,
                                      covering_theorem,
                                      paper_local_iterations, paper_steps)
from skfed.partition import HybridPartition, VerticalPartition

LAM = 1e-2


def _breast_cancer():
    X, y = load_breast_cancer(return_X_y=True)
    return StandardScaler().fit_transform(X), y


def _relative_gap(X, y, coef):
    """(P(w) - P*) / P* of the hinge objective, P* from liblinear."""
    signs = np.where(y == 1, 1.0, -1.0)
    svc = LinearSVC(loss="hinge", C=1.0 / (LAM * len(y)), fit_intercept=False,
                    tol=1e-10, max_iter=1_000_000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        svc.fit(X, signs)

    def primal(w):
        return 0.5 * LAM * w @ w + np.maximum(0, 1 - signs * (X @ w)).mean()
    star = primal(svc.coef_.ravel())
    return (primal(np.ravel(coef)) - star) / star


PAPER = dict(solver="paper", local_iterations=13, alpha=LAM, max_iter=200,
             encryption=None, fit_intercept=False, random_state=0)


# -- acceptance (issue 30) ------------------------------------------------------

@pytest.mark.parametrize("partition", [None, HybridPartition(3, 2)],
                         ids=["default-2x2", "hybrid-3x2"])
@pytest.mark.parametrize("dual_curvature, max_iter", [
    ("row_norm", 200), ("auto", 400)])
def test_paper_solver_reaches_liblinear(partition, dual_curvature, max_iter):
    """Issue 30's acceptance (5e-2 after 200 rounds) was set with each row's
    exact curvature: 3.0e-2 (2 x 2) and 2.2e-2 (3 x 2). The default's public
    mean (twice it, issue 37) gives 6.9e-2 and 4.7e-2 after 200 rounds,
    1.4e-2 and 6.0e-3 after 400."""
    X, y = _breast_cancer()
    est = HyFDCAClassifier(partition, **dict(
        PAPER, dual_curvature=dual_curvature, max_iter=max_iter)).fit(X, y)
    assert _relative_gap(X, y, est.coef_) <= 5e-2
    assert est.n_iter_ == max_iter
    assert np.all(np.isnan(est.objective_curve_))  # the paper reports none


def test_cyclic_vertical_participation_reaches_liblinear():
    """Section 4.3: two sets of clients in turn, gamma_t = 1/t, one pass."""
    X, y = _breast_cancer()
    est = HyFDCAClassifier(
        VerticalPartition(4), solver="paper", participation=0.5,
        schedule="cyclic", alpha=LAM, max_iter=1000, encryption=None,
        fit_intercept=False, random_state=0).fit(X, y)
    assert _relative_gap(X, y, est.coef_) <= 1e-2


# -- the paper's steps and sets -------------------------------------------------

def test_theorem_steps():
    X = np.zeros((12, 4))
    vertical = HybridPartition(1, 2).resolve(X)
    gamma, c_k, rule = paper_steps("auto", vertical, 0.5, 12)
    assert rule == "Theorem 4.11"
    assert [gamma(t) for t in (1, 2, 4)] == [1.0, 0.5, 0.25]
    assert c_k(12) == 1.0
    gamma, c_k, rule = paper_steps("auto", HybridPartition(2, 2).resolve(X),
                                   1.0, 12)
    assert (rule, gamma(7), c_k(6)) == ("Theorem 4.4", 1.0, 0.5)
    gamma, c_k, rule = paper_steps(0.3, HybridPartition(3, 1).resolve(X),
                                   0.5, 12)
    assert (rule, gamma(9), c_k(4)) == ("Theorem 4.8", 0.3, 1.0)


def test_column_cycle_sets_take_turns():
    cycle = ColumnCycle(5, 0.4)  # ceil(1/0.4) = 3 sets
    assert cycle.sets == [[0, 1], [2, 3], [4]]
    assert [cycle(t) for t in (1, 2, 3, 4)] == [[0, 1], [2, 3], [4], [0, 1]]
    assert ColumnCycle(4, 0.9).sets == [[0, 1], [2, 3]]  # at least two sets


def test_absent_clients_weights_are_stale():
    """With sets [0] and [1] in turn, a round changes only the weights of
    the columns of the clients present (the others keep their stale
    values), and the first round leaves the absent client's weights at 0."""
    X, y = _breast_cancer()
    kw = dict(solver="paper", participation=0.5, schedule="cyclic",
              encryption=None, fit_intercept=False, random_state=0)
    one = HyFDCAClassifier(VerticalPartition(2), max_iter=1,
                           local_iterations=13, **kw).fit(X, y)
    cols = one.partition_.client_columns(1)
    assert np.all(one.coef_[0, cols] == 0)
    assert np.any(one.coef_[0] != 0)


# -- encryption, divergence, errors ------------------------------------------------

def test_encrypted_fit_equals_plaintext_fit():
    X, y = _breast_cancer()
    kw = dict(PAPER, max_iter=4)
    plain = HyFDCAClassifier(**kw).fit(X, y)
    enc = HyFDCAClassifier(**dict(kw, encryption="paillier", key_size=512))
    enc.fit(X, y)
    np.testing.assert_allclose(enc.coef_, plain.coef_, rtol=0, atol=1e-8)
    assert enc.crypto_time_ > 0


def test_one_pass_per_round_diverges_with_a_clear_error():
    """Issue 30: the literal loop with one pass per round overshoots."""
    X, y = _breast_cancer()
    est = HyFDCAClassifier(solver="paper", alpha=LAM, max_iter=40,
                           local_iterations=284,  # one pass: N_k = 285, 284
                           encryption=None, fit_intercept=False,
                           random_state=0)
    with pytest.raises(DivergenceError, match="local_iterations"):
        est.fit(X, y)


def test_default_local_iterations():
    """``"auto"``: ceil(sqrt(n_k)) under a constant step, one pass under
    gamma_t = 1/t (Theorem 4.11); an int as given."""
    assert paper_local_iterations("auto", 284, "Theorem 4.4") == 17
    assert paper_local_iterations("auto", 1000, "Theorem 4.8") == 32
    assert paper_local_iterations("auto", 1, "Theorem 4.4") == 1
    assert paper_local_iterations("auto", 142, "Theorem 4.11") == 142
    assert paper_local_iterations(5, 142, "Theorem 4.11") == 5


@pytest.mark.parametrize("n_classes", [2, 3])
def test_paper_solver_defaults_converge(n_classes):
    """With the default ``local_iterations`` the paper's loop converges on
    standardised data (one pass diverged there, issue 30): LinearSVC's
    training accuracy, and for two classes a small primal gap."""
    X, y = make_classification(600, 12, n_informative=6, n_classes=n_classes,
                               random_state=0)
    X = StandardScaler().fit_transform(X)
    est = HyFDCAClassifier(solver="paper", alpha=LAM, max_iter=300,
                           encryption=None, fit_intercept=False,
                           random_state=0).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        svc = LinearSVC(loss="hinge", C=1.0 / (LAM * len(y)),
                        fit_intercept=False, max_iter=100_000).fit(X, y)
    assert est.score(X, y) >= svc.score(X, y) - 0.01
    if n_classes == 2:
        assert _relative_gap(X, y, est.coef_) < 1e-2


def test_cyclic_vertical_unsettled_fit_warns():
    """gamma_t = 1/t overshoots in its first rounds: a short fit warns
    (raise max_iter) instead of calling it a divergence."""
    X, y = _breast_cancer()
    est = HyFDCAClassifier(VerticalPartition(4), solver="paper",
                           participation=0.5, schedule="cyclic", max_iter=10,
                           alpha=LAM, encryption=None, fit_intercept=False,
                           random_state=0, dual_curvature="row_norm")
    with pytest.warns(ConvergenceWarning, match="raise max_iter"):
        est.fit(X, y)


def test_vertical_partial_participation_needs_the_paper_solver():
    X, y = _breast_cancer()
    with pytest.raises(ValueError, match="solver='paper'"):
        HyFDCAClassifier(VerticalPartition(2), participation=0.5,
                         encryption=None).fit(X, y)
    with pytest.raises(ValueError, match="schedule='cyclic'"):
        HyFDCAClassifier(VerticalPartition(2), participation=0.5,
                         solver="paper", encryption=None).fit(X, y)


def test_losses_and_multiclass():
    X, y = make_classification(240, 8, n_informative=5, n_classes=3,
                               random_state=0)
    X = StandardScaler().fit_transform(X)
    with pytest.raises(ValueError, match="Assumption 4.1"):
        HyFDCAClassifier(solver="paper", loss="squared_hinge",
                         encryption=None).fit(X, y)
    for loss in ("hinge", "logistic"):
        est = HyFDCAClassifier(solver="paper", loss=loss, local_iterations=20,
                               max_iter=100, encryption=None, random_state=0)
        assert est.fit(X, y).score(X, y) > 0.55  # chance: 1/3
        assert est.coef_.shape == (3, 8)



def test_paper_solver_reaches_the_weighted_optimum():
    """sample_weight with the paper's loop: the fit approaches the optimum
    of the weighted objective (LinearSVC with the same weights); an
    unweighted fit, which a solver ignoring the weights would give, is
    ten times further from it."""
    X, y = make_classification(600, 12, n_informative=6, random_state=0)
    X = StandardScaler().fit_transform(X)
    s = np.where(y == 1, 4.0, 1.0) * np.random.RandomState(1).uniform(
        0.5, 1.5, len(y))
    signs = np.where(y == 1, 1.0, -1.0)

    def primal(w):
        w = np.ravel(w)
        return (0.5 * LAM * w @ w
                + (s * np.maximum(0, 1 - signs * (X @ w))).sum() / s.sum())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        svc = LinearSVC(loss="hinge", C=1.0 / (LAM * s.sum()),
                        fit_intercept=False, tol=1e-10,
                        max_iter=1_000_000).fit(X, signs, sample_weight=s)
    star = primal(svc.coef_)
    params = dict(solver="paper", alpha=LAM, max_iter=300, encryption=None,
                  fit_intercept=False, random_state=0)
    weighted = HyFDCAClassifier(**params).fit(X, y, sample_weight=s)
    unweighted = HyFDCAClassifier(**params).fit(X, y)
    gap = (primal(weighted.coef_) - star) / star
    assert gap < 5e-3
    assert (primal(unweighted.coef_) - star) / star > 10 * gap


# -- Algorithm 5 and the steps against an independent Algorithm 1 (issue 40) --

def _reference_algorithm_1(X, signs, rows, H, c_k, gamma, algorithm, seeds,
                           n_holders, rounds, q=None):
    """Algorithm 1 with full participation, pooled in numpy: per round the
    inner products at the start of the round, each client's ``H`` rows drawn
    from its own generator (without replacement, sorted), Algorithm 3 (the
    move toward ``u`` capped at ``c_k gamma``) or Algorithm 5 (the whole
    hinge step), the server adding ``move / |B_n|`` to the duals, then
    ``w = 1/(lambda N) sum_i alpha_i x_i``. Duals in label direction;
    ``q``: each row's curvature (default the exact ``||x_i||^2 / (lambda
    N)``)."""
    N = len(signs)
    a, w = np.zeros(N), np.zeros(X.shape[1])
    rngs = [np.random.RandomState(seed) for seed in seeds]
    if q is None:
        q = (X ** 2).sum(axis=1) / (LAM * N)
    for _ in range(rounds):
        margins = signs * (X @ w)
        total = np.zeros(N)
        for k, own in enumerate(rows):
            pick = (own if H >= len(own) else own[np.sort(rngs[k].choice(
                len(own), size=H, replace=False))])
            old, m = a[pick], margins[pick]
            best = np.clip(old + (1.0 - m) / q[pick], 0.0, 1.0)
            if algorithm == 5:
                move = best - old
            else:
                end = old + c_k[k] * gamma * ((m < 1.0) - old)
                move = np.clip(best, np.minimum(old, end),
                               np.maximum(old, end)) - old
            total[pick] += move / n_holders
        a += total
        w = X.T @ (signs * a) / (LAM * N)
    return w


@pytest.mark.parametrize("dual_curvature", ["auto", "row_norm"])
@pytest.mark.parametrize("step_size", ["auto", 2.0, "algorithm_5"])
def test_iterates_equal_an_independent_algorithm_1(step_size, dual_curvature):
    """Unequal row groups (34, 34, 33 rows of 101) on a 3 x 2 grid, each
    client drawing its own ``H`` rows from its seed: skfed's ``w`` after 30
    rounds equals the reference's. ``"auto"`` is Theorem 4.4's Algorithm 3
    (``c_k = N_k / N``), ``2.0`` the same with ``gamma_t = 2`` (``c_k
    gamma_t`` 0.67 and 0.65: not the whole step), ``"algorithm_5"`` the
    whole step for every client (the paper's experiments). The curvature:
    the default's ``kappa = 2`` times the mean squared row norm over all
    rows (one public scalar), or each row's own (``"row_norm"``)."""
    X, y = make_classification(101, 6, n_informative=4, random_state=3)
    X = StandardScaler().fit_transform(X)
    signs = np.where(y == 1, 1.0, -1.0)
    est = HyFDCAClassifier(HybridPartition(3, 2), solver="paper",
                           step_size=step_size, local_iterations=7,
                           max_iter=30, alpha=LAM, fit_intercept=False,
                           encryption=None, random_state=5,
                           dual_curvature=dual_curvature).fit(X, y)
    part = est.partition_
    K, N = part.n_clients, len(y)
    rows = [part.client_rows(k) for k in range(K)]
    assert sorted({len(r) for r in rows}) == [33, 34]
    gamma = 2.0 if step_size == 2.0 else 1.0
    w = _reference_algorithm_1(
        X, signs, rows, 7, [len(r) / N for r in rows], gamma,
        5 if step_size == "algorithm_5" else 3,
        party_seeds(5, 1 + K)[1:], part.n_column_groups, 30,
        q=(None if dual_curvature == "row_norm" else np.full(
            N, 2.0 * np.mean((X ** 2).sum(axis=1)) / (LAM * N))))
    assert np.max(np.abs(w)) > 0.1
    np.testing.assert_allclose(est.coef_.ravel(), w, rtol=0,
                               atol=1e-10 * np.max(np.abs(w)))


def test_algorithm_5_is_the_whole_step_for_every_client():
    """On equal row groups ``gamma_t = R`` gives ``c_k gamma_t = 1``, the
    same iterates as Algorithm 5 for the hinge; on unequal ones (285 and
    284 rows) ``2.0`` is 1.0018 and 0.9982, close to Algorithm 5 but not
    equal."""
    X, y = _breast_cancer()
    kw = dict(PAPER, max_iter=20)
    alg5 = HyFDCAClassifier(step_size="algorithm_5", **kw).fit(X, y).coef_
    two = HyFDCAClassifier(step_size=2.0, **kw).fit(X, y).coef_
    assert 0 < np.max(np.abs(alg5 - two)) < 1e-2 * np.max(np.abs(alg5))
    even = X[:568], y[:568]  # 284 and 284 rows
    alg5 = HyFDCAClassifier(step_size="algorithm_5", **kw).fit(*even).coef_
    two = HyFDCAClassifier(step_size=2.0, **kw).fit(*even).coef_
    np.testing.assert_allclose(two, alg5, rtol=0, atol=1e-12)


def test_the_papers_experiment_setting_runs():
    """Issue 40's acceptance call (the paper's experiments: Algorithm 5,
    ``c_k gamma_t = 1`` on a 2 x 2 grid) runs; 400 rounds reach liblinear's
    optimum to 1.5e-2 (1.0e-2 measured; at 200 rounds 3.5e-2, see the user
    guide: the fixed step oscillates round to round)."""
    X, y = _breast_cancer()
    est = HyFDCAClassifier(**dict(PAPER, step_size=2.0, max_iter=400))
    assert _relative_gap(X, y, est.fit(X, y).coef_) <= 1.5e-2


def test_covering_theorem():
    X = np.zeros((12, 4))
    grid = HybridPartition(2, 2).resolve(X)
    vertical = HybridPartition(1, 2).resolve(X)
    horizontal = HybridPartition(3, 1).resolve(X)
    assert covering_theorem("auto", grid, 1.0) == "Theorem 4.4"
    assert covering_theorem(1.0, grid, 1.0) == "Theorem 4.4"
    assert covering_theorem("algorithm_5", grid, 1.0) is None
    assert covering_theorem(2.0, grid, 1.0) is None
    assert covering_theorem("auto", grid, 0.5) is None
    assert covering_theorem("algorithm_5", vertical, 1.0) == "Theorem 4.4"
    assert covering_theorem("auto", vertical, 0.5, "cyclic") == "Theorem 4.11"
    assert covering_theorem("algorithm_5", vertical, 0.5, "cyclic") is None
    assert covering_theorem("algorithm_5", horizontal, 0.5) == "Theorem 4.8"
    assert covering_theorem("auto", horizontal, 0.5, "cyclic") is None
    assert paper_steps("algorithm_5", grid, 1.0, 12)[2] == "Algorithm 5"
    assert paper_local_iterations("auto", 284, "Algorithm 5") == 17


# -- the theorems' conditions ---------------------------------------------------

def test_more_local_iterations_than_a_clients_rows_are_refused():
    """Algorithm 3 draws H of a client's rows without replacement: H above
    N_k (33 rows on the smallest client here) is refused, naming the
    condition; the accelerated solver makes several passes and accepts it."""
    X, y = make_classification(101, 6, random_state=0)
    est = HyFDCAClassifier(HybridPartition(3, 2), solver="paper",
                           local_iterations=34, max_iter=2, encryption=None)
    with pytest.raises(ValueError, match=r"Algorithm 3.*H <= N_k.*Theorem"):
        est.fit(X, y)
    est.set_params(local_iterations=33).fit(X, y)
    with pytest.warns(ConvergenceWarning):  # 2 rounds: not converged
        est.set_params(solver="accelerated", local_iterations=200).fit(X, y)


def test_unequal_cyclic_sets_are_refused():
    """Assumption 4.10: the clients of a vertical split take turns in C >= 2
    sets of Q/C clients; 5 clients in 3 sets (2, 2, 1) are refused, 4
    clients in 2 sets run."""
    X, y = _breast_cancer()
    est = HyFDCAClassifier(VerticalPartition(5), solver="paper",
                           participation=0.4, schedule="cyclic", max_iter=2,
                           encryption=None)
    with pytest.raises(ValueError, match=r"2, 2, 1.*Assumption 4.10.*1/5"):
        est.fit(X, y)
    est.set_params(partition=VerticalPartition(4), participation=0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        assert est.fit(X, y).n_iter_ == 2


# -- partial participation by client --------------------------------------------

def test_clients_take_part_one_by_one():
    """Algorithm 1's K^t holds individual clients: on a 2 x 2 grid with
    participation 0.5 each round has 2 of the 4 clients, drawn from the
    participation seed; only they send duals, a client can take part
    without its row-group partner, and nothing is sent by the absent."""
    X, y = _breast_cancer()
    est = HyFDCAClassifier(**dict(PAPER, max_iter=8, participation=0.5,
                                  step_size="algorithm_5"))
    with record_messages() as rec:
        est.fit(X, y)
    schedule = ClientParticipation(4, 0.5, party_seeds(0, 5)[0])
    expected = {t: {f"client{k}" for k in schedule(t)} for t in range(1, 9)}
    sent = {t: set() for t in range(1, 9)}
    for m in rec.messages:
        if m.sender.startswith("client") and m.round in sent and (
                m.phase == "duals" or m.phase.startswith("inner products")):
            sent[m.round].add(m.sender)
    assert sent == expected
    # Some round has a client without its partner (0, 1 share rows; 2, 3).
    assert any(len(ks & {"client0", "client1"}) == 1
               for ks in expected.values())


def test_clients_taking_part_one_by_one_converge():
    """Per-client participation 0.5 on a 2 x 2 grid (no theorem covers it,
    section 4.2): Algorithm 5 reaches liblinear's optimum to 2e-2 in 1,000
    rounds (9.6e-3 measured; an independent reimplementation: 7.6e-3 to
    1.07e-2 over five seeds)."""
    X, y = _breast_cancer()
    est = HyFDCAClassifier(**dict(PAPER, max_iter=1000, participation=0.5,
                                  step_size="algorithm_5")).fit(X, y)
    assert _relative_gap(X, y, est.coef_) <= 2e-2


# -- the paper's printed curvature ----------------------------------------------

def test_printed_curvature_equals_the_row_norm_on_unit_rows():
    """Algorithm 5's printed ``(delta / (lambda N))^2`` is the exact
    curvature when every row has norm 1: the same model to 1e-12, without
    the setup exchange of squared norms."""
    X, y = _breast_cancer()
    X = Normalizer().fit_transform(X)
    kw = dict(PAPER, step_size="algorithm_5", max_iter=50)
    with record_messages() as rec:
        paper = HyFDCAClassifier(dual_curvature="paper", **kw).fit(X, y)
    exact = HyFDCAClassifier(dual_curvature="row_norm", **kw).fit(X, y)
    assert np.max(np.abs(exact.coef_)) > 0.1
    np.testing.assert_allclose(paper.coef_, exact.coef_, rtol=0, atol=1e-12)
    assert not [m for m in rec.messages if m.phase.startswith("squared")]


def test_printed_curvature_of_algorithm_3_is_one_over_lambda():
    """Algorithm 3's printed ``gamma_t^2 / (2 lambda)`` is curvature
    ``1 / lambda``: the independent Algorithm 1 with that curvature gives
    the same ``w``; longer rows than 1 warn."""
    X, y = make_classification(101, 6, n_informative=4, random_state=3)
    X = Normalizer().fit_transform(X)
    signs = np.where(y == 1, 1.0, -1.0)
    est = HyFDCAClassifier(HybridPartition(3, 2), solver="paper",
                           dual_curvature="paper", local_iterations=7,
                           max_iter=30, alpha=LAM, fit_intercept=False,
                           encryption=None, random_state=5).fit(X, y)
    part = est.partition_
    rows = [part.client_rows(k) for k in range(part.n_clients)]
    N = len(y)
    w = _reference_algorithm_1(
        X, signs, rows, 7, [len(r) / N for r in rows], 1.0, 3,
        party_seeds(5, 1 + part.n_clients)[1:], 2, 30,
        q=np.full(N, 1.0 / LAM))
    np.testing.assert_allclose(est.coef_.ravel(), w, rtol=0,
                               atol=1e-10 * np.max(np.abs(w)))
    with pytest.warns(UserWarning, match="norm at most 1"):
        est.fit(X * 2, y)
