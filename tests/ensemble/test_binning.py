"""Per-party quantile binning of SecureBoost."""

import numpy as np

from skfed.ensemble._binning import BinMapper


def test_bins_match_raw_thresholds():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 3))
    X[:, 2] = rng.integers(0, 5, size=500)  # few distinct values
    X[rng.random(500) < 0.1, 0] = np.nan
    mapper = BinMapper(max_bins=16, random_state=0).fit(X)
    bins = mapper.transform(X)
    assert mapper.n_bins_.tolist() == [16, 16, 5]
    assert mapper.has_missing_.tolist() == [True, False, False]
    assert np.all(bins[np.isnan(X[:, 0]), 0] == mapper.missing_bin)
    # "bin <= v goes left" is exactly the owner's raw test x <= threshold.
    for f in range(3):
        present = ~np.isnan(X[:, f])
        for v in range(mapper.n_bins_[f]):
            assert np.array_equal(bins[present, f] <= v,
                                  X[present, f] <= mapper.threshold(f, v))
    features, bin_ids, missing_left = mapper.candidates()
    # Feature 0: 15 thresholds + "all non-missing left", and 15 with NaN left.
    assert np.sum(features == 0) == 16 + 15
    assert np.sum(missing_left) == 15 and np.all(features[missing_left] == 0)
    assert np.sum(features == 2) == 4
