"""Losses of the boosted trees, computed by the active party only.

Each gives the baseline raw prediction, per-row gradients and hessians of
the raw prediction (eq. 2), and the mean loss (for early stopping and
``verbose``). Raw predictions have shape ``(n_samples, n_outputs)``. With
row weights ``w`` (the active party's ``sample_weight`` times
``class_weight``) the baseline minimises the weighted loss, the loss is the
weighted mean, and the caller multiplies ``g`` and ``h`` by ``w`` (as
sklearn's HistGradientBoosting and XGBoost do).
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
from scipy.special import expit, logsumexp, softmax

__all__ = ["LOSSES"]


class SquaredError:
    """Half squared error: ``g = f - y``, ``h = 1``."""

    def baseline(self, y, n_outputs, w=None):
        return np.array([np.average(y, weights=w)])

    def gradients(self, y, raw):
        g = raw[:, 0] - y
        return g[:, None], np.ones_like(g)[:, None]

    def loss(self, y, raw, w=None):
        return float(0.5 * np.average((raw[:, 0] - y) ** 2, weights=w))


class BinaryLogLoss:
    """Log-loss of ``p = sigmoid(f)``: ``g = p - y``, ``h = p (1 - p)``."""

    def baseline(self, y, n_outputs, w=None):
        p = np.clip(np.average(y, weights=w), 1e-15, 1 - 1e-15)
        return np.array([np.log(p / (1 - p))])

    def gradients(self, y, raw):
        p = expit(raw[:, 0])
        return (p - y)[:, None], (p * (1 - p))[:, None]

    def loss(self, y, raw, w=None):
        f = raw[:, 0]
        # log(1 + exp(f)) - y f, written stably.
        return float(np.average(np.logaddexp(0, f) - y * f, weights=w))


class MultinomialLogLoss:
    """Softmax cross-entropy, one tree per class and round.

    ``g_k = p_k - [y = k]``, ``h_k = p_k (1 - p_k)`` (the diagonal of the
    hessian, as sklearn's HistGradientBoosting and XGBoost use).
    """

    def baseline(self, y, n_outputs, w=None):
        counts = np.bincount(y, weights=w, minlength=n_outputs)
        prior = counts / counts.sum()
        return np.log(np.clip(prior, 1e-15, None))

    def gradients(self, y, raw):
        p = softmax(raw, axis=1)
        onehot = np.zeros_like(p)
        onehot[np.arange(y.size), y] = 1.0
        return p - onehot, p * (1 - p)

    def loss(self, y, raw, w=None):
        return float(np.average(logsumexp(raw, axis=1) - raw[np.arange(y.size), y],
                                weights=w))


LOSSES = {
    "squared_error": SquaredError,
    "log_loss_binary": BinaryLogLoss,
    "log_loss_multinomial": MultinomialLogLoss,
}
