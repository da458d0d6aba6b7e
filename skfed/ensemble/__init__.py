"""Federated tree ensembles: SecureBoost (lossless vertical boosted trees)."""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

from ._secureboost import SecureBoostClassifier, SecureBoostRegressor

__all__ = ["SecureBoostClassifier", "SecureBoostRegressor"]
