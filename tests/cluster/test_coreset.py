"""The distributed k-means' summaries: group means of several rows."""

import numpy as np

from skfed.cluster._coreset import MIN_GROUP, user_summary
from skfed.federation import PartyState

from .conftest import _contains_row


def test_coreset_summaries_average_several_rows():
    rng = np.random.RandomState(0)
    H = rng.standard_normal((11, 3))
    state = PartyState(H=H, kmeans_seed=0)
    means, counts = user_summary(state, budget=5)
    assert counts.min() >= MIN_GROUP and counts.sum() == 11
    assert not _contains_row(means, H)
