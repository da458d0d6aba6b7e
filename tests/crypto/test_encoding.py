"""Fixed-point encoding and packing, without encryption."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from skfed.crypto import PackedEncoder
from skfed.crypto.encoding import choose_exponent, decode, encode, signed_from_residues

MAX_INT = (1 << 1021) // 3 - 1  # about that of a 1024-bit key


def test_choose_exponent_keeps_float_mantissa():
    x = np.array([3.0, -1.5, 1e-3])
    e = choose_exponent(x)
    # The largest magnitude keeps 53 bits, so its mantissa is < 2**53.
    assert abs(3.0 * 2.0**-e) < 2**53
    assert choose_exponent(np.array([0.5, 0.25])) == -2
    assert choose_exponent(np.array([4.0])) == 2
    assert choose_exponent(np.zeros(3)) == 0
    assert choose_exponent(np.array([1, 2, 3])) == 0
    e = choose_exponent(np.array([1.0]), precision=1e-6)
    assert e == math.floor(math.log2(1e-6))


@settings(max_examples=60, deadline=None)
@given(
    hnp.arrays(
        np.float64,
        st.integers(1, 20),
        elements=st.floats(-1e12, 1e12, allow_nan=False, allow_subnormal=False),
    ),
    st.sampled_from([None, 1e-3, 1e-9, 2.0**-60]),
)
def test_encode_decode_round_trip(x, precision):
    e = choose_exponent(x, precision)
    back = decode(encode(x, e, MAX_INT), e)
    # Rounding to a multiple of 2**e, then correctly rounded back to float64.
    np.testing.assert_array_less(
        np.abs(back - x), 2.0 ** (e - 1) + 2.0**-52 * np.abs(x) + 1e-300
    )


def test_integers_exact_and_int64():
    x = np.array([-(2**62), 0, 7, 2**62], dtype=np.int64)
    m = encode(x, 0, MAX_INT)
    out = decode(m, 0, is_integer=True)
    assert out.dtype == np.int64
    np.testing.assert_array_equal(out, x)


def test_overflow_and_non_finite_are_refused():
    with pytest.raises(ValueError, match="largest magnitude encodable"):
        encode(np.array([1e300]), -60, MAX_INT)
    with pytest.raises(ValueError, match="largest magnitude encodable"):
        encode(np.array([11.0]), 0, 10)
    for bad in (np.nan, np.inf, -np.inf):
        with pytest.raises(ValueError, match="NaN or infinite"):
            choose_exponent(np.array([1.0, bad]))


def test_signed_from_residues_detects_overflow():
    n = 1000003
    max_int = n // 3 - 1
    res = np.array([5, n - 5], dtype=object)
    np.testing.assert_array_equal(signed_from_residues(res, n, max_int), [5, -5])
    with pytest.raises(OverflowError):
        signed_from_residues(np.array([n // 2], dtype=object), n, max_int)


@pytest.mark.parametrize("max_summands", [1, 2, 1000, 10**6, 2**20])
def test_slot_width_holds_extreme_sums(max_summands):
    # Worst cases: every summand at +bound (slot content 2 * offset each) or
    # at -bound (content 0). A sum of max_summands of them must stay in its
    # slot, i.e. below 2**slot_bits, and unpack to max_summands * value.
    enc = PackedEncoder([1.0, 0.25, 3.0], max_summands=max_summands)
    assert 2 * max_summands * enc.offset < 2**enc.slot_bits
    for values in ([1.0, -0.25, 3.0], [-1.0, 0.25, -3.0]):
        packed = enc.pack(np.array([values]))
        total = packed * max_summands  # Python ints: the sum of k equal summands
        out = enc.unpack(total, counts=np.array([max_summands]))
        np.testing.assert_allclose(out[0], max_summands * np.array(values), rtol=1e-12)


@settings(max_examples=40, deadline=None)
@given(
    st.integers(1, 5),
    st.integers(1, 10**6),
    st.integers(8, 52),
    st.data(),
)
def test_pack_sum_unpack(n_slots, max_summands, precision_bits, data):
    bounds = np.array(
        data.draw(st.lists(st.floats(1e-3, 1e3), min_size=n_slots, max_size=n_slots))
    )
    enc = PackedEncoder(bounds, max_summands, precision_bits=precision_bits)
    n = data.draw(st.integers(1, 8))
    size = n * n_slots
    unit = np.array(
        data.draw(st.lists(st.floats(-1, 1), min_size=size, max_size=size))
    ).reshape(n, n_slots)
    values = unit * bounds
    packed = enc.pack(values)
    # Emulate many summands: each row repeated k_i times, sum(k) <= max_summands.
    reps = np.array(
        data.draw(st.lists(st.integers(0, max_summands // n), min_size=n, max_size=n))
    )
    total = sum(int(p) * int(k) for p, k in zip(packed, reps))
    out = enc.unpack(np.array([total], dtype=object), counts=np.array([reps.sum()]))[0]
    expected = (values * reps[:, None]).sum(axis=0)
    tolerance = reps.sum() * bounds * 2.0**-precision_bits + 1e-12 * np.abs(expected)
    assert np.all(np.abs(out - expected) <= tolerance)


def test_packed_errors():
    enc = PackedEncoder([1.0], max_summands=10)
    with pytest.raises(ValueError, match="exceed its bound"):
        enc.pack(np.array([[1.5]]))
    with pytest.raises(ValueError, match="shape"):
        enc.pack(np.array([1.0, 2.0]))
    with pytest.raises(OverflowError, match="max_summands"):
        enc.unpack(enc.pack(np.array([[0.5]])), counts=np.array([11]))
    big = PackedEncoder(np.ones(40), max_summands=10**6)
    with pytest.raises(ValueError, match="do not fit"):
        big.check_capacity(MAX_INT)
    assert PackedEncoder.max_slots(1024, 10**6) == 14
