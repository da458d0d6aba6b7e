"""One quick-tour case per estimator (see :mod:`skfed._tour`)."""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
from sklearn.cluster import KMeans
from sklearn.datasets import load_breast_cancer, load_digits
from sklearn.decomposition import KernelPCA
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.metrics import normalized_mutual_info_score, roc_auc_score
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC, LinearSVC

from ._tour_case import TourCase
from .cluster import FederatedKernelKMeans
from .ensemble import SecureBoostClassifier
from .kernel_methods import AVFKAMRanker, FDSKLClassifier
from .linear_model import HyFDCAClassifier
from .partition import HybridPartition, VerticalPartition


def _split(X, y, random_state=0):
    return train_test_split(X, y, test_size=0.25, random_state=random_state,
                            stratify=y)


def _scaled_split(X, y, random_state=0):
    """Stratified split, standardised with the training rows' statistics."""
    X_train, X_test, y_train, y_test = _split(X, y, random_state)
    scaler = StandardScaler().fit(X_train)
    return scaler.transform(X_train), scaler.transform(X_test), y_train, y_test


# Each _case_*(quick=False) returns a skfed._tour_case.TourCase; with
# quick=True it uses less data, fewer iterations and 512-bit keys (the
# caller opts in to small keys, see skfed._tour.run_tour).

CASES = []


def _case_avfkam(quick=False):
    def make_data():
        # Malignant (the positive class) cut to 10% of the rows.
        X, y = load_breast_cancer(return_X_y=True)
        y = (y == 0).astype(int)
        rng = np.random.RandomState(0)
        pos, neg = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
        keep = np.r_[neg, rng.choice(pos, len(neg) // 9, replace=False)]
        return _scaled_split(X[keep], y[keep])

    return TourCase(
        name="AVFKAMRanker (async, 2 active)",
        dataset="breast cancer, 10% malignant",
        make_data=make_data,
        estimator=AVFKAMRanker(VerticalPartition(3, active_parties=(0, 1)),
                               random_state=0,
                               **(dict(max_iter=300, n_random_features=500)
                                  if quick else {})),
        baseline=SVC(class_weight="balanced"),
        baseline_name="SVC(rbf, balanced)",
        metric="ROC AUC",
        score=lambda model, X, y: roc_auc_score(y, model.decision_function(X)),
    )


CASES.append(_case_avfkam)


def _case_secureboost(quick=False):
    def make_data():
        X, y = load_breast_cancer(return_X_y=True)
        return _split(X, y)

    key_size, n_trees = (512, 5) if quick else (1024, 10)
    return TourCase(
        name=f"SecureBoostClassifier ({key_size}-bit)",
        dataset="breast cancer",
        make_data=make_data,
        estimator=SecureBoostClassifier(n_estimators=n_trees, key_size=key_size,
                                        n_jobs=2,
                                        random_state=0),
        baseline=HistGradientBoostingClassifier(max_iter=n_trees,
                                                learning_rate=0.3,
                                                max_depth=3, max_bins=32,
                                                early_stopping=False),
        baseline_name="HistGradientBoosting",
    )


CASES.append(_case_secureboost)


def _case_hyfdca(quick=False):
    def make_data():
        X, y = load_breast_cancer(return_X_y=True)
        return _scaled_split(X, y)

    # Defaults (alpha=0.01, one local pass per round, stop at a relative
    # duality gap of 1e-3: ~100 rounds, ~4 s at 1024 bits); the baseline
    # minimises the same objective (C = 1 / (alpha * n_train)).
    key_size = 512 if quick else 1024
    return TourCase(
        name=f"HyFDCAClassifier (2x2 grid, {key_size}-bit)",
        dataset="breast cancer",
        make_data=make_data,
        estimator=HyFDCAClassifier(HybridPartition(2, 2), key_size=key_size,
                                   random_state=0,
                                   **(dict(tol=1e-2) if quick else {})),
        baseline=LinearSVC(loss="hinge", C=1 / (0.01 * 426), max_iter=10_000),
        baseline_name="LinearSVC(hinge)",
    )


CASES.append(_case_hyfdca)


def _case_fdskl(quick=False):
    def make_data():
        X, y = load_breast_cancer(return_X_y=True)
        return _scaled_split(X, y)

    return TourCase(
        name="FDSKLClassifier (3 parties)",
        dataset="breast cancer",
        make_data=make_data,
        estimator=FDSKLClassifier(partition=3, random_state=0,
                                  **(dict(max_iter=100) if quick else {})),
        baseline=SVC(kernel="rbf", gamma="scale"),
        baseline_name="SVC(rbf)",
    )


CASES.append(_case_fdskl)


def _case_federated_kernel_kmeans(quick=False):
    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    if quick:
        X, y = X[:500], y[:500]
    # The paper's kernel width, N^2 / (2 sum_ij ||x_i - x_j||^2), for the baseline
    # (the federated estimator computes the same value from per-user sums).
    gamma = 1.0 / (4 * (np.mean((X ** 2).sum(1)) - (X.mean(0) ** 2).sum()))

    def nmi_of_labels(model, X, y):
        labels = model.labels_ if hasattr(model, "labels_") else model[-1].labels_
        return normalized_mutual_info_score(y, labels)

    return TourCase(
        name="FederatedKernelKMeans (5 users)",
        dataset="digits",
        make_data=lambda: (X, None, y, None),
        estimator=FederatedKernelKMeans(10, partition=5, random_state=0,
                                        **(dict(max_iter=50) if quick else {})),
        baseline=make_pipeline(KernelPCA(10, kernel="rbf", gamma=gamma),
                               KMeans(10, n_init=10, random_state=0)),
        baseline_name="kernel PCA + KMeans",
        metric="NMI",
        score=nmi_of_labels,
    )


CASES.append(_case_federated_kernel_kmeans)
