import _thread
import pickle
import threading
import time

import numpy as np
import pytest
import sklearn

import skfed
from skfed.federation import (
    Federation,
    FederationTimeoutError,
    Local,
    PartyError,
    check_stop,
    record_messages,
)

from .._faults import PROMPT_SECONDS


def _skfed_threads(wait=PROMPT_SECONDS):
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
    # The party hangs (30 s unless stopped), not sleeps a little longer than
    # the timeout: a loaded machine could let a short sleep end first.
    with pytest.raises(FederationTimeoutError, match="'slow' did not answer"):
        with Federation({"slow": {}}, timeout=0.05) as fed:
            fed["slow"].call(_cooperative_hang, phase="wait").result()
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


# -- faults: interrupts, timeouts, stop flag, thread reuse --------------------

def _cooperative_hang(state):
    # A long local loop that checks its stop flag, as protocol loops do.
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        check_stop(state)
        time.sleep(0.005)
    raise AssertionError("the party was never told to stop")


@pytest.mark.usefixtures("ctrl_c_reaches_python")
def test_interrupt_while_waiting_is_a_keyboard_interrupt_and_stops_parties():
    with Federation({"a": {}}) as fed:  # warm the thread pool
        fed["a"].call(lambda s: None).result()
    baseline = threading.active_count()
    timer = threading.Timer(0.3, _thread.interrupt_main)
    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt):  # not a PartyError
        with Federation({"a": {}, "b": {}}, timeout=30) as fed:
            timer.start()  # once the parties run, however slow the machine
            fed.gather([fed[p].call(_cooperative_hang, phase="wait")
                        for p in ("a", "b")])
    assert time.monotonic() - start < PROMPT_SECONDS  # failure mode: 30 s
    assert not _skfed_threads()
    assert threading.active_count() <= baseline + 1  # at most one new idle thread


def test_timeout_names_party_phase_and_function_and_stops_the_run():
    # Sound calls wait with a bound far above any scheduling delay (the
    # run's 0.3 s is for the hang alone: a loaded machine can take longer
    # than that to run a call that does nothing).
    with Federation({"a": {}, "b": {}}, timeout=0.3) as fed:
        fed["a"].call(lambda s: None, phase="setup").result(timeout=PROMPT_SECONDS)
    baseline = threading.active_count()
    for _ in range(3):  # repeated timeouts do not pile threads up
        start = time.monotonic()
        with skfed.config_context(party_timeout=0.3):
            with pytest.raises(FederationTimeoutError) as info:
                with Federation({"a": {}, "b": {}}) as fed:
                    other = fed["b"].call(_cooperative_hang, phase="histogram")
                    fed["a"].call(lambda s: None, phase="histogram").result(
                        timeout=PROMPT_SECONDS)
                    fed["a"].call(_cooperative_hang).result()  # local work
        assert time.monotonic() - start < PROMPT_SECONDS  # failure mode: 30 s
        with pytest.raises(PartyError, match="PartyStopped"):
            # b, working on the same run, stopped too
            other.result(timeout=PROMPT_SECONDS)
        message = str(info.value)
        assert "Party 'a' did not answer within 0.3 s" in message
        assert "phase 'histogram' (local work)" in message
        assert "_cooperative_hang" in message and "party_timeout" in message
        assert (info.value.party, info.value.phase) == ("a", "histogram")
        assert not _skfed_threads()
    assert threading.active_count() <= baseline


def test_party_timeout_is_a_validated_config_setting():
    assert skfed.get_config()["party_timeout"] == 600.0
    with skfed.config_context(party_timeout=None):
        assert Federation({"a": {}}).timeout is None
        with skfed.config_context(party_timeout=5):
            assert Federation({"a": {}}).timeout == 5.0
    assert Federation({"a": {}}, timeout=2).timeout == 2
    for bad in (0, -1, "soon", True):
        with pytest.raises(ValueError, match="party_timeout"):
            skfed.set_config(party_timeout=bad)


