"""Fault injection for the party runtime: make party k fail at a chosen call.

``record_calls()`` lists the calls a run makes, as ``(party, key, function)``
where ``key`` is the call's phase, or ``"local:<function>"`` for local work
without a phase. ``inject_fault(party, key, n=..., kind=...)`` then makes the
``n``-th call of ``key`` to ``party`` fail in one of three ways:

``"raise"``
    the party raises :class:`InjectedFault` instead of running the call;
``"hang"``
    the party runs nothing and does not answer (past any timeout), but
    checks its stop flag as a long local loop does, so it ends once told to
    stop (giving up after 60 s, so a broken runtime cannot hang the suite);
``"garbage"``
    the party runs the call and returns its answer with the wrong shape
    (one row short, or duplicated if it has one row; a number becomes two).
    Answers without a shape (``None``, keys, other objects) are returned
    unchanged, and the fault reports ``garbled=False``.

Both patch :meth:`skfed.federation.Party.call` (the threads backend), for
every federation started inside the ``with`` block, in any thread (or, with
``thread=``, calls made from one thread only).
"""

import threading
import time
from collections import Counter
from contextlib import contextmanager

import numpy as np

from skfed.crypto import EncryptedArray, PlaintextArray, concatenate
from skfed.federation import Party, check_stop
from skfed.federation.party import _name_of

KINDS = ("raise", "hang", "garbage")

#: Wall-clock bound for "stopped promptly" (a timeout, a failure or Ctrl-C
#: ending a run). Prompt is ~0.3-1.5 s on an idle machine; the bound is wide
#: enough for both cores pinned by other processes (the suite under -n 2 on a
#: busy runner failed tighter 2-4 s margins), and still far below every
#: failure mode it must catch: the hangs and waits it guards against last 30
#: s or more (a planted hang 60 s, _cooperative_hang 30 s, a party timeout
#: of 30 s, an uninterrupted cross-validation minutes).
PROMPT_SECONDS = 15.0


class InjectedFault(RuntimeError):
    """The failure planted by :func:`inject_fault` (kind ``"raise"``)."""


def call_key(phase, fn):
    """The key a call is targeted by: its phase, or its function if local."""
    return phase if phase is not None else f"local:{_name_of(fn)}"


_hooks = []  # the active (before, thread) pairs, in order of activation
_hooks_lock = threading.Lock()
_original_call = Party.call


class WaitAtMost:
    """What a hook returns to run ``fn`` and wait at most ``timeout`` s for it
    (the run's other calls keep the run's ``party_timeout``)."""

    def __init__(self, fn, timeout):
        self.fn, self.timeout = fn, timeout


def _call_with_hooks(self, fn, *args, sender=None, phase=None, **kwargs):
    with _hooks_lock:
        hooks = list(_hooks)
    current = threading.current_thread()
    timeout = None
    for before, thread in hooks:
        if thread is None or thread is current:
            fn = before(self, fn, phase) or fn
            if isinstance(fn, WaitAtMost):
                fn, timeout = fn.fn, fn.timeout
    future = _original_call(self, fn, *args, sender=sender, phase=phase, **kwargs)
    if timeout is not None:
        future._timeout = timeout
    return future


@contextmanager
def _patched_call(before, thread=None):
    """Run ``before(party, fn, phase)`` on every call (made from ``thread``).

    ``Party.call`` is patched once while any hook is active, so hooks of
    several threads (a soak test's concurrent fits) can come and go in any
    order.
    """
    entry = (before, thread)
    with _hooks_lock:
        _hooks.append(entry)
        Party.call = _call_with_hooks
    try:
        yield
    finally:
        with _hooks_lock:
            _hooks.remove(entry)
            if not _hooks:
                Party.call = _original_call


@contextmanager
def record_calls():
    """Record every party call made inside: a list of ``(party, key, function)``."""
    calls, lock = [], threading.Lock()

    def before(party, fn, phase):
        with lock:
            calls.append((party.name, call_key(phase, fn), _name_of(fn)))

    with _patched_call(before):
        yield calls


def call_counts(calls):
    """``{(party, key): number of calls}``, in order of first call."""
    return Counter((party, key) for party, key, _ in calls)


