"""Fixtures shared across the test suite."""

import os

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
    """
    ray = pytest.importorskip("ray")
    if ray.is_initialized():
        ray.shutdown()
    ray.init(address="local", num_cpus=2, resources={"bank_b": 1},
             include_dashboard=False,
             log_to_driver=False, configure_logging=False)
    yield ray
    ray.shutdown()
