"""Who releases the GIL around gmpy2's operations (skfed.crypto._parallel).

Party threads keep it through short products (releasing it around each one
while another party wanted it cost 2.3x the CPU); skfed.crypto's helpers
release it around long operations in the calling thread when asked.
"""

import gmpy2
import pytest

from skfed.crypto import generate_keypair
from skfed.crypto import _ou_crt
from skfed.crypto._parallel import fork_map, parallel_map, parallel_tasks
from skfed.federation import Federation


def _flag():
    return bool(gmpy2.get_context().allow_release_gil)


def _seen(chunk):
    return [_flag()] * len(chunk)


def test_a_partys_thread_keeps_the_gil_and_helpers_choose_per_call():
    def inside(state):
        before = _flag()
        released = set(parallel_map(_seen, list(range(8))))
        kept = set(parallel_map(_seen, list(range(8)), release_gil=False))
        tasks = set(parallel_tasks(lambda _: _flag(), [0, 1], release_gil=False))
        forked = set(fork_map(_seen, list(range(8))))  # too few to fork
        return before, released, kept, tasks, forked, _flag()

    with Federation({"a": {}, "b": {}}) as fed:
        results = fed.gather(fed[p].call(inside) for p in "ab")
    for before, released, kept, tasks, forked, after in results:
        assert before is False
        assert released == {True}
        assert kept == {False} and tasks == {False} and forked == {False}
        assert after is False  # restored after each helper


def test_a_reused_party_thread_is_reset_to_keep_the_gil():
    # A party that turned release on and left it must not hand it to the
    # next party served by the same pooled thread.
    with Federation({"a": {}}) as fed:
        fed["a"].call(lambda s: setattr(gmpy2.get_context(),
                                        "allow_release_gil", True)).result()
    with Federation({"a": {}}) as fed:
        assert fed["a"].call(lambda s: _flag()).result() is False


def test_key_owner_ou_encryption_keeps_the_gil_in_a_party(monkeypatch):
    _, private_key = generate_keypair(1024, scheme="ou", warn=False)
    seen = []
    original = _ou_crt.OUCRTEncryptor.encrypt

    def spy(self, plaintexts):
        seen.append(_flag())
        return original(self, plaintexts)

    monkeypatch.setattr(_ou_crt.OUCRTEncryptor, "encrypt", spy)
    long_plaintexts = [(1 << 300) + i for i in range(4)]
    with Federation({"a": {}}) as fed:
        cts = fed["a"].call(lambda s: private_key.raw_encrypt(long_plaintexts)).result()
    assert seen == [False]
    assert [int(m) for m in private_key.raw_decrypt(cts)] == long_plaintexts


@pytest.mark.parametrize("release", [True, False])
def test_the_helpers_restore_the_callers_setting(release):
    context = gmpy2.get_context()
    previous = context.allow_release_gil
    context.allow_release_gil = not release
    try:
        assert set(parallel_map(_seen, [1, 2, 3], release_gil=release)) == {release}
        assert context.allow_release_gil is (not release)
    finally:
        context.allow_release_gil = previous
