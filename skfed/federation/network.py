"""Message accounting: what crossed between which parties, in which phase.

Every call made with a ``sender`` (see :class:`~skfed.federation.Party`) is a
message; its arguments are measured here as a count of plain scalars, a count
of ciphertexts and a number of bytes. The :class:`CommunicationSummary` built
from these counts is what fitted estimators expose as ``communication_``, and
:func:`record_messages` collects the messages themselves (with their payloads)
for teaching and for the privacy tests.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import numbers
import threading
import time
from collections import namedtuple
from contextlib import contextmanager

import numpy as np

from ._plots import plot_summary, plot_timeline
from ._rounds import (  # noqa: F401  (_set_round: for the party runtime)
    _set_round,
    current_round,
    protocol_round,
    protocol_rounds,
)

__all__ = ["Message", "CommunicationSummary", "measure", "record_messages",
           "protocol_round", "protocol_rounds", "current_round"]

_MessageFields = namedtuple(
    "Message",
    ["sender", "receiver", "phase", "n_scalars", "n_ciphertexts", "n_bytes",
     "payload", "time", "round"],
    defaults=(None, None),
)


class Message(_MessageFields):
    __slots__ = ()

    @classmethod
    def _make(cls, iterable):
        # The seven fields of older versions still make a message.
        values = tuple(iterable)
        return super()._make(values + cls._field_defaults_tail(len(values)))

    @classmethod
    def _field_defaults_tail(cls, n_values):
        return (None,) * max(0, len(cls._fields) - n_values)


Message.__doc__ = """One message between two parties.

