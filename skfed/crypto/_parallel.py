"""Spread big-integer work over worker threads.

gmpy2 releases the GIL during arithmetic on large ``mpz`` only when the calling
thread's context has ``allow_release_gil = True``; without it threads give no
speed-up at all. Each worker sets it for itself (contexts are thread-local).

Threads rather than processes: the ciphertexts, the fixed-base tables and the
keys are shared without copying or pickling. Measured on an idle 2-core
machine at 2048 bits (``benchmarks/bench_crypto.py --processes``): DJN
encryption 1681/s with one thread, 2860/s with two threads and 2916/s with a
2-process pool (whose workers must each rebuild the 16 MB table and pickle
the results back); CRT decryption 2.0x with two threads. Processes gain
nothing worth their cost. The worker threads are kept between calls (one
pool per worker count, threads named ``skfed-crypto-worker``): gmpy2 keeps a
per-thread cache of big integers that a thread's exit never frees, so a new
pool per call leaked a few KiB per worker and call. A call made from inside
a worker runs in that worker, so pools never wait on themselves.

The exception is the key owner's CRT encryption (many 2048-bit products
modulo ``p**2`` with random lookups in a 55 MB table): two threads give
1.0x there, two forked processes 1.9x, so it uses :func:`fork_map`, whose
workers inherit the tables through the fork (nothing rebuilt, nothing secret
pickled) and exit before the call returns.
"""

import contextlib
import multiprocessing
import os
import sys
import threading
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool

import gmpy2

from .._cancel import check_cancelled

__all__ = [
    "effective_n_jobs",
    "fork_available",
    "fork_map",
    "party_thread_keeps_gil",
    "parallel_map",
    "parallel_tasks",
    "releasing_gil",
]

# Below this many items per worker, starting threads costs more than it saves.
_MIN_ITEMS_PER_JOB = 16
# Long serial runs are cut into blocks of this many items, between which a
# party told to stop (timeout, failure, interrupt) stops: about 0.35 s of
# encryption at 2048 bits, and blocks this size keep the table-driven
# obfuscators' batching efficient.
_STOP_CHECK_ITEMS = 1024


def effective_n_jobs(n_jobs):
    """Workers for ``n_jobs``: None -> 1, -1 -> all cores, -2 -> all but one."""
    if n_jobs is None:
        return 1
    n_jobs = int(n_jobs)
    if n_jobs == 0:
        raise ValueError("n_jobs == 0 has no meaning; use None, a positive int or -1.")
    if n_jobs < 0:
        return max(1, (os.cpu_count() or 1) + 1 + n_jobs)
    return n_jobs


def _release_gil():
    gmpy2.get_context().allow_release_gil = True
    _in_worker.flag = True


_in_worker = threading.local()
_executors = {}
_executors_lock = threading.Lock()


def _thread_pool(n_workers):
    """The process's pool of ``n_workers`` crypto threads (made on first use)."""
    with _executors_lock:
        pool = _executors.get(n_workers)
        if pool is None:
            pool = ThreadPoolExecutor(max_workers=n_workers, initializer=_release_gil,
                                      thread_name_prefix="skfed-crypto-worker")
            _executors[n_workers] = pool
        return pool


def _forget_pools_after_fork():
    # A forked child has only the forking thread: the pools' threads are gone.
    global _executors_lock
    _executors.clear()
    _executors_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pools_after_fork)


def _workers_for(n_jobs, n_items):
    """Workers to use; 1 inside a crypto worker (no pool waits on itself)."""
    if getattr(_in_worker, "flag", False):
        return 1
    return min(effective_n_jobs(n_jobs), n_items)


@contextlib.contextmanager
def _gil_setting(release):
    """gmpy2 releases the GIL (``release``) or keeps it, in this thread, for
    the duration of the block; the previous setting comes back after."""
    context = gmpy2.get_context()
    previous = context.allow_release_gil
    context.allow_release_gil = bool(release)
    try:
        yield
    finally:
        context.allow_release_gil = previous


def releasing_gil():
    """Let gmpy2 release the GIL in this thread for the duration of the block."""
    return _gil_setting(True)


def party_thread_keeps_gil():
    """Make this thread (a party's) keep the GIL through gmpy2's operations.

    gmpy2's default, set again by the local backend for every party a
    reused thread serves and by every Ray actor call. Most of a party's
    big-integer work is short products (table lookups, ciphertext
    additions): releasing and re-taking the GIL around each one while other
    parties' threads want it cost 2.3x the CPU
    (``benchmarks/bench_hyfdca.py --schemes``). Long operations
    (decryption's exponentiations) release it in :func:`parallel_map` and
    :func:`parallel_tasks` (``release_gil=True``), so parties still decrypt
    in parallel.
    """
    gmpy2.get_context().allow_release_gil = False


def _serial_map(func, items, release_gil=True):
    """``func`` over blocks of ``items`` in this thread, checking the stop flag.

    ``release_gil=False`` keeps the GIL through gmpy2's operations: right for
    work made of many short products (table lookups, ciphertext additions),
    where releasing and re-taking the GIL around each product costs more
    than it saves as soon as another thread (another party) wants the GIL:
    two parties encrypting at once with the GIL released spent 2.3x the CPU
    per ciphertext of the same work keeping it (OU key-owner encryption,
    2048 bits, 63 packed values per call: 341 against 152 us).
    """
    with _gil_setting(release_gil):
        if len(items) <= _STOP_CHECK_ITEMS:
            return list(func(items))
        out = []
        for start in range(0, len(items), _STOP_CHECK_ITEMS):
            check_cancelled()
            out.extend(func(items[start:start + _STOP_CHECK_ITEMS]))
        return out


