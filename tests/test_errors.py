"""Everyday mistakes get a message that says what is wrong and what to do."""

import re

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.datasets import make_classification
from sklearn.preprocessing import StandardScaler

from skfed.cluster import FederatedKernelKMeans
from skfed.kernel_methods import AVFKAMRanker, FDSKLClassifier
from skfed.linear_model import HyFDCAClassifier
from skfed.partition import VerticalPartition, _check_active_parties
from skfed.ensemble import SecureBoostClassifier


def _frame():
    X, y = make_classification(n_samples=40, n_features=4, random_state=0)
    return pd.DataFrame(X, columns=["age", "income", "debt", "visits"]), y


def test_column_transformer_prefix_hint():
    X, y = _frame()
    ct = ColumnTransformer([("num", StandardScaler(), ["age", "income", "debt",
                                                        "visits"])])
    Xt = ct.set_output(transform="pandas").fit_transform(X)
    partition = VerticalPartition([["age", "income"], ["debt", "visits"]])
    with pytest.raises(ValueError, match="verbose_feature_names_out=False") as exc:
        partition.resolve(Xt)
    assert "Unknown column names" in str(exc.value)
    assert "'num__age'" in str(exc.value)
    # Without a prefix the hint stays out (a plain typo).
    with pytest.raises(ValueError) as exc:
        VerticalPartition([["age", "incme"], ["debt", "visits"]]).resolve(X)
    assert "verbose_feature_names_out" not in str(exc.value)
    # The hint's advice works.
    ct.set_params(verbose_feature_names_out=False)
    resolved = partition.resolve(ct.fit_transform(X))
    assert resolved.column_groups == [[0, 1], [2, 3]]


BAD_ACTIVE = [
    (1.0, "not (booleans and floats are refused"),
    ((0, 1.5), "1.5 is not"),
    (True, "True is not"),
    ((True,), "True is not"),
    ((0, 5), "[5], out of range: the partition has 3 parties"),
    (-1, "[-1], out of range"),
    ((), "is empty"),
    ((1, 1), "names a party twice"),
    ("0", "must be a party index or a tuple"),
]


@pytest.mark.parametrize("active, message", BAD_ACTIVE)
def test_check_active_parties_refuses(active, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        _check_active_parties(active, 3)


def test_check_active_parties_accepts_integers():
    assert _check_active_parties(np.int64(2), 3) == (2,)
    assert _check_active_parties([0, 2], 3) == (0, 2)


@pytest.mark.parametrize("make", [
    lambda p: FDSKLClassifier(p, max_iter=2),
    lambda p: AVFKAMRanker(p, max_iter=2),
    lambda p: SecureBoostClassifier(partition=p, encryption=None, n_estimators=1),
    lambda p: HyFDCAClassifier(p, encryption=None, max_iter=2),
], ids=["FDSKL", "AVFKAM", "SecureBoost", "HyFDCA"])
@pytest.mark.parametrize("active, message", [
    (1.0, "booleans and floats are refused"),
    ((0, True), "True is not"),
    ((0, 3), "out of range: the partition has 3 parties"),
])
def test_every_vertical_estimator_refuses_bad_active_parties(make, active,
                                                             message):
    X, y = make_classification(n_samples=40, n_features=6, random_state=0)
    with pytest.raises(ValueError, match=re.escape(message)):
        make(VerticalPartition(3, active_parties=active)).fit(X, y)


def test_kernel_kmeans_fewer_distinct_rows_than_clusters():
    X = np.repeat(np.array([[0.0, 1.0], [1.0, 0.0], [2.0, 2.0]]), 20, axis=0)
    for efficient in (True, False):
        km = FederatedKernelKMeans(4, communication_efficient=efficient,
                                   n_random_features=10, max_iter=3)
        with pytest.raises(ValueError, match=re.escape(
                "X has only 3 distinct rows, fewer than n_clusters=4")):
            km.fit(X)


@pytest.mark.parametrize("encryption", [None, "paillier"])
def test_hyfdca_huge_values_say_what_is_wrong(encryption):
    X, y = make_classification(n_samples=40, n_features=4, random_state=0)
    clf = HyFDCAClassifier(encryption=encryption, key_size=1024, max_iter=2)
    with pytest.raises(ValueError, match="StandardScaler") as exc:
        clf.fit(X * 1e200, y)
    message = str(exc.value)
    assert "largest |x| = " in message and "raise alpha" in message
    if encryption is None:
        assert "encod" not in message and "values are too large" in message
