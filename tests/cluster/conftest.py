"""Data and fitted models shared by the kernel k-means tests."""

import numpy as np
import pytest
from sklearn.datasets import make_blobs, make_circles

from skfed.base import party_seeds
from skfed.cluster import FederatedKernelKMeans
from skfed.cluster._protocol import users_key_from_seed


@pytest.fixture(scope="session")
def blobs():
    return make_blobs(300, centers=4, cluster_std=1.5, random_state=0)


@pytest.fixture(scope="session")
def circles():
    return make_circles(300, factor=0.2, noise=0.05, random_state=0)


@pytest.fixture(scope="session")
def fitted(blobs):
    X, _ = blobs
    return FederatedKernelKMeans(4, partition=3, random_state=0).fit(X)


def users_key(random_state, n_users):
    """The users' key of a fit with party_keys="random_state" (see fit)."""
    return users_key_from_seed(party_seeds(random_state, n_users + 3)[-1])


def _contains_row(array, rows):
    if array.shape[-1] != rows.shape[1]:
        return False
    vectors = array.reshape(-1, rows.shape[1])
    a = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-300)
    b = rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-300)
    return bool(np.any(np.abs(a @ b.T) > 1 - 1e-9))
