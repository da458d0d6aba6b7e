"""Binning, fixed-point packing and encrypted histograms of SecureBoost."""

import numpy as np
import pytest

from skfed.crypto import generate_keypair
from skfed.ensemble._binning import BinMapper
from skfed.ensemble._packing import (
    GradientLayout,
    histogram_sums,
    pack_candidates,
    unpack_candidates,
)


@pytest.fixture(scope="module")
def keys():
    return generate_keypair(256)


def test_bins_match_raw_thresholds():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 3))
    X[:, 2] = rng.integers(0, 5, size=500)  # few distinct values
    X[rng.random(500) < 0.1, 0] = np.nan
    mapper = BinMapper(max_bins=16, random_state=0).fit(X)
    bins = mapper.transform(X)
    assert mapper.n_bins_.tolist() == [16, 16, 5]
    assert mapper.has_missing_.tolist() == [True, False, False]
    assert np.all(bins[np.isnan(X[:, 0]), 0] == mapper.missing_bin)
    # "bin <= v goes left" is exactly the owner's raw test x <= threshold.
    for f in range(3):
        present = ~np.isnan(X[:, f])
        for v in range(mapper.n_bins_[f]):
            assert np.array_equal(bins[present, f] <= v,
                                  X[present, f] <= mapper.threshold(f, v))
    features, bin_ids, missing_left = mapper.candidates()
    # Feature 0: 15 thresholds + "all non-missing left", and 15 with NaN left.
    assert np.sum(features == 0) == 16 + 15
    assert np.sum(missing_left) == 15 and np.all(features[missing_left] == 0)
    assert np.sum(features == 2) == 4


def test_signed_digit_packing_round_trip(keys):
    public_key, private_key = keys
    layout = GradientLayout(n_rows=100, key_size=256)
    assert layout.per_ciphertext >= 1
    rng = np.random.default_rng(1)
    g = rng.uniform(-1, 1, 40)
    h = rng.uniform(0, 0.25, 40)
    eg, eh = layout.exponent_for(g), layout.exponent_for(h)
    qg, qh = layout.quantize(g, eg), layout.quantize(h, eh)
    assert np.all(np.abs(qg) <= 2**layout.precision_bits)
    encrypted = layout.encrypt_pairs(public_key, qg, qh)
    bins = rng.integers(0, 4, size=(40, 2)).astype(np.uint8)
    hist = histogram_sums(encrypted, bins, 5)
    candidates = hist[np.array([0, 0, 1, 1, 1]), np.array([0, 3, 1, 2, 4])]
    message = pack_candidates(candidates, layout.public_part())
    assert message.shape == (-(-5 // layout.per_ciphertext),)
    G, H = unpack_candidates(private_key, message, 5, layout)
    for j, (f, b) in enumerate([(0, 0), (0, 3), (1, 1), (1, 2), (1, 4)]):
        rows = bins[:, f] == b
        assert G[j] == qg[rows].sum() and H[j] == qh[rows].sum()


def test_plaintext_mode_gives_the_same_integer_sums(keys):
    layout = GradientLayout(n_rows=50, key_size=256, with_counts=True)
    rng = np.random.default_rng(2)
    qg = rng.integers(-2**30, 2**30, 50)
    qh = rng.integers(0, 2**30, 50)
    bins = rng.integers(0, 3, size=(50, 1)).astype(np.uint8)
    sums = []
    for public_key, private_key in (keys, generate_keypair(256, plaintext=True)):
        hist = histogram_sums(layout.encrypt_pairs(public_key, qg, qh), bins, 3)
        candidates = hist[np.zeros(3, int), np.arange(3)]
        message = pack_candidates(candidates, layout.public_part())
        sums.append(unpack_candidates(private_key, message, 3, layout))
    for a, b in zip(*sums):
        assert np.array_equal(a, b)
    assert sums[0][2].tolist() == np.bincount(bins[:, 0], minlength=3).tolist()


def test_histograms_are_rerandomised(keys):
    public_key, private_key = keys
    layout = GradientLayout(n_rows=10, key_size=256)
    encrypted = layout.encrypt_pairs(public_key, np.arange(10) - 5, np.arange(10))
    # Bin 2 is empty: its raw sum is the constant 1, an encryption of 0 that
    # anyone can recognise; it must not leave unrandomised.
    hist = histogram_sums(encrypted, np.zeros((10, 1), dtype=np.uint8), 3)
    assert hist.ciphertexts[0, 2] == 1
    first = pack_candidates(hist[0], layout.public_part())
    second = pack_candidates(hist[0], layout.public_part())
    assert 1 not in first.ciphertexts.tolist()
    assert not set(first.ciphertexts.tolist()) & set(second.ciphertexts.tolist())
    for message in (first, second):
        G, H = unpack_candidates(private_key, message, 3, layout)
        assert G.tolist() == [-5, 0, 0] and H.tolist() == [45, 0, 0]


def test_key_too_small_for_a_pair_is_a_clear_error():
    with pytest.raises(ValueError, match="key"):
        GradientLayout(n_rows=10**6, key_size=100)
