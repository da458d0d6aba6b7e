"""The Ray backend: every party is a Ray actor holding its private state.

Protocol code does not change: ``call`` submits the function to the party's
actor and returns a future over the Ray object reference; messages are
counted in the caller exactly as with threads, so ``communication_`` is the
same for both backends. An actor runs one call at a time, like a party
thread. Actors are killed when the federation stops.

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
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import time

import sklearn

from .. import _config
from ._remote import (
    _homes_named,
    _pack,
    _resolve,
    _writable,
    import_ray,
)
from .party import _WAIT_SLICE, PartyFuture, PartyState, _name_of, deliver

__all__ = ["RayParty", "home_actor", "shutdown_homes"]


def _noop(state):
    return None


def _configure(sklearn_config, skfed_config):
    sklearn.set_config(**sklearn_config)
    if skfed_config is not None:
        _config._get_threadlocal_config().update(skfed_config)
    try:
        import gmpy2

        gmpy2.get_context().allow_release_gil = True
    except ImportError:  # pragma: no cover
        pass


class _PartyActor:
    """The body of a party's Ray actor (for one federation, or a home)."""

    def __init__(self, state, sklearn_config, skfed_config=None, home=None):
        _configure(sklearn_config, skfed_config)
        self._home_name = home
        self._home = {}  # what a home keeps between federations
        if isinstance(state, dict):
            state = PartyState(**_writable(state))
        self._state = state

    def begin(self, state, sklearn_config, skfed_config):
        """A federation starts on this home: its state, data read from home."""
        _configure(sklearn_config, skfed_config)
        self._state = PartyState(**_resolve(dict(state), self._home))

    def end(self):
        self._state = None

    def run(self, fn, args, kwargs):
        if self._home_name is not None:  # direct: references in, skeleton out
            args, kwargs = _resolve((args, kwargs), self._home)
            return _pack(fn(self._state, *args, **kwargs), self._home_name)
        return fn(self._state, *_writable(args), **_writable(kwargs))

    def at_home(self, fn, args):
        """``fn(home, *args)``: work on what the home keeps (load, align)."""
        return fn(self._home, *_resolve(tuple(args), self._home))


_actor_classes = {}


def _actor_class(ray):
    if "cls" not in _actor_classes:
        _actor_classes["cls"] = ray.remote(_PartyActor)
    return _actor_classes["cls"]


def _ensure_ray(init_kwargs=None):
    ray = import_ray()
    if not ray.is_initialized():
        ray.init(**{"include_dashboard": False, "log_to_driver": False,
                    "configure_logging": False, **(init_kwargs or {})})
    return ray


#: ``{home name: (Ray job id, actor handle)}``: one long-lived actor per party.
_homes = {}


def _actor_options(name):
    """The configured ``ray_actor_options`` of party ``name``."""
    options = _config.get_config()["ray_actor_options"] or {}
    if callable(options):
        return options(str(name))
    return options.get(str(name), options.get("*"))


def home_actor(name, create=True):
    """The home actor of party ``name`` (started on first use).

    A home is a Ray actor placed like the party's federation actors (the
    party's ``ray_actor_options``, e.g. a custom resource of its host) that
    lives until :func:`shutdown_homes` or the end of the Ray session; it
    keeps the party's loaded data and model shares between federations.
    """
    ray = _ensure_ray(_config.get_config()["ray_init_kwargs"])
    job = ray.get_runtime_context().get_job_id()
    entry = _homes.get(str(name))
    if entry is not None and entry[0] == job:
        return entry[1]
    if not create:
        return None
    options = {"num_cpus": 0, **(_actor_options(name) or {})}
    actor = _actor_class(ray).options(**options).remote(
        None, sklearn.get_config(), _config.get_config(), home=str(name))
    _homes[str(name)] = (job, actor)
    return actor


def _drop_home(name, actor):
    entry = _homes.get(name)
    if entry is not None and entry[1] is actor:
        del _homes[name]
    import_ray().kill(actor, no_restart=True)


def shutdown_homes():
    """Kill every party's home actor (their data and model shares go too)."""
    for name, (_, actor) in list(_homes.items()):
        _drop_home(name, actor)


class RayFuture(PartyFuture):
    """Future over a Ray object reference, with the thread backend's errors."""

    def done(self):
        ray = import_ray()
        ready, _ = ray.wait([self._future], timeout=0)
        return bool(ready)

    def result(self, timeout=None):
        ray = import_ray()
        timeout = self._timeout if timeout is None else timeout
        deadline = None if timeout is None else time.monotonic() + timeout
        # Wait in slices, as the thread backend does: an interrupt of the
        # caller is raised promptly, as KeyboardInterrupt, not as a failure.
        while True:
            step = _WAIT_SLICE
            if deadline is not None:
                step = min(step, max(0.0, deadline - time.monotonic()))
            ready, _ = ray.wait([self._future], timeout=step)
            if ready:
                break
            if deadline is not None and time.monotonic() >= deadline:
                raise self._timeout_error(timeout) from None
        try:
            return _writable(ray.get(self._future))
        except ray.exceptions.RayTaskError as exc:
            cause = exc.cause if getattr(exc, "cause", None) is not None else exc
            raise self._party_error(cause) from exc
        except ray.exceptions.RayActorError as exc:
            raise self._party_error(exc) from exc


class RayParty:
    """A party run as a Ray actor; same interface as :class:`Party`."""

    def __init__(self, name, state, log=None, timeout=None, actor_options=None,
                 init_kwargs=None):
        self.name = str(name)
        self._state = state
        self._log = log
        self._timeout = timeout
        self._options = {"num_cpus": 0, **(actor_options or {})}
        self._init_kwargs = init_kwargs or {}
        self._actor = None
        self._last_phase = None
        self._home = None

    def start(self):
        ray = _ensure_ray(self._init_kwargs)
        homes = _homes_named(self._state, set())
        if len(homes) > 1:
            raise ValueError(
                f"The state of party '{self.name}' names the data of several "
                f"homes ({sorted(homes)}); a party runs at one home.")
        if homes:
            self._home = homes.pop()
            self._actor = home_actor(self._home)
            ray.get(self._actor.begin.remote(
                self._state, sklearn.get_config(), _config.get_config()))
        else:
            cls = _actor_class(ray).options(**self._options)
            self._actor = cls.remote(self._state, sklearn.get_config(),
                                     _config.get_config())
        self._state = None  # the state now lives in the actor only
        return self

    def call(self, fn, *args, sender=None, phase=None, **kwargs):
        if self._actor is None:
            raise RuntimeError(f"Party '{self.name}' is not running.")
        args = deliver(self.name, self._log, args, kwargs, sender, phase)
        last_phase = self._last_phase
        if phase is not None:
            self._last_phase = phase
        ref = self._actor.run.remote(fn, args, kwargs)
        return RayFuture(ref, self.name, phase, _name_of(fn), self._timeout,
                         last_phase=last_phase,
                         on_timeout=lambda future: self._kill())

    def unobserved_failure(self):
        """Always None: Ray keeps no record of calls whose result nobody read."""
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
        if self._actor is None:
            return
        ray = import_ray()
        actor, self._actor = self._actor, None
        if self._home is not None:
            try:
                ray.get(actor.end.remote(), timeout=max(wait, 10.0))
                return
            except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError):
                _drop_home(self._home, actor)
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
