"""Clustering of federated data."""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

from ._kernel_kmeans import FederatedKernelKMeans, dspgd_uploads

__all__ = ["FederatedKernelKMeans", "dspgd_uploads"]
