"""The Ray backend: every party is a Ray actor holding its private state.

Protocol code does not change: ``call`` returns a future, and the actor runs
the function on the party's state, one call at a time and in order, like a
party thread. Messages are counted exactly as with threads, so
``communication_`` is the same for both backends.

Calls in batches, answers party to party. A Ray task costs about a
millisecond of CPU on each side whatever it carries, so a party's
consecutive calls go to its actor together, as one task (:class:`_Batch`),
when one of their answers is needed; an answer given to another party's
call (a partial sum up a tree) goes from actor to actor by reference, is
not read by the driver, and is measured by the receiver
(:func:`read_sizes`). A failed call fails the party's later calls of the
run, as with threads; a timeout names the party whose calls hold the run up
(:func:`_stuck`). When a federation ends without an error, an in-memory party's idle
actor is kept (without its state) for the next federation's party of the
same name and options (:meth:`RayParty.finish`); after a failure, a
timeout or an interrupt, the actors are killed.

Parties at home. A party whose state names data kept by a long-lived *home*
actor (:class:`HomeRef`, made by :class:`~skfed.federation.PartyData`) runs
its calls on that home actor, which outlives the federation, and answers
*directly*: its results reach the driver as a skeleton in which tuples,
dicts and lists of tuples keep their shape and scalars (counts, node ids,
scores) stay plain, while every array, list of values, ciphertext or other
object is a :class:`RemoteValue`, a Ray object reference kept in the
sender's object store with the size the sender measured. The driver passes
it on to the receiving party, whose actor alone fetches it, and counts it
with the sender's measure, so ``communication_`` stays the same.

A party that dies. Each actor also runs a *watch* call, in a concurrency
group of its own (so party calls still run one at a time, in order), that
only returns when its federation ends. A killed or crashed actor fails it at
once, and every caller waiting for *any* party of the federation waits on
the watches too: the death of a party surfaces within one wait slice as a
:class:`~skfed.federation.PartyError` naming it, even while the driver is
waiting for another party's long call (without the watch it surfaced only
when that call ended and the driver next turned to the dead party, tens of
seconds later). Watching costs no polling: the watches are in the same
``ray.wait`` as the awaited answer.

Where parties run. skfed starts a private local Ray instance unless it is
told to join a cluster (see :func:`_ensure_ray`). Before it creates a
party's actor or home it checks that an alive node offers what the party's
``ray_actor_options`` ask for (:func:`check_placeable`): a party that no
node can host, because its node died or never started, is a
:class:`~skfed.federation.PartyError` naming the party, the missing
resource and, where this process saw it, the node that offered it, rather
than a wait for a node that never comes. Every wait on a home is bounded by
``party_timeout`` and checks the placement again every few seconds
(:func:`wait_home`). A home holds one federation's state at a time: a second
federation on a busy home is refused (:func:`check_homes_free`).

Values passed by reference. A party at home answers with :func:`_pack`:
tuples, dicts and lists of tuples keep their shape, scalars stay plain, and
every other value is a :class:`RemoteValue` in the sender's object store. A
receiving actor reads what it is sent, and what its home keeps
(:class:`HomeRef`), with :func:`_resolve`; :func:`leaves` walks a payload
down to them.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import collections
import itertools
import os
import threading
import time

import numpy as np
import sklearn

from .. import _config
from .._optional import import_optional
from ..crypto._parallel import party_thread_keeps_gil
from ._accounting import measure
from .party import (
    _WAIT_SLICE,
    Local,
    PartyError,
    PartyFuture,
    PartyState,
    PartyStopped,
    _name_of,
    _rebuild_party_error,
    deliver,
    read_futures,
)

__all__ = ["RayParty", "RemoteValue", "HomeRef", "HomeList", "home_actor",
           "shutdown_homes", "leaves", "check_placeable", "check_homes_free",
           "wait_home", "read_sizes"]


def import_ray():
    return import_optional("ray", "The 'ray' backend")


def _writable(obj):
    """Writable copies of arrays that Ray deserialised read-only (zero-copy).

    With threads a party owns the arrays it receives and may update them in
    place; the Ray backend keeps that semantics.
    """
    if isinstance(obj, np.ndarray):
        return obj if obj.flags.writeable else obj.copy()
    if isinstance(obj, tuple) and type(obj) is tuple:
        return tuple(_writable(o) for o in obj)
    if isinstance(obj, list):
        return [_writable(o) for o in obj]
    if isinstance(obj, dict):
        return {k: _writable(v) for k, v in obj.items()}
    return obj


_SCALAR_TYPES = (bool, int, float, complex, str, np.bool_, np.number)


def _is_scalar(obj):
    return obj is None or isinstance(obj, _SCALAR_TYPES)


def _is_structure(obj):
    """A tuple that bundles at least one non-scalar (not a record of values)."""
    return type(obj) is tuple and not all(_is_scalar(o) for o in obj)


class RemoteValue:
    """A value kept in its sender's Ray object store, passed on by reference.

    The driver of a federation of parties at home holds these instead of the
    values: it hands them to the receiving party's actor, which fetches the
    value itself. ``party`` names the sender's home; the sender also
    records what the driver may know without the value: the message size
    ``(n_scalars, n_ciphertexts, n_bytes)`` (what
    :func:`~skfed.federation.measure` counts), the ``len``, and for an
    array its ``shape`` and ``dtype``.

    Driver code that reads the value (arithmetic, indexing, iteration,
    ``np.asarray``, an attribute of the value's type) fetches it with
    :meth:`fetch`; protocol code keeps that to what the orchestrator may
    know (final predictions, scores). Asking for an attribute the value
    does not have (``hasattr(value, "result")``) fetches nothing.
    """

    __slots__ = ("ref", "party", "_meta")

    def __init__(self, ref, party, meta):
        self.ref = ref
        self.party = party
        self._meta = meta

    @classmethod
    def keep(cls, value, party, put):
        """Keep ``value`` with ``put`` (``ray.put``), describing it."""
        try:
            size = measure(value)
        except TypeError:
            size = None
        try:
            length = len(value)
        except TypeError:
            length = None
        meta = {"size": size, "len": length, "type": type(value),
                "attrs": tuple(getattr(value, "__dict__", ()))}
        if isinstance(value, np.ndarray):
            meta.update(shape=value.shape, dtype=value.dtype, ndim=value.ndim)
        return cls(put(value), party, meta)

    def __reduce__(self):
        return (RemoteValue, (self.ref, self.party, self._meta))

    def __message_size__(self):
        if self._meta["size"] is None:
            raise TypeError(
                f"A value kept by {self.party!r} cannot be measured as a "
                "message; protocol messages must be numbers, numpy arrays, "
                "encrypted arrays or containers of these.")
        return self._meta["size"]

    def fetch(self):
        """The value itself (one ``ray.get`` by the caller)."""
        return _writable(import_ray().get(self.ref))

    def __repr__(self):
        return (f"RemoteValue(party={self.party!r}, "
                f"type={self._meta['type'].__name__})")

    def __len__(self):
        length = self._meta["len"]
        return len(self.fetch()) if length is None else length

    def __getattr__(self, name):
        if name.startswith("__") or name == "_meta":
            raise AttributeError(name)
        if name in ("shape", "dtype", "ndim") and name in self._meta:
            return self._meta[name]
        if hasattr(self._meta["type"], name) or name in self._meta["attrs"]:
            return getattr(self.fetch(), name)
        raise AttributeError(
            f"{self._meta['type'].__name__} kept by {self.party!r} has no "
            f"attribute {name!r}")

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self.fetch(), dtype=dtype)

    def __iter__(self):
        return iter(self.fetch())

    def __getitem__(self, key):
        return self.fetch()[key]

    def __bool__(self):
        return bool(self.fetch())


def _fetched(value):
    return value.fetch() if isinstance(value, RemoteValue) else value


for _name in ("add", "sub", "mul", "truediv", "matmul", "eq", "ne", "lt", "le",
              "gt", "ge"):
    def _binary(self, other, _op=f"__{_name}__"):
        return getattr(self.fetch(), _op)(_fetched(other))

    def _reflected(self, other, _op=f"__r{_name}__"):
        return getattr(self.fetch(), _op)(_fetched(other))

    setattr(RemoteValue, f"__{_name}__", _binary)
    if _name in ("add", "sub", "mul", "truediv", "matmul"):
        setattr(RemoteValue, f"__r{_name}__", _reflected)
RemoteValue.__hash__ = None


class HomeRef:
    """Names data a party's home actor keeps (see :class:`~skfed.federation.PartyData`).

    In a party's state it stands for ``home[key]`` (optionally its columns
    ``columns``, cast to ``dtype``, then passed through ``transform``, a
    ``(function, args)`` pair); the party's calls then run on that home
    actor, where the data already lives, and the driver never holds it.
    """

    __slots__ = ("home", "key", "columns", "dtype", "shape", "transform")

    def __init__(self, home, key, columns=None, dtype=None, shape=None,
                 transform=None):
        self.home = str(home)
        self.key = key
        self.columns = columns
        self.dtype = dtype
        self.shape = shape
        self.transform = transform

    def __reduce__(self):
        return (HomeRef, (self.home, self.key, self.columns, self.dtype,
                          self.shape, self.transform))

    def astype(self, dtype, copy=True):
        """The same data cast to ``dtype`` on its home."""
        return HomeRef(self.home, self.key, self.columns, dtype, self.shape,
                       self.transform)

    def read(self, home):
        """The value, read from ``home`` (a dict), as a fresh array."""
        value = home[self.key]
        if self.columns is not None:
            value = value[:, self.columns]
        if self.dtype is not None:
            value = value.astype(self.dtype)
        if self.transform is not None:
            fn, args = self.transform
            value = fn(value, *args)
        return np.array(value, copy=True) if isinstance(value, np.ndarray) else value

    def __len__(self):
        return self.shape[0]

    def __repr__(self):
        return f"HomeRef(home={self.home!r}, key={self.key!r})"


class HomeList(list):
    """An empty list standing for a list a home keeps (``ref``, a
    :class:`HomeRef`), for code that insists on lists (party ids)."""

    def __init__(self, ref):
        super().__init__()
        self.ref = ref

    def __reduce__(self):
        return (HomeList, (self.ref,))


def _wrapped_ref(obj):
    """The :class:`HomeRef` that ``np.asarray`` wrapped in an object array
    (``np.ascontiguousarray(X[:, columns])`` on a stand-in), or None."""
    if (isinstance(obj, np.ndarray) and obj.dtype == object and obj.size == 1
            and isinstance(obj.flat[0], HomeRef)):
        return obj.flat[0]
    return None


def leaves(obj):
    """Every leaf of ``obj``, walking dicts, lists and tuples; a
    :class:`HomeList` or a wrapped stand-in yields its :class:`HomeRef`."""
    if isinstance(obj, HomeList):
        yield obj.ref
    elif _wrapped_ref(obj) is not None:
        yield _wrapped_ref(obj)
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from leaves(v)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from leaves(v)
    else:
        yield obj


def _homes_named(obj, found):
    """The homes named by the :class:`HomeRef` in ``obj`` (walked)."""
    found.update(leaf.home for leaf in leaves(obj) if isinstance(leaf, HomeRef))
    return found


def _resolve(obj, home):
    """``obj`` with its :class:`HomeRef` read from ``home`` and its
    :class:`RemoteValue` fetched (one ``ray.get`` for all), on the actor."""
    remote = [leaf for leaf in leaves(obj) if isinstance(leaf, RemoteValue)]
    values = {}
    if remote:
        got = import_ray().get([r.ref for r in remote])
        values = {id(r): v for r, v in zip(remote, got)}

    def build(o):
        if isinstance(o, RemoteValue):
            return _writable(values[id(o)])
        if isinstance(o, HomeRef):
            return o.read(home)
        if _wrapped_ref(o) is not None:
            return np.ascontiguousarray(build(_wrapped_ref(o)))
        if isinstance(o, dict) and type(o) is dict:
            return {k: build(v) for k, v in o.items()}
        if type(o) is tuple:
            return tuple(build(v) for v in o)
        if type(o) is list:
            return [build(v) for v in o]
        if isinstance(o, HomeList):
            return build(o.ref)
        return _writable(o)

    return build(obj)


def _pack(obj, party, top=True):
    """A direct answer: structure and scalars plain, every other value kept
    in this actor's object store as a :class:`RemoteValue`."""
    if _is_scalar(obj):
        return obj
    if type(obj) is tuple and (top or _is_structure(obj)):
        return tuple(_pack(o, party, False) for o in obj)
    if type(obj) is dict and all(_is_scalar(k) for k in obj):
        return {k: _pack(v, party, False) for k, v in obj.items()}
    if type(obj) is list and (not obj or all(_is_structure(o) for o in obj)):
        return [_pack(o, party, False) for o in obj]
    return RemoteValue.keep(obj, party, import_ray().put)


