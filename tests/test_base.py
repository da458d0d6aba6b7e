"""The shared estimator plumbing, exercised through a tiny federated estimator."""

import pickle

import numpy as np
import pytest
import sklearn
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.datasets import load_iris
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.utils.validation import check_is_fitted, validate_data

from skfed._docstrings import SHARED_PARAMETERS, fill_doc
from skfed.base import FederatedMixin, check_labels_not_single_class, party_seeds
from skfed.federation import balanced_tree, record_messages, tree_sum
from skfed.partition import HorizontalPartition


def _class_sums(state, n_classes):
    sums = np.zeros((n_classes, state.X.shape[1] + 1))
    np.add.at(sums[:, :-1], state.y, state.X)
    np.add.at(sums[:, -1], state.y, 1.0)
    return sums


@fill_doc
class _FederatedCentroids(FederatedMixin, ClassifierMixin, BaseEstimator):
    """Nearest centroid over rows held by several parties (test helper).

    Parameters
    ----------
    %(partition_horizontal)s
    shrink : float, default=0.0
        Unused except to give GridSearchCV something to search.
    """

    _partition_kind = "horizontal"

    def __init__(self, partition=None, shrink=0.0):
        self.partition = partition
        self.shrink = shrink

    def fit(self, X, y, sample_party=None):
        X, y = validate_data(self, X, y)
        self.classes_, y = np.unique(y, return_inverse=True)
        check_labels_not_single_class(self.classes_)
        part = self._resolve_partition(X, sample_party)
        states = {f"user{k}": {"X": X[part.rows(k)], "y": y[part.rows(k)]}
                  for k in range(part.n_parties)}
        names = list(states)
        with self._federation(states) as fed:
            local = {p: fed[p].call(_class_sums, len(self.classes_)) for p in names}
            sums = tree_sum(fed, balanced_tree(names), local, phase="class-sums")
            sums = sums.result() if hasattr(sums, "result") else sums
        self.centroids_ = sums[:, :-1] / sums[:, -1:]
        self.n_owners_seen_ = part.n_parties
        return self

    def predict(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, reset=False)
        d = ((X[:, None, :] - self.centroids_[None]) ** 2).sum(-1)
        return self.classes_[d.argmin(1)]


def test_fill_doc_substitutes_shared_parameters():
    doc = _FederatedCentroids.__doc__
    assert "contiguous blocks or a seeded" in doc
    assert "%(" not in doc
    assert "    partition : None, int or HorizontalPartition" in doc

    class Bad:
        """%(nope)s"""
    with pytest.raises(KeyError, match="nope"):
        fill_doc(Bad)
    assert set(SHARED_PARAMETERS) >= {"random_state", "encryption", "key_size",
                                      "n_jobs", "verbose"}


def test_fit_records_partition_and_communication_and_pickles():
    X, y = load_iris(return_X_y=True)
    model = _FederatedCentroids(partition=3).fit(X, y)
    assert model.partition_.n_parties == 3
    assert model.communication_.total_messages == 2
    assert model.communication_.by_phase["class-sums"]["scalars"] == 2 * 3 * 5
    clone = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(clone.predict(X), model.predict(X))
    # exactly the centralized centroids
    central = np.vstack([X[y == c].mean(0) for c in range(3)])
    np.testing.assert_allclose(model.centroids_, central)


def test_sample_party_survives_cross_validation_without_routing():
    X, y = load_iris(return_X_y=True)
    rule = HorizontalPartition(3, split="random", random_state=0)
    scores = cross_val_score(_FederatedCentroids(partition=rule), X, y, cv=3)
    assert scores.mean() > 0.85


def test_sample_party_is_routed_and_sliced_with_x():
    X, y = load_iris(return_X_y=True)
    owner = np.arange(len(y)) % 4
    seen = []

    class Spy(_FederatedCentroids):
        def fit(self, X, y, sample_party=None):
            seen.append(np.asarray(sample_party).copy())
            return super().fit(X, y, sample_party=sample_party)

    with sklearn.config_context(enable_metadata_routing=True):
        est = Spy().set_fit_request(sample_party=True)
        search = GridSearchCV(est, {"shrink": [0.0, 1.0]}, cv=3)
        search.fit(X, y, sample_party=owner)
    assert search.best_estimator_.n_owners_seen_ == 4
    # every fold's fit received the owners of exactly its own rows
    assert all(len(s) in (100, 150) for s in seen)
    assert all(set(np.unique(s)) == {0, 1, 2, 3} for s in seen)
    assert sum(len(s) == 100 for s in seen) == 6


def test_routing_off_passes_sample_party_directly():
    X, y = load_iris(return_X_y=True)
    model = _FederatedCentroids().fit(X, y, sample_party=np.arange(150) % 5)
    assert model.partition_.n_parties == 5


def test_predict_does_not_record_but_recorder_sees_fit():
    X, y = load_iris(return_X_y=True)
    with record_messages() as rec:
        _FederatedCentroids(partition=2).fit(X, y)
    assert [m.receiver for m in rec.messages] == ["user0"]
    assert [m.sender for m in rec.messages] == ["user1"]


def test_single_class_is_a_clear_error():
    X = np.zeros((6, 2))
    with pytest.raises(ValueError, match="only one class"):
        _FederatedCentroids().fit(X, np.ones(6))


def test_party_seeds_are_deterministic():
    assert party_seeds(0, 4) == party_seeds(0, 4)
    assert party_seeds(0, 4) != party_seeds(1, 4)
    assert len(set(party_seeds(3, 50))) == 50


def _supervised_estimators():
    from sklearn.base import is_classifier, is_regressor

    from skfed.utils import all_estimators

    return [(name, cls) for name, cls in all_estimators()
            if is_classifier(cls()) or is_regressor(cls())]


@pytest.mark.parametrize("name, cls", _supervised_estimators())
def test_every_supervised_estimator_takes_the_partition_first(name, cls):
    # SecureBoostClassifier([a, b]) used to be a TypeError while FDSKL, AVFKAM
    # and HyFDCA took the partition positionally.
    import inspect

    first, *rest = inspect.signature(cls).parameters.values()
    assert first.name == "partition"
    assert first.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in rest)
    groups = [[0, 1], [2, 3]]
    assert cls(groups).partition == groups
    assert cls(partition=groups).partition == groups
