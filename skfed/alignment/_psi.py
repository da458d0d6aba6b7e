"""Diffie-Hellman private set intersection between two or more parties.

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

import hashlib
import numbers
import secrets
import warnings

import gmpy2
import numpy as np

from .._config import get_config
from ..crypto import InsecureKeyWarning
from ..crypto._parallel import effective_n_jobs, parallel_map
from ..federation import Federation, Local
from ._ids import encode_id as _encode_id
from ._ids import id_kind
from ._x25519 import Curve25519Group

__all__ = ["DHGroup", "Curve25519Group", "GROUPS", "private_set_intersection"]

#: The security strength (bits) every PSI run must reach, unless the caller
#: opts in with ``skfed.set_config(allow_insecure_keys=True)`` (for tests).
MIN_SECURITY_BITS = 128

# NIST SP 800-57 Part 1 Rev. 5, Table 2: the security strength of
# finite-field discrete-logarithm groups by the size of the modulus p.
_FFC_STRENGTH = ((15360, 256), (7680, 192), (3072, 128), (2048, 112), (1024, 80))

# RFC 3526, group 14: the 2048-bit MODP group, a safe prime p = 2q + 1
# (p = 2^2048 - 2^1984 - 1 + 2^64 * (floor(2^1918 pi) + 124476)).
_MODP_2048 = int(
    "FFFFFFFFFFFFFFFFC90FDAA22168C234C4C6628B80DC1CD129024E088A67CC74"
    "020BBEA63B139B22514A08798E3404DDEF9519B3CD3A431B302B0A6DF25F1437"
    "4FE1356D6D51C245E485B576625E7EC6F44C42E9A637ED6B0BFF5CB6F406B7ED"
    "EE386BFB5A899FA5AE9F24117C4B1FE649286651ECE45B3DC2007CB8A163BF05"
    "98DA48361C55D39A69163FA8FD24CF5F83655D23DCA3AD961C62F356208552BB"
    "9ED529077096966D670C354E4ABC9804F1746C08CA18217C32905E462E36CE3B"
    "E39E772C180E86039B2783A2EC07A28FB5C55DF06F4C52C9DE2BCBF695581718"
    "3995497CEA956AE515D2261898FA051015728E5A8AACAA68FFFFFFFFFFFFFFFF",
    16)

# RFC 3526, group 15: the 3072-bit MODP group (same construction).
_MODP_3072 = int(
    "FFFFFFFFFFFFFFFFC90FDAA22168C234C4C6628B80DC1CD129024E088A67CC74"
    "020BBEA63B139B22514A08798E3404DDEF9519B3CD3A431B302B0A6DF25F1437"
    "4FE1356D6D51C245E485B576625E7EC6F44C42E9A637ED6B0BFF5CB6F406B7ED"
    "EE386BFB5A899FA5AE9F24117C4B1FE649286651ECE45B3DC2007CB8A163BF05"
    "98DA48361C55D39A69163FA8FD24CF5F83655D23DCA3AD961C62F356208552BB"
    "9ED529077096966D670C354E4ABC9804F1746C08CA18217C32905E462E36CE3B"
    "E39E772C180E86039B2783A2EC07A28FB5C55DF06F4C52C9DE2BCBF695581718"
    "3995497CEA956AE515D2261898FA051015728E5A8AAAC42DAD33170D04507A33"
    "A85521ABDF1CBA64ECFB850458DBEF0A8AEA71575D060C7DB3970F85A6E1E4C7"
    "ABF5AE8CDB0933D71E8C94E04A25619DCEE3D2261AD2EE6BF12FFA06D98A0864"
    "D87602733EC86A64521F2B18177B200CBBE117577A615D6C770988C0BAD946E2"
    "08E24FA074E5AB3143DB5BFCE0FD108E4B82D120A93AD2CAFFFFFFFFFFFFFFFF",
    16)


class DHGroup:
    """The quadratic residues modulo a safe prime ``p = 2q + 1``.

    This subgroup has prime order ``q``, so every element but 1 generates it
    and the decisional Diffie-Hellman problem is believed hard in it.

    Parameters
    ----------
    p : int
        A safe prime (checked: ``p`` and ``(p - 1) / 2`` must be prime).

    name : str, optional
        A label, also used to separate the hashes of different groups.

    Attributes
    ----------
    p, q : gmpy2.mpz
        The modulus and the order of the subgroup.

    bits : int
        The bit length of ``p``.

    security_bits : int
        The security strength of a group of this size, per NIST SP 800-57
        Part 1 (Table 2): 112 for 2048 bits, 128 for 3072, 192 for 7680,
        256 for 15360; 0 below 1024 bits (less than 80). PSI refuses groups
        below 128 (see :func:`private_set_intersection`).

    Examples
    --------
    >>> from skfed.alignment import GROUPS
    >>> group = GROUPS["modp3072"]
    >>> group.bits, group.security_bits
    (3072, 128)
    >>> h = group.hash_ids(["alice"])[0]
    >>> pow(h, group.q, group.p) == 1  # in the order-q subgroup
    True
    """

    def __init__(self, p, name=None):
        p = gmpy2.mpz(p)
        if p < 7 or not gmpy2.is_prime(p, 40) or not gmpy2.is_prime((p - 1) // 2, 40):
            raise ValueError(
                "A DHGroup needs a safe prime p (p and (p - 1) / 2 both prime); "
                f"got a {p.bit_length()}-bit number that is not one.")
        self.p = p
        self.q = (p - 1) // 2
        self.bits = p.bit_length()
        self.security_bits = next(
            (strength for size, strength in _FFC_STRENGTH if self.bits >= size), 0)
        self.name = name or f"safe-prime-{self.bits}"
        # Hash to more bits than p so that the reduction mod p is within
        # 2^-128 of uniform; squaring then lands uniformly in the subgroup.
        self._n_hash_bytes = (self.bits + 128 + 7) // 8
        self._domain = f"skfed-psi-v1|{self.name}|".encode()

    def __repr__(self):
        return f"DHGroup(name={self.name!r}, bits={self.bits})"

    def hash_ids(self, ids):
        """``H(x) = (SHAKE-256(domain || x) mod p)^2``: ids into the subgroup.

        Parameters
        ----------
        ids : iterable of int or str
            The ids to hash; their type is part of the hash, so ``5`` and
            ``"5"`` differ.

        Returns
        -------
        elements : list of mpz
            One element of the order-q subgroup per id.
        """
        p, out = self.p, []
        for x in ids:
            data = self._domain + _encode_id(x)
            counter = 0
            while True:
                digest = hashlib.shake_256(data + counter.to_bytes(4, "big"))
                h = gmpy2.powmod(gmpy2.mpz(int.from_bytes(
                    digest.digest(self._n_hash_bytes), "big")), 2, p)
                if h != 1 and h != 0:  # the identity would hide x; p. ~2^-2000
                    break
                counter += 1
            out.append(h)
        return out

    def random_exponent(self, bits=256):
        """A secret key in ``[1, q)`` from :mod:`secrets`.

        Parameters
        ----------
        bits : int or None, default=256
            Length of the key; ``None`` (or at least the size of ``q``)
            means full length.

        Returns
        -------
        key : mpz
        """
        if bits is None or bits >= self.q.bit_length():
            return gmpy2.mpz(secrets.randbelow(int(self.q) - 1) + 1)
        # The top bit is set so the key has exactly ``bits`` bits.
        return gmpy2.mpz(secrets.randbits(bits - 1) | (1 << (bits - 1)))

    def raise_values(self, values, key):
        """Every value to the power ``key`` modulo p (None for a value
        that is not an element of the group's range).

        Parameters
        ----------
        values : iterable of int
            Group elements.

        key : int
            The exponent.

        Returns
        -------
        elements : list of mpz or None
        """
        return [gmpy2.powmod(v, key, self.p) if _is_element(v, self.p) else None
                for v in values]

    def check_points(self, values):
        """Why a message is not an array of group elements (None if it is).

        An element is an integer ``1 < v < p``; membership of the order-q
        subgroup is not checked (it would cost a Legendre symbol each).

        Parameters
        ----------
        values : object
            A received message element.

        Returns
        -------
        problem : str or None
        """
        if not isinstance(values, np.ndarray) or values.dtype != object \
                or values.ndim != 1:
            return (f"a {type(values).__name__}"
                    + (f" of dtype {values.dtype} and shape {values.shape}"
                       if isinstance(values, np.ndarray) else "")
                    + f", not a 1-D object array of elements of {self.name}")
        for i, v in enumerate(values.tolist()):
            if not _is_element(v, self.p):
                shown = repr(v) if not _is_number(v) else f"{int(v).bit_length()}-bit"
                return (f"value {i} ({shown}) is not an integer between 1 "
                        f"and p (exclusive) of the {self.bits}-bit group")
        return None

    # ------------------------------------------------ used by the protocol
    message_kind = "O"

    def _to_message(self, elements):
        out = np.empty(len(elements), dtype=object)
        out[:] = elements
        return out

    def _values(self, message):
        return message.tolist()

    def _raise(self, values, key, n_jobs):
        p = self.p
        return self._to_message(parallel_map(
            lambda chunk: gmpy2.powmod_base_list(chunk, key, p), list(values),
            n_jobs))

    def _blind(self, ids, key, n_jobs):
        hashed = parallel_map(self.hash_ids, ids, n_jobs)
        return self._raise(hashed, key, n_jobs)

    def _check(self, values, receiver, sender):
        problem = self.check_points(values)
        if problem is not None:
            raise ValueError(
                f"{receiver} refused the group elements sent by {sender}: "
                f"{problem}; the sender deviated from the protocol or its "
                "message was corrupted.")

    def _exponentiate(self, values, key, n_jobs, receiver, sender):
        self._check(values, receiver, sender)
        return self._raise(values, key, n_jobs)

    def _receive(self, values, n_jobs, receiver, sender):
        self._check(values, receiver, sender)
        return values

    def _common_positions(self, finished):
        common = None
        for values in finished.values():
            common = set(values.tolist()) if common is None else \
                common.intersection(values.tolist())
        return {owner: np.array([i for i, v in enumerate(values.tolist())
                                 if v in common], dtype=np.int64)
                for owner, values in finished.items()}


_MPZ = type(gmpy2.mpz(0))


def _is_number(value):
    return isinstance(value, (int, _MPZ)) and not isinstance(value, bool)


def _is_element(value, p):
    return _is_number(value) and 1 < value < p


GROUPS = {
    "curve25519": Curve25519Group(),
    "modp2048": DHGroup(_MODP_2048, "modp2048"),
    "modp3072": DHGroup(_MODP_3072, "modp3072"),
}

#: The group :func:`private_set_intersection` and :func:`align` use unless
#: told otherwise: Curve25519 through X25519 (128-bit security, 32 bytes per
#: value, about 20 times faster than RFC 3526 group 15, the smallest MODP
#: group of the same security).
DEFAULT_GROUP = "curve25519"


def _resolve_group(group):
    if isinstance(group, (DHGroup, Curve25519Group)):
        return group
    if isinstance(group, str) and group in GROUPS:
        return GROUPS[group]
    raise ValueError(
        f"group={group!r} is not a known group; use one of {sorted(GROUPS)} "
        "or a DHGroup(p) built from your own safe prime.")


def _strength(bits):
    return f"about {bits}-bit" if bits else "less than 80-bit"


def check_security(group, exponent_bits):
    """Refuse a group or an exponent length below ``MIN_SECURITY_BITS`` (128).

    Two things bound the security of DH-PSI: the discrete logarithm in the
    group (NIST SP 800-57's strength of a modulus of that size) and the
    length of the secret exponents (Pollard's kangaroo finds a ``k``-bit
    exponent in about ``2^(k/2)`` steps). Exponents shorter than 128 bits
    are always refused; anything else below the bar only with
    ``skfed.set_config(allow_insecure_keys=True)`` (which the tests use to
    stay fast with small groups), and then with an
    :class:`~skfed.crypto.InsecureKeyWarning`.
    """
    if exponent_bits is not None and (
            isinstance(exponent_bits, bool)
            or not isinstance(exponent_bits, numbers.Integral)
            or exponent_bits < 128):
        raise ValueError(
            f"exponent_bits={exponent_bits!r} is too short to keep the keys "
            f"secret; use at least {2 * MIN_SECURITY_BITS} (the default 256), "
            "or None for full-length keys.")
    if isinstance(group, Curve25519Group):
        if exponent_bits not in (None, 2 * MIN_SECURITY_BITS):
            raise ValueError(
                f"exponent_bits={exponent_bits!r} does not apply to "
                f"group={group.name!r}: an X25519 key is always 32 bytes, "
                "clamped to a 255-bit scalar (RFC 7748). Leave exponent_bits "
                "at 256 (or None); it sets the key length of MODP groups only.")
        return
    problems = []
    if group.security_bits < MIN_SECURITY_BITS:
        problems.append(
            f"The {group.bits}-bit group {group.name!r} gives "
            f"{_strength(group.security_bits)} security (NIST SP 800-57), below "
            f"the {MIN_SECURITY_BITS} bits private set intersection requires. "
            f"Use group={DEFAULT_GROUP!r} (the default: Curve25519, 128 bits, "
            "and the fastest), 'modp3072' (RFC 3526 group 15, 3072 bits) or a "
            "DHGroup of at least 3072 bits.")
    if exponent_bits is not None and exponent_bits < 2 * MIN_SECURITY_BITS:
        problems.append(
            f"exponent_bits={exponent_bits} gives about {exponent_bits // 2}-bit "
            "security (Pollard's kangaroo recovers a k-bit exponent in about "
            f"2^(k/2) steps), below the {MIN_SECURITY_BITS} bits private set "
            f"intersection requires. Use exponent_bits={2 * MIN_SECURITY_BITS} "
            "(the default) or None for full-length keys.")
    if not problems:
        return
    if not get_config()["allow_insecure_keys"]:
        raise ValueError(" ".join(problems) + (
            " Tests may opt in with skfed.set_config(allow_insecure_keys=True) "
            "or the environment variable SKFED_ALLOW_INSECURE_KEYS=1."))
    # Opted in: allowed, and said, as for small Paillier keys.
    warnings.warn(" ".join(problems) + " Allowed because allow_insecure_keys "
                  "is set: for tests and teaching only.",
                  InsecureKeyWarning, stacklevel=3)


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
