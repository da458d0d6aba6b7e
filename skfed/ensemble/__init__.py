"""Federated tree ensembles: SecureBoost (lossless vertical boosted trees)."""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

from ._estimator import SecureBoostClassifier, SecureBoostRegressor
from ._shares import (
    SecureBoostActiveShare,
    SecureBoostConsolidated,
    SecureBoostPassiveShare,
    consolidate_shares,
)

__all__ = [
    "SecureBoostClassifier",
    "SecureBoostRegressor",
    "SecureBoostActiveShare",
    "SecureBoostPassiveShare",
    "SecureBoostConsolidated",
    "consolidate_shares",
]