def _noop(state):
    return None


def _configure(sklearn_config, skfed_config):
    sklearn.set_config(**sklearn_config)
    if skfed_config is not None:
        _config._get_threadlocal_config().update(skfed_config)
    party_thread_keeps_gil()


#: The concurrency group of :meth:`_PartyActor.watch` (party calls run in
#: the default group, one at a time and in order, on one thread).
_WATCH_GROUP = "watch"


class _PartyActor:
    """The body of a party's Ray actor (for one federation, or a home).

    With a concurrency group (the watch), Ray runs every method on a pool
    thread, not the thread that ran ``__init__``: the configurations, which
    are thread-local, are entered by each method's thread on first use.
    """

    def __init__(self, state, sklearn_config, skfed_config=None, home=None):
        self._configs = (sklearn_config, skfed_config)
        self._entered = threading.local()
        self._home_name = home
        self._home = {}  # what a home keeps between federations
        if isinstance(state, dict):
            state = PartyState(**_writable(state))
        self._state = state
        self._watch_lock = threading.Lock()
        self._ended = {}  # federation token -> Event set when it ends
        self._failed = None  # the run's first failure (see run_batch)

    def _enter_configs(self):
        if getattr(self._entered, "configs", None) is not self._configs:
            _configure(*self._configs)
            self._entered.configs = self._configs

    def _ended_event(self, token):
        with self._watch_lock:
            return self._ended.setdefault(token, threading.Event())

    def watch(self, token):
        """Return when federation ``token`` ends on this actor (see the module
        docstring): a caller sees this call fail the moment the actor dies."""
        self._ended_event(token).wait()
        with self._watch_lock:
            self._ended.pop(token, None)

    def begin(self, state, sklearn_config, skfed_config):
        """A federation starts on this home: its state, data read from home."""
        self._configs = (sklearn_config, skfed_config)
        self._enter_configs()
        self._failed = None
        self._state = PartyState(**_resolve(dict(state), self._home))

    def end(self, token=None):
        self._state = None
        self._failed = None
        self._ended_event(token).set()

    def reuse(self, state, sklearn_config, skfed_config):
        """A new federation's party on this idle actor (see :func:`_idle`)."""
        self._configs = (sklearn_config, skfed_config)
        self._enter_configs()
        self._failed = None
        if isinstance(state, dict):
            state = PartyState(**_writable(state))
        self._state = state

    def run(self, fn, args, kwargs):
        self._enter_configs()
        if self._home_name is not None:  # direct: references in, skeleton out
            args, kwargs = _resolve((args, kwargs), self._home)
            return _pack(fn(self._state, *args, **kwargs), self._home_name)
        return fn(self._state, *_writable(args), **_writable(kwargs))

    def run_batch(self, items, with_sizes, *refs):
        """Run a batch of consecutive calls (see :class:`_Batch`), in order.

        ``items`` are ``(fn, kwargs, where, spec)``; each argument in
        ``spec`` is ``(kind, value, measured)``: a value sent with the call
        (``_VAL``), the index of a reference among ``refs`` (``_REF``, an
        earlier answer of another call, which Ray fetched before this task
        ran), or the index of an earlier answer of this batch (``_OWN``,
        which never left this actor). A ``measured`` argument is part of a
        message: its size is added to the call's, returned last when
        ``with_sizes``. A call that fails answers a :class:`_Failed`, its
        :class:`PartyError` naming the call's party, phase and function;
        the later calls of the batch, any call given that answer, and this
        party's later calls in the run answer the same (as a party
        thread's calls do, see :mod:`~skfed.federation.party`); the earlier
        calls of the batch keep their answers.
        """
        self._enter_configs()
        home = self._home_name is not None
        answers, out, sizes = [], [], []
        for fn, kwargs, where, spec in items:
            size = None
            if self._failed is not None:  # as a party thread: see party.py
                answers.append(None)
                out.append(_Failed(self._failed))
                sizes.append(None)
                continue
            try:
                args = []
                for kind, value, measured in spec:
                    if kind == _REF:
                        value = refs[value]
                        if isinstance(value, _Failed):  # an earlier call's
                            raise value.error
                    elif kind == _OWN:
                        value = answers[value]
                    if measured:
                        part = measure(value)
                        size = part if size is None else tuple(
                            a + b for a, b in zip(size, part))
                    args.append(value)
                if home:  # direct: references in, skeleton out
                    args, kw = _resolve((tuple(args), kwargs), self._home)
                    answer = fn(self._state, *args, **kw)
                    packed = _pack(answer, self._home_name)
                else:
                    answer = packed = fn(self._state, *_writable(tuple(args)),
                                         **_writable(kwargs))
            except Exception as exc:
                party, phase, function, last_phase = where
                self._failed = (exc if isinstance(exc, PartyError) else
                                PartyError(party, phase, function, exc,
                                           last_phase=last_phase))
                answer = packed = _Failed(self._failed)
            answers.append(answer)
            out.append(packed)
            sizes.append(size)
        if with_sizes:
            out.append(tuple(sizes))
        return out[0] if len(out) == 1 else tuple(out)

    def at_home(self, fn, args):
        """``fn(home, *args)``: work on what the home keeps (load, align)."""
        self._enter_configs()
        return fn(self._home, *_resolve(tuple(args), self._home))


