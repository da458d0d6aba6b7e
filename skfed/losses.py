"""Pointwise and pairwise losses, their derivatives and convex conjugates.

Pointwise losses take labels ``y`` and scores ``f`` (labels in {-1, +1} for
the classification losses, real values for the squared loss) and follow
FDSKL's Table 1. Pairwise losses take the score difference
``d = f(x+) - f(x-)`` of a positive and a negative example (AVFKAM).

``conjugate(y, u)`` is the convex conjugate of ``z -> loss(y, z)`` at ``u``,
``sup_z u z - loss(y, z)``, with ``inf`` outside its domain; HyFDCA's dual
objective is built from it.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
from scipy.special import expit, xlogy

__all__ = [
    "SquaredLoss",
    "LogisticLoss",
    "SmoothHingeLoss",
    "HingeLoss",
    "SquaredHingeLoss",
    "PairwiseSquaredLoss",
    "PairwiseLogisticLoss",
    "get_loss",
    "POINTWISE_LOSSES",
    "PAIRWISE_LOSSES",
]


class _Loss:
    name = None
    #: whether scores can be read as probabilities (``predict_proba``)
    has_proba = False
    #: ``sup |d^2 loss / d f^2|`` (``d^2 / d d^2`` for pairwise losses): the
    #: smoothness constant behind the ``"auto"`` step sizes; ``None`` for a
    #: loss without one (the hinge's kink)
    smoothness = None

    def __repr__(self):
        return f"{type(self).__name__}()"


class SquaredLoss(_Loss):
    """``(f - y)^2 / 2`` (regression)."""

    name = "squared"
    smoothness = 1.0

    def __call__(self, y, f):
        return 0.5 * (np.asarray(f) - y) ** 2

    def derivative(self, y, f):
        return np.asarray(f, dtype=float) - y

    def conjugate(self, y, u):
        u = np.asarray(u, dtype=float)
        return 0.5 * u ** 2 + u * y


class LogisticLoss(_Loss):
    """``log(1 + exp(-y f))``, labels in {-1, +1}."""

    name = "logistic"
    has_proba = True
    smoothness = 0.25  # sigma(z) (1 - sigma(z)) <= 1/4, reached at z = 0

    def __call__(self, y, f):
        return np.logaddexp(0.0, -np.asarray(y) * f)

    def derivative(self, y, f):
        return -y * expit(-np.asarray(y) * f)

    def conjugate(self, y, u):
        v = -np.asarray(u, dtype=float) * y
        inside = (v >= 0) & (v <= 1)
        vc = np.clip(v, 0.0, 1.0)
        value = xlogy(vc, vc) + xlogy(1 - vc, 1 - vc)
        return np.where(inside, value, np.inf)

    @staticmethod
    def probability(f):
        """P(y = +1 | f)."""
        return expit(f)


class SmoothHingeLoss(_Loss):
    """FDSKL's smooth hinge: 0 if ``yf >= 1``, ``1/2 - yf`` if ``yf <= 0``,
    ``(1 - yf)^2 / 2`` in between."""

    name = "smooth_hinge"
    smoothness = 1.0

    def __call__(self, y, f):
        z = np.asarray(y) * f
        return np.where(z >= 1, 0.0, np.where(z <= 0, 0.5 - z, 0.5 * (1 - z) ** 2))

    def derivative(self, y, f):
        z = np.asarray(y) * f
        return y * np.where(z >= 1, 0.0, np.where(z <= 0, -1.0, z - 1.0))

    def conjugate(self, y, u):
        v = np.asarray(u, dtype=float) * y
        inside = (v >= -1) & (v <= 0)
        return np.where(inside, v + 0.5 * v ** 2, np.inf)


class HingeLoss(_Loss):
    """``max(0, 1 - y f)`` (HyFDCA; a subgradient as derivative)."""

    name = "hinge"

    def __call__(self, y, f):
        return np.maximum(0.0, 1.0 - np.asarray(y) * f)

    def derivative(self, y, f):
        return np.where(np.asarray(y) * f < 1, -np.asarray(y, dtype=float), 0.0)

    def conjugate(self, y, u):
        v = np.asarray(u, dtype=float) * y
        return np.where((v >= -1) & (v <= 0), v, np.inf)


class SquaredHingeLoss(_Loss):
    """``max(0, 1 - y f)^2 / 2``."""

    name = "squared_hinge"
    smoothness = 1.0

    def __call__(self, y, f):
        return 0.5 * np.maximum(0.0, 1.0 - np.asarray(y) * f) ** 2

    def derivative(self, y, f):
        return -np.asarray(y) * np.maximum(0.0, 1.0 - np.asarray(y) * f)

    def conjugate(self, y, u):
        v = np.asarray(u, dtype=float) * y
        return np.where(v <= 0, v + 0.5 * v ** 2, np.inf)


class PairwiseSquaredLoss(_Loss):
    """``(1 - d)^2`` with ``d = f(x+) - f(x-)`` (AVFKAM's smooth AUC surrogate)."""

    name = "pairwise_squared"
    smoothness = 2.0

    def __call__(self, d):
        return (1.0 - np.asarray(d)) ** 2

    def derivative(self, d):
        return -2.0 * (1.0 - np.asarray(d, dtype=float))


class PairwiseLogisticLoss(_Loss):
    """``log(1 + exp(-d))`` with ``d = f(x+) - f(x-)``."""

    name = "pairwise_logistic"
    smoothness = 0.25

    def __call__(self, d):
        return np.logaddexp(0.0, -np.asarray(d))

    def derivative(self, d):
        return -expit(-np.asarray(d, dtype=float))


POINTWISE_LOSSES = {
    cls.name: cls for cls in
    (SquaredLoss, LogisticLoss, SmoothHingeLoss, HingeLoss, SquaredHingeLoss)
}
PAIRWISE_LOSSES = {
    "squared": PairwiseSquaredLoss,
    "logistic": PairwiseLogisticLoss,
}


def get_loss(name, pairwise=False):
    """The loss object named ``name``.

    >>> get_loss("logistic")
    LogisticLoss()
    >>> get_loss("squared", pairwise=True)
    PairwiseSquaredLoss()
    """
    table = PAIRWISE_LOSSES if pairwise else POINTWISE_LOSSES
    try:
        return table[name]()
    except KeyError:
        raise ValueError(
            f"Unknown {'pairwise ' if pairwise else ''}loss {name!r}; choose "
            f"one of {sorted(table)}.") from None
