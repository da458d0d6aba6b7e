"""Fixed-point packing and encrypted histogram sums of SecureBoost."""

import numpy as np
import pytest

from skfed.crypto import generate_keypair
from skfed.ensemble._packing import (
    GradientLayout,
    histogram_sums,
    pack_candidates,
    unpack_candidates,
)


@pytest.fixture(scope="module")
def keys():
    return generate_keypair(256)


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
