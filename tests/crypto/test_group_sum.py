"""Joint histograms of grouped features: the same ciphertexts, fewer products."""

import gmpy2
import numpy as np
import pytest

from skfed.crypto._group_sum import feature_groups, raw_group_sum


def _feature_by_feature(ciphertexts, ids, n_groups, nsquare):
    out = np.empty((ids.shape[1], n_groups), dtype=object)
    for f in range(ids.shape[1]):
        for g in range(n_groups):
            acc = gmpy2.mpz(1)
            for c in ciphertexts[ids[:, f] == g]:
                acc = acc * c % nsquare
            out[f, g] = acc
    return out


@pytest.mark.parametrize("n_rows, n_features, n_groups, missing",
                         [(400, 7, 3, 0.1), (200, 6, 33, 0.05), (60, 4, 2, 0.6)])
@pytest.mark.parametrize("n_jobs", [1, 2])
def test_joint_histograms_are_the_same_integers(keypair, n_rows, n_features,
                                                n_groups, missing, n_jobs):
    public_key, private_key = keypair
    rng = np.random.default_rng(n_rows)
    ciphertexts = private_key.raw_encrypt(np.arange(n_rows, dtype=object))
    ids = rng.integers(0, n_groups, size=(n_rows, n_features))
    ids[rng.random(ids.shape) < missing] = -1  # skipped rows
    ids[:5] = -1  # rows skipped by every feature
    expected = _feature_by_feature(ciphertexts, ids, n_groups, public_key.nsquare)
    out = raw_group_sum(ciphertexts, ids, n_groups, public_key.nsquare, n_jobs)
    assert out.shape == (n_features, n_groups)
    assert (out == expected).all()


def test_feature_groups_pair_dense_columns_and_join_binary_ones():
    rng = np.random.default_rng(0)
    dense = rng.integers(0, 33, size=(20000, 4))
    groups = feature_groups(dense, 33)
    assert [g.columns for g in groups] == [[0, 1], [2, 3]]
    # A product per row and column apart; a pair: its rows, two per cell.
    assert sum(g.cost() for g in groups) < 0.6 * dense.size
    binary = rng.integers(0, 2, size=(3000, 12))
    groups = feature_groups(binary, 33)
    assert max(len(g.columns) for g in groups) >= 5
    assert sum(g.cost() for g in groups) < 0.3 * binary.size
    # Few rows: cells would cost more than rows; every feature stays alone.
    few = rng.integers(0, 33, size=(20, 3))
    assert [g.columns for g in feature_groups(few, 33)] == [[0], [1], [2]]
