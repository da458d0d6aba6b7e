"""Exceptions and warnings that skfed's estimators raise."""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

__all__ = ["DivergenceError"]


class DivergenceError(FloatingPointError):
    """An iterative fit stopped because its objective diverged.

    Raised instead of returning a non-finite or exploding model; the message
    names the parameter to change (a step size, the regularisation).

    Attributes
    ----------
    estimator : estimator or None
        A fitted copy holding the last good iterate (the estimator that
        raised is left unfitted, as after any failed ``fit``).
    step : int or None
        The step or round at which the divergence was seen (``round`` is the
        same number, as round-based protocols name it).
    """

    def __init__(self, message, estimator=None, step=None, round=None):
        super().__init__(message)
        self.estimator = estimator
        self.step = step if step is not None else round

    @property
    def round(self):
        return self.step
