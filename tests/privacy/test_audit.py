"""``audit`` on every estimator: a clean contract and a full attack table.

The per-protocol planted-leak tests live beside this file; here each
estimator's default protocol (small data, small keys; encrypted and, where
there is a choice, plaintext) must satisfy its own contract, semantic checks
and size bounds included (no false positive), declare a size bound for every
element, and produce the attack table with the documented columns. The
figures themselves are in benchmarks/bench_privacy.py.
"""

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, make_blobs
from sklearn.preprocessing import StandardScaler

from skfed.cluster import FederatedKernelKMeans
from skfed.ensemble import SecureBoostClassifier, SecureBoostRegressor
from skfed.kernel_methods import AVFKAMRanker, FDSKLClassifier, FDSKLRegressor
from skfed.alignment import PSIAudit
from skfed.linear_model import HyFDCAClassifier
from skfed.partition import HybridPartition, VerticalPartition
from skfed.privacy import audit
from skfed._privacy_core._check import public_sizes

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
    # plaintext mode (teaching): the same contracts, PlaintextArray leaves
    "secureboost-plaintext": (SecureBoostClassifier(
        n_estimators=2, partition=3, encryption=None, random_state=0), X, y),
    "secureboost-regressor-plaintext": (SecureBoostRegressor(
        n_estimators=2, partition=3, encryption=None, random_state=0),
        X, X[:, 0] + X[:, 5]),
    "hyfdca-grid-plaintext": (HyFDCAClassifier(
        HybridPartition(2, 2), max_iter=5, tol=None, encryption=None,
        random_state=0), X, y),
    "psi": (PSIAudit(), [[f"id{i}" for i in range(0, 60)],
                         [f"id{i}" for i in range(30, 80)],
                         [f"id{i}" for i in range(10, 90, 2)]], None),
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
    # every element of the contract declares a size bound that evaluates
    fitted = report.estimator
    sizes = public_sizes(fitted, X_, report.messages,
                         fitted._privacy_contract())
    for rule in fitted._privacy_contract().rules:
        for spec in rule.elements:
            assert spec.max_size is not None, rule.describe()
            assert spec.size_bound(sizes) is not None, rule.describe()


def test_audit_can_select_attacks():
    estimator, X_, y_ = CASES["secureboost"]
    report = audit(estimator, X_, y_, attacks=["deshuffle"])
    assert set(report.attacks["attack"]) == {"deshuffle"}
