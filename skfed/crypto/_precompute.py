"""Obfuscators computed ahead, in the background, while their owner waits.

An encryption is 98% obfuscator (:mod:`skfed.crypto._obfuscation`), and the
obfuscator does not depend on the message. A party that will encrypt many
values later (SecureBoost's active party, whose next round encrypts one
gradient pair per row) and now waits for another party can compute them in
the meantime: :class:`ObfuscatorPool` forks a worker process at the lowest
scheduling priority (``nice 19``, so it takes only CPU time nobody else
wants) that computes fresh obfuscators in batches and sends them back; the
owner's next encryption takes what is ready and computes the rest itself.

Security: each obfuscator is drawn from the operating system's generator in
the worker (:mod:`secrets`, i.e. ``os.urandom``, which a fork does not
duplicate) and handed out exactly once: :meth:`ObfuscatorPool.take` removes
what it returns, and nothing else reads the pool, so no obfuscator is ever
used twice. The worker inherits the tables it needs through the fork (the
key owner's CRT tables never leave the process tree and are never
pickled); only finished obfuscators travel, through a pipe to the parent.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import collections
import multiprocessing
import os
import threading
import weakref

from ._parallel import effective_n_jobs, fork_available

__all__ = ["ObfuscatorPool", "PrecomputingKeyMixin"]

# Guards the lazy creation of a private key's pool.
_pool_lock = threading.Lock()

# Obfuscators per message from the worker: ~0.1 s of work at 2048 bits.
_BATCH = 256


def _produce(source, count, connection, nice):
    """Worker process: ``count`` obfuscators from ``source``, batch by batch."""
    try:
        os.nice(nice)
    except OSError:  # pragma: no cover - nice may be refused; work anyway
        pass
    try:
        while count > 0:
            batch = min(_BATCH, count)
            connection.send(source(batch))
            count -= batch
    except (BrokenPipeError, EOFError, OSError):  # the parent went away
        pass
    finally:
        connection.close()


def _receive(connection, ready):
    """Parent's reader thread: append every complete batch to ``ready``."""
    try:
        while True:
            ready.extend(connection.recv())
    except (EOFError, OSError):  # the worker finished or was stopped
        pass
    except Exception:  # pragma: no cover - a batch cut short when stopped
        pass
    finally:
        connection.close()


def _stop(process, reader):
    """Stop the worker (if still computing) and wait for it and the reader."""
    if process is not None:
        if process.is_alive():
            process.terminate()
        process.join()
    if reader is not None:
        reader.join()


class ObfuscatorPool:
    """Fresh obfuscators computed ahead by a background process.

    Parameters
    ----------
    source : callable
        ``source(count) -> list`` of ``count`` fresh obfuscators; runs in the
        forked worker, so it may use anything the parent holds (tables,
        factors) without pickling it.
    nice : int, default=19
        Added to the worker's niceness: 19, the lowest priority, lets it use
        only CPU time that nothing else wants.

    Notes
    -----
    Where worker processes cannot be forked (see
    :func:`~skfed.crypto._parallel.fork_available`), :meth:`start` does
    nothing and :meth:`take` returns nothing: encryption then computes every
    obfuscator itself, as without a pool.
    """

    def __init__(self, source, nice=19):
        self._source = source
        self._nice = int(nice)
        self._ready = collections.deque()
        self._process = None
        self._reader = None
        self._lock = threading.Lock()
        self._finalizer = None

    def __len__(self):
        """Obfuscators received and not yet taken."""
        return len(self._ready)

    def start(self, count):
        """Start computing up to ``count`` more obfuscators in the background.

        A worker still running is stopped first (what it finished is kept).
        Returns True if a worker was started.
        """
        count = int(count) - len(self._ready)
        with self._lock:
            self._halt()
            if count <= 0 or not fork_available():
                return False
            receiving, sending = multiprocessing.get_context("fork").Pipe(duplex=False)
            process = multiprocessing.get_context("fork").Process(
                target=_produce, args=(self._source, count, sending, self._nice),
                name="skfed-obfuscators", daemon=True)
            try:
                process.start()
            except OSError:  # pragma: no cover - fork refused (limits)
                receiving.close()
                sending.close()
                return False
            sending.close()  # the worker's end: its exit means end of data
            reader = threading.Thread(target=_receive, args=(receiving, self._ready),
                                      name="skfed-obfuscator-reader", daemon=True)
            reader.start()
            self._process, self._reader = process, reader
            # A pool dropped without close() still stops its worker.
            self._finalizer = weakref.finalize(self, _stop, process, reader)
            return True

    def _halt(self):
        if self._finalizer is not None:
            self._finalizer()  # runs _stop once
            self._finalizer = None
        self._process = self._reader = None

    def take(self, count):
        """Up to ``count`` obfuscators, removed from the pool (each given once).

        Stops the worker first: the caller is about to use the CPU itself.
        """
        with self._lock:
            self._halt()
            out = []
            while len(out) < count and self._ready:
                out.append(self._ready.popleft())
            return out

    def close(self):
        """Stop the worker and drop every obfuscator not taken."""
        with self._lock:
            self._halt()
            self._ready.clear()


class PrecomputingKeyMixin:
    """``precompute_obfuscators`` for a private key (Paillier's or OU's).

    The key provides ``_pool_source(n_jobs)`` (builds its tables, returns
    ``count -> list`` of fresh obfuscators, run in the forked worker) and
    ``_min_items_per_process()``; its ``raw_encrypt`` takes what is ready
    with :meth:`_take_precomputed`. The pool lives in ``self._pool`` and
    never travels (the keys drop it when pickled).
    """

    def precompute_obfuscators(self, count, n_jobs=None, min_count=None, nice=19):
        """Compute ``count`` obfuscators in the background for the next encryption.

        Forks a worker process at the lowest priority
        (:class:`~skfed.crypto._precompute.ObfuscatorPool`) that computes
        fresh obfuscators while this party waits for others; the next
        ``raw_encrypt`` (and ``encrypt``, ``encrypt_packed``) takes what is
        ready, each obfuscator exactly once, and computes the rest itself. A
        worker still running is stopped first.

        Parameters
        ----------
        count : int
            Obfuscators wanted (e.g. the next round's ciphertexts).
        n_jobs : int or None
            Workers allowed: with None or 1 (one core asked for) nothing
            starts; otherwise the threads building the key owner's tables, if
            not built yet, and the one background worker.
        min_count : int or None
            Below this many nothing starts (a fork costs more than it saves);
            None: four times what key-owner encryption gives one process.
        nice : int, default=19
            The worker's niceness increment (19: only otherwise idle CPU).

        Returns
        -------
        started : bool
        """
        if min_count is None:
            min_count = 4 * self._min_items_per_process()
        if count < min_count or effective_n_jobs(n_jobs) < 2:
            return False
        source = self._pool_source(n_jobs)
        pool = self.__dict__.get("_pool")
        if pool is None:
            with _pool_lock:
                pool = self.__dict__.get("_pool")
                if pool is None:
                    pool = ObfuscatorPool(source, nice)
                    self._pool = pool
        pool._nice = int(nice)
        return pool.start(count)

    def stop_precomputing(self):
        """Stop the background worker and drop the obfuscators not used."""
        pool = self.__dict__.get("_pool")
        if pool is not None:
            pool.close()

    def _take_precomputed(self, count, precomputed=True):
        """Up to ``count`` obfuscators from the pool, each handed out once."""
        pool = self.__dict__.get("_pool") if precomputed else None
        return [] if pool is None else pool.take(count)
