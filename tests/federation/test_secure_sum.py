"""The ring encoders of the secure sum: exact float sums and a secure OR."""

import math

import numpy as np
import pytest

from skfed.federation.secure_sum import MAX_ABS, AnyEncoder, ExactSumEncoder

RNG = np.random.RandomState(1)


def test_exact_sum_encoder_is_exact_where_float64_is_not():
    enc = ExactSumEncoder()
    parts = [RNG.randn(5) * 10.0 ** RNG.randint(-30, 30, 5) for _ in range(7)]
    ring = sum(enc.encode(enc.split(p)) for p in parts)
    got = enc.join(enc.decode(ring))
    want = [math.fsum(p[i] for p in parts) for i in range(5)]
    np.testing.assert_array_equal(got, want)
    # float64 addition in the holders' order loses it
    big = [np.array([1e20]), np.array([1.0]), np.array([-1e20])]
    ring = sum(enc.encode(enc.split(p)) for p in big)
    assert enc.join(enc.decode(ring))[0] == 1.0
    assert (big[0] + big[1] + big[2])[0] == 0.0


def test_exact_sum_encoder_refuses_what_it_cannot_hold():
    enc = ExactSumEncoder()
    with pytest.raises(OverflowError, match="rescale"):
        enc.split(np.array([MAX_ABS]))
    with pytest.raises(ValueError, match="non-finite"):
        enc.split(np.array([np.nan]))
    assert enc.split(np.zeros((2, 3))).shape == (2, 3, enc.n_limbs)


def test_any_encoder_is_an_or_and_hides_how_many():
    enc = AnyEncoder()
    flags = [np.array([0, 1, 0, 1]), np.array([0, 1, 1, 0]),
             np.array([0, 1, 0, 0])]
    total = sum(enc.encode(f) for f in flags)
    assert enc.decode(total).tolist() == [False, True, True, True]
    # one set flag or three: the totals are uniform ring elements alike
    draws = np.array([enc.encode(np.ones(4000))]).ravel()
    assert draws.all()
    top_bit = (draws >> np.uint64(63)).mean()
    assert abs(top_bit - 0.5) < 0.05
