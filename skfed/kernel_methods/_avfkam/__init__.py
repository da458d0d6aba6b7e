"""AVFKAM (Zhang et al., KDD 2024): asynchronous vertical federated kernelised
AUC maximisation.

``_estimator`` holds AVFKAMRanker, ``_protocol`` the party functions and the
active parties' training loops (Algorithms 1-3, appendix C), ``_contract``
what each message may carry and ``_attacks`` the masked sums an attacker
assembles from a recorded fit.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause
