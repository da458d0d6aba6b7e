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
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import queue
import threading
from types import SimpleNamespace
from concurrent.futures import Future
from concurrent.futures import TimeoutError as _FutureTimeout

import sklearn

__all__ = ["Party", "PartyState", "PartyFuture", "PartyError",
           "FederationTimeoutError", "Local"]


class PartyState(SimpleNamespace):
    """The private state of a party: attributes set by the estimator.

    ``stash`` is scratch space for protocol helpers (for example the offset a
    party keeps between the two trees of a masked sum).
    """

    def __init__(self, **attributes):
        super().__init__(**attributes)
        self.stash = {}


class PartyError(RuntimeError):
    """An exception raised inside a party thread, re-raised in the caller."""

    def __init__(self, party, phase, function, error):
        self.party = party
        self.phase = phase
        self.error = error
        where = f" during phase '{phase}'" if phase else ""
        super().__init__(
            f"Party '{party}' failed{where} while running {function}: "
            f"{type(error).__name__}: {error}"
        )


class FederationTimeoutError(TimeoutError):
    """A party did not answer a call in time."""


class Local:
    """Marks a call argument that the party already holds (not a message).

    ``party.call(add, Local(own_partial), incoming, sender="bob")`` counts
    only ``incoming`` as a message from bob: ``own_partial`` was computed by
    the receiving party itself.
    """

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


class PartyFuture:
    """The pending answer of a party call.

    ``result()`` waits (up to the federation's timeout by default) and
    re-raises a failure as :class:`PartyError` naming the party and phase.
    """

    def __init__(self, future, party, phase, function, timeout):
        self._future = future
        self.party = party
        self.phase = phase
        self._function = function
        self._timeout = timeout

    def done(self):
        return self._future.done()

    def _timeout_error(self, timeout):
        return FederationTimeoutError(
            f"Party '{self.party}' did not answer within {timeout} s "
            f"(phase '{self.phase}', {self._function}). Raise the timeout "
            "if the work is legitimately long."
        )

    def result(self, timeout=None):
        timeout = self._timeout if timeout is None else timeout
        try:
            return self._future.result(timeout=timeout)
        except _FutureTimeout:
            raise self._timeout_error(timeout) from None
        except PartyError:
            raise
        except BaseException as exc:  # the exception came from the party thread
            raise PartyError(self.party, self.phase, self._function, exc) from exc


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
        Default seconds to wait in :meth:`PartyFuture.result`.
    """

    def __init__(self, name, state, log=None, timeout=None):
        self.name = str(name)
        if isinstance(state, dict):
            state = PartyState(**state)
        self._state = state
        self._log = log
        self._timeout = timeout
        self._queue = queue.SimpleQueue()
        self._thread = None
        self._config = None

    def start(self):
        # sklearn's configuration is thread-local: the worker re-enters the
        # caller's, so e.g. assume_finite or array_api settings hold inside.
        self._config = sklearn.get_config()
        self._thread = threading.Thread(
            target=self._run, name=f"skfed-party-{self.name}", daemon=True)
        self._thread.start()
        return self

    def _run(self):
        sklearn.set_config(**self._config)
        try:  # gmpy2 releases the GIL only when asked to, per thread
            import gmpy2

            gmpy2.get_context().allow_release_gil = True
        except ImportError:  # pragma: no cover
            pass
        while True:
            item = self._queue.get()
            if item is _STOP:
                return
            future, fn, args, kwargs = item
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(fn(self._state, *args, **kwargs))
            except BaseException as exc:
                future.set_exception(exc)

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
        if self._thread is None:
            raise RuntimeError(f"Party '{self.name}' is not running.")
        args = deliver(self.name, self._log, args, kwargs, sender, phase)
        future = Future()
        self._queue.put((future, fn, args, kwargs))
        return PartyFuture(future, self.name, phase, _name_of(fn), self._timeout)

    def stop(self, wait=1.0):
        """Ask the worker to finish; pending calls are cancelled."""
        if self._thread is None:
            return
        # Cancel what has not started so nothing waits on a stopped party.
        pending = []
        while True:
            try:
                pending.append(self._queue.get_nowait())
            except queue.Empty:
                break
        for item in pending:
            if item is not _STOP:
                item[0].cancel()
        self._queue.put(_STOP)
        if threading.current_thread() is not self._thread:
            self._thread.join(wait)
        self._thread = None
        # Drop the private state so nothing keeps the data alive.
        self._state = None

    @property
    def is_alive(self):
        return self._thread is not None and self._thread.is_alive()
