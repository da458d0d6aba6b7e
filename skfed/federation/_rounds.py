"""Round numbers of protocol messages, set by the drivers.

A driver marks each round of its main loop with :func:`protocol_round` (or
iterates with :func:`protocol_rounds`); every message sent in the meantime
carries the number (``Message.round``). The mark is per thread; the party
runtime hands the caller's round to the party thread that runs a call.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import threading
from contextlib import contextmanager

__all__ = ["current_round", "protocol_round", "protocol_rounds"]

_round_state = threading.local()


def current_round():
    """The round number set by the innermost :func:`protocol_round` of this
    thread (party threads inherit the round of the call they run), or None."""
    return getattr(_round_state, "value", None)


def _set_round(value):
    _round_state.value = value


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