_actor_classes = {}

#: Kinds of a batched call's argument (see :meth:`_PartyActor.run_batch`).
_VAL, _REF, _OWN = 0, 1, 2


class _Failed:
    """The answer of a call that failed: its :class:`PartyError` (a batch
    answers every call, so one failure leaves the others' answers)."""

    __slots__ = ("error",)

    def __init__(self, error):
        self.error = error

    def __reduce__(self):
        return (_Failed, (self.error,))


class _Batch:
    """A party's consecutive calls that are not sent to its actor yet.

    A call is not sent when it is made: it joins its party's batch, and the
    batch goes to the actor as *one* Ray task (:meth:`RayParty._flush`) when
    one of its answers is needed: another party's call takes it, or the
    caller waits for an answer (then every party's batch is sent, so that
    what the caller asked for runs in parallel meanwhile), or the run ends.
    A Ray task costs about a millisecond of CPU on each side whatever it
    carries, and most of a protocol step's calls are a party's own work
    between two messages. A batch is consecutive
    calls of one party, so each party's order is kept; an answer it needs
    from another party is sent before the batch is, so batches never wait
    for one another in a cycle.
    """

    __slots__ = ("party", "items", "refs", "futures", "sizes", "measured")

    def __init__(self, party):
        self.party = party
        self.items, self.refs, self.futures = [], [], []
        self.sizes = None  # the reference of the sizes' answer, once sent
        self.measured = False  # a call of it carries a message by reference


