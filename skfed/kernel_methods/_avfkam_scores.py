"""AVFKAM's scores and the answers built on them: probabilities, labels, AUC.

:meth:`AVFKAMRanker.decision_function` (and its staged version) is
federated decision (Algorithm 2); everything else here is a function of
those scores and of the calibration the label holder fitted
(``calibration_slope_``, ``threshold_``).
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
from scipy.special import expit
from sklearn.metrics import roc_auc_score
from sklearn.utils.validation import check_is_fitted

from .. import _party_data_fit as party_data

__all__ = ["AVFKAMScoresMixin"]


class AVFKAMScoresMixin:
    """``decision_function``, ``staged_decision_function``, ``predict_proba``,
    ``predict`` and ``score`` of :class:`AVFKAMRanker` (which takes them
    into its own namespace: see there)."""

    def _query_rows(self, X):
        """The fitted model's query rows, validated (an array, or a
        PartyData whose tables stay at their homes)."""
        check_is_fitted(self)
        return party_data.validate_data_or_party_data(
            self, X, reset=False, dtype=np.float64, accept_sparse=["csr", "csc"])

    def decision_function(self, X):
        """Ranking scores: higher means more likely ``classes_[1]``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to score; each party evaluates its block of the random
            features on its own columns.

        Returns
        -------
        scores : ndarray of shape (n_samples,)
            ``f(x) - threshold_``.
        """
        X = self._query_rows(X)
        return self._scores(X, [self.coefficient_stores_])[0] - self.threshold_

    def staged_decision_function(self, X):
        """Scores of the model at every checkpoint of training.

        Useful to plot AUC against ``checkpoint_times_`` (wall time) or
        ``checkpoint_iters_``. The last stage is :meth:`decision_function`.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to score; each party evaluates its block of the random
            features on its own columns.

        Yields
        ------
        scores : ndarray of shape (n_samples,)
        """
        X = self._query_rows(X)
        for scores in self._scores(X, self._checkpoint_stores):
            yield scores - self.threshold_

    def predict_proba(self, X):
        """Probabilities of ``classes_``: Platt's sigmoid of the scores.

        The pairwise loss fixes only the order of the scores. The label
        holder fits ``P(classes_[1] | x) = expit(a (f(x) - threshold_))``
        (Platt scaling, by maximum likelihood with Platt's smoothed targets)
        on the rows early stopping held out when it has both classes there,
        on the training rows otherwise (optimistic, like any in-sample
        calibration). The ranking, and so ``score`` (ROC AUC), is unchanged.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to score; each party evaluates its block of the random
            features on its own columns.

        Returns
        -------
        proba : ndarray of shape (n_samples, 2)
        """
        check_is_fitted(self)
        scores = self.decision_function(X)
        if self.calibration_slope_ > 0:
            p = expit(self.calibration_slope_ * scores)
        else:
            p = np.full(scores.shape, self._base_rate)
        return np.column_stack([1.0 - p, p])

    def predict(self, X):
        """``classes_[1]`` where the score is positive, else ``classes_[0]``.

        The score is positive where the calibrated probability
        (:meth:`predict_proba`) exceeds 1/2: the fewest expected errors for
        calibrated scores. On imbalanced data it marks at most about as
        many rows positive as there are (held-out rows at a 6% and a 7.5%
        positive rate: 3.3% and 4.3% marked; the midpoint of the two
        classes' mean scores, used before, marked 8.7% and 12.2%, and more
        on harder data). For another operating point, threshold
        :meth:`decision_function` yourself (for example at its quantile
        matching the positive rate you want to flag).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to score; each party evaluates its block of the random
            features on its own columns.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
        """
        check_is_fitted(self)
        return self.classes_[(self.decision_function(X) > 0).astype(int)]

    def score(self, X, y, sample_weight=None):
        """ROC AUC of :meth:`decision_function` (what AVFKAM maximises).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to score; each party evaluates its block of the random
            features on its own columns.

        y : array-like of shape (n_samples,)
            True labels.

        sample_weight : array-like of shape (n_samples,), default=None
            Weights of the rows in the AUC.

        Returns
        -------
        auc : float
        """
        check_is_fitted(self)
        y = np.asarray(y)
        return roc_auc_score(y == self.classes_[1], self.decision_function(X),
                             sample_weight=sample_weight)
