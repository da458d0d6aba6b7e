"""Vertical federated kernel methods on random Fourier features."""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

from ._avfkam._estimator import AVFKAMRanker
from ._export import (
    KernelConsolidated,
    KernelShare,
    consolidate_shares,
    predict_with_shares,
)
from ._fdskl._estimator import FDSKLClassifier, FDSKLRegressor

__all__ = ["AVFKAMRanker", "FDSKLClassifier", "FDSKLRegressor",
           "KernelConsolidated", "KernelShare", "consolidate_shares",
           "predict_with_shares"]
