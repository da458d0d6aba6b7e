"""The federation: runs the parties, delivers and records their messages.

Every call made with a ``sender`` (see :class:`~skfed.federation.Party`) is a
message; its arguments are measured as a count of plain scalars, a count
of ciphertexts and a number of bytes. The :class:`CommunicationSummary` built
from these counts is what fitted estimators expose as ``communication_``, and
:func:`record_messages` collects the messages themselves (with their payloads)
for teaching and for the privacy tests.

The sizes, the round marks and the summary (:func:`measure`,
:class:`Message`, :func:`protocol_round`, :class:`CommunicationSummary`) are
in :mod:`skfed.federation._accounting`; this module records and delivers
messages and runs the parties (:class:`Federation`).
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import threading
import time
from contextlib import contextmanager

import numpy as np

from .._config import get_config
from ._accounting import CommunicationSummary, Message, current_round, measure
from ._plots import plot_timeline
from ._ray import RayParty, read_sizes
from .party import FederationTimeoutError, Party, PartyError, PartyStopped

__all__ = ["Federation", "MessageRecorder", "record_messages"]


class MessageRecorder:
    """Collects every message of every federation run while it is active.

    Made by :func:`record_messages`; ``messages`` is a list of
    :class:`Message` with payloads, in the order they were sent.
    """

    def __init__(self):
        self.messages = []
        self._lock = threading.Lock()
        #: :func:`time.monotonic` when recording started.
        self.start_time = time.monotonic()

    def _add(self, message):
        with self._lock:
            self.messages.append(message)

    def summary(self):
        """A :class:`CommunicationSummary` of the recorded messages."""
        return CommunicationSummary(
            (m.sender, m.receiver, m.phase, 1, m.n_scalars, m.n_ciphertexts,
             m.n_bytes) for m in self.messages)

    def received_by(self, party):
        """The messages ``party`` received."""
        return [m for m in self.messages if m.receiver == party]

    def times(self):
        """Seconds since recording started, one per message (NaN if unknown)."""
        return np.array([np.nan if m.time is None else m.time - self.start_time
                         for m in self.messages], dtype=float)

    def plot_timeline(self, ax=None, *, contract=None, parties=None,
                      rounds=None, batch=True, max_arrows=150):
        """Draw the recorded messages as a sequence diagram.

        One vertical lane per party, time going down; one arrow per batch of
        messages of one round, phase, sender and receiver (or per message
        with ``batch=False``), coloured by what crosses: **encrypted**
        (ciphertexts), **masked** (a contract rule for the phase declares a
        :class:`~skfed.privacy.Masked` or :class:`~skfed.privacy.RandomIds`
        element) or **plaintext** (anything else). A batch takes the least
        protected kind of its messages.

        Parameters
        ----------
        ax : matplotlib Axes, optional
            Where to draw; a new figure's Axes by default.

        contract : Contract or estimator, optional
            The privacy contract used to tell masked from plaintext
            messages, or an estimator providing one (``_privacy_contract``).
            Without it, only ciphertexts are told apart.

        parties : list of str, optional
            The lanes, left to right; by default every party that sent or
            received a message, sorted by name (``party2`` before
            ``party10``).

        rounds : container of int or None, optional
            Only the messages whose ``Message.round`` is in it (include
            ``None`` for the set-up messages outside any round); all by
            default.

        batch : bool, default=True
            Merge consecutive messages of one round, phase and link.

        max_arrows : int, default=150
            Draw at most this many arrows (the first ones); the title says
            how many were left out.

        Returns
        -------
        ax : matplotlib Axes
        """
        return plot_timeline(self.messages, ax=ax, contract=contract,
                             parties=parties, rounds=rounds, batch=batch,
                             max_arrows=max_arrows)


_active_recorders = []
_recorders_lock = threading.Lock()


@contextmanager
def record_messages():
    """Record every message sent by any federated fit or predict inside.

    Estimators only keep the counts of their ``fit`` (``communication_``);
    this context manager keeps the messages themselves, payloads included,
    which is how a student sees what crosses between parties and how the
    test suite checks the privacy rules. ``predict`` traffic is reported
    this way too, since ``predict`` must not change the estimator.

    Examples
    --------
    >>> from skfed.federation import Federation, record_messages
    >>> with record_messages() as rec:
    ...     with Federation({"alice": {}, "bob": {}}) as fed:
    ...         fed["bob"].call(lambda state, x: x + 1, 41, sender="alice",
    ...                         phase="demo").result()
    42
    >>> [(m.sender, m.receiver, m.payload) for m in rec.messages]
    [('alice', 'bob', (41,))]
    """
    recorder = MessageRecorder()
    with _recorders_lock:
        _active_recorders.append(recorder)
    try:
        yield recorder
    finally:
        with _recorders_lock:
            _active_recorders.remove(recorder)


def _deliver_to_recorders(message):
    with _recorders_lock:
        recorders = list(_active_recorders)
    for recorder in recorders:
        recorder._add(message)


class MessageLog:
    """Thread-safe counters of one federation's messages."""

    def __init__(self):
        self._counts = {}
        self._lock = threading.Lock()
        #: messages part of which crossed party to party by reference, their
        #: size still to be read: ``(key, size of the rest, pending size)``
        self._pending = []

    @property
    def recording(self):
        """Whether a :func:`record_messages` recorder wants the payloads."""
        return bool(_active_recorders)

    def record_pending(self, sender, receiver, phase, known, pending):
        """Count a message whose payload is partly ``known`` (measured now)
        and partly passed party to party by reference, measured by the
        receiver (``pending``, read by the backend when the counts are)."""
        key = (str(sender), str(receiver), str(phase))
        with self._lock:
            self._pending.append((key, measure(known), pending))

    def _settle(self):
        with self._lock:
            items, self._pending = self._pending, []
        if not items:
            return
        sizes = read_sizes([pending for _, _, pending in items])
        with self._lock:
            for (key, known, _), size in zip(items, sizes):
                counts = self._counts.setdefault(key, [0, 0, 0, 0])
                counts[0] += 1
                for i in range(3):
                    counts[i + 1] += known[i] + size[i]

    def record(self, sender, receiver, phase, payload):
        n_scalars, n_ciphertexts, n_bytes = measure(payload)
        key = (str(sender), str(receiver), str(phase))
        with self._lock:
            counts = self._counts.setdefault(key, [0, 0, 0, 0])
            counts[0] += 1
            counts[1] += n_scalars
            counts[2] += n_ciphertexts
            counts[3] += n_bytes
        if _active_recorders:
            _deliver_to_recorders(Message(*key, n_scalars, n_ciphertexts,
                                          n_bytes, payload, time.monotonic(),
                                          current_round()))

    def summary(self):
        self._settle()
        with self._lock:
            return CommunicationSummary(k + tuple(v) for k, v in self._counts.items())


