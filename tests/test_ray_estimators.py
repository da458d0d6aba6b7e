"""Every estimator fitted with Ray actors equals the threads backend's model."""

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, make_blobs, make_regression
from sklearn.preprocessing import StandardScaler

import skfed
from skfed.cluster import FederatedKernelKMeans
from skfed.ensemble import SecureBoostClassifier, SecureBoostRegressor
from skfed.kernel_methods import AVFKAMRanker, FDSKLClassifier, FDSKLRegressor
from skfed.linear_model import HyFDCAClassifier
from skfed.partition import HorizontalPartition, HybridPartition, VerticalPartition
from skfed.preprocessing import (KBinsDiscretizer, MaxAbsScaler, MinMaxScaler,
                                 OneHotEncoder, SimpleImputer)
from skfed.preprocessing import StandardScaler as FederatedScaler
from skfed.utils import all_estimators

ray = pytest.importorskip("ray")
pytestmark = [pytest.mark.xdist_group("ray"),
              pytest.mark.usefixtures("ray_instance")]


def _classification():
    X, y = load_breast_cancer(return_X_y=True)
    idx = np.random.RandomState(0).permutation(len(y))[:150]
    return StandardScaler().fit_transform(X[idx][:, :8]), y[idx]


def _regression():
    X, y = make_regression(n_samples=120, n_features=6, noise=1.0, random_state=0)
    return X, y / y.std()


def _clusters():
    X, _ = make_blobs(n_samples=150, centers=3, random_state=0)
    return X, None


def _missing():
    X, _ = _classification()
    X = X.copy()
    X[np.random.RandomState(1).rand(*X.shape) < 0.1] = np.nan
    return X, None


def _categories():
    X, _ = _classification()
    return np.round(2 * X), None


CASES = {
    "FDSKLClassifier": (FDSKLClassifier(partition=3, max_iter=8, batch_size=16,
                                        n_components_per_iter=8, random_state=0),
                        _classification),
    "FDSKLRegressor": (FDSKLRegressor(partition=2, max_iter=15, batch_size=16,
                                      n_components_per_iter=8, random_state=0),
                       _regression),
    "AVFKAMRanker": (AVFKAMRanker(VerticalPartition(3, active_parties=(0, 1)),
                                  asynchronous=False, max_iter=10,
                                  n_random_features=64, batch_size=8,
                                  features_per_step=16, random_state=0),
                     _classification),
    # Real (small-key) Paillier: ciphertext arrays cross process boundaries.
    "SecureBoostClassifier": (SecureBoostClassifier(n_estimators=2, key_size=256,
                                                    random_state=0),
                              _classification),
    "SecureBoostRegressor": (SecureBoostRegressor(n_estimators=3, encryption=None,
                                                  random_state=0),
                             _regression),
    "FederatedKernelKMeans": (FederatedKernelKMeans(n_clusters=3, max_iter=3,
                                                    tol=None, n_random_features=20,
                                                    random_state=0),
                              _clusters),
    "HyFDCAClassifier": (HyFDCAClassifier(HybridPartition(2, 2), max_iter=3, tol=None,
                                          key_size=256, random_state=0),
                         _classification),
    # The transformers on three row holders (a column split sends nothing):
    # their fit is a protocol between the holders and a server.
    "StandardScaler": (FederatedScaler(partition=HorizontalPartition(3)),
                       _missing),
    "MinMaxScaler": (MinMaxScaler(partition=HorizontalPartition(3)),
                     _classification),
    "MaxAbsScaler": (MaxAbsScaler(partition=HorizontalPartition(3)),
                     _classification),
    "SimpleImputer": (SimpleImputer(partition=HorizontalPartition(3),
                                    strategy="median"), _missing),
    "OneHotEncoder": (OneHotEncoder(partition=HorizontalPartition(3),
                                    sparse_output=False), _categories),
    "KBinsDiscretizer": (KBinsDiscretizer(n_bins=4, partition=HorizontalPartition(3),
                                          encode="ordinal"), _classification),
}


#: Fits whose message count is drawn by a party's CSPRNG, not by the data:
#: the value counts hash categories to slots under a key the first holder
#: draws afresh each fit, and a fresh round rehashes the slots that held
#: two values, so two fits (on any backend) send the same phases but not
#: the same number of messages; the model is the same (see
#: tests/preprocessing/test_protocol.py).
SECRET_ROUNDS = {"OneHotEncoder"}


def test_every_estimator_has_a_ray_case():
    assert sorted(CASES) == [name for name, _ in all_estimators()]


def _fit_predict(estimator, X, y, backend):
    from sklearn.base import clone

    model = clone(estimator)
    with skfed.config_context(backend=backend):
        model.fit(X, y)
        if hasattr(model, "decision_function"):
            out = model.decision_function(X)
        elif hasattr(model, "predict"):
            out = model.predict(X)
        else:  # a transformer: transform is local, its fit is federated
            out = model.transform(X)
    return model, np.asarray(out)