``payload`` is the tuple of call arguments as the receiver got them; it is
kept only by a :func:`record_messages` recorder, never by estimators.
``time`` is the :func:`time.monotonic` clock when the message was sent (a
:class:`MessageRecorder` reports it relative to its start with
:meth:`MessageRecorder.times`), and ``round`` the protocol's round or step
number set by the driver with :func:`protocol_round` (None outside any).
"""

_SCALAR_BYTES = 8


def _int_bytes(value):
    return max(1, (int(value).bit_length() + 7) // 8)


def measure(payload):
    """Size of a message: ``(n_scalars, n_ciphertexts, n_bytes)``.

    Objects may describe themselves with a ``__message_size__()`` method
    returning the same triple (encrypted arrays do). Numbers count as one
    scalar of 8 bytes (big integers by their length), numeric arrays by their
    size and ``nbytes``, and containers by their contents. Anything else is
    refused, so protocol code can only send well-defined messages.
    """
    if payload is None:
        return 0, 0, 0
    size = getattr(payload, "__message_size__", None)
    if size is not None and not isinstance(payload, type):
        return tuple(int(v) for v in size())
    if isinstance(payload, np.ndarray):
        if payload.dtype == object:
            return _sum_sizes(payload.ravel().tolist())
        return int(payload.size), 0, int(payload.nbytes)
    if isinstance(payload, (bool, np.bool_, float, complex, np.floating,
                            np.complexfloating)):
        return 1, 0, _SCALAR_BYTES
    if isinstance(payload, numbers.Integral):
        value = int(payload)
        return 1, 0, _SCALAR_BYTES if -2**63 <= value < 2**63 else _int_bytes(value)
    if isinstance(payload, (str, bytes)):
        return 0, 0, len(payload)
    if isinstance(payload, (list, tuple)):
        return _sum_sizes(payload)
    if isinstance(payload, dict):
        return _sum_sizes(list(payload.keys()) + list(payload.values()))
    if isinstance(payload, (slice, range)):
        return 3, 0, 3 * _SCALAR_BYTES
    raise TypeError(
        f"Cannot measure a message of type {type(payload).__name__}; protocol "
        "messages must be numbers, numpy arrays, encrypted arrays or "
        "containers of these."
    )


def _sum_sizes(items):
    scalars = ciphertexts = nbytes = 0
    for item in items:
        s, c, b = measure(item)
        scalars += s
        ciphertexts += c
        nbytes += b
    return scalars, ciphertexts, nbytes


_FIELDS = ("messages", "scalars", "ciphertexts", "bytes")


class CommunicationSummary:
    """Counts of the messages exchanged during one protocol run.

    Attributes
    ----------
    total_messages, total_scalars, total_ciphertexts, total_bytes : int
        Totals over every message.

    by_link : dict
        ``{(sender, receiver): {"messages", "scalars", "ciphertexts", "bytes"}}``.

    by_phase : dict
        ``{phase: {...}}`` with the same counts.

    by_party : dict
        ``{party: {"sent_messages", "sent_bytes", "received_messages",
        "received_bytes"}}``.

    records : list of tuple
        ``(sender, receiver, phase, messages, scalars, ciphertexts, bytes)``
        rows, the finest grain; every other view is a sum of these.
    """

    def __init__(self, records=()):
        self.records = sorted(tuple(r) for r in records)
        self.by_link = self._group(lambda r: (r[0], r[1]))
        self.by_phase = self._group(lambda r: r[2])
        self.by_party = {}
        for sender, receiver, _, n_msg, _, _, n_bytes in self.records:
            for party, role in ((sender, "sent"), (receiver, "received")):
                entry = self.by_party.setdefault(party, {
                    "sent_messages": 0, "sent_bytes": 0,
                    "received_messages": 0, "received_bytes": 0})
                entry[f"{role}_messages"] += n_msg
                entry[f"{role}_bytes"] += n_bytes
        totals = [sum(r[3 + i] for r in self.records) for i in range(4)]
        (self.total_messages, self.total_scalars, self.total_ciphertexts,
         self.total_bytes) = totals

    def _group(self, key):
        out = {}
        for r in self.records:
            entry = out.setdefault(key(r), dict.fromkeys(_FIELDS, 0))
            for i, field in enumerate(_FIELDS):
                entry[field] += r[3 + i]
        return out

    def __add__(self, other):
        if not isinstance(other, CommunicationSummary):
            return NotImplemented
        merged = {}
        for r in self.records + other.records:
            counts = merged.setdefault(r[:3], [0, 0, 0, 0])
            for i in range(4):
                counts[i] += r[3 + i]
        return CommunicationSummary(k + tuple(v) for k, v in merged.items())

    def __eq__(self, other):
        return (isinstance(other, CommunicationSummary)
                and self.records == other.records)

    def __repr__(self):
        return (f"CommunicationSummary(total_messages={self.total_messages}, "
                f"total_bytes={self.total_bytes}, "
                f"total_ciphertexts={self.total_ciphertexts}, "
                f"phases={sorted(self.by_phase)})")

    def to_frame(self):
        """The records as a pandas DataFrame (requires pandas)."""
        import pandas as pd

        return pd.DataFrame(
            self.records,
            columns=["sender", "receiver", "phase", "messages", "scalars",
                     "ciphertexts", "bytes"],
        )

    _VIEWS = ("phase", "link", "party")

    def _view(self, by):
        if by not in self._VIEWS:
            raise ValueError(
                f"by must be one of 'phase', 'link' or 'party', got {by!r}.")
        if by == "party":
            fields = ("sent_messages", "sent_bytes", "received_messages",
                      "received_bytes")
            groups = self.by_party
        else:
            fields = _FIELDS
            groups = self.by_phase if by == "phase" else self.by_link
        rows = [(" -> ".join(k) if isinstance(k, tuple) else str(k),
                 *(v[f] for f in fields)) for k, v in sorted(groups.items())]
        return fields, rows

    def table(self, by="phase"):
        """A plain-text table of the counts grouped ``by`` phase, link or party.

        Parameters
        ----------
        by : {"phase", "link", "party"}, default="phase"
            ``"link"`` groups by sender -> receiver; ``"party"`` gives each
            party's sent and received messages and bytes.

        Returns
        -------
        str
        """
        fields, rows = self._view(by)
        if by == "party":
            rows.append(("total", self.total_messages, self.total_bytes,
                         self.total_messages, self.total_bytes))
        else:
            rows.append(("total", self.total_messages, self.total_scalars,
                         self.total_ciphertexts, self.total_bytes))
        header = (by, *fields)
        widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
        lines = ["  ".join(str(x).rjust(w) if i else str(x).ljust(w)
                           for i, (x, w) in enumerate(zip(row, widths)))
                 for row in (header, *rows)]
        return "\n".join(lines)

    def plot(self, by="phase", ax=None):
        """Bar chart of the bytes (bars) and messages (labels) ``by`` group.

        Parameters
        ----------
        by : {"phase", "link", "party"}, default="phase"
            The grouping, as in :meth:`table`; ``"party"`` draws each
            party's sent and received bytes side by side.

        ax : matplotlib Axes, optional
            Where to draw; a new figure's Axes by default.

        Returns
        -------
        ax : matplotlib Axes
        """
        return plot_summary(self, by, ax)


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
        from .._config import get_config
        from .party import Party

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
            from ._ray import RayParty

            options = config["ray_actor_options"] or {}
            self._parties = {
                str(name): RayParty(
                    name, state, log=self.log, timeout=self.timeout,
                    actor_options=(options(str(name)) if callable(options) else
                                   options.get(str(name), options.get("*"))),
                    init_kwargs=config["ray_init_kwargs"])
                for name, state in states.items()
            }
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
        from .party import PartyError, PartyStopped, FederationTimeoutError

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