class _PendingSize:
    """The size of a message part that crossed party to party by reference:
    measured by the receiver, read by :func:`read_sizes`."""

    __slots__ = ("batch", "index")

    def __init__(self, batch, index):
        self.batch, self.index = batch, index


def read_sizes(pending):
    """The ``(n_scalars, n_ciphertexts, n_bytes)`` of each
    :class:`_PendingSize` in ``pending``, in order (one ``ray.get``)."""
    for size in pending:
        if size.batch.sizes is None:
            size.batch.party._flush()
    refs = {}
    for size in pending:
        refs.setdefault(size.batch.sizes.hex(), size.batch.sizes)
    got = dict(zip(refs, import_ray().get(list(refs.values()))))
    return [got[size.batch.sizes.hex()][size.index] for size in pending]


def _actor_class(ray):
    if "cls" not in _actor_classes:
        _actor_classes["cls"] = ray.remote(
            concurrency_groups={_WATCH_GROUP: 1})(_PartyActor)
    return _actor_classes["cls"]


#: The niceness of the worker processes (the party actors) of a Ray instance
#: that skfed starts itself; Ray's own default is 15.
WORKER_NICENESS = "0"


def _init_kwargs(init_kwargs=None):
    """The ``ray.init`` arguments of a start by skfed, and whether it is a
    private instance (see :func:`_ensure_ray`)."""
    kwargs = {"include_dashboard": False, "log_to_driver": False,
              "configure_logging": False, **(init_kwargs or {})}
    if "address" in kwargs or os.environ.get("RAY_ADDRESS"):
        # told to join: an address as the user wrote it ("auto" included),
        # or RAY_ADDRESS, which Ray reads itself when address is None
        return kwargs, kwargs.get("address") == "local"
    kwargs["address"] = "local"
    return kwargs, True


def _ensure_ray(init_kwargs=None):
    """Ray, initialised with ``init_kwargs`` if it was not yet.

    skfed joins a cluster only when told to: Ray is initialised already
    (the caller's ``ray.init``), ``init_kwargs`` has an ``address``, or the
    environment variable ``RAY_ADDRESS`` is set. Otherwise it starts a
    private local instance (``address="local"``): without it, ``ray.init``
    joins the cluster named in Ray's "latest cluster" file, or any Ray it
    finds on the machine, that is another job's, which would then run the
    party actors and hold every party's data and keys.

    The private instance runs its workers (the party actors) at the
    caller's priority, as the threads backend's parties run, unless
    ``RAY_worker_niceness`` is set: at Ray's default niceness of 15 any
    other busy process starved them (with both cores of a 2-core machine
    pinned, starting one actor took ~55 s instead of ~2 s). A cluster that
    skfed joins keeps the niceness its nodes were started with.
    """
    ray = import_ray()
    if not ray.is_initialized():
        kwargs, private = _init_kwargs(init_kwargs)
        set_here = private and "RAY_worker_niceness" not in os.environ
        if set_here:
            os.environ["RAY_worker_niceness"] = WORKER_NICENESS
        try:
            ray.init(**kwargs)
        finally:
            if set_here:
                os.environ.pop("RAY_worker_niceness", None)
    return ray


def _session(ray):
    """This process's Ray session: its job id and its node's id.

    A job id alone repeats across instances (the first driver of every new
    instance is job 01000000, and the driver's worker id derives from it),
    so handles of a shut-down session looked valid in the next one. A new
    instance has a new node id; a driver that joins the same cluster again
    gets a new job id."""
    context = ray.get_runtime_context()
    return (context.get_job_id(), context.get_node_id())


#: Federation tokens: a home's watch returns when the federation ends.
_tokens = itertools.count()

#: ``{home name: (Ray session, actor handle)}``: one long-lived actor per
#: party (see :func:`_session`).
_homes = {}


def _actor_options(name):
    """The configured ``ray_actor_options`` of party ``name``."""
    options = _config.get_config()["ray_actor_options"] or {}
    if callable(options):
        return options(str(name))
    return options.get(str(name), options.get("*"))


#: ``{resource: (node id, node address)}``: the alive node that last offered
#: each resource (Ray forgets a dead node's resources, so a party whose
#: node died is told which node that was from here).
_offered_by = {}


def _wanted_resources(options):
    """``{resource: amount}`` that actor ``options`` ask a node for."""
    wanted = {str(r): a for r, a in (options.get("resources") or {}).items() if a}
    for key, resource in (("num_cpus", "CPU"), ("num_gpus", "GPU"),
                          ("memory", "memory")):
        if options.get(key):
            wanted[resource] = options[key]
    return wanted


def _unplaceable(ray, options):
    """Why no alive node of the cluster can host an actor with ``options``
    (a sentence), or None. Reads the nodes (tens of ms) and remembers which
    node offers each resource."""
    wanted = _wanted_resources(options)
    if not wanted:
        return None
    nodes = ray.nodes()
    alive = [node for node in nodes if node.get("Alive")]
    for node in alive:
        for resource in node.get("Resources") or {}:
            _offered_by[resource] = (node["NodeID"],
                                     node.get("NodeManagerAddress"))
    if any(all((node.get("Resources") or {}).get(r, 0) >= a
               for r, a in wanted.items()) for node in alive):
        return None
    missing = [(r, a) for r, a in wanted.items()
               if not any((node.get("Resources") or {}).get(r, 0) >= a
                          for node in alive)]
    if not missing:
        return (f"no alive node of the Ray cluster offers all of {wanted} "
                "together (its ray_actor_options ask for them on one node)")
    resource, amount = missing[0]
    reason = (f"no alive node of the Ray cluster offers {amount:g} of "
              f"resource '{resource}' (its ray_actor_options ask for it)")
    node_id, address = _offered_by.get(resource, (None, None))
    if node_id is not None and all(node["NodeID"] != node_id for node in alive):
        dead = {node["NodeID"]: node for node in nodes if not node.get("Alive")}
        node = dead.get(node_id)
        why = "has left the cluster"
        if node is not None:
            detail = (node.get("DeathReasonMessage") or node.get("DeathReason")
                      or "")
            why = f"is dead ({detail})" if detail else "is dead"
        reason += (f". The node that offered it, {node_id[:8]} at {address}, "
                   f"{why}")
    return reason


def _unplaceable_error(name, reason, waited=None):
    """The :class:`PartyError` of a party whose actor cannot be placed."""
    when = ("" if waited is None
            else f" (Ray had not placed its actor after {waited:g} s)")
    return _rebuild_party_error(
        str(name), None, "start", RuntimeError(reason),
        f"Party '{name}' cannot start{when}: {reason}. Start Ray on its "
        "host again with the resources it offered (for example `ray start "
        "--address=HEAD:PORT --resources='{\"" + str(name) + "\": 1}'`) "
        "and fit again; a PartyData loads its table at the new home.")


