"""Obfuscators computed ahead: correct, fresh, and each used exactly once."""

import multiprocessing
import pickle
import time

import numpy as np
import pytest

from skfed.crypto import generate_keypair
from skfed.crypto._parallel import fork_available
from skfed.crypto._precompute import ObfuscatorPool

pytestmark = pytest.mark.skipif(not fork_available(), reason="needs fork")


def _wait_for(pool, count, timeout=60.0):
    # Generous: a loaded machine may run the worker late.
    deadline = time.monotonic() + timeout
    while len(pool) < count and time.monotonic() < deadline:
        time.sleep(0.02)
    assert len(pool) == count


def _workers():
    return [p for p in multiprocessing.active_children()
            if p.name == "skfed-obfuscators"]


def test_pool_hands_out_each_obfuscator_once(keypair):
    public_key, private_key = keypair
    pool = ObfuscatorPool(private_key.crt_djn.obfuscators, nice=0)
    assert pool.start(300)
    _wait_for(pool, 300)
    first = pool.take(200)
    second = pool.take(200)  # only 100 left
    assert (len(first), len(second), len(pool)) == (200, 100, 0)
    assert pool.take(5) == []
    values = [int(s) for s in first + second]
    assert len(set(values)) == 300
    # Each is an n-th residue modulo n**2: an encryption of 0.
    assert not any(private_key.raw_decrypt(np.array(first + second, dtype=object)))
    # A new batch is fresh too.
    pool.start(50)
    _wait_for(pool, 50)
    third = [int(s) for s in pool.take(50)]
    assert not set(third) & set(values)
    pool.close()
    assert not _workers()


def test_encryption_uses_precomputed_obfuscators_once(keypair):
    public_key, _ = keypair
    _, private_key = generate_keypair(key_size=512)  # a pool of its own
    public_key = private_key.public_key
    n, nsquare = public_key.n, public_key.nsquare
    assert not private_key.precompute_obfuscators(100, n_jobs=2)  # too few
    assert not private_key.precompute_obfuscators(100, min_count=0)  # one core
    assert private_key.precompute_obfuscators(100, min_count=0, nice=0, n_jobs=2)
    pool = private_key._pool
    _wait_for(pool, 100)
    ready = [int(s) for s in pool._ready]
    plaintexts = np.arange(-60, 90, dtype=object)  # 150 > 100 ready
    ciphertexts = private_key.raw_encrypt(plaintexts)
    assert len(pool) == 0
    residues = private_key.raw_decrypt(ciphertexts)
    assert [int(r) for r in residues] == [int(m) % int(n) for m in plaintexts]
    # c = (1 + m n) s: the first 100 obfuscators are the pool's, in order;
    # the other 50 were computed afresh, none equal to a pooled one.
    used = [int(c) * pow(1 + int(m) * int(n), -1, int(nsquare)) % int(nsquare)
            for c, m in zip(ciphertexts, plaintexts)]
    assert used[:100] == ready
    assert len(set(used)) == 150
    again = private_key.raw_encrypt(plaintexts[:100])
    reused = {int(c) * pow(1 + int(m) * int(n), -1, int(nsquare)) % int(nsquare)
              for c, m in zip(again, plaintexts)}
    assert not reused & set(used)


def test_precomputed_false_and_stop_leave_nothing_behind(keypair):
    _, private_key = generate_keypair(key_size=512)
    assert private_key.precompute_obfuscators(40, min_count=0, nice=0, n_jobs=2)
    _wait_for(private_key._pool, 40)
    private_key.raw_encrypt(np.arange(10, dtype=object), precomputed=False)
    assert len(private_key._pool) == 40  # untouched
    # The pool never travels with the key.
    clone = pickle.loads(pickle.dumps(private_key))
    assert "_pool" not in clone.__dict__
    # Stopped while still computing:
    private_key.precompute_obfuscators(10_000, min_count=0, nice=0, n_jobs=2)
    private_key.stop_precomputing()
    assert len(private_key._pool) == 0
    assert not _workers()


def test_secureboost_with_precomputed_obfuscators_is_lossless(monkeypatch):
    # SecureBoost's active party precomputes each next round's obfuscators;
    # force it on a small table (the policy waits for 2048-bit-sized work)
    # and let every worker finish before its round takes the obfuscators,
    # so the path is exercised whatever the machine's load.
    from sklearn.datasets import make_classification

    from skfed.crypto import paillier
    from skfed.ensemble import SecureBoostClassifier

    monkeypatch.setattr(paillier, "_MIN_ITEMS_PER_PROCESS_2048", 1)
    take, taken = ObfuscatorPool.take, []

    def finished_take(self, count):
        if self._process is not None:
            self._process.join(timeout=60)
        out = take(self, count)
        taken.append(len(out))
        return out

    monkeypatch.setattr(ObfuscatorPool, "take", finished_take)
    X, y = make_classification(120, 6, random_state=0)
    params = dict(n_estimators=3, max_depth=2, random_state=0, n_jobs=2)
    model = SecureBoostClassifier(key_size=512, **params).fit(X, y)
    plain = SecureBoostClassifier(encryption=None, **params).fit(X, y)
    assert taken == [120, 120]  # rounds 2 and 3 used only precomputed ones
    np.testing.assert_array_equal(model.predict_proba(X), plain.predict_proba(X))
    assert not _workers()
