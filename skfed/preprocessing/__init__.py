"""Federated preprocessing: scikit-learn's transformers, fitted by the parties.

Every transformer takes the whole table and a partition spec, as the
estimators do; the parties fit it on their own rows and columns (secure sums,
secure extremes, secure histograms and secure value counts between the
holders of a column's rows, nothing at all for a column one party holds
whole), every message is counted in ``communication_`` and declared in a
privacy contract, and ``transform`` is scikit-learn's, run locally.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

from ._estimator import (
    KBinsDiscretizer,
    MaxAbsScaler,
    MinMaxScaler,
    OneHotEncoder,
    SimpleImputer,
    StandardScaler,
)

__all__ = [
    "StandardScaler",
    "MinMaxScaler",
    "MaxAbsScaler",
    "SimpleImputer",
    "OneHotEncoder",
    "KBinsDiscretizer",
]
