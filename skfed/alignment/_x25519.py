"""Curve25519 for the private set intersection: X25519 on ids hashed onto the curve.

Every scalar multiplication is OpenSSL's X25519, reached through the
``cryptography`` package (PyCA): ``X25519PrivateKey.from_private_bytes(k)
.exchange(X25519PublicKey.from_public_bytes(u))`` is ``X25519(k, u)`` of RFC
7748. Nothing here does curve arithmetic itself; the only field arithmetic
is the Legendre symbol that tells the curve from its twist (gmpy2).

The exchange holds the GIL (measured: 30 exchanges next to a spinning
Python thread take 1 ms, where 30 calls that release the GIL wait 0.6 s
behind it), so threads cannot spread it over cores. A party's batch is cut
into chunks that forked worker processes compute (:func:`_run_batches`):
the workers inherit the party's key and data through the fork, only the
chunk bounds go to them and only the 32-byte results come back, written
into one preallocated array, so memory stays bounded by the output plus a
few chunks in flight.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import hashlib
import multiprocessing
import secrets
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures.process import BrokenProcessPool
from functools import reduce

import gmpy2
import numpy as np
from cryptography.hazmat.primitives.asymmetric.x25519 import (
    X25519PrivateKey,
    X25519PublicKey,
)

from ..crypto._parallel import effective_n_jobs, fork_available
from ..federation import check_stop
from ._ids import encode_id

__all__ = ["Curve25519Group", "P", "A", "LOW_ORDER_U", "POINT_DTYPE",
           "point_problem"]

# ------------------------------------------------------------ valid points
# A received value is accepted when it is the canonical little-endian
# encoding of the u-coordinate of a point of the curve itself (not of its
# quadratic twist) outside the 8-torsion, the only values an honest party's
# X25519 outputs can be. The field arithmetic is one Legendre symbol (gmpy2).

#: The field prime of Curve25519 and the coefficient A of its Montgomery
#: form v^2 = u^3 + A u^2 + u (RFC 7748, section 4.1).
P = 2**255 - 19
A = 486662
_P = gmpy2.mpz(P)

#: The u-coordinates of the points of small order on the curve itself (the
#: 8-torsion: u = 0 for the point of order 2 and the point at infinity,
#: u = 1 for the two of order 4, these two for the four of order 8). X25519
#: maps them to the all-zero output, which ``cryptography`` refuses.
#: (The twist's small-order points are refused as twist points.)
LOW_ORDER_U = frozenset({
    0,
    1,
    325606250916557431795983626356110631294008115727848805560023387167927233504,
    39382357235489614581723060781553021112529911719440698176882885853963445705823,
})

#: The numpy type of a point in messages: 32 opaque bytes (the little-endian
#: u-coordinate), one array item per point, so that a message of N points
#: counts N scalars and 32 N bytes, as N group elements should.
POINT_DTYPE = np.dtype("V32")


def point_problem(value):
    """Why 32 bytes are not a point the protocol accepts (None if they are).

    A point is accepted when it is the canonical encoding of the
    u-coordinate of a point of the curve (not of its twist) outside the
    8-torsion: every honest message carries only such points.
    """
    if len(value) != 32:
        return f"{len(value)} bytes long, not 32"
    return _u_problem(int.from_bytes(value, "little"))


def _u_problem(u):
    if u >= P:
        return "not a canonical encoding (u >= 2^255 - 19)"
    if u in LOW_ORDER_U:
        return ("a point of small order (X25519 would map it to the all-zero "
                "output)")
    u = gmpy2.mpz(u)
    # The Jacobi symbol modulo the prime p is its Legendre symbol.
    if gmpy2.jacobi(u * (u * (u + A) + 1) % _P, _P) != 1:
        return ("on the quadratic twist, not on Curve25519 (hashed ids are "
                "always on the curve, and X25519 keeps them there)")
    return None


def _message_problem(values):
    if not isinstance(values, np.ndarray):
        return f"a {type(values).__name__}, not an array of 32-byte points"
    if values.dtype != POINT_DTYPE or values.ndim != 1:
        return (f"an array of dtype {values.dtype} and shape {values.shape}, "
                "not a 1-D array of 32-byte points (dtype V32)")
    return None


def _refuse(receiver, sender, problem):
    raise ValueError(
        f"{receiver} refused the points sent by {sender}: {problem}. Every "
        "value must be the 32-byte u-coordinate of a point of Curve25519 "
        "outside its small subgroup, as X25519 outputs; the sender deviated "
        "from the protocol or its message was corrupted.")


_LOW_255_BITS = 2**255 - 1

# Points per chunk handed to a worker (about 0.3 s of work), and the batch
# size below which forking workers costs more than it saves (a pool's life
# costs 15-40 ms; an exchange about 30 us, a check alone about 2 us).
_BATCH = 8192
_MIN_FORK_ITEMS = 4096
_MIN_FORK_CHECKS = 16 * _MIN_FORK_ITEMS


def _hash_to_curve(domain, x):
    """The u-coordinate of a point of the curve for the id ``x``.

    BLAKE2b-512 of ``domain || id || counter`` gives two 32-byte candidates;
    each, top bit cleared, is tried in turn, then the counter moves on, until
    one is the canonical u of a point of the curve outside the 8-torsion
    (half of the candidates are: two tries, one hash, on average)."""
    data = domain + encode_id(x)
    counter = 0
    while True:
        digest = hashlib.blake2b(data + counter.to_bytes(4, "big")).digest()
        for start in (0, 32):
            u = int.from_bytes(digest[start:start + 32], "little") & _LOW_255_BITS
            if _u_problem(u) is None:
                return u.to_bytes(32, "little")
        counter += 1


# ------------------------------------------------------------------ batches
# A task maps a range [start, stop) of the batch to (32 * (stop - start)
# bytes of points, None), or to (None, (index, problem)) for a value that is
# not a valid point. In a worker process it reaches its data through the fork.

_worker_task = None


def _set_worker_task(task):
    global _worker_task
    _worker_task = task


def _call_worker_task(start, stop):
    return _worker_task(start, stop)


class InvalidPoint(ValueError):
    """A received value that is not a valid point: ``index`` and ``problem``."""

    def __init__(self, index, problem):
        super().__init__(f"value {index} is {problem}")
        self.index = index
        self.problem = problem


def _run_batches(task, n_items, n_jobs, min_fork_items=None):
    """``task`` over consecutive chunks of ``n_items``, into one array.

    Worker processes (``n_jobs`` of them; None means one, which is what lets
    two parties' batches run on two cores despite the GIL) compute the
    chunks when the batch is large enough and forking is possible (see
    :func:`~skfed.crypto._parallel.fork_available`); otherwise the calling
    thread does. Chunks are collected in order; between them the party
    checks whether its run was told to stop. Raises :class:`InvalidPoint`
    for the first invalid value.
    """
    out = np.empty(n_items, dtype=POINT_DTYPE)
    raw = out.view(np.uint8)
    bounds = [(a, min(a + _BATCH, n_items)) for a in range(0, n_items, _BATCH)]

    def store(start, stop, result):
        data, problem = result
        if problem is not None:
            raise InvalidPoint(*problem)
        raw[32 * start:32 * stop] = np.frombuffer(data, dtype=np.uint8)

    n_workers = min(effective_n_jobs(n_jobs), len(bounds))
    if min_fork_items is None:
        min_fork_items = _MIN_FORK_ITEMS
    if n_items < min_fork_items or not fork_available():
        for start, stop in bounds:
            check_stop()
            store(start, stop, task(start, stop))
        return out
    try:
        pool = ProcessPoolExecutor(
            max_workers=n_workers, mp_context=multiprocessing.get_context("fork"),
            initializer=_set_worker_task, initargs=(task,))
    except OSError:  # pragma: no cover - no processes to be had: stay in-thread
        return _run_batches_here(task, bounds, store, out)
    with pool:
        # Only bounds travel to the workers, so submitting every chunk at
        # once costs nothing; results are taken in order and copied out at
        # once, so at most a few chunks' results wait in memory.
        futures = [(start, stop, pool.submit(_call_worker_task, start, stop))
                   for start, stop in bounds]
        try:
            for start, stop, future in futures:
                while True:
                    try:
                        result = future.result(timeout=0.25)
                        break
                    except FutureTimeout:
                        check_stop()
                store(start, stop, result)
        except BrokenProcessPool:  # pragma: no cover - a worker was killed
            pool.shutdown(wait=True, cancel_futures=True)
            return _run_batches_here(task, bounds, store, out)
        except BaseException:
            pool.shutdown(wait=True, cancel_futures=True)
            raise
    return out


def _run_batches_here(task, bounds, store, out):  # pragma: no cover - fallback
    for start, stop in bounds:
        check_stop()
        store(start, stop, task(start, stop))
    return out


def _exchanger(key):
    return (X25519PrivateKey.from_private_bytes(key).exchange,
            X25519PublicKey.from_public_bytes)


def _blind_task(ids, domain, key):
    def task(start, stop):
        exchange, public = _exchanger(key)
        return b"".join([exchange(public(_hash_to_curve(domain, x)))
                         for x in ids[start:stop]]), None
    return task


def _exponentiate_task(values, key):
    def task(start, stop):
        exchange, public = _exchanger(key)
        raw = values[start:stop].tobytes()
        out = []
        for i in range(stop - start):
            u = raw[32 * i:32 * i + 32]  # 32 bytes: the dtype was checked
            problem = _u_problem(int.from_bytes(u, "little"))
            if problem is None:
                try:
                    out.append(exchange(public(u)))
                    continue
                except ValueError:  # pragma: no cover - excluded above
                    problem = "a point X25519 refuses (all-zero output)"
            return None, (start + i, problem)
        return b"".join(out), None
    return task


def _check_task(values):
    def task(start, stop):
        raw = values[start:stop].tobytes()
        for i in range(stop - start):
            problem = _u_problem(int.from_bytes(raw[32 * i:32 * i + 32], "little"))
            if problem is not None:
                return None, (start + i, problem)
        return raw, None
    return task


def common_positions(finished):
    """Positions, in each array of points, of the points present in all.

    Matches on the first 8 bytes of every point (sorted uint64 keys, fast)
    and confirms on all 32; a repeated 8-byte prefix within one array
    (probability about N^2 / 2^65) falls back to Python sets of the bytes.
    """
    owners = list(finished)
    rows = {o: np.ascontiguousarray(finished[o]).view("<u8").reshape(-1, 4)
            for o in owners}
    keys = {o: rows[o][:, 0] for o in owners}
    if any(len(np.unique(keys[o])) != len(keys[o]) for o in owners):
        common = reduce(set.intersection,
                        (set(finished[o].tolist()) for o in owners))
        return {o: np.array([i for i, v in enumerate(finished[o].tolist())
                             if v in common], dtype=np.int64) for o in owners}
    shared = reduce(lambda a, b: np.intersect1d(a, b, assume_unique=True),
                    (keys[o] for o in owners))
    where = {}
    for o in owners:
        order = np.argsort(keys[o], kind="stable")
        where[o] = order[np.searchsorted(keys[o], shared, sorter=order)]
    first = owners[0]
    same = np.ones(len(shared), dtype=bool)
    for o in owners[1:]:
        same &= (rows[o][where[o]] == rows[first][where[first]]).all(axis=1)
    return {o: np.sort(where[o][same]).astype(np.int64) for o in owners}


class Curve25519Group:
    """The group of the points of Curve25519, through X25519 (RFC 7748).

    Ids are hashed onto the curve; a party's secret key is an X25519
    private key (32 random bytes), and "raising to the key" is
    ``X25519(key, u)``, computed by OpenSSL through the ``cryptography``
    package. Points travel as their 32-byte u-coordinates (a numpy array of
    dtype ``V32``), about 128-bit security: the default group of
    :func:`~skfed.alignment.private_set_intersection` and
    :func:`~skfed.alignment.align` (``group="curve25519"``).

    Attributes
    ----------
    name : str
        ``"curve25519"``, also used to separate its hashes from other groups'.

    bits : int
        255, the size of the field.

    security_bits : int
        128 (RFC 7748; the prime subgroup has order about 2^252, so Pollard's
        rho costs about 2^126 group operations).

    element_bytes : int
        32, the bytes of one point on the wire.

    Notes
    -----
    Why X25519 on hashed ids is a Diffie-Hellman PSI:

    - **Commutativity.** ``X25519(k, u)`` clamps ``k`` to the scalar
      ``s = 2^254 + 8 m`` (``m``: 251 bits of the key) and returns the
      u-coordinate of ``[s]Q`` for a point ``Q`` of u-coordinate ``u``. The
      Montgomery ladder computes it from ``u`` alone, with formulas that use
      neither ``v`` nor the curve's ``B``, so it computes correctly on the
      curve and on its quadratic twist alike (every ``u`` of the field is on
      one of them), and it does not depend on the sign of ``Q``. Scalars
      multiply as integers, so ``X25519(b, X25519(a, u)) = u([s_b s_a]Q) =
      X25519(a, X25519(b, u))``: the keys commute, as exponents do in a
      MODP group, whatever the order of the parties on a route.
    - **Cofactor.** The curve's group is ``Z/8 x Z/l`` (``l``, a prime of
      about 2^252). Every clamped scalar is a multiple of 8, so the first
      key applied to a hashed id already lands it in the prime-order
      subgroup, where every message then stays and where the decisional
      Diffie-Hellman problem is believed hard; no cofactor component can
      carry information from one party to the next. The four u-values of
      the 8-torsion (``LOW_ORDER_U``) would give X25519's all-zero output,
      which OpenSSL refuses; hashing skips them and receipt refuses them.
    - **Hashing ids onto the curve, not the twist.** BLAKE2b-512 of a domain
      tag, the id's canonical bytes and a counter gives two 32-byte
      candidates, top bit cleared; a candidate is kept when it is the
      canonical u of a point of the curve outside the 8-torsion
      (``u^3 + A u^2 + u`` a non-zero square modulo ``p``), else the next
      one is tried (two tries and one hash on average). The
      kept u is uniform over the curve's points (up to sign and within
      2^-250), i.e. a random-oracle hash into the group. Simply masking a
      hash to 255 bits would put half the ids on the twist, and X25519
      keeps every point on the side it started from, which anyone can read
      off a Legendre symbol: every blinded value would give away one bit of
      its id's hash (how many of a victim's ids hash to the twist, say), a
      leak beyond set sizes. So every honest message carries curve points
      only, and :meth:`check_points` refuses twist points on receipt.
    - **Twist security.** Curve25519's twist has order ``4 l'`` with ``l'``
      a prime of about 2^253, so even the ladder run on a twist point a
      deviating party slipped in would not expose a key faster than about
      2^126 operations; the receipt check refuses such points anyway,
      naming the sender.
    - **Security level.** About 128 bits (RFC 7748): discrete logarithms in
      the order-``l`` subgroup cost about 2^126 by Pollard's rho, and the
      251 random bits of a clamped scalar keep a key as hard to find. Keys
      are 32 bytes from :mod:`secrets`, drawn by each party for each run.

    The timing of the hash depends on the number of tries, but only inside
    the party that hashes its own ids.

    Examples
    --------
    >>> from skfed.alignment import GROUPS
    >>> group = GROUPS["curve25519"]
    >>> a, b = group.random_exponent(), group.random_exponent()
    >>> h = group.hash_ids(["alice"])
    >>> ab = group.raise_values(group.raise_values(h, a), b)
    >>> ba = group.raise_values(group.raise_values(h, b), a)
    >>> ab == ba and len(ab[0]) == 32
    True
    """

    name = "curve25519"
    bits = 255
    security_bits = 128
    element_bytes = 32
    # numpy dtype kind of the messages that carry points
    message_kind = "V"

    def __init__(self):
        self._domain = f"skfed-psi-v1|{self.name}|".encode()

    def __repr__(self):
        return "Curve25519Group()"

    def __eq__(self, other):
        return type(other) is type(self)

    def __hash__(self):
        return hash(type(self))

    def hash_ids(self, ids):
        """The u-coordinates (32 bytes each) of the ids hashed onto the curve.

        Parameters
        ----------
        ids : iterable of int or str
            The ids to hash; their type is part of the hash, so ``5`` and
            ``"5"`` differ.

        Returns
        -------
        points : list of bytes
            One 32-byte point per id.
        """
        return [_hash_to_curve(self._domain, x) for x in ids]

    def random_exponent(self, bits=256):
        """A secret key: an X25519 private key, 32 bytes from :mod:`secrets`.

        Parameters
        ----------
        bits : 256 or None
            Accepted for the interface of :class:`DHGroup`: an X25519 key
            always has 32 bytes (X25519 clamps it to a 255-bit scalar with
            251 random bits).

        Returns
        -------
        key : bytes
        """
        return secrets.token_bytes(32)

    def raise_values(self, values, key):
        """``X25519(key, u)`` of every value (None for a value that is not
        a valid point).

        Parameters
        ----------
        values : iterable of bytes
            32-byte points.

        key : bytes
            A 32-byte X25519 private key.

        Returns
        -------
        points : list of bytes or None
        """
        exchange, public = _exchanger(key)
        out = []
        for u in values:
            if not isinstance(u, (bytes, bytearray)) or point_problem(u):
                out.append(None)
            else:
                out.append(exchange(public(bytes(u))))
        return out

    def check_points(self, values):
        """Why a message is not an array of valid points (None if it is).

        Parameters
        ----------
        values : object
            A received message element.

        Returns
        -------
        problem : str or None
        """
        problem = _message_problem(values)
        if problem is not None:
            return problem
        for i, u in enumerate(values.tolist()):
            problem = point_problem(u)
            if problem is not None:
                return f"value {i} is {problem}"
        return None

    # ------------------------------------------------ used by the protocol

    def _to_message(self, points):
        out = np.empty(len(points), dtype=POINT_DTYPE)
        out.view(np.uint8)[:] = np.frombuffer(b"".join(points), dtype=np.uint8)
        return out

    def _values(self, message):
        return message.tolist()

    def _blind(self, ids, key, n_jobs):
        return _run_batches(_blind_task(ids, self._domain, key), len(ids), n_jobs)

    def _exponentiate(self, values, key, n_jobs, receiver, sender):
        problem = _message_problem(values)
        if problem is not None:
            _refuse(receiver, sender, problem)
        try:
            return _run_batches(_exponentiate_task(values, key), len(values), n_jobs)
        except InvalidPoint as error:
            _refuse(receiver, sender, str(error))

    def _receive(self, values, n_jobs, receiver, sender):
        problem = _message_problem(values)
        if problem is not None:
            _refuse(receiver, sender, problem)
        # The hub's last step before comparing: nothing else runs then, so
        # the check may take every core (and forks only when that pays).
        try:
            return _run_batches(_check_task(values), len(values), -1,
                                min_fork_items=_MIN_FORK_CHECKS)
        except InvalidPoint as error:
            _refuse(receiver, sender, str(error))

    def _common_positions(self, finished):
        return common_positions(finished)
