"""Vertical federated kernel methods on random Fourier features."""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

__all__ = []