@pytest.mark.parametrize("name", sorted(CASES))
def test_ray_model_equals_threads_model(name):
    estimator, make_data = CASES[name]
    X, y = make_data()
    threads_model, threads_out = _fit_predict(estimator, X, y, "threads")
    ray_model, ray_out = _fit_predict(estimator, X, y, "ray")
    np.testing.assert_allclose(ray_out, threads_out, rtol=1e-9, atol=1e-9)
    if name in SECRET_ROUNDS:
        assert (set(ray_model.communication_.by_phase)
                == set(threads_model.communication_.by_phase))
    else:
        assert ray_model.communication_ == threads_model.communication_
    assert ray_model.communication_.total_messages > 0
    # In-memory X: every party ran on an actor of its own, killed after the
    # fit; no long-lived home (those are for PartyData) was started.
    from skfed.federation._ray import _homes

    assert not _homes


#: How long the planted call of the waited-for party lasts: without the
#: watch, a dead party surfaced only once that call ended.
STALL_SECONDS = 60.0


def _stalled(fn, state, *args, **kwargs):
    import time

    time.sleep(STALL_SECONDS)
    return fn(state, *args, **kwargs)


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_killed_party_surfaces_at_once_naming_it(name, monkeypatch):
    # The driver waits for a long call of one party (the first) while
    # another (the last) is killed: the fit must stop promptly, naming the
    # dead party, not once the long call ends (it took 18-29 s before).
    import functools
    import time

    from skfed.federation import PartyError
    from skfed.federation._ray import RayFuture, RayParty

    from ._faults import PROMPT_SECONDS

    planted, parties = {}, []
    start, call, result = RayParty.start, RayParty.call, RayFuture.result

    def recording_start(self):
        parties.append(self)
        return start(self)

    def planting_call(self, fn, *args, **kwargs):
        if self is parties[0] and "future" not in planted:
            planted["calls"] = planted.get("calls", 0) + 1
            if planted["calls"] == 3:  # mid-fit: after the set-up calls
                future = call(self, functools.partial(_stalled, fn), *args,
                              **kwargs)
                planted.update(future=future, victim=parties[-1])
                return future
        return call(self, fn, *args, **kwargs)

    def killing_result(self, timeout=None):
        # The driver's first wait once the long call is sent: a call's
        # answer may go on to another party's call rather than to the
        # driver, so the wait may be for a later answer queued behind it.
        if "future" in planted and "killed_at" not in planted:
            ray.kill(planted["victim"]._actor, no_restart=True)
            planted["killed_at"] = time.monotonic()
        return result(self, timeout)

    monkeypatch.setattr(RayParty, "start", recording_start)
    monkeypatch.setattr(RayParty, "call", planting_call)
    monkeypatch.setattr(RayFuture, "result", killing_result)
    estimator, make_data = CASES[name]
    X, y = make_data()
    with skfed.config_context(backend="ray"):
        with pytest.raises(PartyError) as caught:
            estimator.fit(X, y)
    assert "killed_at" in planted, "the planted long call was never waited for"
    assert time.monotonic() - planted["killed_at"] < PROMPT_SECONDS
    victim = planted["victim"].name
    assert caught.value.party == victim
    assert str(caught.value).startswith(f"Party '{victim}' is gone: its Ray "
                                        "actor died")


def test_a_home_that_died_between_fits_is_named_and_the_next_fit_reloads():
    """A PartyData home killed after a fit: the next fit raises a
    PartyError naming the party and saying what was lost (not Ray's raw
    ActorDiedError), and the fit after it loads the data at a new home."""
    import pandas as pd

    from skfed.federation import PartyData, PartyError
    from skfed.federation._ray import _homes, shutdown_homes

    rng = np.random.RandomState(0)
    ids = np.arange(60)
    left = pd.DataFrame({"id": ids, "a": rng.normal(size=60),
                         "b": rng.normal(size=60)})
    left["label"] = (left["a"] > 0).astype(int)
    right = pd.DataFrame({"id": ids, "c": rng.normal(size=60)})
    data = PartyData({"left": lambda: left, "right": lambda: right})
    model = SecureBoostClassifier(n_estimators=2, encryption=None,
                                  min_passive_rows=0, random_state=0)
    with skfed.config_context(backend="ray"):
        try:
            first = model.fit(data, "label").predict(data)
            home = _homes["right"][1]
            ray.kill(home, no_restart=True)
            with pytest.raises(ray.exceptions.RayActorError):  # dead now
                ray.get(home.at_home.remote(_nothing, ()), timeout=60)
            with pytest.raises(PartyError, match=r"home actor \('right'.*lost"):
                model.fit(data, "label")
            np.testing.assert_array_equal(
                model.fit(data, "label").predict(data), first)
        finally:
            shutdown_homes()


def _nothing(home):
    return None
