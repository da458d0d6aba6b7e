"""What each party of the private set intersection learns beyond its output.

Two attacks on a fitted :class:`~skfed.alignment.PSIAudit`, each played by
one party with what that party holds (its ids, its secret exponent, the
messages it received) and public knowledge (the protocol's message schedule,
the id universe); the other parties' sets only score the attack.

``set_sizes``
    The size of every other party's id set, read off the length of the
    messages that carry it (inherent to DH-PSI: every set crosses every
    other party), and the size of every sub-intersection (the ids a group of
    parties, fewer than all, have in common), counted the way the party
    could: by raising what it received to its own key and looking for equal
    values. Only the hub can (inherent to the hub's role). Metric ``exact``:
    1 when the party gets the exact count; ``chance`` is a uniform guess
    among the counts it cannot rule out.

``id_linking``
    Which of a victim's ids outside the intersection the attacker
    identifies, by hashing every id of a known universe and comparing the
    ids, their hashes and the hashes raised to its own key (once, or up to
    ``n - 1`` times; with Curve25519, passed through X25519 with its key)
    with every value it received of the victim's set. In a
    correct run nothing matches (every value lacks a key the attacker does
    not hold); a party that sends its hashed ids unblinded, or that draws
    its key from something another party knows, is linked id by id. Metric
    ``fraction``: the attacker names as many ids as the victim holds outside
    the intersection (those it linked, the rest at random among the ids it
    cannot rule out); the value is the expected share of them it gets right.
    ``chance`` is the same with nothing linked.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

from collections import defaultdict
from itertools import combinations

from ._groups import _resolve_group
from ._ids import encode_id as _encode_id
from ._ids import id_kind
from ._protocol import _schedule
from .._privacy_core import attack_row

__all__ = ["set_sizes", "id_linking"]

_PHASE = "exponentiate ids"


def _received_sets(estimator, messages, attacker):
    """The values of each set the attacker received, by the set's owner.

    The owner of a message is not in it; the attacker reads it off the
    public schedule (who sends which set to whom, in which order). Values it
    cannot place (messages the schedule does not have) are kept under None.
    """
    names = estimator.party_names_
    expected = defaultdict(list)
    for owner, sender, receiver in _schedule(len(names), estimator.hub_):
        if names[receiver] == attacker:
            expected[names[sender]].append(names[owner])
    by_owner = defaultdict(list)
    for message in messages:
        if message.receiver != attacker or message.phase != _PHASE:
            continue
        queue = expected[message.sender]
        owner = queue.pop(0) if queue else None
        for element in tuple(message.payload or ()):
            by_owner[owner].append(_values(element))
    return by_owner


def _values(element):
    # Group elements as hashable values: integers modulo p (object arrays)
    # or 32-byte points (V32 arrays: one bytes object per point).
    try:
        return list(element.ravel().tolist())
    except AttributeError:
        return list(element) if isinstance(element, (list, tuple)) else [element]


def _sent_first(messages, attacker):
    for message in messages:
        if message.sender == attacker and message.phase == _PHASE:
            return _values(message.payload[0])
    return []


def _universe(estimator, sets):
    """The ids an attacker tries: the estimator's ``universe``, else every
    id some party holds plus as many that none holds (were the universe just
    the union of the sets, with two parties it would give the other party's
    set away by itself)."""
    if estimator.universe is not None:
        return list(dict.fromkeys(estimator.universe))
    held = list(dict.fromkeys(x for ids in sets for x in ids))
    taken, outsiders, i = set(held), [], 0
    kind = id_kind(held[0])
    while len(outsiders) < len(held):
        x = {"integer": lambda i: -1 - i, "string": lambda i: f"skfed-outsider-{i}",
             "bytes": lambda i: b"skfed-outsider-%d" % i}[kind](i)
        if x not in taken:
            outsiders.append(x)
        i += 1
    return held + outsiders


def _sets(X):
    return [list(ids) for ids in X]


def set_sizes(estimator, messages, X, y=None, **fit_params):
    """Set sizes and sub-intersection sizes each party learns.

    Parameters
    ----------
    estimator : fitted PSIAudit
    messages : list of Message
    X : sequence of id sequences
        The parties' sets (the attacker's own is what it holds; the others
        only score).
    y : None

    Returns
    -------
    list of dict
        Rows of the attack table.
    """
    names = estimator.party_names_
    sets = _sets(X)
    n = len(names)
    owner_of = {name: k for k, name in enumerate(names)}
    common = set.intersection(*map(set, sets))
    universe = _universe(estimator, sets)
    group = _resolve_group(estimator.group)
    rows = []
    for attacker in names:
        received = _received_sets(estimator, messages, attacker)
        for victim in names:
            if victim == attacker:
                continue
            seen = received.get(victim)
            estimate = len(seen[0]) if seen else None
            truth = len(sets[owner_of[victim]])
            rows.append(attack_row(
                "set_sizes", attacker, victim, "size of its id set", "exact",
                float(estimate == truth), 1.0 / (len(universe) - len(common) + 1)))
        if n < 3:
            continue  # the only group of two or more is everyone: the output
        # Every set in the one form the attacker can compare: the values it
        # received of another party's set raised to its own key (what it
        # computes as the next stop of that set), its own set as it came
        # back (the hub's, shuffled by L) or as it sent it.
        key = estimator.keys_.get(attacker)
        comparable = {}
        for owner in names:
            versions = received.get(owner)
            if owner == attacker:
                values = versions[-1] if versions else _sent_first(messages, attacker)
                comparable[owner] = set(values)
            elif versions and key is not None:
                comparable[owner] = {v for v in group.raise_values(
                    versions[-1], key) if v is not None}
        for size in range(2, n):
            for members in combinations(names, size):
                if not all(owner in comparable for owner in members):
                    continue
                estimate = len(set.intersection(*(comparable[o] for o in members)))
                truth = len(set.intersection(
                    *(set(sets[owner_of[o]]) for o in members)))
                smallest = min(len(sets[owner_of[o]]) for o in members)
                rows.append(attack_row(
                    "set_sizes", attacker, " & ".join(members),
                    "number of ids they share", "exact", float(estimate == truth),
                    1.0 / (smallest - len(common) + 1)))
    return rows


def id_linking(estimator, messages, X, y=None, **fit_params):
    """Which of a victim's ids outside the intersection the attacker names.

    Parameters
    ----------
    estimator : fitted PSIAudit
    messages : list of Message
    X : sequence of id sequences
    y : None

    Returns
    -------
    list of dict
        Rows of the attack table.
    """
    names = estimator.party_names_
    sets = _sets(X)
    common = set.intersection(*map(set, sets))
    universe = _universe(estimator, sets)
    group = _resolve_group(estimator.group)
    hashed = group.hash_ids(universe)
    # What an id may look like on the wire if a party forgot a step: itself,
    # its canonical bytes, its hash, its hash under the attacker's key.
    plain = {}
    for x, h in zip(universe, hashed):
        plain[x] = x
        plain[_encode_id(x)] = x
        plain[h] = x
    rows = []
    for a, attacker in enumerate(names):
        forms = dict(plain)
        key = estimator.keys_.get(attacker)
        if key is not None:
            # Its key once or more: a set that met a copy of its key on the
            # way (another party with the same key) shows up so.
            powered = hashed
            for _ in range(len(names) - 1):
                powered = group.raise_values(powered, key)
                forms.update((h, x) for x, h in zip(universe, powered)
                             if h is not None)
        received = _received_sets(estimator, messages, attacker)
        unplaced = [v for values in received.get(None, []) for v in values]
        own = set(sets[a])
        for v, victim in enumerate(names):
            if victim == attacker:
                continue
            values = [x for values in received.get(victim, []) for x in values]
            linked = {forms[x] for x in values + unplaced
                      if _hashable(x) and x in forms}
            target = set(sets[v]) - common
            if not target:
                continue
            # With two parties the victim's ids outside the intersection are
            # outside the attacker's set; with more they may be in it.
            candidates = set(universe) - common - (own if len(names) == 2 else set())
            rows.append(attack_row(
                "id_linking", attacker, victim, "its ids outside the intersection",
                "fraction", _expected_hits(linked & candidates, target, candidates)
                / len(target), len(target) / max(len(candidates), 1)))
    return rows


def _expected_hits(linked, target, candidates):
    """The attacker names as many ids as the victim holds outside the
    intersection (it knows how many: the set size, less the intersection):
    those it linked, then the rest at random among the candidates it has not
    named. The expected number right, so that an attacker who linked
    nothing scores exactly ``chance``."""
    named = min(len(linked), len(target))
    rest, pool = len(target) - named, len(candidates) - len(linked)
    right = len(linked & target)
    return right + (rest * (len(target) - right) / pool if pool > 0 else 0.0)


def _hashable(value):
    try:
        hash(value)
    except TypeError:
        return False
    return True
