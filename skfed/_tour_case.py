"""The record of one quick-tour case (shared by :mod:`skfed._tour` and
:mod:`skfed._tour_cases`, so that neither imports the other)."""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

from dataclasses import dataclass, field
from typing import Any, Callable

__all__ = ["TourCase"]


@dataclass
class TourCase:
    """One line of the tour.

    ``make_data`` returns ``(X_train, X_test, y_train, y_test)`` (or
    ``(X, None, y, None)`` for clustering, scored on the training rows);
    ``estimator`` and ``baseline`` are unfitted estimators; ``score`` maps
    ``(fitted, X, y)`` to a number (default: the estimator's ``score``).
    """

    name: str
    dataset: str
    make_data: Callable[[], tuple]
    estimator: Any
    baseline: Any
    baseline_name: str
    metric: str = "accuracy"
    score: Callable | None = None
    fit_params: dict = field(default_factory=dict)