class Federation:
    """The simulated network: a set of parties and the log of their messages.

    Used as a context manager, it starts one thread per party on entry and
    stops them all on exit, whether the protocol succeeded, failed, timed out
    or was interrupted; the parties' private states are dropped at that
    point. The parties share one stop flag: when one call fails or times out,
    or the caller is interrupted, all of them are told to stop (see
    :func:`~skfed.federation.check_stop`).

    Parameters
    ----------
    states : mapping of str to PartyState or dict
        The private state of each party, by party name (dicts become
        :class:`~skfed.federation.PartyState`, read by attribute).

    timeout : float or None, default=None
        Seconds a caller waits for any single party call before
        :class:`~skfed.federation.FederationTimeoutError` is raised; ``None``
        reads ``skfed.get_config()["party_timeout"]`` (600 s unless set; a
        configured ``None`` means no limit).

    backend : {"threads", "ray"} or None, default=None
        How the parties run; ``None`` reads :func:`skfed.get_config`.

    Examples
    --------
    >>> from skfed.federation import Federation
    >>> with Federation({"a": {"x": 1}, "b": {"x": 2}}) as fed:
    ...     fed.gather(fed[p].call(lambda s: s.x) for p in fed.party_names)
    [1, 2]
    """

    #: Seconds :meth:`stop` waits, in total, for parties to finish.
    stop_wait = 1.0

    def __init__(self, states, timeout=None, backend=None):
        config = get_config()
        self.backend = backend or config["backend"]
        self.log = MessageLog()
        self.timeout = config["party_timeout"] if timeout is None else timeout
        self._stop_event = threading.Event()
        if self.backend == "threads":
            self._parties = {
                str(name): Party(name, state, log=self.log, timeout=self.timeout,
                                 stop_event=self._stop_event)
                for name, state in states.items()
            }
        elif self.backend == "ray":
            options = config["ray_actor_options"] or {}
            peers = {}  # each party's waits watch every party's actor
            self._parties = {
                str(name): RayParty(
                    name, state, log=self.log, timeout=self.timeout,
                    actor_options=(options(str(name)) if callable(options) else
                                   options.get(str(name), options.get("*"))),
                    init_kwargs=config["ray_init_kwargs"], peers=peers)
                for name, state in states.items()
            }
            peers.update(self._parties)
        else:
            raise ValueError(f"Unknown backend {self.backend!r}.")
        self._running = False

    @property
    def party_names(self):
        return list(self._parties)

    def __getitem__(self, name):
        return self._parties[str(name)]

    def __contains__(self, name):
        return str(name) in self._parties

    def start(self):
        try:
            for party in self._parties.values():
                party.start()
        except BaseException:
            self.stop()
            raise
        self._running = True
        return self

    def request_stop(self):
        """Tell every party to stop, without waiting (see :meth:`stop`)."""
        self._stop_event.set()
        for party in self._parties.values():
            party.request_stop()

    @property
    def stop_requested(self):
        return self._stop_event.is_set()

    def stop(self):
        """Stop every party: cancel their pending calls, wait briefly, drop states.

        Every party is told to stop first, then each is waited for, all
        within :attr:`stop_wait` seconds in total, so a run with several
        stuck parties does not wait for each in turn.
        """
        self.request_stop()
        deadline = time.monotonic() + self.stop_wait
        for party in self._parties.values():
            party.stop(wait=max(0.0, deadline - time.monotonic()))
        self._running = False

    def __enter__(self):
        return self.start()

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            # the run ended well: a backend may keep idle parties for reuse
            for party in self._parties.values():
                finish = getattr(party, "finish", None)
                if finish is not None:
                    finish()
        self.stop()
        if exc_type is None:
            # A call nobody waited for may have failed: say so rather than
            # return a result the protocol did not fully compute.
            for party in self._parties.values():
                failure = party.unobserved_failure()
                if failure is not None:
                    raise failure
        return False

    def gather(self, futures):
        """Wait for every future, then return their results in order.

        If a party fails or times out, every party is told to stop, the
        other futures are given a moment to end (so no party is still
        working on the failed step when the caller moves on), and the first
        failure is re-raised. An interrupt of the caller is re-raised at
        once.
        """
        futures = list(futures)
        results, first_error, deadline = [], None, None
        for future in futures:
            if first_error is not None:
                try:  # a stopped party ends its call promptly
                    future.result(timeout=max(0.01, deadline - time.monotonic()))
                except (PartyError, PartyStopped, FederationTimeoutError):
                    pass
                results.append(None)
                continue
            try:
                results.append(future.result())
            except (PartyError, PartyStopped, FederationTimeoutError) as exc:
                results.append(None)
                first_error = exc
                deadline = time.monotonic() + self.stop_wait
                self.request_stop()
        if first_error is not None:
            raise first_error
        return results

    def send(self, sender, receiver, payload, phase=None):
        """Count ``payload`` as a message and return it (for protocol steps
        whose receiver needs no computation, e.g. a final result handed to a
        party for storage)."""
        self.log.record(sender, receiver, phase, (payload,))
        return payload

    def summary(self):
        """The :class:`CommunicationSummary` of everything sent so far."""
        return self.log.summary()
