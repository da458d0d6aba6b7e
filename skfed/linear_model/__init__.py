"""Federated linear models."""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

from ._estimator import HyFDCAClassifier

__all__ = ["HyFDCAClassifier"]
