"""Fixtures shared across the test suite."""

import pytest


@pytest.fixture(scope="session")
def ray_instance():
    """A local Ray instance (2 CPUs, a custom resource for pinning tests).

    Session-scoped: the modules that use it run in one xdist worker (their
    tests are in the ``ray`` xdist group), so Ray starts once there.
    """
    ray = pytest.importorskip("ray")
    if ray.is_initialized():
        ray.shutdown()
    ray.init(num_cpus=2, resources={"bank_b": 1}, include_dashboard=False,
             log_to_driver=False, configure_logging=False)
    yield ray
    ray.shutdown()