def garble(value):
    """``value`` with the wrong shape (see the module docstring)."""
    if isinstance(value, (EncryptedArray, PlaintextArray)):
        if value.ndim == 0:
            return concatenate([value.reshape(1), value.reshape(1)])
        return value[:-1] if value.shape[0] > 1 else concatenate([value, value])
    if isinstance(value, np.ndarray):
        if value.ndim == 0:
            return np.array([value, value])
        return value[:-1] if value.shape[0] > 1 else np.concatenate([value, value])
    if isinstance(value, (bool, np.bool_)):
        return np.array([value, value])
    if isinstance(value, (int, float, np.number)):
        return np.array([value, value])
    if isinstance(value, (tuple, list)):
        items = list(value)
        for i, item in enumerate(items):
            garbled = garble(item)
            if garbled is not item:
                items[i] = garbled
                return type(value)(items) if isinstance(value, list) else tuple(items)
        return type(value)(items[:-1]) if items else value
    if isinstance(value, dict):
        for k, item in value.items():
            garbled = garble(item)
            if garbled is not item:
                return {**value, k: garbled}
        return value
    return value  # None, keys and other objects: no shape to get wrong


def _faulty(fn, kind, where, report):
    if kind == "raise":
        def run(state, *args, **kwargs):
            raise InjectedFault(f"injected fault at {where}")
    elif kind == "hang":
        def run(state, *args, **kwargs):
            deadline = time.monotonic() + 60.0
            while time.monotonic() < deadline:
                check_stop(state)
                time.sleep(0.01)
            raise InjectedFault(f"hung at {where} for 60 s without being stopped")
    elif kind == "garbage":
        def run(state, *args, **kwargs):
            answer = fn(state, *args, **kwargs)
            garbled = garble(answer)
            report["garbled"] = garbled is not answer
            return garbled
    else:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}.")
    run.__qualname__ = run.__name__ = f"faulty[{kind}]({_name_of(fn)})"
    return run


@contextmanager
def inject_fault(party, key, n=1, kind="raise", thread=None, hang_timeout=None):
    """Make the ``n``-th call of ``key`` to ``party`` fail as ``kind``.

    With ``thread``, only calls made from that thread count (for concurrent
    fits; calls made by an estimator's own driver threads then escape).

    With ``hang_timeout`` (and ``kind="hang"``), the waits for the planted
    call and for every later call to ``party`` (queued behind it) time out
    after ``hang_timeout`` s, while every other wait of the run keeps the
    run's ``party_timeout``: a short timeout for the hang alone, so that a
    sound step slowed down by a loaded machine cannot time out first.

    Yields a dict whose ``"fired"`` entry tells whether the fault was planted
    (the run may have made fewer calls), ``"fired_at"`` when
    (``time.monotonic()``), and, for ``"garbage"``, whose
    ``"garbled"`` entry tells whether the answer had a shape to get wrong.
    """
    seen, state, lock = Counter(), {"fired": False, "garbled": None}, threading.Lock()
    short = hang_timeout if kind == "hang" else None

    def before(target, fn, phase):
        if target.name != party:
            return None
        if call_key(phase, fn) != key:
            if short is not None and state["fired"]:
                return WaitAtMost(fn, short)  # queued behind the hang
            return None
        with lock:
            seen[key] += 1
            if seen[key] != n:
                if short is not None and state["fired"]:
                    return WaitAtMost(fn, short)
                return None
            state["fired"] = True
            state["fired_at"] = time.monotonic()
        faulty = _faulty(fn, kind, f"{party}/{key}#{n}", state)
        if short is not None:
            return WaitAtMost(faulty, short)
        return faulty

    with _patched_call(before, thread):
        yield state


def busy_party_threads(wait=PROMPT_SECONDS):
    """Threads still serving a party (or driving one) after ``wait`` s at most.

    Pooled threads (idle party threads ``skfed-idle-worker``, crypto workers
    ``skfed-crypto-worker_*``) are not counted: they wait for the next run.
    """
    deadline = time.monotonic() + wait
    while True:
        busy = [t.name for t in threading.enumerate()
                if t.name.startswith("skfed-") and t.name != "skfed-idle-worker"
                and not t.name.startswith("skfed-crypto-worker")]
        if not busy or time.monotonic() > deadline:
            return busy
        time.sleep(0.02)
