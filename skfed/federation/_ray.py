"""The Ray backend: every party is a Ray actor holding its private state.

Protocol code does not change: ``call`` submits the function to the party's
actor and returns a future over the Ray object reference; messages are
counted in the caller exactly as with threads, so ``communication_`` is the
same for both backends. An actor runs one call at a time, like a party
thread. Actors are killed when the federation stops.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import time

import numpy as np
import sklearn

from .. import _config
from .party import _WAIT_SLICE, PartyFuture, PartyState, _name_of, deliver

__all__ = ["RayParty", "import_ray"]


def import_ray():
    try:
        import ray
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ImportError(
            "The 'ray' backend needs Ray: pip install 'skfed[ray]'.") from exc
    return ray


def _noop(state):
    return None


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


class _PartyActor:
    """The body of a party's Ray actor."""

    def __init__(self, state, sklearn_config, skfed_config=None):
        sklearn.set_config(**sklearn_config)
        if skfed_config is not None:
            _config._get_threadlocal_config().update(skfed_config)
        try:
            import gmpy2

            gmpy2.get_context().allow_release_gil = True
        except ImportError:  # pragma: no cover
            pass
        if isinstance(state, dict):
            state = PartyState(**_writable(state))
        self._state = state

    def run(self, fn, args, kwargs):
        return fn(self._state, *_writable(args), **_writable(kwargs))


_actor_classes = {}


def _actor_class(ray):
    if "cls" not in _actor_classes:
        _actor_classes["cls"] = ray.remote(_PartyActor)
    return _actor_classes["cls"]


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

    def start(self):
        ray = import_ray()
        if not ray.is_initialized():
            ray.init(**{"include_dashboard": False, "log_to_driver": False,
                        "configure_logging": False, **self._init_kwargs})
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
                         on_timeout=lambda future: self.request_stop())

    def unobserved_failure(self):
        """Always None: Ray keeps no record of calls whose result nobody read."""
        return None

    def request_stop(self):
        """Kill the actor now (a Ray actor runs one call at a time, so it
        cannot read a stop flag while busy); :meth:`stop` waits for it."""
        if self._actor is not None:
            import_ray().kill(self._actor, no_restart=True)

    def stop(self, wait=1.0):
        if self._actor is None:
            return
        ray = import_ray()
        actor, self._actor = self._actor, None
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