def check_placeable(name, options):
    """Raise a :class:`PartyError` now if no alive node can host party
    ``name``'s actor (``options``: its ``ray_actor_options``), instead of
    waiting for a node that may never come."""
    reason = _unplaceable(import_ray(), options or {})
    if reason is not None:
        raise _unplaceable_error(name, reason)


#: Seconds between two placement checks while a call to a home is awaited.
_PLACEMENT_RECHECK = 3.0


def wait_home(ref, name, function, timeout=None, party=None):
    """``ray.get(ref)`` of a call to party ``name``'s home, within
    ``timeout`` (the ``party_timeout`` unless given), waiting in slices.

    A home that died, or that Ray has not placed in time (no node has room
    for it), raises a :class:`PartyError` naming the party; the home is
    forgotten (and a pending one killed), so the next load starts anew.
    ``party`` names the party in the error (the home's name by default).
    """
    ray = import_ray()
    party = name if party is None else party
    if timeout is None:
        timeout = _config.get_config()["party_timeout"]
    start = time.monotonic()
    deadline = None if timeout is None else start + timeout
    recheck = start + _PLACEMENT_RECHECK
    while True:
        step = _WAIT_SLICE
        if deadline is not None:
            step = min(step, max(0.0, deadline - time.monotonic()))
        ready, _ = ray.wait([ref], timeout=step)
        if ready:
            break
        if time.monotonic() >= recheck:
            # a home waiting for a node that has died since it was created
            # (Ray keeps such an actor pending, without an error)
            recheck = time.monotonic() + _PLACEMENT_RECHECK
            reason = _unplaceable(ray, {"num_cpus": 0,
                                        **(_actor_options(name) or {})})
            if reason is not None:
                entry = _homes.get(str(name))
                if entry is not None:
                    _drop_home(str(name), entry[1])
                raise _unplaceable_error(party, reason,
                                         round(time.monotonic() - start, 1))
        if deadline is not None and time.monotonic() >= deadline:
            entry = _homes.get(str(name))
            if entry is not None:
                _drop_home(str(name), entry[1])
            reason = _unplaceable(ray, {"num_cpus": 0,
                                        **(_actor_options(name) or {})})
            raise _unplaceable_error(party, reason or (
                f"its home actor did not answer {function} within "
                f"{timeout:g} s: Ray has not placed it (no alive node with "
                "its resources has room for it) or it is stuck"), timeout)
    try:
        return ray.get(ref)
    except ray.exceptions.RayTaskError:
        raise
    except ray.exceptions.RayActorError as exc:
        entry = _homes.get(str(name))
        if entry is not None:
            _drop_home(str(name), entry[1])
        reason = _unplaceable(ray, {"num_cpus": 0,
                                    **(_actor_options(name) or {})})
        detail = str(exc).strip().splitlines()
        raise _rebuild_party_error(
            str(party), "data", function, exc,
            f"Party '{party}' is gone: its home actor ('{name}', which kept "
            "its loaded data and model shares) died (killed, or its process "
            f"or node failed) before or while running {function}"
            + (f"; {reason}" if reason else "")
            + ". What it kept is lost; once its host is back, fit again (the "
            "PartyData loads the data at a new home) or load saved shares "
            f"with load_shares. {type(exc).__name__}: "
            f"{detail[0] if detail else ''}") from exc


#: ``{home name: (federation token, start time, thread name)}``: the homes
#: running a federation. A home holds one federation's state at a time, so a
#: second federation on a busy home is refused (see :func:`check_homes_free`).
_busy = {}
_busy_lock = threading.Lock()


def _busy_error(home, held):
    _, started, thread = held
    return RuntimeError(
        f"Party '{home}''s home is running another fit or predict (started "
        f"{time.monotonic() - started:.1f} s ago in thread {thread!r}); the "
        "homes of a PartyData's parties run one federation at a time. Run "
        "the fits one after the other (or on PartyData of other party names).")


def check_homes_free(names):
    """Refuse now, with a clear error, to load or run on a home that another
    federation of this process is running on."""
    with _busy_lock:
        for name in names:
            held = _busy.get(str(name))
            if held is not None:
                raise _busy_error(str(name), held)


def _claim_home(home, token):
    with _busy_lock:
        held = _busy.get(home)
        if held is not None:
            raise _busy_error(home, held)
        _busy[home] = (token, time.monotonic(), threading.current_thread().name)


def _free_home(home, token):
    with _busy_lock:
        if _busy.get(home, (None,))[0] == token:
            del _busy[home]


def home_actor(name, create=True):
    """The home actor of party ``name`` (started on first use).

    A home is a Ray actor placed like the party's federation actors (the
    party's ``ray_actor_options``, e.g. a custom resource of its host) that
    lives until :func:`shutdown_homes` or the end of the Ray session; it
    keeps the party's loaded data and model shares between federations.
    """
    ray = _ensure_ray(_config.get_config()["ray_init_kwargs"])
    job = _session(ray)
    entry = _homes.get(str(name))
    if entry is not None and entry[0] == job:
        return entry[1]
    if not create:
        return None
    options = {"num_cpus": 0, **(_actor_options(name) or {})}
    check_placeable(name, options)
    actor = _actor_class(ray).options(**options).remote(
        None, sklearn.get_config(), _config.get_config(), home=str(name))
    _homes[str(name)] = (job, actor)
    return actor


#: ``{(Ray session, party name, actor options): [actor handle]}``: actors of
#: in-memory parties whose federation ended normally, idle and without a
#: state, reused by the next federation's party of the same name and
#: options (starting an actor, a worker process, took 12 to 26 s of each
#: fit on a loaded 2-core machine). At most :data:`_IDLE_PER_KEY` each.
_idle_actors = {}
_idle_lock = threading.Lock()
_IDLE_PER_KEY = 2


def _idle_key(ray, name, options):
    """The pool key of a party's actor, or None if it is not kept: an idle
    actor holds what it asked for, so only actors that ask for no CPU, GPU
    or memory and for less than one unit of each custom resource are kept
    (a whole unit would keep a home or another party off that node)."""
    wanted = _wanted_resources(options)
    if any(r in ("CPU", "GPU", "memory") or a >= 1 for r, a in wanted.items()):
        return None
    return (_session(ray), str(name), repr(sorted(options.items())))


