"""The protocol of entity alignment: Diffie-Hellman PSI between two or more parties.

Every party holds a set of ids. The parties learn which ids all of them hold
(the intersection) and nothing else beyond set sizes, under the semi-honest
model, by commutative exponentiation of hashed ids in a prime-order group:
raising ``H(x)`` to every party's secret key, in any order, gives the same
group element ``H(x)^(a_0 a_1 ... a_{n-1})``, and two ids meet only if they
are equal, while a partially exponentiated id looks random to anyone missing
a key (decisional Diffie-Hellman).

The group is Curve25519 by default (:class:`Curve25519Group`: ids hashed
onto the curve, keys applied with X25519, 32 bytes per value), or a MODP
group of RFC 3526 (:class:`DHGroup`: ``"modp3072"``, or ``"modp2048"`` with
the insecure-keys opt-in); the protocol is the same in every group, and so
are its messages, save the encoding of a group element.

The protocol, with one party acting as the *hub* (the label holder in
:func:`~skfed.alignment.align`) and ``L`` the last non-hub party:

1. Every party hashes its ids into the group, raises them to its secret key
   and sends them, in a secret random order, to the first party of its route.
2. The blinded ids travel along a route through every other party, each
   raising them to its own key without reordering. Every non-hub party's
   route ends at the hub; the hub's own route ends at ``L``, which also
   shuffles them with a permutation it keeps secret.
3. The hub now holds every party's fully exponentiated ids: the other
   parties' in their owners' secret orders and its own in ``L``'s secret
   order, so it can link none of them to an id. It intersects them.
4. The hub tells every non-hub party the positions (in that party's own
   order) of its ids in the intersection; it sends the positions of its own
   ids to ``L``, who undoes its permutation and answers with the positions
   in the hub's order.

Why no one learns more: a value is only ever compared by a party that cannot
map it back to an id. The party that completes the exponentiation of a set
is the hub (for the non-hub sets; it never learns the map of its own fully
exponentiated ids) or ``L`` (for the hub's set; ``L`` never sees its own ids
fully exponentiated). Every party sees the sizes of the sets passing through
it; the hub also sees how many ids every subset of parties has in common
(the sizes of all the sub-intersections, never which ids). Parties are
assumed not to collude.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import secrets

import numpy as np

from ..crypto._parallel import effective_n_jobs
from ..federation import Federation, Local
from ._groups import DEFAULT_GROUP, _resolve_group, check_security
from ._ids import id_kind

__all__ = ["private_set_intersection", "run_psi"]

def _secret_permutation(n):
    # Sorting by independent 64-bit keys from the OS's CSPRNG gives a uniform
    # permutation (up to ties, probability < n^2 / 2^65), so the order of a
    # message reveals nothing about the order of a party's table.
    keys = np.frombuffer(secrets.token_bytes(8 * n), dtype=np.uint64)
    return np.argsort(keys, kind="stable")


# ----------------------------------------------------------------- party steps
# Each function runs on one party's thread, sees only that party's state and
# the message it received, and returns the message it sends (or its output).
# The group does the arithmetic (:class:`DHGroup` over threads,
# :class:`Curve25519Group` over forked processes) and checks every value it
# receives, naming the sender of anything that is not a group element.

def _draw_key(state):
    """Any party: its secret key, from its own CSPRNG (:mod:`secrets`,
    through the group's ``random_exponent``), drawn on its own thread."""
    key = state.group.random_exponent(state.exponent_bits)
    if state.key_log is not None:
        # Only when PSIAudit asks: the party keeps a copy of its own key
        # where the audit's attacks, playing this party, can use it (as a
        # real party can). It never enters a message.
        state.key_log[state.name] = key
    return key


def _blind_own_ids(state):
    """Any party: ``H(x)^a`` of its own ids, in a secret random order."""
    state.stash["key"] = _draw_key(state)
    order = _secret_permutation(len(state.ids))
    state.stash["order"] = order
    return state.group._blind([state.ids[i] for i in order],
                              state.stash["key"], state.n_jobs)


def _add_key(state, values, permute, sender):
    """A party on a route: raise the values to its key, keep their order
    (unless it is the last stop of the hub's route: then shuffle, secretly)."""
    out = state.group._exponentiate(values, state.stash["key"], state.n_jobs,
                                    state.name, sender)
    if permute:
        permutation = _secret_permutation(len(out))
        state.stash["hub_permutation"] = permutation
        out = out[permutation]
    return out


def _add_key_and_keep(state, values, owner, sender):
    """Hub, last stop of a non-hub route: finish the exponentiation and keep
    the result for the comparison, in the owner's (secret) order."""
    state.stash.setdefault("finished", {})[owner] = state.group._exponentiate(
        values, state.stash["key"], state.n_jobs, state.name, sender)


def _keep_own(state, values, sender):
    """Hub: its own ids, fully exponentiated and shuffled by L."""
    state.stash.setdefault("finished", {})["own"] = state.group._receive(
        values, state.n_jobs, state.name, sender)


def _intersect(state):
    """Hub: the values every party holds, as positions in each list."""
    return state.group._common_positions(state.stash.pop("finished"))


def _undo_permutation(state, positions):
    """L: positions in its secret shuffle of the hub's list -> positions in
    the hub's own order (sorted, so their order says nothing)."""
    return np.sort(state.stash.pop("hub_permutation")[positions])


def _learn_intersection(state, positions):
    """Any party: positions in the order it sent -> rows of its own ids."""
    return np.sort(state.stash["order"][positions])


# --------------------------------------------------------------------- driver

def _routes(n_parties, hub):
    """The parties each set visits after its owner, in order."""
    others = [k for k in range(n_parties) if k != hub]
    m = len(others)
    routes = {hub: others}
    for i, owner in enumerate(others):
        routes[owner] = [others[(i + s) % m] for s in range(1, m)] + [hub]
    return routes


def _schedule(n_parties, hub):
    """The "exponentiate ids" messages in the order they are sent, as
    ``(owner of the set, sender, receiver)``: one hop of every set at a
    time, then L hands the hub its own set. Public: every party can work it
    out from the number of parties and the hub."""
    routes = _routes(n_parties, hub)
    holder = list(range(n_parties))
    schedule = []
    for hop in range(n_parties - 1):
        for owner in range(n_parties):
            receiver = routes[owner][hop]
            schedule.append((owner, holder[owner], receiver))
            holder[owner] = receiver
    schedule.append((hub, routes[hub][-1], hub))
    return schedule


def run_psi(id_lists, hub=0, group=DEFAULT_GROUP, exponent_bits=256, n_jobs=None,
            party_names=None, timeout=None, key_log=None):
    """Run the protocol; return each party's rows in the intersection and the
    :class:`~skfed.federation.CommunicationSummary`.

    ``rows[k]`` holds the sorted positions, in ``id_lists[k]``, of the ids
    that party ``k`` learned to be in the intersection. ``key_log`` (a dict,
    for :class:`~skfed.alignment.PSIAudit` only) receives each party's
    secret exponent by party name, so that an audit's attacks can play a
    party with what that party holds.
    """
    group = _resolve_group(group)
    effective_n_jobs(n_jobs)  # a clear error for n_jobs=0 before any thread starts
    check_security(group, exponent_bits)
    n = len(id_lists)
    names = ([f"party{k}" for k in range(n)] if party_names is None
             else [str(name) for name in party_names])
    if len(names) != n or len(set(names)) != n:
        raise ValueError(f"party_names must be {n} distinct names; got {names}.")
    states = {names[k]: {"name": names[k],
                         "ids": ids if isinstance(ids, list) else list(ids),
                         "group": group,
                         "exponent_bits": exponent_bits, "n_jobs": n_jobs,
                         "key_log": key_log}
              for k, ids in enumerate(id_lists)}
    last = _routes(n, hub)[hub][-1]  # L, who shuffles the hub's set

    with Federation(states, timeout=timeout) as fed:
        def party(k):
            return fed[names[k]]

        # Step 1: every party blinds its own ids with its key.
        blinded = {k: party(k).call(_blind_own_ids, phase="blind own ids")
                   for k in range(n)}
        # Step 2: the sets travel their routes, one hop at a time for all
        # sets at once (a party's worker serves the sets reaching it in turn);
        # last, L hands the hub its own set, shuffled.
        sizes = {}
        for k, sender, receiver in _schedule(n, hub):
            incoming = blinded[k].result()
            # A hop keeps a set's size; another size would change the
            # intersection silently. (A party blinding fewer of its own ids
            # cannot be told from one holding fewer.)
            if len(incoming) != sizes.setdefault(k, len(incoming)):
                raise ValueError(
                    f"Party {names[sender]!r} passed on {len(incoming)} ids in "
                    f"phase 'exponentiate ids' for a set of {sizes[k]}.")
            if k == hub and receiver == hub:
                fed.gather([blinded[j] for j in range(n) if j != hub])
                party(hub).call(_keep_own, incoming,
                                Local(names[sender]), sender=names[sender],
                                phase="exponentiate ids").result()
            elif receiver == hub:
                blinded[k] = party(hub).call(
                    _add_key_and_keep, incoming, Local(k),
                    Local(names[sender]), sender=names[sender],
                    phase="exponentiate ids")
            else:
                blinded[k] = party(receiver).call(
                    _add_key, incoming,
                    Local(k == hub and receiver == last), Local(names[sender]),
                    sender=names[sender], phase="exponentiate ids")
        # Step 3: the hub compares.
        positions = party(hub).call(_intersect, phase="intersect").result()
        # Step 4: everyone learns its rows of the intersection.
        outputs = {k: party(k).call(_learn_intersection, positions[k],
                                    sender=names[hub], phase="reveal positions")
                   for k in range(n) if k != hub}
        hub_positions = party(last).call(
            _undo_permutation, positions["own"], sender=names[hub],
            phase="reveal positions").result()
        outputs[hub] = party(hub).call(
            _learn_intersection, hub_positions, sender=names[last],
            phase="reveal positions")
        rows = fed.gather([outputs[k] for k in range(n)])
    return rows, fed.summary()


def _kinds(ids):
    """The set of id kinds in ``ids``; exact-type scans first (40 ns an id,
    against 1-2 us for :func:`id_kind` on every id of 10^6-id tables)."""
    if all(type(x) is int for x in ids):  # not bool: type(True) is bool
        return {"integer"}
    if all(type(x) is str for x in ids):
        return {"string"}
    return {id_kind(x) for x in ids}


def check_id_lists(id_lists, names=None, what="ids"):
    """Clear errors for id sets that cannot enter the protocol.

    ``names`` label the parties in the messages (default "party 0", ...),
    ``what`` names the ids (e.g. "the ids in column 'id'"). Returns lists.
    """
    id_lists = [list(ids) for ids in id_lists]
    if len(id_lists) < 2:
        raise ValueError(
            "A private set intersection needs at least two parties; got "
            f"{len(id_lists)}.")
    names = ([f"party {k}" for k in range(len(id_lists))] if names is None
             else list(names))
    kinds = []
    for name, ids in zip(names, id_lists):
        if len(ids) == 0:
            raise ValueError(f"{what.capitalize()} of {name} are empty.")
        found = _kinds(ids)
        if None in found:
            bad = next(x for x in ids if id_kind(x) is None)
            raise TypeError(
                f"{name} has an id {bad!r} of type {type(bad).__name__} in "
                f"{what}; ids must be integers or strings (convert float ids "
                "with .astype('int64'), and drop or fill missing ids).")
        if len(found) > 1:
            raise TypeError(
                f"{name} mixes id types {sorted(found)} in {what}; convert "
                "them to one type (e.g. all strings with .astype(str)).")
        kinds.append(found.pop())
        # Ids of one kind are equal exactly when their canonical encodings
        # are (np.int64(5) == 5 and hash alike), so a set of the ids finds
        # the repeats without encoding 10^7 ids into a second list.
        if len(set(ids)) != len(ids):
            seen, repeated = set(), {}
            for x in ids:
                if x in seen:
                    repeated.setdefault(x, None)
                seen.add(x)
            shown = ", ".join(repr(x) for x in list(repeated)[:5])
            raise ValueError(
                f"{name} has duplicate ids in {what} ({len(repeated)} "
                f"repeated, e.g. {shown}); every id must appear once per party. "
                "Deduplicate first (e.g. df.drop_duplicates(subset=<id column>)) "
                "or aggregate the repeated rows.")
    if len(set(kinds)) > 1:
        described = ", ".join(f"{name}: {kind}" for name, kind in zip(names, kinds))
        raise TypeError(
            f"The parties' ids are of different types in {what} ({described}); "
            "an integer id never matches a string id. Convert them to one type "
            "at every party (e.g. .astype(str) or .astype('int64')).")
    return id_lists


def private_set_intersection(sets, *, hub=0, group=DEFAULT_GROUP, exponent_bits=256,
                             n_jobs=None, party_names=None,
                             return_communication=False):
    """The ids every party holds, found without revealing the others.

    Runs the Diffie-Hellman protocol described in the module docstring
    through :class:`~skfed.federation.Federation`, one simulated party per
    set, so every message is counted and can be recorded with
    :func:`~skfed.federation.record_messages`.

    Parameters
    ----------
    sets : sequence of sequences of int or str
        One collection of distinct ids per party (at least two parties).

    hub : int, default=0
        The party that compares the fully exponentiated ids. It learns the
        sizes of all sub-intersections (never their ids); pick the party
        trusted to learn that, usually the label holder.

    group : {"curve25519", "modp3072", "modp2048"}, DHGroup or \
            Curve25519Group, default="curve25519"
        The group. By default Curve25519 through X25519 (128-bit security,
        32 bytes per value; see Notes and :class:`Curve25519Group`).
        ``"modp3072"`` is RFC 3526 group 15 (3072 bits, 128-bit security,
        about 20 times slower). Groups below 128-bit security (NIST SP
        800-57), such as ``"modp2048"`` (about 112 bits), are refused with a
        ``ValueError`` unless ``skfed.set_config(allow_insecure_keys=True)``
        (for tests and comparisons).

    exponent_bits : int or None, default=256
        Bits of every party's secret key in a MODP group. 256-bit keys in
        the prime-order subgroup keep the 3072-bit group's 128-bit security
        (the best attack on a ``k``-bit key costs about ``2^(k/2)``; RFC
        7919, section 5.2) and make each exponentiation about 11x cheaper
        than a full-length key; None draws full-length keys. Below 256 bits
        is refused like a small group. With ``"curve25519"`` it must stay
        256 (or None): an X25519 key is always 32 bytes.

    n_jobs : int or None, default=None
        Workers per party for the exponentiations (-1: all cores): threads
        in a MODP group (gmpy2 releases the GIL); forked processes for
        Curve25519 (the X25519 call holds it), where None means one worker
        process per party, so that the parties' batches run on different
        cores. Batches under 4,096 values, and runs where forking is not
        possible (the Ray backend), stay in the party's thread.

    party_names : sequence of str, optional
        Names of the parties in the message log (default ``party0``, ...).

    return_communication : bool, default=False
        Also return the :class:`~skfed.federation.CommunicationSummary`.

    Returns
    -------
    intersection : list
        The common ids, sorted.

    communication : CommunicationSummary
        Only with ``return_communication=True``.

    Raises
    ------
    PartyError
        When a party receives a value that is not an element of the group
        (in Curve25519: not 32 bytes, not canonical, on the twist, or of
        small order, whose X25519 output would be all zeros); the error
        names the receiver and the sender.

    Notes
    -----
    Curve25519 (the default) runs the same protocol with X25519 as the
    exponentiation: ``X25519(k, u)`` is the u-coordinate of ``[s]Q`` for the
    clamped scalar ``s`` of ``k``, and the x-only Montgomery ladder computes
    it on the curve and its twist alike, so keys commute: ``X25519(b,
    X25519(a, u)) = X25519(a, X25519(b, u))``. Clamped scalars are multiples
    of 8, the curve's cofactor, so every value on the wire lies in the
    subgroup of prime order about 2^252 (128-bit security, RFC 7748). Ids
    are hashed onto the curve itself, never its twist (a blinded value shows
    which side it is on, which would leak a bit of every id's hash), and
    every received value is checked: 32 bytes, canonical, on the curve, not
    of small order. The details are in :class:`Curve25519Group`.

    Examples
    --------
    >>> from skfed.alignment import private_set_intersection
    >>> private_set_intersection([["ann", "bob", "eve"], ["bob", "eve", "joe"]])
    ['bob', 'eve']
    """
    id_lists = check_id_lists(sets, party_names)
    if not 0 <= hub < len(id_lists):
        raise ValueError(f"hub={hub} must be a party index in 0..{len(id_lists) - 1}.")
    rows, communication = run_psi(id_lists, hub=hub, group=group,
                                  exponent_bits=exponent_bits, n_jobs=n_jobs,
                                  party_names=party_names)
    learned = [sorted(id_lists[k][i] for i in r) for k, r in enumerate(rows)]
    if any(other != learned[0] for other in learned[1:]):  # pragma: no cover
        raise RuntimeError("The parties disagree on the intersection; this is a bug.")
    return (learned[0], communication) if return_communication else learned[0]
