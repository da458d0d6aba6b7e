"""A party: one worker thread that owns a private state, reached only by calls.

Protocol code never touches a party's state directly. It asks the party to run
a function on its own thread, ``party.call(fn, *args)``, and gets a future.
``fn(state, *args)`` sees the party's private state and the message; what it
returns is the party's answer. When the call names a ``sender``, its
arguments are a message from that party and are counted (and recorded, see
:func:`~skfed.federation.record_messages`); calls without a sender are the
party's own local work.

This small surface (``call`` and futures) is the seam that lets the same
protocol code run on other backends, such as one process per party.

Faults. A failure inside a party surfaces in the caller as
:class:`PartyError`, and every later call of that party in the run fails
with the same error (its state is no longer to be trusted), so protocol code
need not wait for calls whose answer it does not use: their failure reaches
the next answer it reads; a call that does not end within the timeout as
:class:`FederationTimeoutError`; both name the party, the phase and the
function. Either way, and on ``KeyboardInterrupt`` in the caller, every party
of the run is told to stop: a stop flag is checked before each call and by
long local loops (:func:`check_stop`), so party threads end promptly instead
of piling up. Party threads come from a small per-process pool and are
reused by later runs (gmpy2 keeps a per-thread cache that a thread's exit
never frees, so a new thread per party and fit leaks a little each time).
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import queue
import threading
import time
from concurrent.futures import CancelledError, Future
from concurrent.futures import TimeoutError as _FutureTimeout
from types import SimpleNamespace

import sklearn

from .. import _cancel, _config
from ._accounting import current_round, set_round
from ._pool import _pool

__all__ = ["Party", "PartyState", "PartyFuture", "PartyError", "PartyStopped",
           "FederationTimeoutError", "Local", "check_stop"]


class PartyStopped(_cancel.StopRequested):
    """Raised inside a party whose run was told to stop (see :func:`check_stop`).

    Loops below the runtime (the crypto workers) raise its base class,
    :class:`skfed._cancel.StopRequested`, from the same flag.
    """


class PartyState(SimpleNamespace):
    """The private state of a party: attributes set by the estimator.

    ``stash`` is scratch space for protocol helpers (for example the offset a
    party keeps between the two trees of a masked sum).
    """

    def __init__(self, **attributes):
        super().__init__(**attributes)
        self.stash = {}

    def should_stop(self):
        """Whether this party's run was told to stop (timeout, failure, interrupt).

        Cheap (one flag read): long local loops call it, or
        :func:`check_stop`, every few iterations.
        """
        event = self.__dict__.get("_stop_event")
        return event is not None and event.is_set()

    def __repr__(self):
        shown = {k: v for k, v in self.__dict__.items() if k != "_stop_event"}
        return f"PartyState({', '.join(f'{k}={v!r}' for k, v in shown.items())})"


def check_stop(state=None):
    """Raise :class:`PartyStopped` if the party's run was told to stop.

    Call it between the steps of long local loops of protocol code (per tree
    node, per block of rows, per iteration): a party whose run failed, timed
    out or was interrupted then ends within one step instead of finishing
    work nobody waits for. Outside a party thread, and for parties of the
    Ray backend (whose actors are killed instead), it does nothing.

    Parameters
    ----------
    state : PartyState, optional
        The party's state; without it, the party served by the current
        thread.
    """
    event = (state.__dict__.get("_stop_event") if isinstance(state, PartyState)
             else None)
    if event is None:
        event = _cancel.bound_event()
    if event is not None and event.is_set():
        raise PartyStopped("the party was told to stop")


def _describe_phase(phase, last_phase):
    if phase is not None:
        return f"phase '{phase}'"
    if last_phase is not None:
        return f"phase '{last_phase}' (local work)"
    return "local work before any phase"


class PartyError(RuntimeError):
    """An exception raised inside a party thread, re-raised in the caller.

    Attributes
    ----------
    party : str
    phase : str or None
        The phase named by the call, or for local work the last phase the
        party took part in.
    function : str
        The name of the function the party was running.
    error : BaseException
        The original exception (also ``__cause__``).
    """

    def __init__(self, party, phase, function, error, last_phase=None):
        self.party = party
        self.phase = phase if phase is not None else last_phase
        self.function = function
        self.error = error
        where = _describe_phase(phase, last_phase)
        super().__init__(
            f"Party '{party}' failed during {where} while running {function}: "
            f"{type(error).__name__}: {error}"
        )

    def __reduce__(self):  # pickles (joblib, Ray) with its attributes
        return (_rebuild_party_error,
                (self.party, self.phase, self.function, self.error, str(self)))


def _rebuild_party_error(party, phase, function, error, message):
    exc = PartyError.__new__(PartyError)
    RuntimeError.__init__(exc, message)
    exc.party, exc.phase, exc.function, exc.error = party, phase, function, error
    return exc


class FederationTimeoutError(TimeoutError):
    """A party did not answer a call in time; names the party, phase and function."""

    def __init__(self, message, party=None, phase=None, function=None):
        super().__init__(message)
        self.party = party
        self.phase = phase
        self.function = function

    def __reduce__(self):
        return (type(self), (str(self), self.party, self.phase, self.function))


class Local:
    """Marks a call argument that the party already holds (not a message).

    ``party.call(add, Local(own_partial), incoming, sender="bob")`` counts
    only ``incoming`` as a message from bob: ``own_partial`` was computed by
    the receiving party itself.
    """

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


# How often a waiting caller wakes up: lets a KeyboardInterrupt (which only
# the main thread receives, and which may not interrupt a blocked lock) be
# raised promptly, and the deadline be checked.
_WAIT_SLICE = 0.1


class PartyFuture:
    """The pending answer of a party call.

    ``result()`` waits (up to the federation's timeout by default) and
    re-raises a failure inside the party as :class:`PartyError` naming the
    party and phase. An interrupt of the *waiting* thread (``Ctrl-C``) is not
    the party's failure: it propagates as ``KeyboardInterrupt``.
    """

    def __init__(self, future, party, phase, function, timeout, last_phase=None,
                 on_timeout=None):
        self._future = future
        self.party = party
        self.phase = phase
        self._last_phase = last_phase
        self._function = function
        self._timeout = timeout
        self._on_timeout = on_timeout

    def done(self):
        return self._future.done()

    def _where(self):
        return _describe_phase(self.phase, self._last_phase)

    def _timeout_error(self, timeout):
        busy = None
        if self._on_timeout is not None:  # tells the party to stop
            busy = self._on_timeout(self._future)
        return FederationTimeoutError(
            f"Party '{self.party}' did not answer within {timeout:g} s "
            f"({self._where()}, function {self._function}){busy or ''}; it "
            "was told to stop. If the work is legitimately long, raise the "
            "limit with skfed.set_config(party_timeout=...) (None for none).",
            self.party, self.phase if self.phase is not None else self._last_phase,
            self._function)

    def _party_error(self, exc):
        return PartyError(self.party, self.phase, self._function, exc,
                          last_phase=self._last_phase)

    def _wait(self, timeout):
        """The exception the party raised (None on success), waiting in slices."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            step = _WAIT_SLICE
            if deadline is not None:
                step = min(step, max(0.0, deadline - time.monotonic()))
            try:
                exc = self._future.exception(timeout=step)
                self._future.observed = True
                return exc
            except _FutureTimeout:
                if deadline is not None and time.monotonic() >= deadline:
                    raise self._timeout_error(timeout) from None
            except CancelledError:
                return PartyStopped("the call was cancelled: the run had been "
                                    "told to stop before it started")

    def result(self, timeout=None):
        """The party's answer.

        Parameters
        ----------
        timeout : float, optional
            Seconds to wait; defaults to the federation's timeout.

        Raises
        ------
        PartyError
            The party failed; ``error`` holds the party's exception.
        FederationTimeoutError
            No answer in time; the party was told to stop.
        KeyboardInterrupt
            The waiting thread was interrupted (not wrapped: it is no party's
            failure).
        """
        timeout = self._timeout if timeout is None else timeout
        exc = self._wait(timeout)
        if exc is None:
            return self._future.result(timeout=0)
        if isinstance(exc, (PartyError, FederationTimeoutError)):
            raise exc  # a nested federation's error already names its party
        raise self._party_error(exc) from exc


def read_futures(args):
    """``args`` with every top-level :class:`PartyFuture` (bare or in a
    :class:`Local`) replaced by its answer, waited for by the caller.

    Protocol code may pass a party's pending answer straight on to another
    call (a partial sum up a tree); the threads backend reads it here, the
    Ray backend hands it to the receiving actor as a reference instead.
    """
    if not any(isinstance(a, PartyFuture) or (isinstance(a, Local) and
               isinstance(a.value, PartyFuture)) for a in args):
        return args
    return tuple(a.result() if isinstance(a, PartyFuture) else
                 Local(a.value.result()) if isinstance(a, Local)
                 and isinstance(a.value, PartyFuture) else a for a in args)


def deliver(party, log, args, kwargs, sender, phase):
    """Count a call's message (if it has a sender) and unwrap :class:`Local`.

    Shared by every backend, so the accounting cannot differ between them.
    """
    message = tuple(a for a in args if not isinstance(a, Local))
    if sender is not None and str(sender) != party and log is not None:
        log.record(sender, party, phase, message + ((kwargs,) if kwargs else ()))
    return tuple(a.value if isinstance(a, Local) else a for a in args)


_STOP = object()


def _name_of(fn):
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", repr(fn))


class Party:
    """An actor: a name, a private state and one worker thread.

    Parameters
    ----------
    name : str
        The party's name, used in messages and errors.

    state : PartyState or dict
        The party's private state (its data block, keys, model share); a dict
        is turned into a :class:`PartyState`. Only functions run through
        :meth:`call` see it.

    log : MessageLog, optional
        Where messages to this party are counted.

    timeout : float or None, default=None
        Default seconds to wait in :meth:`PartyFuture.result` (None: no limit).

    stop_event : threading.Event, optional
        The run's stop flag, shared by the parties of one federation; a new
        one by default.
    """

    def __init__(self, name, state, log=None, timeout=None, stop_event=None):
        self.name = str(name)
        if isinstance(state, dict):
            state = PartyState(**state)
        self._state = state
        self._log = log
        self._timeout = timeout
        self._queue = queue.SimpleQueue()
        self._worker = None
        self._finished = threading.Event()
        self._stop_event = stop_event if stop_event is not None else threading.Event()
        self._configs = None
        self._last_phase = None
        self._failures = []
        # call() and stop() take it, so no call is queued behind the stop
        # (it would never run, and its caller would wait forever).
        self._lock = threading.Lock()
        self._stopping = False
        self._busy = None  # (future, where, start) of the running call
        # The error of this run's first failed call: the party's state is
        # then not to be trusted, and every later call fails with it.
        self._failed = None

    def start(self):
        # sklearn's and skfed's configurations are thread-local: the worker
        # re-enters the caller's, so e.g. assume_finite or a key policy hold
        # inside.
        self._configs = (sklearn.get_config(), _config.get_config())
        if isinstance(self._state, PartyState):
            self._state._stop_event = self._stop_event
        self._finished.clear()
        self._failed = None
        self._worker = _pool.acquire()
        self._worker.serve(self)
        return self

    def _serve(self):
        """The worker thread's loop while it serves this party."""
        sk_config, skfed_config = self._configs
        sklearn.set_config(**sk_config)
        local_config = _config._get_threadlocal_config()
        local_config.clear()
        local_config.update(skfed_config)
        _cancel.bind_event(self._stop_event)
        try:
            while True:
                item = self._queue.get()
                if item is _STOP:
                    return
                future, fn, args, kwargs, where, round_ = item
                item = None
                set_round(round_)  # the caller's protocol round
                if not future.set_running_or_notify_cancel():
                    continue
                if self._stop_event.is_set():  # between protocol steps
                    future.set_exception(PartyStopped(
                        "the party was told to stop before this call ran"))
                    continue
                if self._failed is not None:  # an earlier call failed
                    future.set_exception(self._failed)
                    continue
                self._busy = (future, where, time.monotonic())
                try:
                    future.set_result(fn(self._state, *args, **kwargs))
                except BaseException as exc:
                    if isinstance(exc, _cancel.StopRequested):
                        # a loop below the runtime saw the flag: say it
                        # in the runtime's words
                        exc = (exc if isinstance(exc, PartyStopped)
                               else PartyStopped(str(exc)))
                    future.set_exception(exc)
                    if not isinstance(exc, PartyStopped):
                        self._failures.append((future, where, exc))
                        phase, function, last_phase = where
                        self._failed = (
                            exc if isinstance(exc, (PartyError,
                                                    FederationTimeoutError))
                            else PartyError(self.name, phase, function, exc,
                                            last_phase=last_phase))
                finally:  # nothing of this call outlives it on the thread
                    self._busy = future = fn = args = kwargs = exc = None
        finally:
            self._finished.set()

    def call(self, fn, *args, sender=None, phase=None, **kwargs):
        """Run ``fn(state, *args, **kwargs)`` on this party's thread.

        Parameters
        ----------
        fn : callable
            A plain function of the party's state and the message.

        *args : message
            The message. Wrap values the party already holds in
            :class:`Local` so they are not counted.

        sender : str, optional
            The party the message comes from; ``None`` (or this party's own
            name) means local work, which is not counted.

        phase : str, optional
            The protocol step, for accounting and error messages.

        Returns
        -------
        future : PartyFuture
        """
        if self._worker is None or self._stopping:
            raise RuntimeError(f"Party '{self.name}' is not running.")
        args = deliver(self.name, self._log, read_futures(args), kwargs,
                       sender, phase)
        last_phase = self._last_phase
        if phase is not None:
            self._last_phase = phase
        future = Future()
        where = (phase, _name_of(fn), last_phase)
        with self._lock:
            if self._stopping:
                raise RuntimeError(f"Party '{self.name}' is not running.")
            self._queue.put((future, fn, args, kwargs, where,
                             current_round()))
        return PartyFuture(future, self.name, phase, where[1], self._timeout,
                           last_phase=last_phase, on_timeout=self._timed_out)

    def unobserved_failure(self):
        """A :class:`PartyError` for the first failed call whose result nobody
        read (a call sent without waiting for it), or None.

        :class:`~skfed.federation.Federation` raises it when a run otherwise
        ends well, so that no failure inside a party goes unnoticed.
        """
        for future, (phase, function, last_phase), exc in self._failures:
            if not getattr(future, "observed", False):
                return PartyError(self.name, phase, function, exc,
                                  last_phase=last_phase)
        return None

    def request_stop(self):
        """Raise the stop flag (shared by the whole run) without waiting."""
        self._stop_event.set()

    def _timed_out(self, future):
        """Stop the run; say which call holds the party up, if another one."""
        busy = self._busy
        self.request_stop()
        if busy is None or busy[0] is future:
            return ""
        (phase, function, last_phase), started = busy[1], busy[2]
        return (f"; it was still busy with {_describe_phase(phase, last_phase)} "
                f"(function {function}), started "
                f"{time.monotonic() - started:.1f} s before")

    def stop(self, wait=1.0):
        """Tell the party to stop, cancel pending calls, wait up to ``wait`` s.

        A call already running ends at its next :func:`check_stop` (or when
        it returns); the thread then goes back to the pool.
        """
        if self._worker is None:
            return
        self._stop_event.set()
        with self._lock:
            self._stopping = True
            # Cancel what has not started so nothing waits on a stopped party.
            while True:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is not _STOP:
                    item[0].cancel()
            self._queue.put(_STOP)
        if threading.current_thread() is not self._worker.thread:
            self._finished.wait(wait)
        self._worker = None
        # Drop the private state so nothing keeps the data alive.
        self._state = None

    @property
    def is_alive(self):
        return self._worker is not None and not self._finished.is_set()
