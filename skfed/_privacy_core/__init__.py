"""The privacy core: contract types, the message checker, attack-table rows.

What every protocol declares about its messages (:class:`Contract`,
:class:`Rule` and the element specs), what :func:`check_messages` holds
recorded messages against, and the row format of the attacks each algorithm
ships with its protocol. It sits above the runtime (:mod:`skfed.federation`)
and below the algorithms; :mod:`skfed.privacy` is its public face, with
:func:`~skfed.privacy.audit` on top.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

from ._attack_table import ATTACK_COLUMNS, attack_row, column_r2, psd_root
from ._check import check_messages
from ._contract import (
    Aggregate,
    Ciphertext,
    Contract,
    Element,
    Inherent,
    Masked,
    OwnShare,
    Public,
    RandomIds,
    Rule,
    Secret,
    Violation,
)
from ._party_data_checks import check_party_data_messages
from ._secure_sum_rules import SEED_SIZE, secure_sum_rules
from ._semantic import R2_THRESHOLD, RANK_THRESHOLD, ROW_TOLERANCE

__all__ = [
    "Contract",
    "Rule",
    "Element",
    "Ciphertext",
    "Masked",
    "RandomIds",
    "Public",
    "Aggregate",
    "OwnShare",
    "Inherent",
    "Secret",
    "Violation",
    "check_messages",
    "check_party_data_messages",
    "secure_sum_rules",
    "SEED_SIZE",
    "attack_row",
    "column_r2",
    "psd_root",
    "ATTACK_COLUMNS",
    "R2_THRESHOLD",
    "RANK_THRESHOLD",
    "ROW_TOLERANCE",
]
