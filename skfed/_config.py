"""skfed's global configuration, in scikit-learn's idiom.

``backend`` says how parties are simulated: ``"threads"`` (default, one
thread per party in this process) or ``"ray"`` (one Ray actor per party,
possibly on other machines). Like sklearn's, the configuration is
thread-local, so a ``config_context`` in one thread does not leak into
others; a federation reads it in the thread that creates it (``fit``).
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import threading
from contextlib import contextmanager

__all__ = ["get_config", "set_config", "config_context"]

_BACKENDS = ("threads", "ray")

_global_config = {
    "backend": "threads",
    "ray_actor_options": None,
    "ray_init_kwargs": None,
}
_threadlocal = threading.local()


def _get_threadlocal_config():
    if not hasattr(_threadlocal, "config"):
        _threadlocal.config = dict(_global_config)
    return _threadlocal.config


def get_config():
    """The current configuration, as a new dict.

    Returns
    -------
    config : dict
        ``backend``, ``ray_actor_options`` and ``ray_init_kwargs``.
    """
    return dict(_get_threadlocal_config())


def set_config(backend=None, ray_actor_options=None, ray_init_kwargs=None):
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
        ``ray.is_initialized()`` is false), e.g. ``{"address": "auto"}`` to
        join a running cluster.
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


@contextmanager
def config_context(**new_config):
    """Temporarily change skfed's configuration (see :func:`set_config`).

    Examples
    --------
    >>> import skfed
    >>> with skfed.config_context(backend="threads"):
    ...     skfed.get_config()["backend"]
    'threads'
    """
    old = get_config()
    set_config(**new_config)
    try:
        yield
    finally:
        _get_threadlocal_config().clear()
        _get_threadlocal_config().update(old)