def _idle(key):
    """An idle actor for ``key``, or None (entries of another Ray session
    are dropped: their actors went with it)."""
    with _idle_lock:
        for other in [k for k in _idle_actors if k[0] != key[0]]:
            del _idle_actors[other]
        actors = _idle_actors.get(key)
        return actors.pop() if actors else None


def _keep_idle(key, actor):
    with _idle_lock:
        actors = _idle_actors.setdefault(key, [])
        if len(actors) < _IDLE_PER_KEY:
            actors.append(actor)
            return
    import_ray().kill(actor, no_restart=True)


def _drop_home(name, actor):
    entry = _homes.get(name)
    if entry is not None and entry[1] is actor:
        del _homes[name]
    import_ray().kill(actor, no_restart=True)


def shutdown_homes():
    """Kill every party's home actor (their data and model shares go too)
    and every idle party actor kept for reuse (those of an earlier Ray
    session, gone with it, are only forgotten)."""
    ray = import_ray()
    session = _session(ray) if ray.is_initialized() else None
    for name, (home_session, actor) in list(_homes.items()):
        if home_session == session:
            _drop_home(name, actor)
        else:
            del _homes[name]
    with _idle_lock:
        idle = [a for key, actors in _idle_actors.items() for a in actors
                if key[0] == session]
        _idle_actors.clear()
    for actor in idle:
        ray.kill(actor, no_restart=True)


class RayFuture(PartyFuture):
    """Future over a Ray object reference, with the thread backend's errors.

    ``peers`` are the parties of the federation: while waiting, a dead
    peer (its watch failed) is raised as its :class:`PartyError`.
    """

    def __init__(self, *args, peers=None, batch=None, **kwargs):
        super().__init__(*args, **kwargs)
        self._peers = peers if peers is not None else {}
        self.observed = False  # its answer (or failure) was read
        # Until its batch is sent, ``_future`` is None and the call is the
        # ``_index``-th of ``_batch`` (see :class:`_Batch`).
        self._batch = batch
        self._index = None if batch is None else len(batch.futures)
        self.consumed = False  # passed on to another call (which reads it)

    def sent(self):
        """The Ray object reference of the answer; sends the party's batch
        if the call is still in it."""
        if self._future is None:
            self._batch.party._flush()
            if self._future is None:
                raise PartyStopped(
                    f"Party '{self.party}' was stopped before this call "
                    f"({self._function}) was sent to it")
        return self._future

    def _awaited(self):
        """The reference of the answer the caller is about to wait for.

        Every party's pending batch is sent first, not only this call's:
        whatever the caller asked for before it waits runs meanwhile, as
        with party threads (calls to several parties, then a wait for
        each, run in parallel)."""
        if self._future is None:
            for peer in list(self._peers.values()):
                peer._flush()
        return self.sent()

    def done(self):
        ray = import_ray()
        ready, _ = ray.wait([self._awaited()], timeout=0)
        return bool(ready)

    def _failure(self, exc):
        """The error to raise for a failed call: the :class:`PartyError`
        that the actor raised (this call's, or that of an earlier call whose
        answer it was given, which names the party at fault), or one naming
        this call."""
        ray = import_ray()
        cause = exc
        while isinstance(cause, ray.exceptions.RayTaskError):
            inner = getattr(cause, "cause", None)
            if inner is None or inner is cause:
                break
            cause = inner
        if isinstance(cause, PartyError):
            return _rebuild_party_error(cause.party, cause.phase,
                                        cause.function, cause.error,
                                        RuntimeError.__str__(cause))
        return self._party_error(cause)

    def _dead_peer(self, ray, ready):
        """The error of a peer whose watch is among ``ready``, if it died."""
        for peer in list(self._peers.values()):
            watch = peer._watch
            if watch is None or watch not in ready:
                continue
            try:
                ray.get(watch, timeout=0)
            except ray.exceptions.RayActorError as exc:
                return peer._died(exc)
            peer._watch = None  # its federation ended normally: not watched

    def result(self, timeout=None):
        ray = import_ray()
        timeout = self._timeout if timeout is None else timeout
        self._awaited()
        try:  # an answer within the first slice: one Ray call, no watches
            value = ray.get(self._future, timeout=min(
                _WAIT_SLICE, _WAIT_SLICE if timeout is None else timeout))
        except ray.exceptions.GetTimeoutError:
            pass
        except ray.exceptions.RayError:
            pass  # read again below, where failures are explained
        else:
            self.observed = True
            return self._answer(value)
        deadline = None if timeout is None else time.monotonic() + timeout
        # Wait in slices, as the thread backend does: an interrupt of the
        # caller is raised promptly, as KeyboardInterrupt, not as a failure.
        # The peers' watches are in the same wait: a dead party ends it.
        while True:
            step = _WAIT_SLICE
            if deadline is not None:
                step = min(step, max(0.0, deadline - time.monotonic()))
            watches = [peer._watch for peer in list(self._peers.values())
                       if peer._watch is not None]
            ready, _ = ray.wait([self._future, *watches], num_returns=1,
                                timeout=step)
            if ready and (ready[0] == self._future
                          or ray.wait([self._future], timeout=0)[0]):
                break
            if ready:
                dead = self._dead_peer(ray, ready)
                if dead is not None:
                    raise dead
            if deadline is not None and time.monotonic() >= deadline:
                raise self._timeout_error(timeout) from None
        self.observed = True
        try:
            value = ray.get(self._future)
        except ray.exceptions.RayTaskError as exc:
            raise self._failure(exc) from exc
        except ray.exceptions.RayActorError as exc:
            owner = self._peers.get(self.party)
            raise (owner._died(exc) if owner is not None
                   else self._party_error(exc)) from exc
        return self._answer(value)

    def _answer(self, value):
        """The answer read, or the failure it stands for raised."""
        if isinstance(value, _Failed):
            error = value.error
            raise _rebuild_party_error(error.party, error.phase, error.function,
                                       error.error, RuntimeError.__str__(error))
        return _writable(value)


#: The order in which batches are sent (see :func:`_stuck`).
_sends = itertools.count()


def _stuck(peers):
    """``(party, functions, sent at)`` of the batch that holds a run up:
    the earliest sent of the parties' unfinished batches whose inputs are
    all there (it runs, or waits for nothing but its own actor), or None."""
    ray = import_ray()
    found = None
    for peer in list(peers.values()):
        for seq, ref, inputs, functions, started in list(peer._inflight):
            if ray.wait([ref], timeout=0)[0]:
                continue
            if inputs and len(ray.wait(list(inputs), num_returns=len(inputs),
                                       timeout=0)[0]) < len(inputs):
                break  # waits for another party's answer
            if found is None or seq < found[0]:
                found = (seq, peer, functions, started)
            break  # its later batches wait for this one
    return None if found is None else found[1:]


