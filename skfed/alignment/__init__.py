"""Private entity alignment before vertical federated learning.

:func:`align` turns one table per party, keyed by an id column, into one
aligned table of the ids every party holds, found by a Diffie-Hellman
private set intersection (:func:`private_set_intersection`), plus the
matching :class:`~skfed.partition.VerticalPartition`. :class:`PSIAudit`
carries the protocol's privacy contract and attacks for
:func:`skfed.privacy.audit` and :func:`skfed.privacy.check_messages`.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

from ._align import align
from ._contract import PSIAudit
from ._psi import GROUPS, DHGroup, private_set_intersection

__all__ = ["align", "private_set_intersection", "DHGroup", "GROUPS", "PSIAudit"]
