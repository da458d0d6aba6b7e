"""A stop flag that long loops poll, without knowing who may set it.

The runtime (:mod:`skfed.federation`) binds an event to the thread that
serves a party and sets it when the run fails, times out or is interrupted;
code low in the package, such as the crypto worker loops, calls
:func:`check_cancelled` between blocks of work and so ends within a block.
Nothing here knows what a party is: a thread either has an event bound or
it has not.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import threading

__all__ = ["StopRequested", "bind_event", "bound_event", "check_cancelled"]

_local = threading.local()


class StopRequested(Exception):
    """Raised inside work whose run was told to stop (see :func:`check_cancelled`)."""


def bind_event(event):
    """Bind ``event`` (a :class:`threading.Event`, or None) to this thread."""
    _local.event = event


def bound_event():
    """The event bound to this thread, or None."""
    return getattr(_local, "event", None)


def check_cancelled(event=None):
    """Raise :class:`StopRequested` if ``event`` (default: the one bound to
    this thread) is set; do nothing when there is none."""
    if event is None:
        event = bound_event()
    if event is not None and event.is_set():
        raise StopRequested("the run was told to stop")
