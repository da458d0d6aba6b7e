"""The Ray backend runs the same protocols with the same messages."""

import numpy as np
import pytest

import skfed
from skfed.federation import (
    Federation,
    FederationTimeoutError,
    PartyError,
    balanced_tree,
    masked_tree_sum,
    totally_different_trees,
    tree_sum,
)

from .._faults import PROMPT_SECONDS

ray = pytest.importorskip("ray")
pytestmark = [pytest.mark.xdist_group("ray"),
              pytest.mark.usefixtures("ray_instance")]


def _values(state):
    return state.v


def _masked(state):
    return state.v, state.b


def _protocol(backend):
    names = [f"p{i}" for i in range(5)]
    rng = np.random.RandomState(0)
    states = {p: {"v": rng.normal(size=4), "b": rng.uniform(size=4)} for p in names}
    with skfed.config_context(backend=backend):
        with Federation(states) as fed:
            assert fed.backend == backend
            local = {p: fed[p].call(_values) for p in names}
            total = tree_sum(fed, balanced_tree(names), local, phase="sum").result()
            trees = totally_different_trees(names, "p0", "p3", 0)
            masked = masked_tree_sum(fed, trees, _masked).result()
            summary = fed.summary()
    return total, masked, summary


def test_same_results_and_same_messages_as_threads():
    t_total, t_masked, t_summary = _protocol("threads")
    r_total, r_masked, r_summary = _protocol("ray")
    np.testing.assert_array_equal(t_total, r_total)
    np.testing.assert_array_equal(t_masked, r_masked)
    assert t_summary == r_summary
    assert r_summary.total_messages > 0


def _fail(state):
    raise KeyError("no such column")


def _sleep(state, seconds=60):
    # Far longer than any timeout it meets (the actor is killed then): a
    # loaded machine cannot make it end first.
    import time

    time.sleep(seconds)


def test_errors_name_the_party_and_actors_are_killed():
    with skfed.config_context(backend="ray"):
        fed = Federation({"alice": {}, "bob": {}})
        with pytest.raises(PartyError, match="Party 'bob' failed during phase "
                           "'split'.*no such column"):
            with fed:
                handle = fed["bob"]._actor
                fed["bob"].call(_fail, phase="split").result()
    assert fed["bob"]._actor is None
    with pytest.raises(ray.exceptions.RayActorError):
        ray.get(handle.run.remote(_values, (), {}), timeout=30)


def test_timeouts():
    with skfed.config_context(backend="ray"):
        with pytest.raises(FederationTimeoutError, match="'slow' did not answer"):
            with Federation({"slow": {}}, timeout=0.2) as fed:
                fed["slow"].call(_sleep, phase="wait").result()


def _resources(state):
    return ray.get_runtime_context().get_assigned_resources()


def test_parties_can_be_pinned_with_resources():
    options = {"party1": {"resources": {"bank_b": 0.5}}}
    with skfed.config_context(backend="ray", ray_actor_options=options):
        with Federation({"party0": {}, "party1": {}}) as fed:
            pinned = fed["party1"].call(_resources).result()
            free = fed["party0"].call(_resources).result()
    assert pinned.get("bank_b") == 0.5
    assert "bank_b" not in free


def test_unknown_backend():
    with pytest.raises(ValueError, match="backend must be one of"):
        skfed.set_config(backend="mpi")


@pytest.mark.usefixtures("ctrl_c_reaches_python")
def test_party_timeout_config_and_interrupts_as_with_threads():
    import _thread
    import threading
    import time

    with skfed.config_context(backend="ray", party_timeout=0.3):
        with pytest.raises(FederationTimeoutError,
                           match=r"'slow' did not answer within 0.3 s \(phase 'wait'"):
            with Federation({"slow": {}}) as fed:
                handle = fed["slow"]._actor
                fed["slow"].call(_sleep, phase="wait").result()
    with pytest.raises(ray.exceptions.RayActorError):  # told to stop: killed
        ray.get(handle.run.remote(_values, (), {}), timeout=30)
    # Ctrl-C while waiting is the caller's KeyboardInterrupt, not a PartyError.
    with skfed.config_context(backend="ray"):
        with Federation({"slow": {}}) as fed:
            # The party sleeps 60 s: an interrupt that waited for the answer
            # would take that long (the bound is wide for a loaded machine).
            future = fed["slow"].call(_sleep, 60, phase="wait")
            start = time.monotonic()
            with pytest.raises(KeyboardInterrupt):
                # (started inside the raises block: on a loaded machine 0.3 s
                # can pass before the next line runs)
                threading.Timer(0.3, _thread.interrupt_main).start()
                future.result()
            assert time.monotonic() - start < PROMPT_SECONDS


def test_a_dead_idle_party_ends_the_wait_for_another():
    # bob's actor dies while the caller waits for alice's long call: the
    # wait ends at once with bob's error, not when alice answers.
    import time

    with skfed.config_context(backend="ray"):
        with pytest.raises(PartyError, match=r"Party 'bob' is gone: its Ray "
                           r"actor died .*phase 'setup', function _values"):
            with Federation({"alice": {}, "bob": {"v": 1}}) as fed:
                assert fed["bob"].call(_values, phase="setup").result() == 1
                future = fed["alice"].call(_sleep, 60, phase="work")
                ray.kill(fed["bob"]._actor, no_restart=True)
                start = time.monotonic()
                try:
                    future.result()
                finally:
                    elapsed = time.monotonic() - start
    assert elapsed < PROMPT_SECONDS


def _raise_lost(state):
    raise ValueError("lost")


def test_a_failed_call_nobody_waited_for_fails_the_run():
    # As with threads (tests/federation/test_party.py): a call sent without
    # waiting that raised is reported when the run otherwise ends well.
    with skfed.config_context(backend="ray"):
        with pytest.raises(PartyError, match="Party 'a' failed.*ValueError: lost"):
            with Federation({"a": {"v": 1}}) as fed:
                fed["a"].call(_raise_lost)
                fed["a"].call(_values).result()
        # Read failures and calls that succeeded unread are not reported again.
        with Federation({"a": {"v": 2}}) as fed:
            fed["a"].call(_values)
            with pytest.raises(PartyError, match="lost"):
                fed["a"].call(_raise_lost).result()
            assert fed["a"].call(_values).result() == 2


def _actor_and_state(state):
    return ray.get_runtime_context().get_actor_id(), dict(vars(state))


def test_an_idle_party_actor_serves_the_next_federation_with_its_state():
    # Starting a party's actor (a worker process) took 12 to 26 s of each
    # fit on a loaded machine: a run that ends well keeps it, stateless.
    with skfed.config_context(backend="ray"):
        with Federation({"reused": {"v": 1}}) as fed:
            first, state = fed["reused"].call(_actor_and_state).result()
        assert state["v"] == 1
        with Federation({"reused": {"w": 2}}) as fed:
            second, state = fed["reused"].call(_actor_and_state).result()
            handle = fed["reused"]._actor
        assert second == first
        assert "v" not in state and state["w"] == 2
        # a run that fails kills its actors: the next one starts anew
        with pytest.raises(PartyError):
            with Federation({"reused": {}}) as fed:
                fed["reused"].call(_fail, phase="split").result()
        with pytest.raises(ray.exceptions.RayActorError):
            ray.get(handle.run.remote(_values, (), {}), timeout=30)
        with Federation({"reused": {}}) as fed:
            third, _ = fed["reused"].call(_actor_and_state).result()
        assert third != first
