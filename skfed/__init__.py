"""skfed: federated learning as scikit-learn estimators.

Each estimator takes the whole table ``X`` (and ``y``) plus a partition spec
saying which simulated party holds which columns and/or rows, plays out its
paper's protocol between those parties (one thread each, every message
counted), and behaves as an ordinary scikit-learn estimator.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

from ._config import config_context, get_config, set_config
from .federation import record_messages
from .partition import HorizontalPartition, HybridPartition, VerticalPartition

__version__ = "0.1.0.dev0"

__all__ = [
    "VerticalPartition",
    "HorizontalPartition",
    "HybridPartition",
    "record_messages",
    "get_config",
    "set_config",
    "config_context",
    "__version__",
]
