"""SecureBoost shares: exported, saved, loaded in separate processes, consolidated."""

import multiprocessing
import pickle

import joblib
import numpy as np
import pytest
from sklearn.datasets import load_digits, make_classification, make_regression

from skfed.ensemble import (
    SecureBoostActiveShare,
    SecureBoostClassifier,
    SecureBoostConsolidated,
    SecureBoostPassiveShare,
    SecureBoostRegressor,
    consolidate_shares,
)

from ._share_worker import serve


def _plain_arrays_only(obj):
    """Every attribute is a number, string, None, numpy array, or list/dict thereof."""
    def ok(value):
        if isinstance(value, (list, tuple)):
            return all(ok(v) for v in value)
        if isinstance(value, dict):
            return all(ok(v) for v in value.values())
        return value is None or isinstance(value, (int, float, str, np.ndarray))
    return all(ok(v) for v in vars(obj).values())


@pytest.fixture(scope="module")
def fitted():
    X, y = make_classification(300, 9, n_informative=5, random_state=0)
    X[np.random.default_rng(0).random(X.shape) < 0.1] = np.nan
    clf = SecureBoostClassifier(n_estimators=5, max_depth=3, encryption=None,
                                random_state=0, partition=3).fit(X, y)
    return X, clf


@pytest.mark.slow
def test_shares_loaded_in_separate_processes_predict_as_the_model(fitted, tmp_path):
    X, clf = fitted
    shares = clf.export_shares()
    assert isinstance(shares[0], SecureBoostActiveShare)
    assert all(isinstance(s, SecureBoostPassiveShare) for s in shares[1:])
    assert all(_plain_arrays_only(s) for s in shares)
    # Each party saves its share and its own columns; nothing else.
    for k, share in enumerate(shares):
        with open(tmp_path / f"share{k}.pkl", "wb") as f:
            pickle.dump(share, f)
        np.save(tmp_path / f"columns{k}.npy", X[:, share.columns])
    context = multiprocessing.get_context("spawn")
    pipes, workers = {}, []
    for k in (1, 2):
        here, there = context.Pipe()
        worker = context.Process(target=serve, args=(
            str(tmp_path / f"share{k}.pkl"), str(tmp_path / f"columns{k}.npy"), there))
        worker.start()
        pipes[k], workers = here, workers + [worker]
    try:
        with open(tmp_path / "share0.pkl", "rb") as f:
            active = pickle.load(f)
        asked = []

        def ask(party, record_ids, rows):
            asked.append(party)
            pipes[party].send((record_ids, rows))
            return pipes[party].recv()

        proba = active.predict_proba(np.load(tmp_path / "columns0.npy"), ask)
    finally:
        for pipe in pipes.values():
            pipe.send(None)
        for worker in workers:
            worker.join(timeout=60)
    assert all(w.exitcode == 0 for w in workers)
    assert set(asked) == {1, 2} and len(asked) <= 2 * clf.max_depth
    np.testing.assert_array_equal(proba, clf.predict_proba(X))


def test_consolidated_model_predicts_exactly_without_a_federation(fitted, tmp_path):
    X, clf = fitted
    model = clf.consolidate()
    assert isinstance(model, SecureBoostConsolidated)
    joblib.dump(model, tmp_path / "model.joblib")
    loaded = joblib.load(tmp_path / "model.joblib")
    np.testing.assert_array_equal(loaded.predict_proba(X), clf.predict_proba(X))
    np.testing.assert_array_equal(loaded.predict(X), clf.predict(X))
    # From shares in any order, as the parties would hand them over.
    again = consolidate_shares(clf.export_shares()[::-1])
    np.testing.assert_array_equal(again.decision_function(X)[:, 0],
                                  clf.decision_function(X))
    with pytest.raises(ValueError, match="one share per party"):
        consolidate_shares(clf.export_shares()[:2])


@pytest.mark.parametrize("kind", ["multiclass", "regressor"])
def test_in_process_shares_and_consolidation(kind):
    if kind == "multiclass":
        X, y = load_digits(return_X_y=True)
        X, y = X[:200], y[:200]
        model = SecureBoostClassifier(n_estimators=2, encryption=None, random_state=0)
        method = "predict_proba"
    else:
        X, y = make_regression(200, 6, noise=1.0, random_state=0)
        model = SecureBoostRegressor(n_estimators=4, encryption=None, random_state=0)
        method = "predict"
    model.fit(X, y)
    active, *passive = model.export_shares()

    def ask(party, record_ids, rows):
        share = passive[party - 1]
        return share.answer(X[:, share.columns], record_ids, rows)

    expected = getattr(model, method)(X)
    got = getattr(active, method)(X[:, active.columns], ask)
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(getattr(model.consolidate(), method)(X), expected)


def test_shares_of_another_fit_or_edited_are_refused(fitted):
    # A passive share from another fit, or NaN / shifted thresholds, used to
    # give other predictions silently (29/120 and 63/120 labels changed).
    import copy

    X, clf = fitted
    shares = clf.export_shares()
    assert len({s.model for s in shares}) == 1
    assert {s.model for s in clf.export_shares()} == {shares[0].model}
    other = SecureBoostClassifier(
        n_estimators=5, max_depth=3, encryption=None, random_state=0,
        partition=3).fit(X, clf.predict(X))
    foreign = other.export_shares()
    assert foreign[1].model != shares[1].model
    with pytest.raises(ValueError, match="share of party 1 is of another fit"):
        consolidate_shares([shares[0], foreign[1], shares[2]])
    active = shares[0]
    X_own = {s.party: X[:, s.columns] for s in shares}
    with pytest.raises(ValueError, match="of another fit"):
        active.decision_function(X_own[0], lambda p, r, rows: foreign[p].answer(
            X_own[p], r, rows, model=active.model))
    for edit in ("nan", "shift"):
        edited = copy.deepcopy(shares[1])
        edited.table[0, 1] = np.nan if edit == "nan" else edited.table[0, 1] + 0.5
        with pytest.raises(ValueError, match="fails its integrity check"):
            consolidate_shares([shares[0], edited, shares[2]])
        with pytest.raises(ValueError, match="fails its integrity check"):
            edited.answer(X_own[1], [0], [0])
    edited = copy.deepcopy(active)
    edited.baseline = edited.baseline + 1.0
    with pytest.raises(ValueError, match="party 0 fails its integrity check"):
        edited.decision_function(X_own[0], lambda p, r, rows: shares[p].answer(
            X_own[p], r, rows))
    # Untouched shares of one fit still predict as the model.
    np.testing.assert_allclose(
        active.decision_function(X_own[0], lambda p, r, rows: shares[p].answer(
            X_own[p], r, rows, model=active.model))[:, 0],
        clf.decision_function(X))
