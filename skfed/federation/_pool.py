"""The per-process pool of party threads.

A party owns one thread while it runs (one at a time, always: protocols in
which parties wait for each other would deadlock on a shared pool). The
thread is not new, though: it comes from this pool and goes back to it when
the party stops, to serve a party of a later run. gmpy2 keeps a per-thread
cache of big integers that is never freed when a thread exits; with a new
thread per party and fit, encrypted fits leaked a few KiB each
(``benchmarks/bench_runtime_leak.py``).
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import os
import queue
import threading

from .. import _cancel
from ..crypto._parallel import party_thread_keeps_gil

__all__ = ["MAX_IDLE_THREADS"]

_IDLE_NAME = "skfed-idle-worker"
#: Idle party threads kept for later runs; beyond this many, a thread that
#: finishes serving its party exits.
MAX_IDLE_THREADS = 32


class _Worker:
    """A reusable thread that serves one party at a time."""

    def __init__(self):
        self._inbox = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._loop, name=_IDLE_NAME,
                                       daemon=True)
        self.thread.start()

    def serve(self, party):
        self.thread.name = f"skfed-party-{party.name}"
        self._inbox.put(party)

    def _loop(self):
        thread = threading.current_thread()
        while True:
            party = self._inbox.get()
            if party is None:
                return
            party_thread_keeps_gil()
            try:
                party._serve()
            finally:
                party = None
                thread.name = _IDLE_NAME
                _cancel.bind_event(None)
            if not _pool.release(self):
                return


class _WorkerPool:
    def __init__(self):
        self._idle = []
        self._lock = threading.Lock()

    def acquire(self):
        with self._lock:
            if self._idle:
                return self._idle.pop()
        return _Worker()

    def release(self, worker):
        with self._lock:
            if len(self._idle) < MAX_IDLE_THREADS:
                self._idle.append(worker)
                return True
        return False

    def clear(self):
        """End every idle thread (tests; threads serving a party finish first)."""
        with self._lock:
            idle, self._idle = self._idle, []
        for worker in idle:
            worker._inbox.put(None)
        for worker in idle:
            worker.thread.join(5.0)

    def _after_fork(self):
        # A forked child has only the forking thread: the idle list is stale.
        self._idle = []
        self._lock = threading.Lock()


_pool = _WorkerPool()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_pool._after_fork)
