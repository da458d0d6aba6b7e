"""``audit``: fit while recording, check the contract, run the attacks.

The attacks are the estimator's own (``_privacy_attacks``, shipped with its
algorithm) and, for every estimator, the generic accumulation attack
(:mod:`skfed.privacy._accumulation`).
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import time
from dataclasses import dataclass, field

from sklearn.base import clone

from .._optional import import_optional
from .._privacy_core import (ATTACK_COLUMNS, check_messages,
                             check_party_data_messages)
from ..federation import record_messages
from ._accumulation import accumulation

__all__ = ["audit", "AuditReport"]


# -- the audit ---------------------------------------------------------------

@dataclass
class AuditReport:
    """What :func:`audit` found.

    Attributes
    ----------
    violations : list of Violation
        Messages the contract does not allow.
    attacks : pandas.DataFrame
        One row per attack, attacker, victim and target, with the columns
        ``attack, attacker, victim, target, metric, value, chance``.
    messages : list of Message
        Every message of the audited fit.
    estimator : estimator
        The fitted clone.
    seconds : float
        Wall time of the fit and of the attacks.
    """

    violations: list
    attacks: object
    messages: list = field(repr=False)
    estimator: object = field(repr=False)
    seconds: float = 0.0

    def __str__(self):
        head = (f"{type(self.estimator).__name__}: {len(self.messages)} "
                f"messages, {len(self.violations)} contract violation(s)")
        lines = [head] + [f"  {v}" for v in self.violations[:10]]
        if len(self.violations) > 10:
            lines.append(f"  ... and {len(self.violations) - 10} more")
        if len(self.attacks):
            lines.append(self.attacks.to_string(index=False))
        return "\n".join(lines)


def audit(estimator, X, y=None, attacks=None, **fit_params):
    """Fit a clone while recording, check its messages, run the attacks.

    Parameters
    ----------
    estimator : estimator
        A skfed estimator (unfitted or fitted: a clone is fitted).

    X : array-like of shape (n_samples, n_features)

    y : array-like of shape (n_samples,), optional

    attacks : list of str, optional
        Names of the attacks to run (default: every attack that applies,
        ``estimator._privacy_attacks()``).

    **fit_params
        Passed to ``fit`` (e.g. ``sample_party``).

    Returns
    -------
    AuditReport
        ``.violations`` (from :func:`check_messages`, semantic checks
        included) and ``.attacks`` (a pandas DataFrame: ``audit`` needs
        pandas, which skfed does not require).

    Notes
    -----
    Every attack sees only what its attacker party received plus what that
    party holds itself and public information; the other parties' data is
    used only to score the attack. ``chance`` is the score of an attacker
    who learnt nothing. After the estimator's own attacks, the generic
    ``accumulation`` attack (module docstring of ``skfed.privacy._accumulation``)
    runs for every estimator on a vertical or hybrid split.
    """
    pd = import_optional("pandas", "skfed.privacy.audit")
    check_party_data_messages(estimator, (), X)  # PartyData: before any fit
    start = time.perf_counter()
    fitted = clone(estimator)
    with record_messages() as recorder:
        if y is None:
            fitted.fit(X, **fit_params)
        else:
            fitted.fit(X, y, **fit_params)
    messages = list(recorder.messages)
    # The checks and attacks score against dense columns, whatever was fitted.
    if hasattr(X, "toarray"):
        X = X.toarray()
    violations = check_messages(fitted, messages, X, y, **fit_params)
    rows = []
    for attack in fitted._privacy_attacks():
        name = getattr(attack, "attack_name", attack.__name__)
        if attacks is not None and name not in attacks:
            continue
        rows.extend(attack(fitted, messages, X, y, **fit_params))
    # the generic attack, after the estimator's own (every estimator)
    if attacks is None or accumulation.attack_name in attacks:
        rows.extend(accumulation(fitted, messages, X, y, **fit_params))
    table = pd.DataFrame(rows, columns=ATTACK_COLUMNS)
    return AuditReport(violations, table, messages, fitted,
                       time.perf_counter() - start)
