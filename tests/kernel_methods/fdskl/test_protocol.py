"""FDSKL's saved partial sums and needed pairs: exact counts, not timings."""

import numpy as np
import pytest
import scipy.sparse as sp

from skfed.federation import record_messages
from skfed.kernel_methods import FDSKLClassifier
from skfed.kernel_methods._fdskl._protocol import _SLACK, _project, _ring_units, _row_blocks
from skfed.kernel_methods._vertical_features import _UNITS_PER_RADIAN, ring_angles


def _data(n=50, d=4, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(n, d))
    return X, (X[:, 0] + X[:, 1] ** 2 > 1).astype(int)


def _steps(messages):
    """(rows, new feature ids) of every step, from the public broadcasts."""
    out, seen = [], set()
    for msg in messages:
        if msg.phase == "step/indices":
            _, rows, ids = msg.payload[0]
            if int(ids[0]) not in seen:
                seen.add(int(ids[0]))
                out.append((np.asarray(rows), np.asarray(ids)))
    return out


@pytest.mark.parametrize("cache_size", [200, 0])
def test_each_pair_of_a_saved_row_crosses_once(cache_size):
    # Two parties: every needed (row, feature) pair is one T1 entry. A saved
    # row needs the features created since its last visit, so over the fit
    # it receives as many as there were at its last visit; a row past the
    # budget (cache_size=0) receives every earlier feature at every visit.
    X, y = _data()
    m = 3
    est = FDSKLClassifier(partition=2, max_iter=15, batch_size=10,
                          n_components_per_iter=m, cache_size=cache_size,
                          random_state=0)
    with record_messages() as rec:
        est.fit(X, y)
    steps = _steps(rec.messages)
    assert len(steps) == 15
    last = {}
    expected_plain = 0
    for t, (rows, _) in enumerate(steps):
        for r in rows:
            last[int(r)] = t
        expected_plain += len(rows) * (t + 1) * m
    expected_saved = sum((t + 1) * m for t in last.values())
    sent = sum(m.payload[0].size for m in rec.messages
               if m.phase == "step/features/T1")
    assert sent == (expected_saved if cache_size else expected_plain)
    # 4 bytes per entry: angles in Z_2^32
    by_phase = est.communication_.by_phase["step/features/T1"]
    assert by_phase["bytes"] == 4 * sent


def test_the_byte_budget_counts_a_partial_sum_and_a_counter_per_row():
    X, y = _data()
    # one output and one owner: 16 bytes per saved row
    for n_rows in (0, 7, 50):
        est = FDSKLClassifier(partition=2, max_iter=2, batch_size=10,
                              cache_size=16 * n_rows / 2**20,
                              random_state=0).fit(X, y)
        assert est._privacy_public["n_cache_rows"] == n_rows
        assert (est._privacy_public["cache_slot"] >= 0).sum() == n_rows


def test_row_blocks_cover_every_row_once_by_increasing_start():
    rng = np.random.RandomState(0)
    for _ in range(20):
        width = int(rng.randint(1, 200))
        start = rng.choice(rng.randint(0, width + 1, size=6), size=70)
        blocks = _row_blocks(start, width)
        rows = np.concatenate([idx for idx, _ in blocks])
        assert sorted(rows) == list(range(70))
        assert np.all(np.diff(start[rows]) >= 0)
        for idx, exact in blocks:
            assert exact == (len(set(start[idx])) == 1)
            need = (width - start[idx]).sum()
            dense = (width - start[idx].min()) * len(idx)
            # a merged block wastes at most _SLACK of its needed pairs
            assert exact or dense - need <= _SLACK * need


def test_sparse_projection_equals_the_dense_one():
    rng = np.random.RandomState(0)
    dense = sp.random(30, 400, density=0.02, random_state=rng).toarray()
    dense[3] = 0  # an empty row
    X = sp.csr_matrix(dense)
    omega = rng.normal(size=(400, 50))
    ids = np.array([4, 0, 17, 49, 33])
    np.testing.assert_allclose(_project(X, omega, ids),
                               X.toarray() @ omega[:, ids], atol=1e-12)
    np.testing.assert_allclose(_project(X.toarray(), omega, ids),
                               X.toarray() @ omega[:, ids], atol=1e-12)


def test_ring_units_by_the_mantissa_equal_the_casts():
    # Ring elements read off the mantissa of units + 1.5 * 2^52 equal the
    # rounding and casts of ring_angles, ties and negative angles included.
    rng = np.random.RandomState(0)
    units = np.concatenate([rng.normal(scale=s, size=2000) * _UNITS_PER_RADIAN
                            for s in (1.0, 1e3, 1e5)])
    units = np.concatenate([units, [0.5, 1.5, 2.5, -0.5, -1.5, -3.0, 0.0]])
    bound = np.abs(units).max()
    expected = ring_angles(units.copy(), scaled=True)
    fast = _ring_units(units.copy(), bound)
    assert fast.dtype == np.uint32 and fast.flags["C_CONTIGUOUS"]
    np.testing.assert_array_equal(fast, expected)
    # Past the bound the casts are used.
    np.testing.assert_array_equal(_ring_units(units.copy(), 2.0**51), expected)