def _pooled_map(pool, func, chunks):
    """``pool.map`` whose caller checks the stop flag between results."""
    futures = [pool.submit(func, chunk) for chunk in chunks]
    try:
        results = []
        for future in futures:
            results.append(future.result())
            check_cancelled()
        return results
    except BaseException:
        for future in futures:
            future.cancel()
        raise


def parallel_map(func, items, n_jobs=None, release_gil=True):
    """``func`` applied to contiguous chunks of ``items``, results concatenated.

    Parameters
    ----------
    func : callable
        Maps a list to a list of the same length (order preserved).
    items : list
        Work items.
    n_jobs : int or None
        Worker threads (None means 1, negative counts back from all cores).
    release_gil : bool, default=True
        Whether gmpy2 releases the GIL when the work runs in the calling
        thread (one worker): True for long operations (``powmod`` with long
        exponents), False for many short products (see :func:`_serial_map`).
        Worker threads always release it (that is how they run in parallel).

    Returns
    -------
    results : list
        ``func(items[a:b])`` for consecutive chunks, concatenated.

    Notes
    -----
    Run on a party's thread, the work stops between chunks when the party
    is told to stop (:func:`skfed._cancel.check_cancelled`).
    """
    n_workers = _workers_for(n_jobs, max(1, len(items) // _MIN_ITEMS_PER_JOB))
    if n_workers <= 1:
        return _serial_map(func, items, release_gil)
    # A few chunks per worker balance uneven chunk costs (e.g. group sizes).
    n_chunks = min(len(items), 4 * n_workers)
    bounds = [len(items) * i // n_chunks for i in range(n_chunks + 1)]
    chunks = [items[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
    results = _pooled_map(_thread_pool(n_workers), func, chunks)
    return [r for chunk_result in results for r in chunk_result]


def parallel_tasks(func, tasks, n_jobs=None, release_gil=True):
    """``[func(task) for task in tasks]`` over worker threads, order preserved
    (``release_gil``: as in :func:`parallel_map`)."""
    n_workers = _workers_for(n_jobs, len(tasks))
    if n_workers <= 1:
        out = []
        with _gil_setting(release_gil):
            for task in tasks:
                check_cancelled()
                out.append(func(task))
        return out
    return _pooled_map(_thread_pool(n_workers), func, tasks)


# -- processes (fork) for fine-grained work that threads cannot speed up ----

_worker_func = None


def _set_worker_func(func):
    global _worker_func
    _worker_func = func


def _call_worker_func(chunk):
    return _worker_func(chunk)


def fork_available():
    """Whether :func:`fork_map` can fork worker processes here.

    Needs the ``fork`` start method (POSIX, not macOS's default but available
    on Linux) and is refused inside a daemonic process (which may not have
    children) and once Ray is initialised (its gRPC threads do not survive a
    fork).
    """
    if "fork" not in multiprocessing.get_all_start_methods():
        return False
    if multiprocessing.current_process().daemon:
        return False  # daemonic processes may not have children
    ray = sys.modules.get("ray")
    try:
        if ray is not None and ray.is_initialized():
            return False
    except Exception:  # pragma: no cover - a broken ray import: stay safe
        return False
    return True


# Forking a pool costs a few milliseconds: not worth it for a few items.
_MIN_ITEMS_PER_PROCESS = 128


def fork_map(func, items, n_jobs=None, min_items_per_job=_MIN_ITEMS_PER_PROCESS):
    """Like :func:`parallel_map`, but over forked worker processes.

    For work made of many short gmpy2 operations on shared tables (the key
    owner's CRT encryption), threads give no speed-up at all (measured 1.0x
    with two threads: each operation is too short for releasing the GIL to
    pay, and the table lookups miss the cache while holding it), while two
    forked processes give 1.9x. ``func`` and everything it refers to
    (tables, keys) reach the workers through the fork itself, copy-on-write,
    never pickled; only the chunks of ``items`` and the results are. The
    pool lives for this call only. Falls back to :func:`parallel_map` (threads)
    when forking is not available (see :func:`fork_available`) or fails, and
    runs in the calling thread, keeping the GIL (short products: see
    :func:`_serial_map`), when there are fewer than ``min_items_per_job``
    items per worker.
    """
    n_workers = min(effective_n_jobs(n_jobs), max(1, len(items) // min_items_per_job))
    if n_workers <= 1:
        return _serial_map(func, items, release_gil=False)
    if not fork_available():
        return parallel_map(func, items, n_jobs, release_gil=False)
    n_chunks = min(len(items), 4 * n_workers)
    bounds = [len(items) * i // n_chunks for i in range(n_chunks + 1)]
    chunks = [items[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
    try:
        with ProcessPoolExecutor(
            max_workers=n_workers,
            mp_context=multiprocessing.get_context("fork"),
            initializer=_set_worker_func,
            initargs=(func,),
        ) as pool:
            results = _pooled_map(pool, _call_worker_func, chunks)
    except (BrokenProcessPool, OSError):
        return parallel_map(func, items, n_jobs, release_gil=False)
    return [r for chunk_result in results for r in chunk_result]
