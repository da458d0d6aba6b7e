import pickle
import threading
import time

import numpy as np
import pytest
import sklearn

from skfed.federation import (
    Federation,
    FederationTimeoutError,
    Local,
    PartyError,
    record_messages,
)


def _skfed_threads(wait=5.0):
    # Threads end asynchronously after stop(); poll instead of sleeping a
    # fixed time so a loaded machine does not make the test flaky.
    deadline = time.monotonic() + wait
    while True:
        alive = [t for t in threading.enumerate()
                 if t.name.startswith("skfed-party-")]
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.02)


def test_calls_run_on_the_partys_own_thread_with_its_state():
    with Federation({"a": {"x": 1}, "b": {"x": 2}}) as fed:
        names = fed.gather(fed[p].call(lambda s: threading.current_thread().name)
                           for p in ("a", "b"))
        values = fed.gather(fed[p].call(lambda s, k: s.x * k, 10) for p in "ab")
    assert names == ["skfed-party-a", "skfed-party-b"]
    assert values == [10, 20]


def test_one_thread_serialises_calls():
    # Two calls to one party never overlap: the party is an actor.
    active = []

    def work(state):
        state.n = getattr(state, "n", 0) + 1
        active.append(state.n)
        time.sleep(0.01)
        state.n -= 1

    with Federation({"a": {}}) as fed:
        fed.gather([fed["a"].call(work) for _ in range(5)])
    assert max(active) == 1


def test_error_names_party_and_phase():
    def fail(state):
        raise ZeroDivisionError("boom")

    with pytest.raises(PartyError, match=r"Party 'bob' failed during phase "
                       r"'histograms'.*ZeroDivisionError: boom"):
        with Federation({"alice": {}, "bob": {}}) as fed:
            fed["bob"].call(fail, phase="histograms").result()
    assert not _skfed_threads()


def test_timeout_is_clear_and_threads_end():
    with pytest.raises(FederationTimeoutError, match="'slow' did not answer"):
        with Federation({"slow": {}}, timeout=0.05) as fed:
            fed["slow"].call(lambda s: time.sleep(0.5), phase="wait").result()
    assert not _skfed_threads()


def test_threads_stop_on_success_and_keyboard_interrupt():
    with Federation({"a": {}, "b": {}}) as fed:
        assert len(_skfed_threads(wait=0)) == 2
        fed["a"].call(lambda s: 1).result()
    assert not _skfed_threads()
    with pytest.raises(KeyboardInterrupt):
        with Federation({"a": {}}) as fed:
            raise KeyboardInterrupt
    assert not _skfed_threads()


def test_party_threads_reenter_callers_sklearn_config():
    with sklearn.config_context(assume_finite=True):
        with Federation({"a": {}}) as fed:
            seen = fed["a"].call(lambda s: sklearn.get_config()["assume_finite"])
            assert seen.result() is True
    with Federation({"a": {}}) as fed:
        assert fed["a"].call(lambda s: sklearn.get_config()["assume_finite"]
                             ).result() is False


def test_messages_are_counted_only_with_a_sender():
    with record_messages() as rec:
        with Federation({"a": {}, "b": {}}) as fed:
            fed["b"].call(lambda s, v: v.sum(), np.ones(4), sender="a",
                          phase="p1").result()
            fed["b"].call(lambda s, own, v: own + v, Local(np.ones(3)),
                          np.ones(3), sender="a", phase="p2").result()
            fed["b"].call(lambda s, v: v, np.ones(50)).result()  # local work
            summary = fed.summary()
    assert summary.total_messages == 2
    assert summary.total_scalars == 7
    assert summary.by_phase["p2"]["bytes"] == 24
    assert summary.by_link[("a", "b")]["messages"] == 2
    assert summary.by_party["b"]["received_messages"] == 2
    assert [m.phase for m in rec.messages] == ["p1", "p2"]
    assert rec.summary() == summary
    # the summary is plain data: it pickles and has no thread attached
    assert pickle.loads(pickle.dumps(summary)) == summary


def test_unmeasurable_messages_are_refused():
    with Federation({"a": {}, "b": {}}) as fed:
        with pytest.raises(TypeError, match="Cannot measure"):
            fed["b"].call(lambda s, v: v, object(), sender="a")


def test_stopped_party_refuses_calls():
    fed = Federation({"a": {}})
    with fed:
        pass
    with pytest.raises(RuntimeError, match="not running"):
        fed["a"].call(lambda s: 1)
