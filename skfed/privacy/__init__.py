"""Privacy you can check: message contracts, their checker, and attacks.

This is the public face of the privacy tools. The contract types and
:func:`check_messages` live in the privacy core (below the algorithms, which
declare their contracts with them); each algorithm ships the attacks on its
own protocol beside it (``skfed.ensemble._attacks`` and so on); :func:`audit`,
on top, fits an estimator and runs both.

Every protocol of skfed declares, next to its code, a :class:`Contract`: for
each phase and direction (sender role -> receiver role), what each payload
element may be. :func:`check_messages` holds recorded messages against it
(a whitelist, plus semantic checks against the parties' private data), and
:func:`audit` fits an estimator while recording, checks the messages and runs
the attacks an honest-but-curious party could mount, reporting how much each
one recovers beside what chance gives: the estimator's own, then, for every
estimator on a vertical or hybrid split, the generic ``accumulation`` attack
(every row-indexed vector a party received over the whole fit, stacked:
how much of another party's columns lies in their span, and whether a
quadratic form among them fixes the metric).

Examples
--------
>>> from sklearn.datasets import make_classification
>>> from skfed.privacy import audit
>>> from skfed.ensemble import SecureBoostClassifier
>>> X, y = make_classification(n_samples=200, n_features=6, random_state=0)
>>> report = audit(SecureBoostClassifier(n_estimators=2, key_size=1024,
...                                      random_state=0), X, y)
>>> report.violations
[]
>>> list(report.attacks.columns)
['attack', 'attacker', 'victim', 'target', 'metric', 'value', 'chance']
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

from .._privacy_core import (  # the thresholds: importable here as before
    ATTACK_COLUMNS,
    R2_THRESHOLD,
    RANK_THRESHOLD,
    ROW_TOLERANCE,
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
    attack_row,
    check_messages,
    secure_sum_rules,
)
from ._audit import AuditReport, audit

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
    "audit",
    "AuditReport",
    "attack_row",
    "secure_sum_rules",
]
