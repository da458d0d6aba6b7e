"""``audit`` on every estimator: a clean contract and a full attack table.

The per-protocol planted-leak tests live beside this file; here each
estimator's default protocol (small data, small keys) must satisfy its own
contract, semantic checks included, and produce the attack table with the
documented columns. The figures themselves are in benchmarks/bench_privacy.py.
"""

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, make_blobs
from sklearn.preprocessing import StandardScaler

from skfed.cluster import FederatedKernelKMeans
from skfed.ensemble import SecureBoostClassifier, SecureBoostRegressor
from skfed.kernel_methods import AVFKAMRanker, FDSKLClassifier, FDSKLRegressor
from skfed.linear_model import HyFDCAClassifier
from skfed.partition import HybridPartition, VerticalPartition
from skfed.privacy import audit

X_bc, y_bc = load_breast_cancer(return_X_y=True)
rng = np.random.RandomState(0)
_rows = np.sort(rng.choice(len(X_bc), 150, replace=False))
X = StandardScaler().fit_transform(X_bc[_rows][:, :9])
y = y_bc[_rows]
X_blobs, _ = make_blobs(n_samples=150, centers=3, n_features=4, random_state=0)

CASES = {
    "fdskl": (FDSKLClassifier(VerticalPartition(3), max_iter=60,
                              random_state=0), X, y),
    "fdskl-regressor": (FDSKLRegressor(VerticalPartition(3), max_iter=60,
                                       random_state=0), X, X[:, 0] - X[:, 5]),
    "avfkam": (AVFKAMRanker(VerticalPartition(3), max_iter=60,
                            random_state=0), X, y),
    "secureboost": (SecureBoostClassifier(n_estimators=2, partition=3,
                                          key_size=512, random_state=0), X, y),
    "secureboost-regressor": (SecureBoostRegressor(n_estimators=2, partition=3,
                                                   key_size=512, random_state=0),
                              X, X[:, 0] + X[:, 5]),
    "kernel-kmeans": (FederatedKernelKMeans(3, partition=3, random_state=0),
                      X_blobs, None),
    "hyfdca": (HyFDCAClassifier(HybridPartition(3, 1), max_iter=5, tol=None,
                                key_size=512, random_state=0), X, y),
    "hyfdca-grid": (HyFDCAClassifier(HybridPartition(2, 2), max_iter=5, tol=None,
                                     key_size=512, random_state=0), X, y),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_default_protocol_keeps_its_contract(name):
    estimator, X_, y_ = CASES[name]
    report = audit(estimator, X_, y_)
    assert report.violations == [], "\n".join(map(str, report.violations[:5]))
    assert list(report.attacks.columns) == [
        "attack", "attacker", "victim", "target", "metric", "value", "chance"]
    assert len(report.attacks) > 0
    assert report.attacks["value"].notna().all()
    assert len(report.messages) > 0
    assert report.estimator is not estimator
    assert "0 contract violation(s)" in str(report)


def test_audit_can_select_attacks():
    estimator, X_, y_ = CASES["secureboost"]
    report = audit(estimator, X_, y_, attacks=["deshuffle"])
    assert set(report.attacks["attack"]) == {"deshuffle"}