def test_a_failure_stops_the_other_parties_of_the_step():
    def fail(state):
        raise ValueError("bad block")

    start = time.monotonic()
    with pytest.raises(PartyError, match="Party 'a' failed during phase 'step'"):
        with Federation({"a": {}, "b": {}}, timeout=30) as fed:
            fed.gather([fed["a"].call(fail, phase="step"),
                        fed["b"].call(_cooperative_hang, phase="step")])
    assert time.monotonic() - start < PROMPT_SECONDS  # failure mode: 30 s
    assert not _skfed_threads()


def test_a_failed_call_nobody_waited_for_fails_the_run():
    def fail(state):
        raise ValueError("lost")

    with pytest.raises(PartyError, match="Party 'a' failed.*ValueError: lost"):
        with Federation({"a": {}}) as fed:
            fed["a"].call(fail)
            fed["a"].call(lambda s: None).result()


def test_after_a_failed_call_the_partys_later_calls_fail_with_its_error():
    # Protocol code need not wait for calls whose answer it does not use:
    # the failure reaches the next answer it reads, naming the call that
    # failed, and no later call runs on the party's broken state.
    def fail(state):
        raise ValueError("bad block")

    ran = []
    with pytest.raises(PartyError, match="Party 'a' failed during phase "
                       "'receive' while running .*fail.*bad block"):
        with Federation({"a": {"ran": ran}}) as fed:
            fed["a"].call(fail, phase="receive")
            fed["a"].call(lambda state: state.ran.append(1), phase="use").result()
    assert ran == []


def test_stop_flag_is_seen_by_the_state_and_by_check_stop():
    with Federation({"a": {}}) as fed:
        assert fed["a"].call(lambda s: s.should_stop()).result() is False
        fed.request_stop()
        with pytest.raises(PartyError, match="PartyStopped"):
            fed["a"].call(lambda s: 1).result()  # refused between steps
    check_stop()  # outside a party: nothing to stop


def test_party_threads_are_reused_across_runs():
    def ident(state):
        return threading.get_ident()

    with Federation({"a": {}}) as fed:
        first = fed["a"].call(ident).result()
    seen = set()
    for _ in range(5):
        with Federation({"a": {}}) as fed:
            seen.add(fed["a"].call(ident).result())
    assert first in seen and len(seen) <= 2
    assert [t.name for t in threading.enumerate()].count("skfed-idle-worker") >= 1


def test_party_threads_reenter_callers_skfed_config():
    with skfed.config_context(allow_insecure_keys=False, party_timeout=7):
        with Federation({"a": {}}) as fed:
            seen = fed["a"].call(lambda s: skfed.get_config()).result()
    assert seen["allow_insecure_keys"] is False and seen["party_timeout"] == 7.0


def test_party_errors_pickle():
    error = PartyError("a", "p", "fn", ValueError("x"))
    again = pickle.loads(pickle.dumps(error))
    assert str(again) == str(error) and again.party == "a" and again.phase == "p"
    timeout = FederationTimeoutError("slow", "a", "p", "fn")
    assert pickle.loads(pickle.dumps(timeout)).function == "fn"


def test_a_call_racing_the_stop_never_waits_forever():
    # A driver thread of its own (as AVFKAM's) keeps calling while the
    # federation stops: every call must fail or finish, none hang.
    def driver(fed, errors):
        try:
            while True:
                fed["a"].call(lambda s: None).result()
        except Exception as exc:  # noqa: BLE001 - the expected end
            errors.append(exc)

    for _ in range(30):
        errors = []
        with Federation({"a": {}}, timeout=30) as fed:
            thread = threading.Thread(target=driver, args=(fed, errors))
            thread.start()
            time.sleep(0.005)
        thread.join(PROMPT_SECONDS)
        assert not thread.is_alive()
        assert isinstance(errors[0], (RuntimeError, PartyError))


def test_a_timeout_names_the_call_that_holds_the_party_up():
    # The call that times out may be queued behind the one that hangs.
    with pytest.raises(FederationTimeoutError,
                       match=r"within 0.3 s \(phase 'next', function .*\); it was "
                             r"still busy with phase 'slow-step' \(function "
                             r".*_cooperative_hang\), started \d+\.\d s before"):
        with Federation({"a": {}}, timeout=0.3) as fed:
            fed["a"].call(_cooperative_hang, phase="slow-step")
            fed["a"].call(lambda s: None, phase="next").result()
    assert not _skfed_threads()
