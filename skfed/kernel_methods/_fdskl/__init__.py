"""FDSKL (Gu et al., KDD 2020): federated doubly stochastic kernel learning.

``_estimator`` holds FDSKLClassifier and FDSKLRegressor, ``_protocol`` the
party functions and the training loop of Algorithm 1 (with Algorithms 2 and
3 on the parties), ``_contract`` what each message may carry and
``_attacks`` the masked sums an attacker assembles from a recorded fit.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause
