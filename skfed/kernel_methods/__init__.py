"""Vertical federated kernel methods on random Fourier features."""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

from ._avfkam import AVFKAMRanker

__all__ = ["AVFKAMRanker"]
