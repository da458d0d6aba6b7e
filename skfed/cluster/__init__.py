"""Clustering of federated data."""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

from ._estimator import FederatedKernelKMeans
from ._protocol import dspgd_uploads

__all__ = ["FederatedKernelKMeans", "dspgd_uploads"]
