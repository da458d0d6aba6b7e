"""Long crypto loops on a party's thread stop when the party is told to."""

import time

import pytest

from skfed.crypto import _parallel
from skfed.federation import Federation, PartyError

from .._faults import PROMPT_SECONDS


@pytest.mark.parametrize("n_jobs", [None, 2])
def test_parallel_map_stops_between_blocks(monkeypatch, n_jobs):
    monkeypatch.setattr(_parallel, "_STOP_CHECK_ITEMS", 10)
    monkeypatch.setattr(_parallel, "_MIN_ITEMS_PER_JOB", 1)
    done = []

    def slow_block(chunk):
        time.sleep(0.002 * len(chunk))
        done.extend(chunk)
        return chunk

    def work(state):
        return _parallel.parallel_map(slow_block, list(range(2000)), n_jobs)

    with pytest.raises(PartyError, match="PartyStopped"):
        with Federation({"a": {}}) as fed:
            future = fed["a"].call(work, phase="encrypt")
            time.sleep(0.2)
            fed.request_stop()
            future.result(timeout=PROMPT_SECONDS)
    # Event-based: the work (4 s of sleeps, however loaded the machine) did
    # not run to its end (a stop that never came also times the result out).
    assert len(done) < 2000


def test_outside_a_party_nothing_stops():
    assert _parallel.parallel_map(lambda c: [x + 1 for x in c],
                                  list(range(3000))) == list(range(1, 3001))
