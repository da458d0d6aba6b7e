"""What a privacy check cannot do on a fit whose data stayed at the parties'
homes (:class:`~skfed.federation.PartyData`), refused with what to do instead."""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

from fnmatch import fnmatchcase

from ..federation import PartyData
from ..federation._ray import RemoteValue, leaves

__all__ = ["check_party_data_messages"]


def check_party_data_messages(estimator, messages, X=None):
    """Refuse a privacy check that cannot be done on a PartyData fit, with
    what to do instead (called by :func:`skfed.privacy.check_messages` and
    :func:`skfed.privacy.audit`)."""
    if isinstance(X, PartyData):
        raise TypeError(
            "check_messages and audit need the table in memory: they score "
            "the messages against every party's columns, which a PartyData "
            "keeps at the parties' homes. Align the tables in memory "
            "(X, y, partition = skfed.alignment.align(tables, label=...)) and "
            "audit the in-memory fit: it sends the same messages.")
    for message in messages:
        if any(isinstance(leaf, RemoteValue) for leaf in leaves(message.payload)):
            raise ValueError(
                "These messages were recorded between parties at home (Ray "
                "backend with PartyData): their payloads stayed with the "
                "parties, and the recording holds references only. Record "
                "the same fit with the threads backend (PartyData works "
                "there too, in one process) to check its messages.")
    # The fit's glue names the phases of the alignment it ran (PSI) when the
    # PartyData loaded; they follow the alignment's contract.
    alignment = getattr(estimator, "_party_data_alignment_phases", ())
    if not alignment:
        return
    contract = estimator._privacy_contract()
    if any(any(fnmatchcase(str(m.phase), p) for p in alignment)
           and not contract.rules_for(m.phase)
           for m in messages):
        raise ValueError(
            "The messages include the alignment's (private set intersection "
            "run when the PartyData loaded), which follow the contract of "
            "skfed.alignment, not the estimator's. Check those with "
            "skfed.alignment.PSIAudit and pass the others: [m for m in "
            "messages if not skfed.alignment._contract.CONTRACT.rules_for("
            "m.phase)].")
