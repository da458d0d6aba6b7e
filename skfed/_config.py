"""skfed's global configuration, in scikit-learn's idiom.

``backend`` says how parties are simulated: ``"threads"`` (default, one
thread per party in this process) or ``"ray"`` (one Ray actor per party,
possibly on other machines). ``party_timeout`` bounds how long the caller
waits for any single party call. ``allow_insecure_keys`` lets keys and
groups below the security floor through (for tests and teaching).

Like sklearn's, the configuration is thread-local, so a ``config_context``
in one thread does not leak into others; a federation reads it in the thread
that creates it (``fit``) and its parties run under the same configuration.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import numbers
import os
import threading
from contextlib import contextmanager

__all__ = ["get_config", "set_config", "config_context"]

_BACKENDS = ("threads", "ray")

#: Environment variable that opts in to insecure keys for a whole process
#: (and the processes it starts), e.g. a test run.
INSECURE_KEYS_ENV = "SKFED_ALLOW_INSECURE_KEYS"

_global_config = {
    "backend": "threads",
    "ray_actor_options": None,
    "ray_init_kwargs": None,
    "party_timeout": 600.0,
    # None: not set in this thread, the environment variable decides.
    "allow_insecure_keys": None,
}
_threadlocal = threading.local()


def _get_threadlocal_config():
    if not hasattr(_threadlocal, "config"):
        _threadlocal.config = dict(_global_config)
    return _threadlocal.config


def _insecure_keys_from_environment():
    value = os.environ.get(INSECURE_KEYS_ENV, "").strip().lower()
    return value in ("1", "true", "yes", "on")


def get_config():
    """The current configuration, as a new dict.

    Returns
    -------
    config : dict
        ``backend``, ``ray_actor_options``, ``ray_init_kwargs``,
        ``party_timeout`` and ``allow_insecure_keys`` (see
        :func:`set_config`).
    """
    config = dict(_get_threadlocal_config())
    if config["allow_insecure_keys"] is None:
        config["allow_insecure_keys"] = _insecure_keys_from_environment()
    return config


def _check_timeout(party_timeout):
    if party_timeout is None:
        return None
    if (isinstance(party_timeout, bool)
            or not isinstance(party_timeout, numbers.Real)
            or not party_timeout > 0):
        raise ValueError(
            "party_timeout must be a positive number of seconds or None (no "
            f"limit), got {party_timeout!r}.")
    return float(party_timeout)


def set_config(backend=None, ray_actor_options=None, ray_init_kwargs=None,
               party_timeout="unchanged", allow_insecure_keys=None):
    """Set skfed's configuration for the current thread.

    Parameters
    ----------
    backend : {"threads", "ray"}, default=None
        How parties run: one thread each in this process, or one Ray actor
        each (requires ``pip install skfed[ray]``). ``None`` leaves it.

    ray_actor_options : dict or callable, default=None
        Options for each party's actor (``ray.remote(...).options(**opts)``):
        a dict from party name (``"party0"``, ``"server"``, ``"client3"``, ...)
        to an options dict, with the key ``"*"`` as the default for every
        party, or a callable ``name -> dict``. Use it to pin a party to the
        machine that holds its data, e.g.
        ``{"party2": {"resources": {"bank_b": 0.01}}}``. Parties ask for no
        CPU by default (``num_cpus=0``), so any number fit on a small machine.

    ray_init_kwargs : dict, default=None
        Passed to ``ray.init`` when skfed has to start Ray itself (when
        ``ray.is_initialized()`` is false). With an address, e.g.
        ``{"address": "HEAD_HOST:6379"}``, skfed joins that cluster (an
        ``"auto"`` is kept as written, and joins whatever cluster Ray finds
        on the machine). Without one, skfed joins the cluster named by the
        environment variable ``RAY_ADDRESS`` if it is set, and otherwise
        starts a private local instance (``address="local"``, with the other
        keys, e.g. ``{"num_cpus": 2}``): it never joins a cluster that
        another job started on the machine. Only that private instance runs
        the party actors at the caller's priority (``RAY_worker_niceness=0``
        unless set).

    party_timeout : float or None, default="unchanged"
        Seconds the caller waits for any single party call (600 unless set)
        before :class:`~skfed.federation.FederationTimeoutError` is raised
        and every party of the run is told to stop; ``None`` waits forever.
        The string ``"unchanged"`` (the default) leaves it.

    allow_insecure_keys : bool, default=None
        Allow Paillier keys below 1024 bits and private-set-intersection
        groups below 128-bit security, which are refused otherwise (keys
        below 2048 bits always warn, see
        :class:`~skfed.crypto.InsecureKeyWarning`). For tests and teaching
        only. ``None`` leaves it; unless set in this thread, the environment
        variable ``SKFED_ALLOW_INSECURE_KEYS=1`` decides (which is how the
        test suite opts in for every process it starts).
    """
    config = _get_threadlocal_config()
    if backend is not None:
        if backend not in _BACKENDS:
            raise ValueError(
                f"backend must be one of {_BACKENDS}, got {backend!r}.")
        config["backend"] = backend
    if ray_actor_options is not None:
        config["ray_actor_options"] = ray_actor_options
    if ray_init_kwargs is not None:
        config["ray_init_kwargs"] = ray_init_kwargs
    if not (isinstance(party_timeout, str) and party_timeout == "unchanged"):
        config["party_timeout"] = _check_timeout(party_timeout)
    if allow_insecure_keys is not None:
        if not isinstance(allow_insecure_keys, bool):
            raise ValueError("allow_insecure_keys must be True, False or None, "
                             f"got {allow_insecure_keys!r}.")
        config["allow_insecure_keys"] = allow_insecure_keys


@contextmanager
def config_context(**new_config):
    """Temporarily change skfed's configuration (see :func:`set_config`).

    Examples
    --------
    >>> import skfed
    >>> with skfed.config_context(backend="threads", party_timeout=30):
    ...     skfed.get_config()["party_timeout"]
    30.0
    """
    old = dict(_get_threadlocal_config())
    set_config(**new_config)
    try:
        yield
    finally:
        _get_threadlocal_config().clear()
        _get_threadlocal_config().update(old)
