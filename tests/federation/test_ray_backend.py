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
    # Ctrl-C while waiting is the caller's KeyboardInterrupt, not a PartyError,
    # and it leaves the federation at once, as it leaves a fit: the party's
    # call is not waited for. (An interrupt caught inside the block would
    # end the run "well", and a run that ended well waits for its calls.)
    with skfed.config_context(backend="ray"):
        with pytest.raises(KeyboardInterrupt):
            with Federation({"slow": {}}) as fed:
                # The party sleeps 60 s: an interrupt that waited for the
                # answer would take that long (the bound is wide for a loaded
                # machine).
                future = fed["slow"].call(_sleep, 60, phase="wait")
                start = time.monotonic()
                # (started here: on a loaded machine 0.3 s can pass before
                # the next line runs)
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
        # A read failure is not reported again, a call that succeeded unread
        # is not reported; after a failure the party's calls fail with it.
        with Federation({"a": {"v": 2}}) as fed:
            assert fed["a"].call(_values).result() == 2
            fed["a"].call(_values)
            with pytest.raises(PartyError, match="lost"):
                fed["a"].call(_raise_lost).result()
            with pytest.raises(PartyError, match="lost"):
                fed["a"].call(_values).result()


def _count_calls(monkeypatch):
    """The names of the actor methods called from now on, and the objects
    the driver fetched (``ray.get``)."""
    import ray.actor

    methods, fetched = [], []
    remote, get = ray.actor.ActorMethod._remote, ray.get

    def counted_remote(self, *args, **kwargs):
        methods.append(self._method_name)
        return remote(self, *args, **kwargs)

    def counted_get(refs, *args, **kwargs):
        fetched.extend(refs if isinstance(refs, list) else [refs])
        return get(refs, *args, **kwargs)

    monkeypatch.setattr(ray.actor.ActorMethod, "_remote", counted_remote)
    monkeypatch.setattr(ray, "get", counted_get)
    return methods, fetched


def test_partial_sums_go_party_to_party_and_own_calls_in_one_task(monkeypatch):
    # A Ray task costs about a millisecond of CPU on each side: a party's
    # own calls go together, and a partial sum goes straight to the next
    # party, not through the driver. ((p0, p1), (p2, p3)): 4 + 3 calls.
    names = ["p0", "p1", "p2", "p3"]
    states = {p: {"v": np.full(3, float(i))} for i, p in enumerate(names)}
    summaries = {}
    for backend in ("threads", "ray"):
        with skfed.config_context(backend=backend):
            with Federation(states) as fed:
                for p in names:
                    fed[p].call(_values).result()
                if backend == "ray":
                    methods, fetched = _count_calls(monkeypatch)
                local = {p: fed[p].call(_values) for p in names}
                total = tree_sum(fed, balanced_tree(names), local, phase="sum")
                np.testing.assert_array_equal(total.result(), np.full(3, 6.0))
                read = list(fetched) if backend == "ray" else None
                summaries[backend] = fed.summary()
                monkeypatch.undo()
    assert methods == ["run_batch"] * 4  # was 7, one per call
    # the driver fetched the total (then the message sizes), no partial sum
    assert read and all(ref == total._future for ref in read)
    assert summaries["ray"] == summaries["threads"]
    assert summaries["ray"].total_messages == 3


def test_a_failure_passed_on_names_the_party_that_failed():
    with skfed.config_context(backend="ray"):
        with pytest.raises(PartyError, match="Party 'p1' failed during phase "
                           "'local'.*no such column"):
            with Federation({"p0": {"v": 1.0}, "p1": {}, "p2": {"v": 2.0}}) as fed:
                local = {"p0": fed["p0"].call(_values),
                         "p1": fed["p1"].call(_fail, phase="local"),
                         "p2": fed["p2"].call(_values)}
                tree_sum(fed, (("p0", "p1"), "p2"), local, phase="sum").result()


def test_a_timeout_names_the_party_that_holds_the_run_up():
    # The driver waits for p0's sum, which waits for the slow party's part.
    with skfed.config_context(backend="ray"):
        with pytest.raises(FederationTimeoutError, match="Party 'p0' did not "
                           "answer.*party 'slow' was still running its calls "
                           r"\(_sleep\)"):
            with Federation({"p0": {"v": 1.0}, "slow": {"v": 2.0}}) as fed:
                for p in ("p0", "slow"):
                    fed[p].call(_values).result()
                local = {p: fed[p].call(_sleep if p == "slow" else _values)
                         for p in ("p0", "slow")}
                tree_sum(fed, ("p0", "slow"), local, phase="sum").result(timeout=2)


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
