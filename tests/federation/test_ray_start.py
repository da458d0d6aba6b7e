"""A Ray instance that skfed starts itself (no ``ray_instance`` fixture)."""

import os

import pytest

import skfed
from skfed.federation import Federation

ray = pytest.importorskip("ray")
pytestmark = [pytest.mark.xdist_group("ray"), pytest.mark.slow]


def _niceness(state):
    return os.nice(0)


def test_party_actors_of_a_ray_skfed_starts_run_at_the_callers_priority(
        monkeypatch):
    # Ray's default worker niceness is 15: any other busy process starved
    # the party actors. skfed's own start sets RAY_worker_niceness=0 for
    # the raylet it starts, and leaves the caller's environment as it was.
    if ray.is_initialized():
        ray.shutdown()
    monkeypatch.delenv("RAY_worker_niceness", raising=False)
    try:
        with skfed.config_context(backend="ray",
                                  ray_init_kwargs={"num_cpus": 1}):
            with Federation({"a": {}}) as fed:
                niceness = fed["a"].call(_niceness).result()
        assert niceness == os.nice(0)
        assert "RAY_worker_niceness" not in os.environ
    finally:
        ray.shutdown()
