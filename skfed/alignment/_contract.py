"""The privacy contract of private entity alignment: what each message may carry.

:func:`psi_contract` declares the rules of every phase of the protocol in a
group, :func:`psi_roles` the parties' roles in one run.
:class:`~skfed.alignment.PSIAudit` (in :mod:`skfed.alignment._estimator`)
carries them for :func:`skfed.privacy.check_messages` and
:func:`skfed.privacy.audit`.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import numbers

from .._privacy_core import Contract, Inherent, Masked, Rule
from ._groups import DEFAULT_GROUP, _resolve_group
from ._protocol import _routes

__all__ = ["CONTRACT", "psi_contract", "psi_roles"]

_ELEMENTS = {
    "V": ("32-byte u-coordinates of points of Curve25519 (numpy dtype V32, "
          "one item per point; canonical, on the curve, outside the small "
          "subgroup): ids hashed onto the curve and passed through X25519 "
          "with the secret key"),
    "O": ("integers modulo p (numpy object array): ids hashed into the "
          "prime-order subgroup and raised to the secret exponent"),
}


def psi_contract(group=DEFAULT_GROUP):
    """The privacy contract of the protocol run in ``group``.

    The rules are the same in every group; the ``exponentiate ids`` element
    declares the group's encoding of its elements (dtype kind ``"V"``,
    32-byte points, for Curve25519; ``"O"``, integers modulo ``p``, for a
    MODP group) and checks every value with the group's own validation
    (``group.check_points``), so that a value that is not a group element
    is a violation.

    Parameters
    ----------
    group : str, DHGroup or Curve25519Group, default="curve25519"

    Returns
    -------
    contract : Contract
    """
    group = _resolve_group(group)
    # Every message of the protocol, by phase. The steps without a sender
    # ("blind own ids", "intersect") run on one party and send nothing.
    return Contract("psi", rules=[
        Rule("exponentiate ids", sender="party", receiver="party",
             elements=(Masked(
                 _ELEMENTS[group.message_kind] + " of their owner and of every "
                 "party before the receiver on the set's route, in the owner's "
                 "secret order (or in L's, for the hub's set); random group "
                 "elements to anyone missing a key (DDH)",
                 dtype=group.message_kind, validate=group.check_points,
                 max_size="rows"),),
             note="the length of the message is the size of the owner's set: "
                  "inherent to DH-PSI"),
        Rule("reveal positions", sender="hub", receiver="party",
             elements=(Inherent(
                 "positions, in the order the receiver itself sent, of its values "
                 "in the intersection: the receiver's output", dtype="iu",
                 max_size="rows"),),
             note="positions into an order only the receiver can undo"),
        Rule("reveal positions", sender="last", receiver="hub",
             elements=(Inherent(
                 "the hub's rows of the intersection, sorted: the hub's output",
                 dtype="iu", max_size="rows"),),
             note="L undoes its own shuffle; sorted, so the order says nothing"),
    ])


#: The contract of the default group (Curve25519).
CONTRACT = psi_contract()


def psi_roles(party_names, hub):
    """The roles of the parties of one PSI run.

    Parameters
    ----------
    party_names : sequence of str
        The parties, in party order (as in the message log).

    hub : int or str
        The hub, by index or name.

    Returns
    -------
    roles : dict of str to set of str
        ``"party"`` for everyone; the hub also ``"hub"``; ``L``, the last
        stop of the hub's set (who shuffles it), also ``"last"``.
    """
    names = [str(name) for name in party_names]
    hub = _hub_index(hub, names)
    last = _routes(len(names), hub)[hub][-1]
    roles = {name: {"party"} for name in names}
    roles[names[hub]].add("hub")
    roles[names[last]].add("last")
    return roles


def _hub_index(hub, names):
    if isinstance(hub, str):
        if hub not in names:
            raise ValueError(f"hub={hub!r} is not one of the parties {names}.")
        return names.index(hub)
    if (isinstance(hub, bool) or not isinstance(hub, numbers.Integral)
            or not 0 <= hub < len(names)):
        raise ValueError(f"hub={hub!r} must be a party index in "
                         f"0..{len(names) - 1} or a party name.")
    return int(hub)
