"""Message accounting: what a message weighs, its round, and the summary of a run.

:class:`Message` is one recorded message; :func:`measure` counts a payload as
plain scalars, ciphertexts and bytes; :class:`CommunicationSummary` adds the
counts up by link, phase and party (what fitted estimators expose as
``communication_``). A driver marks each round of its main loop with
:func:`protocol_round` (or iterates with :func:`protocol_rounds`); every
message sent in the meantime carries the number (``Message.round``). The mark
is per thread; the party runtime hands the caller's round to the party thread
that runs a call. The recording itself is in :mod:`.network`.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import numbers
import threading
from collections import namedtuple
from contextlib import contextmanager

import numpy as np

from .._optional import import_optional
from ._plots import plot_summary

__all__ = ["Message", "CommunicationSummary", "measure", "current_round",
           "protocol_round", "protocol_rounds", "set_round"]

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

    def __sub__(self, other):
        """The messages of ``self`` beyond ``other``, an earlier summary of
        the same run (one iteration's counts: after minus before)."""
        if not isinstance(other, CommunicationSummary):
            return NotImplemented
        earlier = {r[:3]: r[3:] for r in other.records}
        rows = []
        for r in self.records:
            counts = tuple(a - b for a, b in
                           zip(r[3:], earlier.pop(r[:3], (0, 0, 0, 0))))
            if min(counts) < 0:
                earlier[r[:3]] = None  # report below
            elif counts[0]:
                rows.append(r[:3] + counts)
        if earlier:
            raise ValueError(
                "Cannot subtract a summary that is not an earlier state of "
                f"this one: phase(s) {sorted(k[2] for k in earlier)} would "
                "have negative counts.")
        return CommunicationSummary(rows)

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
        pd = import_optional("pandas", "CommunicationSummary.to_frame")
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


_round_state = threading.local()


def current_round():
    """The round number set by the innermost :func:`protocol_round` of this
    thread (party threads inherit the round of the call they run), or None."""
    return getattr(_round_state, "value", None)


def set_round(number):
    """Mark the messages this thread sends from now on with round ``number``.

    For a driver thread whose loop cannot be wrapped in :func:`protocol_round`
    (AVFKAM's asynchronous workers mark each of their iterations), and for a
    party thread, which takes the round of the call it runs. ``None`` means
    outside any round.
    """
    _round_state.value = None if number is None else int(number)


@contextmanager
def protocol_round(number):
    """Mark every message sent inside as belonging to round ``number``.

    Protocol drivers wrap each round (or epoch, or step) of their main loop
    in it, so recorded :class:`Message` objects carry the round and a
    timeline (:meth:`MessageRecorder.plot_timeline`) can group them. The
    mark is per thread; a party running a call inherits the round of the
    caller that sent it.

    Parameters
    ----------
    number : int
        The round number (the drivers count from 0).

    Examples
    --------
    >>> from skfed.federation import Federation, protocol_round, record_messages
    >>> with record_messages() as rec, Federation({"a": {}, "b": {}}) as fed:
    ...     for t in range(2):
    ...         with protocol_round(t):
    ...             _ = fed["b"].call(lambda s, x: x, t, sender="a",
    ...                               phase="demo").result()
    >>> [m.round for m in rec.messages]
    [0, 1]
    """
    previous = current_round()
    _round_state.value = None if number is None else int(number)
    try:
        yield
    finally:
        _round_state.value = previous


def protocol_rounds(numbers):
    """Iterate over ``numbers``, each iteration inside :func:`protocol_round`.

    ``for t in protocol_rounds(range(max_iter)):`` marks the messages of
    iteration ``t`` with round ``t`` without re-indenting the loop body. The
    previous round comes back when the loop ends (also on ``break``).
    """
    previous = current_round()
    try:
        for number in numbers:
            _round_state.value = None if number is None else int(number)
            yield number
    finally:
        _round_state.value = previous
