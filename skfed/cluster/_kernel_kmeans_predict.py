"""Prediction of federated kernel k-means: new rows through the published map.

Every user already holds the out-of-sample map ``P`` and the centers after
``fit``; it embeds only the rows it owns and measures their distances to
the centers, with no message. (``fit_predict`` is here too: it returns the
training rows' ``labels_``, which each user learned in ``fit``.)
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
from sklearn.utils.validation import check_is_fitted, validate_data

from ..partition import HorizontalPartition
from ._protocol import user_embed_and_assign

__all__ = ["KernelKMeansPredictMixin"]


def _user(m):
    return f"user{m}"


class KernelKMeansPredictMixin:
    """``fit_predict``, ``transform``, ``predict`` and ``score`` of
    :class:`FederatedKernelKMeans` (which takes them into its own namespace:
    see there)."""

    def _squared_distances(self, X):
        """``||h(x) - c_j||^2`` of each row to each center, by the users."""
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64,
                          accept_sparse="csr")
        n_users = min(self.partition_.n_parties, X.shape[0])
        owners = HorizontalPartition(n_users).resolve(X)
        states = {_user(m): dict(X=X[owners.rows(m)], gamma=self.gamma_,
                                 users_key=self._users_key)
                  for m in range(n_users)}
        dist = np.empty((X.shape[0], len(self.cluster_centers_)))
        with self._federation(states, record=False) as fed:
            # No message: every user already holds the published map and
            # centers, and embeds only the rows it owns.
            results = fed.gather(
                fed[_user(m)].call(user_embed_and_assign, self.embedding_map_,
                                   self.cluster_centers_)
                for m in range(n_users))
        for m, d in enumerate(results):
            dist[owners.rows(m)] = d
        return dist

    def _embed_and_assign(self, X):
        dist = self._squared_distances(X)
        labels = np.argmin(dist, axis=1).astype(np.int64)
        return labels, dist[np.arange(len(labels)), labels]

    def fit_predict(self, X, y=None, sample_party=None, sample_weight=None):
        """Fit and return the cluster of each training row (``labels_``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training rows, split over the users by the partition.

        y : Ignored
            Not used, present for API consistency.

        sample_party : array-like of int of shape (n_samples,), default=None
            The user that holds each row.

        sample_weight : array-like of shape (n_samples,), default=None
            Row weights (see :meth:`fit`).

        Returns
        -------
        labels : ndarray of shape (n_samples,)
        """
        return self.fit(X, sample_party=sample_party,
                        sample_weight=sample_weight).labels_

    def transform(self, X):
        """Distance of each row to each cluster center, in the embedding.

        As :meth:`sklearn.cluster.KMeans.transform`, in the space where the
        centers live: the kernel embedding ``h(x)`` (the out-of-sample map),
        so ``predict`` is the ``argmin`` of each row. Each user embeds only
        its own rows; nothing is sent.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            New rows, embedded through the out-of-sample map.

        Returns
        -------
        distances : ndarray of shape (n_samples, n_clusters)
        """
        return np.sqrt(self._squared_distances(X))

    def predict(self, X):
        """Nearest center of each new row, through the out-of-sample map.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            New rows, embedded through the out-of-sample map.

        Returns
        -------
        labels : ndarray of shape (n_samples,)
        """
        return self._embed_and_assign(X)[0]

    def score(self, X, y=None):
        """Opposite of the k-means objective of ``X`` in the embedding space.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            New rows, embedded through the out-of-sample map.

        y : Ignored
            Not used, present for API consistency.

        Returns
        -------
        score : float
            ``-sum_i min_c ||h(x_i) - c||^2`` (larger is better).
        """
        return -float(np.sum(self._embed_and_assign(X)[1]))
