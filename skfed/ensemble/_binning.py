"""Per-party quantile binning (run by every party on its own columns).

Each party bins only the columns it holds; the thresholds never leave it
(they are the "threshold values" of the paper's lookup table, section 4).
A value ``x`` of feature ``f`` goes to bin ``b`` with
``thresholds[f][b - 1] < x <= thresholds[f][b]``, so the split
"bin <= v goes left" is the raw test ``x <= thresholds[f][v]``, which is what
the owner evaluates at inference time. Missing values (NaN) get their own bin,
``missing_bin = max_bins``, shared by all features.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
import scipy.sparse as sp

__all__ = ["BinMapper"]

# Quantiles are estimated on at most this many rows (as sklearn's
# HistGradientBoosting does), drawn with the party's own seed.
_SUBSAMPLE = 200_000


def _feature_thresholds(column, max_bins):
    """Upper edges of the non-missing bins of one column (at most max_bins - 1)."""
    values = column[~np.isnan(column)]
    if values.size == 0:
        return np.empty(0)
    distinct = np.unique(values)
    if distinct.size <= max_bins:
        # One bin per distinct value: midpoints between consecutive values.
        return (distinct[:-1] + distinct[1:]) / 2.0
    percentiles = np.linspace(0, 100, max_bins + 1)[1:-1]
    edges = np.percentile(values, percentiles, method="midpoint")
    # Repeated quantiles (heavy ties) would make empty bins: keep each once.
    return np.unique(edges)


def _dense_or_csc(X):
    """A float64 array, or a CSC matrix (columns are read one by one)."""
    if sp.issparse(X):
        return sp.csc_matrix(X, dtype=np.float64)
    return np.asarray(X, dtype=np.float64)


def _column(X, f):
    """Column ``f`` as a dense 1-D array (a sparse one's zeros included)."""
    if sp.issparse(X):
        return X[:, [f]].toarray().ravel()
    return X[:, f]


class BinMapper:
    """Quantile bins of one party's columns.

    Parameters
    ----------
    max_bins : int
        Maximum number of bins for non-missing values (2..255).
    random_state : int
        The party's own seed (used only to subsample very large tables).

    Attributes
    ----------
    thresholds_ : list of ndarray
        Upper edges of the bins of each feature (bin ``b`` holds
        ``thresholds_[f][b - 1] < x <= thresholds_[f][b]``).
    n_bins_ : ndarray of int
        Number of non-missing bins of each feature.
    has_missing_ : ndarray of bool
        Whether the feature had missing values when binned.
    missing_bin : int
        Bin index of missing values (``max_bins``).
    """

    def __init__(self, max_bins, random_state):
        self.max_bins = int(max_bins)
        self.random_state = random_state
        self.missing_bin = self.max_bins

    def fit(self, X):
        X = _dense_or_csc(X)
        if X.shape[0] > _SUBSAMPLE:
            rng = np.random.default_rng(self.random_state)
            X = X[np.sort(rng.choice(X.shape[0], _SUBSAMPLE, replace=False))]
        columns = [_column(X, f) for f in range(X.shape[1])]
        self.thresholds_ = [_feature_thresholds(c, self.max_bins) for c in columns]
        self.n_bins_ = np.array([t.size + 1 for t in self.thresholds_], dtype=np.intp)
        self.has_missing_ = np.array([np.isnan(c).any() for c in columns],
                                     dtype=bool)
        return self

    def transform(self, X):
        """Bin indices, ``uint8`` of shape ``X.shape`` (NaN -> ``missing_bin``).

        A sparse ``X`` is read one column at a time: its zeros are values
        (binned as 0.0 is), never missing.
        """
        X = _dense_or_csc(X)
        binned = np.empty(X.shape, dtype=np.uint8)
        for f, thresholds in enumerate(self.thresholds_):
            column = _column(X, f)
            # side="left": the number of thresholds strictly below x, so that
            # x <= thresholds[v] exactly when bin <= v.
            binned[:, f] = np.searchsorted(thresholds, column, side="left")
            binned[np.isnan(column), f] = self.missing_bin
        return binned

    def threshold(self, feature, bin_index):
        """Raw threshold of "bin <= bin_index goes left" (inf for the last bin)."""
        thresholds = self.thresholds_[feature]
        return float(thresholds[bin_index]) if bin_index < thresholds.size else np.inf

    def candidates(self):
        """Every split candidate of this party: ``(feature, bin, missing_left)``.

        ``bin <= v`` goes left for ``v`` below the last non-missing bin. A
        feature with missing values adds each of those with the missing bin
        on the left (XGBoost-style default direction, tried both ways), plus
        "every non-missing value left, missing right".

        Returns
        -------
        features, bins : ndarray of int
        missing_left : ndarray of bool
        """
        features, bins, missing_left = [], [], []
        # All "missing right" candidates first, then all "missing left" ones,
        # so that the latter can be formed in one vectorised step.
        for left_missing in (False, True):
            for f, n_bins in enumerate(self.n_bins_.tolist()):
                if left_missing and not self.has_missing_[f]:
                    continue
                all_left = self.has_missing_[f] and not left_missing
                last = n_bins - 1 if all_left else n_bins - 2
                for v in range(last + 1):
                    features.append(f)
                    bins.append(v)
                    missing_left.append(left_missing)
        return (np.asarray(features, dtype=np.intp), np.asarray(bins, dtype=np.intp),
                np.asarray(missing_left, dtype=bool))
