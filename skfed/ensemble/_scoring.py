"""Scores of the boosted model, computed by the active party alone.

The active party holds the labels, the weights and the raw predictions of
its training rows (it sets every leaf weight) and, with a validation split,
the raw predictions of the held-out rows (from federated inference of each
round's trees). ``scoring="loss"`` scores them with the negative loss; any
other ``scoring`` is a scikit-learn scorer, applied to a *view*: a stand-in
estimator whose ``predict``/``predict_proba``/``decision_function`` read the
raw predictions it already holds, so no further message is needed.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
from scipy.special import expit, softmax
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin

__all__ = ["Scorer"]

# As sklearn's HistGradientBoosting: a scorer sees at most this many
# training rows (drawn once from the model seed), the loss sees them all.
_TRAIN_SCORE_ROWS = 10_000


class _ClassifierView(ClassifierMixin, BaseEstimator):
    """Predictions read from raw scores; ``X`` holds row positions."""

    def __init__(self, raw=None, classes=None):
        self.raw = raw
        self.classes = classes

    @property
    def classes_(self):
        return self.classes

    def decision_function(self, X):
        raw = self.raw[np.asarray(X)[:, 0].astype(np.intp)]
        return raw[:, 0] if raw.shape[1] == 1 else raw

    def predict_proba(self, X):
        raw = self.raw[np.asarray(X)[:, 0].astype(np.intp)]
        if raw.shape[1] == 1:
            p = expit(raw[:, 0])
            return np.column_stack([1 - p, p])
        return softmax(raw, axis=1)

    def predict(self, X):
        return self.classes[np.argmax(self.predict_proba(X), axis=1)]


class _RegressorView(RegressorMixin, BaseEstimator):
    """Predictions read from raw scores; ``X`` holds row positions."""

    def __init__(self, raw=None):
        self.raw = raw

    def predict(self, X):
        return self.raw[np.asarray(X)[:, 0].astype(np.intp), 0]


class Scorer:
    """The active party's scoring: ``"loss"`` or a scikit-learn scorer.

    Parameters
    ----------
    scorer : callable or None
        A scorer ``(estimator, X, y[, sample_weight])``; None for the
        negative loss.
    loss : object
        The loss of :mod:`._loss`.
    classes : ndarray or None
        Class labels (classifier), to turn class codes back into labels.
    seed : int
        Model seed for the training rows a scorer sees.
    """

    def __init__(self, scorer, loss, classes=None, seed=0):
        self.scorer = scorer
        self.loss = loss
        self.classes = classes
        self.seed = seed
        self._rows = None

    def __call__(self, y, raw, w=None, train=False):
        """Score of raw predictions ``raw`` of rows with labels ``y``."""
        if self.scorer is None:
            return -self.loss.loss(y, raw, w)
        rows = np.arange(y.shape[0])
        if train and y.shape[0] > _TRAIN_SCORE_ROWS:
            if self._rows is None:
                rng = np.random.default_rng(self.seed)
                self._rows = np.sort(rng.choice(y.shape[0], _TRAIN_SCORE_ROWS,
                                                replace=False))
            rows = self._rows
        if self.classes is None:
            view, target = _RegressorView(raw[rows]), y[rows]
        else:
            view = _ClassifierView(raw[rows], self.classes)
            target = self.classes[np.asarray(y[rows]).astype(np.intp)]
        positions = np.arange(rows.size)[:, None]
        if w is None:
            return float(self.scorer(view, positions, target))
        return float(self.scorer(view, positions, target, sample_weight=w[rows]))