def _failure_in(future, value):
    """The :class:`PartyError` that ``future``'s answer ``value`` stands
    for when its call raised (a ``_Failed`` answer), else None."""
    if not isinstance(value, _Failed):
        return None
    try:
        future._answer(value)
    except PartyError as exc:
        return exc
    return None


class RayParty:
    """A party run as a Ray actor; same interface as :class:`Party`."""

    def __init__(self, name, state, log=None, timeout=None, actor_options=None,
                 init_kwargs=None, peers=None):
        self.name = str(name)
        # The federation's parties by name (shared, filled by the caller),
        # whose deaths a wait for this party's answers watches for.
        self._peers = peers if peers is not None else {self.name: self}
        self._watch = None  # fails when the actor dies (see the module doc)
        self._token = None
        self._last_function = None
        self._state = state
        self._log = log
        self._timeout = timeout
        self._options = {"num_cpus": 0, **(actor_options or {})}
        self._init_kwargs = init_kwargs or {}
        self._actor = None
        self._last_phase = None
        self._home = None
        self._idle_key = None  # where the actor goes when its run ends well
        self._calls = []  # futures not read yet (see unobserved_failure)
        self._calls_bound = 16
        self._batch = None  # calls not sent to the actor yet (see _Batch)
        self._lock = threading.RLock()  # guards the batch
        # The last batches sent: (sequence, first answer, references it
        # waits for, its functions, when sent), to name a stuck party (a
        # stuck batch holds up the driver within a few batches; few, since
        # the references keep their objects alive).
        self._inflight = collections.deque(maxlen=8)

    def start(self):
        ray = _ensure_ray(self._init_kwargs)
        homes = _homes_named(self._state, set())
        if len(homes) > 1:
            raise ValueError(
                f"The state of party '{self.name}' names the data of several "
                f"homes ({sorted(homes)}); a party runs at one home.")
        self._token = next(_tokens)
        if homes:
            self._home = homes.pop()
            _claim_home(self._home, self._token)
            try:
                self._actor = home_actor(self._home)
                wait_home(self._actor.begin.remote(
                    self._state, sklearn.get_config(), _config.get_config()),
                    self._home, "begin", self._timeout, party=self.name)
            except BaseException:
                self._actor = None
                _free_home(self._home, self._token)
                raise
        else:
            self._idle_key = _idle_key(ray, self.name, self._options)
            self._actor = None if self._idle_key is None else _idle(self._idle_key)
            if self._actor is not None:  # calls run in order: state first
                self._actor.reuse.remote(self._state, sklearn.get_config(),
                                         _config.get_config())
            else:
                check_placeable(self.name, self._options)
                cls = _actor_class(ray).options(**self._options)
                self._actor = cls.remote(self._state, sklearn.get_config(),
                                         _config.get_config())
        self._state = None  # the state now lives in the actor only
        self._watch = self._actor.watch.options(
            concurrency_group=_WATCH_GROUP).remote(self._token)
        return self

    def _died(self, exc):
        """The :class:`PartyError` of this party's death (its actor ended)."""
        self._watch = None
        function = self._last_function
        if function is None:
            when = "before its first call"
        elif self._last_phase is None:
            when = f"during or after its last call (function {function})"
        else:
            when = (f"during or after its last call (phase "
                    f"'{self._last_phase}', function {function})")
        detail = str(exc).strip().splitlines()
        return _rebuild_party_error(
            self.name, self._last_phase, function, exc,
            f"Party '{self.name}' is gone: its Ray actor died (killed, or its "
            f"process or node failed) {when}; the run was stopped. "
            f"{type(exc).__name__}: {detail[0] if detail else ''}")

    def _passes_on(self, value):
        """Whether ``value`` is an answer of this federation's parties that
        goes to the actor by reference (not read by the caller)."""
        return (isinstance(value, RayFuture) and value._batch is not None
                and value._batch.party._peers is self._peers
                and not self._log_recording())

    def _log_recording(self):
        # A recorder wants the payloads: they are read by the caller then.
        return self._log is not None and self._log.recording

    def call(self, fn, *args, sender=None, phase=None, **kwargs):
        """Add a call to this party's batch (see :class:`_Batch`).

        An argument that is another call's future (bare, or in a
        :class:`~skfed.federation.Local`) is handed to the actor by
        reference: the value goes party to party, and the receiver measures
        it for the message log. Other arguments are measured here. Several
        threads may call (AVFKAM's active parties each drive their loop).
        """
        if self._actor is None:
            raise RuntimeError(f"Party '{self.name}' is not running.")
        message = (sender is not None and str(sender) != self.name
                   and self._log is not None)
        passed = [self._passes_on(a.value if isinstance(a, Local) else a)
                  for a in args]
        # What may wait (reading an answer, sending another party's batch)
        # is done before this party's batch is taken.
        if not any(passed):
            args = read_futures(args)
        else:
            args = list(args)
            for i, a in enumerate(args):
                value = a.value if isinstance(a, Local) else a
                if passed[i]:
                    if value._batch.party is not self:
                        value.sent()
                elif isinstance(value, PartyFuture):
                    value = value.result()
                    args[i] = Local(value) if isinstance(a, Local) else value
        with self._lock:
            if self._actor is None:
                raise RuntimeError(f"Party '{self.name}' is not running.")
            batch = self._batch
            if batch is None:
                batch = self._batch = _Batch(self)
            if not any(passed):
                values = deliver(self.name, self._log, args, kwargs, sender,
                                 phase)
                spec = [(_VAL, value, False) for value in values]
            else:
                spec = self._spec(batch, args, passed, message, sender, phase,
                                  kwargs)
            last_phase = self._last_phase
            if phase is not None:
                self._last_phase = phase
            self._last_function = _name_of(fn)
            future = RayFuture(None, self.name, phase, self._last_function,
                               self._timeout, last_phase=last_phase,
                               on_timeout=self._timed_out,
                               peers=self._peers, batch=batch)
            batch.items.append((fn, kwargs, (self.name, phase,
                                             self._last_function, last_phase),
                                spec))
            batch.futures.append(future)
            # Kept until read, so that a failed call nobody read is reported
            # at the end of the run (unobserved_failure); read ones, and ones
            # passed on (their failure reaches the call they were passed
            # to), are let go (their results are not pinned in Ray's object
            # store).
            if len(self._calls) >= self._calls_bound:  # amortised pruning
                self._calls = [f for f in self._calls
                               if not (f.observed or f.consumed)]
                self._calls_bound = 2 * len(self._calls) + 16
            self._calls.append(future)
        return future

    def _spec(self, batch, args, passed, message, sender, phase, kwargs):
        """The arguments of a call that takes answers by reference (see
        :meth:`_PartyActor.run_batch`); counts its message."""
        spec, sent, by_reference = [], [], False
        for a, passes in zip(args, passed):
            local = isinstance(a, Local)
            value = a.value if local else a
            measured = message and not local
            if not passes:
                spec.append((_VAL, value, False))
                if measured:
                    sent.append(value)
                continue
            value.consumed = True  # its failure reaches this call
            by_reference |= measured
            if value._future is None and value._batch is batch:
                spec.append((_OWN, value._index, measured))
            else:  # sent already (another party's: sent by the caller)
                spec.append((_REF, len(batch.refs), measured))
                batch.refs.append(value._future)
        if message:
            known = tuple(sent) + ((kwargs,) if kwargs else ())
            if by_reference:
                batch.measured = True
                self._log.record_pending(sender, self.name, phase, known,
                                         _PendingSize(batch, len(batch.items)))
            else:
                self._log.record(sender, self.name, phase, known)
        return spec

    def _flush(self):
        """Send the pending batch to the actor as one Ray task."""
        with self._lock:
            batch = self._batch
            if batch is None or self._actor is None:
                return
            self._batch = None
            n_returns = len(batch.items) + batch.measured
            refs = self._actor.run_batch.options(num_returns=n_returns).remote(
                batch.items, batch.measured, *batch.refs)
            if n_returns == 1:
                refs = [refs]
            self._inflight.append((next(_sends), refs[0], batch.refs,
                                   [item[2][2] for item in batch.items],
                                   time.monotonic()))
            for future, ref in zip(batch.futures, refs):
                future._future = ref
            if batch.measured:
                batch.sizes = refs[-1]
            batch.items = batch.refs = batch.futures = None

    def _timed_out(self, future):
        """Kill this party's actor and the one holding the run up; say which
        (a call waits for the answers passed on to it, so the party whose
        answer is late may not be the one the caller waited for)."""
        stuck = _stuck(self._peers)
        self._kill()
        if stuck is None:
            return ""
        peer, functions, started = stuck
        if peer is not self:
            peer._kill()
        shown = functions[0] if len(functions) == 1 else (
            f"{functions[0]} ... {functions[-1]}")
        return (f"; party '{peer.name}' was still running its calls "
                f"({shown}), sent {time.monotonic() - started:.1f} s before")

    def _wait_sent(self):
        """Send the pending batch and wait (up to the timeout) for every
        call not read yet: a run that ended well leaves no work behind."""
        self._flush()
        pending = [f._future for f in self._calls
                   if not f.observed and f._future is not None]
        if pending:
            import_ray().wait(pending, num_returns=len(pending),
                              timeout=self._timeout)

    def finish(self):
        """The run ended without an error: an in-memory party's actor, if no
        call of it is still running, drops its state and is kept idle for
        the next federation (see :data:`_idle_actors`); :meth:`stop` then
        has nothing to kill. A busy actor, a home, or a run that failed or
        was interrupted, goes through :meth:`stop` as before."""
        if self._actor is None:
            return
        self._wait_sent()
        if self._home is not None or self._idle_key is None:
            return
        ray = import_ray()
        pending = [f._future for f in self._calls if not f.observed]
        if pending:
            ready, _ = ray.wait(pending, num_returns=len(pending), timeout=0)
            if len(ready) < len(pending):
                return
        actor, self._actor = self._actor, None
        self._watch = None
        try:
            ray.get(actor.end.remote(self._token), timeout=10.0)
        except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError):
            ray.kill(actor, no_restart=True)
            return
        _keep_idle(self._idle_key, actor)

    def unobserved_failure(self):
        """A :class:`PartyError` for the first finished call whose result
        nobody read and whose function raised (as the threads backend's),
        or None. Calls still running when the run ends are not waited for,
        and calls cut short by the actor's end are not failures here."""
        ray = import_ray()
        calls, self._calls = self._calls, []
        calls = [f for f in calls if not f.observed and f._future is not None]
        if not calls:
            return None
        refs = [f._future for f in calls]
        ready = set(ray.wait(refs, num_returns=len(refs), timeout=0)[0])
        calls = [f for f in calls if f._future in ready]
        try:  # in one call, unless one of them raises
            values = ray.get([f._future for f in calls], timeout=0)
        except Exception:  # noqa: BLE001 - read one by one below
            values = None
        else:
            for future, value in zip(calls, values):
                failure = _failure_in(future, value)
                if failure is not None:
                    return failure
            return None
        for future in calls:
            try:
                value = ray.get(future._future, timeout=0)
            except ray.exceptions.RayTaskError as exc:
                return future._failure(exc)
            except Exception:
                # The actor ended (stop kills it; a death during the run
                # was raised by the wait that saw it) or the object is lost.
                continue
            failure = _failure_in(future, value)
            if failure is not None:
                return failure
        return None

    def _kill(self):
        if self._actor is None:
            return
        if self._home is not None:  # a stuck home loses what it kept
            _drop_home(self._home, self._actor)
        else:
            import_ray().kill(self._actor, no_restart=True)

    def request_stop(self):
        """Kill the actor now (a Ray actor runs one call at a time, so it
        cannot read a stop flag while busy); :meth:`stop` waits for it.

        A home actor is not killed here: :meth:`stop` ends its federation
        once its running call returns, and kills it only if it does not.
        """
        if self._home is None:
            self._kill()

    def stop(self, wait=1.0):
        with self._lock:
            self._batch = None  # not sent: the run failed or was interrupted
        if self._actor is None:
            return
        ray = import_ray()
        actor, self._actor = self._actor, None
        self._watch = None
        if self._home is not None:
            try:
                ray.get(actor.end.remote(self._token), timeout=max(wait, 10.0))
                return
            except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError):
                _drop_home(self._home, actor)
            finally:
                _free_home(self._home, self._token)
        ray.kill(actor, no_restart=True)
        # ray.kill is asynchronous: wait until the actor is really gone, so
        # no party outlives the fit that started it.
        deadline = time.monotonic() + max(wait, 10.0)
        while time.monotonic() < deadline:
            try:
                ray.get(actor.run.remote(_noop, (), {}), timeout=deadline
                        - time.monotonic())
            except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError):
                return
            time.sleep(0.01)

    @property
    def is_alive(self):
        return self._actor is not None
