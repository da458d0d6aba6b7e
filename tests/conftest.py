"""Fixtures shared across the test suite."""

import os
import signal

import pytest

# The suite uses small Paillier keys (512 bits) and small PSI groups to stay
# fast: it opts in to insecure keys once, for this process and every process
# it starts (xdist workers set it again when they import this file). Tests of
# the key policy itself turn it off with skfed.config_context. The warning
# that small keys still raise is filtered in setup.cfg.
os.environ["SKFED_ALLOW_INSECURE_KEYS"] = "1"


@pytest.fixture(scope="module")
def ray_instance():
    """A local Ray instance (2 CPUs, a custom resource for pinning tests).

    Module-scoped, and the modules that use it are in the ``ray`` xdist
    group: Ray is shut down after each such module, so the tests that the
    same xdist worker runs afterwards can fork again (``fork_available``
    refuses to fork while Ray is initialised in the process).

    Ray starts its worker processes (the party actors) at nice 15, below
    everything else on the machine: with both cores pinned by other
    processes, starting one actor took ~55 s instead of ~2 s, and a Ray
    test a minute or more. The suite's workers run at the caller's
    priority (``RAY_worker_niceness=0``, read by the raylet it starts), as
    the party threads of the threads backend do.
    """
    ray = pytest.importorskip("ray")
    if ray.is_initialized():
        ray.shutdown()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RAY_worker_niceness", "0")
        ray.init(address="local", num_cpus=2, resources={"bank_b": 1},
                 include_dashboard=False,
                 log_to_driver=False, configure_logging=False)
    yield ray
    ray.shutdown()


@pytest.fixture
def ctrl_c_reaches_python():
    """Ctrl-C reaches Python as it does from a terminal.

    A shell without job control (``cmd &`` in a script, ``nohup``) starts
    the suite with SIGINT ignored, and then ``_thread.interrupt_main`` (how
    the tests press Ctrl-C) does nothing: the test waits for a party
    instead. The tests that press Ctrl-C install Python's handler for their
    duration (tests run in the main thread, where signal handlers are set).
    """
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)
