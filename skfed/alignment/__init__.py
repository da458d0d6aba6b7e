"""Private entity alignment before vertical federated learning.

:func:`align` turns one table per party, keyed by an id column, into one
aligned table of the ids every party holds, found by a Diffie-Hellman
private set intersection (:func:`private_set_intersection`) on Curve25519
(:class:`Curve25519Group`, the default) or in a MODP group
(:class:`DHGroup`), plus the matching
:class:`~skfed.partition.VerticalPartition`. :class:`PSIAudit`
carries the protocol's privacy contract and attacks for
:func:`skfed.privacy.audit` and :func:`skfed.privacy.check_messages`.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

from ._align import align
from ._estimator import PSIAudit
from ._groups import GROUPS, DHGroup
from ._protocol import private_set_intersection
from ._x25519 import Curve25519Group

__all__ = ["align", "private_set_intersection", "Curve25519Group", "DHGroup",
           "GROUPS", "PSIAudit"]
