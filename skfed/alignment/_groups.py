"""The groups of Diffie-Hellman PSI and the security policy they meet.

:class:`DHGroup` is a MODP group (RFC 3526 safe primes, or the caller's own);
:class:`~skfed.alignment.Curve25519Group` lives in its own module. The policy
(:func:`check_security`) refuses any group or exponent length under 128-bit
security unless the caller opts in for tests.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import hashlib
import numbers
import secrets

import gmpy2
import numpy as np

from .._config import get_config
from ..crypto._key_policy import warn_insecure
from ..crypto._parallel import parallel_map
from ..crypto._raw import object_array
from ._ids import encode_id as _encode_id
from ._x25519 import Curve25519Group

__all__ = ["DHGroup", "GROUPS", "DEFAULT_GROUP", "MIN_SECURITY_BITS",
           "check_security"]

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
        return object_array(list(elements), (len(elements),))

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
    warn_insecure(" ".join(problems) + " Allowed because allow_insecure_keys "
                  "is set: for tests and teaching only.", stacklevel=3)


