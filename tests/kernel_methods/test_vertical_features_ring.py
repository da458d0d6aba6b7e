"""The fast ring encoding of angles and the raw units of the coefficient store."""

import numpy as np
import pytest

from skfed.kernel_methods._vertical_features import (
    ANGLES,
    CoefficientStore,
    ring_angles,
)


def _ring_distance(a, b):
    d = (a.astype(np.int64) - b.astype(np.int64)) % 2**32
    return np.minimum(d, 2**32 - d)


def test_ring_angles_match_the_encoder_within_one_unit():
    rng = np.random.RandomState(0)
    values = np.concatenate([rng.normal(scale=30, size=100_000),
                             [0.0, -0.0, np.pi, -np.pi, 2 * np.pi, -1e-12, 1e6]])
    fast = ring_angles(values)
    assert fast.dtype == np.uint32
    assert _ring_distance(fast, ANGLES.encode(values)).max() <= 1
    # sums of encodings decode to sums of angles (what the masked sum needs)
    a, b = values[:1000], values[1000:2000]
    with np.errstate(over="ignore"):
        total = ring_angles(a) + ring_angles(b)
    np.testing.assert_allclose(np.cos(ANGLES.decode(total)), np.cos(a + b),
                               atol=1e-8)


def test_ring_angles_fall_back_for_huge_angles_and_refuse_non_finite():
    huge = np.array([3e18, -7e17, 1.0])
    np.testing.assert_array_equal(ring_angles(huge), ANGLES.encode(huge))
    with pytest.raises(ValueError, match="non-finite"):
        ring_angles(np.array([1.0, np.inf]))
    assert ring_angles(np.empty(0)).shape == (0,)


def test_store_reports_its_fold_so_raw_sums_can_follow():
    store = CoefficientStore(n_outputs=1)
    store.add([0, 1], [[1.0], [2.0]])
    phi = np.array([[0.5, -1.0]])
    saved = phi @ store.raw_coef           # a sum kept in raw units
    folds = 1.0
    for _ in range(400):
        folds *= store.decay(0.3)
    assert folds != 1.0                   # the scale was folded in at least once
    np.testing.assert_allclose(store.raw_coef * store.scale, store.coef)
    # the saved sum times the folds and the running scale is f(x) now
    np.testing.assert_allclose(saved * folds * store.scale, phi @ store.coef,
                               rtol=1e-12)
