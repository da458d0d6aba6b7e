"""One quick-tour case per estimator (see :mod:`skfed._tour`)."""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

from sklearn.model_selection import train_test_split


def _split(X, y, random_state=0):
    return train_test_split(X, y, test_size=0.25, random_state=random_state,
                            stratify=y)


# Each _case_* returns a skfed._tour.TourCase.

CASES = []
