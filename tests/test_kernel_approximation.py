import numpy as np
import pytest
from scipy import stats
from sklearn.metrics.pairwise import laplacian_kernel, rbf_kernel

from skfed.kernel_approximation import (
    RandomFourierBasis,
    derive_party_key,
    hashed_uniform,
    keyed_directions,
    keyed_phases,
    random_offsets,
    resolve_gamma,
    spectral_directions,
    variance_from_moments,
)


def test_party_blocks_concatenate_to_the_full_draw():
    full = spectral_directions(7, range(10), range(50, 80), "rbf", 0.3)
    groups = [[0, 1, 2], [3, 4, 5, 6], [7, 8, 9]]
    parts = np.vstack([spectral_directions(7, g, range(50, 80), "rbf", 0.3)
                       for g in groups])
    np.testing.assert_array_equal(full, parts)
    # and any block of features can be drawn alone
    np.testing.assert_array_equal(
        full[:, 5:9], spectral_directions(7, range(10), range(55, 59), "rbf", 0.3))


def test_different_seeds_and_streams_differ():
    a = hashed_uniform(1, range(3), range(4))
    assert not np.allclose(a, hashed_uniform(2, range(3), range(4)))
    assert not np.allclose(a, hashed_uniform(1, range(3), range(4), stream=5))
    assert not np.allclose(a[0], a[1])


def test_spectral_distributions():
    omega = spectral_directions(3, range(40), range(2000), "rbf", 0.5).ravel()
    assert stats.kstest(omega / np.sqrt(2 * 0.5), "norm").pvalue > 1e-3
    lap = spectral_directions(3, range(40), range(2000), "laplacian", 2.0).ravel()
    assert stats.kstest(lap, stats.cauchy(scale=2.0).cdf).pvalue > 1e-3
    b = random_offsets(3, range(20000))
    assert stats.kstest(b / (2 * np.pi), "uniform").pvalue > 1e-3


@pytest.mark.parametrize("kernel, exact", [("rbf", rbf_kernel),
                                           ("laplacian", laplacian_kernel)])
def test_features_converge_to_the_kernel_like_one_over_sqrt_d(kernel, exact):
    X = np.random.RandomState(0).normal(size=(30, 4)) * 0.5
    K = exact(X, gamma=0.4)
    basis = RandomFourierBasis(seed=11, kernel=kernel, gamma=0.4)
    errors = []
    for D in (100, 1600, 25600):
        Z = basis.transform(X, range(D))
        errors.append(np.sqrt(np.mean((Z @ Z.T / D - K) ** 2)))
    # 16x more features: the error drops by about 4x (allow 2.5x to 6.5x)
    for before, after in zip(errors, errors[1:]):
        assert 2.5 < before / after < 6.5, errors
    assert errors[-1] < 0.02


def test_vertical_projections_sum_to_the_central_one():
    X = np.random.RandomState(1).normal(size=(8, 6))
    basis = RandomFourierBasis(seed=5, gamma=0.2)
    groups = [[0, 4], [1, 2, 3], [5]]
    parts = sum(basis.projection(X[:, g], g, range(12)) for g in groups)
    np.testing.assert_allclose(parts, X @ basis.directions(range(6), range(12)))


def test_gamma_resolution():
    X = np.random.RandomState(2).normal(size=(50, 3))
    var = variance_from_moments(X.sum(), (X ** 2).sum(), X.size)
    assert np.isclose(var, X.var())
    assert np.isclose(resolve_gamma("scale", 3, var), 1 / (3 * X.var()))
    assert resolve_gamma(0.5, 3) == 0.5
    assert resolve_gamma("scale", 3, 0.0) == 1.0
    for bad in ("auto", -1.0, 0):
        with pytest.raises(ValueError, match="gamma"):
            resolve_gamma(bad, 3, 1.0)
    with pytest.raises(ValueError, match="kernel"):
        spectral_directions(0, [0], [0], "poly")


def test_keyed_blocks_are_private_per_key_and_drawn_entry_by_feature():
    k0, k1 = derive_party_key(3, 0), derive_party_key(3, 1)
    assert len(k0) == 32 and k0 != k1 and k0 == derive_party_key(3, 0)
    assert derive_party_key(4, 0) != k0
    block = keyed_directions(k0, 5, range(40, 60), "rbf", 0.3)
    # a feature's column does not depend on which other features are drawn,
    # and the first columns of a wider block are the narrower block
    np.testing.assert_array_equal(block[:, 3:7],
                                  keyed_directions(k0, 5, range(43, 47), "rbf", 0.3))
    np.testing.assert_array_equal(block[:2], keyed_directions(k0, 2, range(40, 60),
                                                              "rbf", 0.3))
    other = keyed_directions(k1, 5, range(40, 60), "rbf", 0.3)
    assert abs(np.corrcoef(block.ravel(), other.ravel())[0, 1]) < 0.3
    np.testing.assert_array_equal(keyed_phases(k0, [7, 8]), keyed_phases(k0, [7, 8]))
    assert not np.allclose(keyed_phases(k0, range(10)), keyed_phases(k1, range(10)))


def test_keyed_blocks_follow_the_spectral_measure():
    key = derive_party_key(0, 2)
    omega = keyed_directions(key, 20, range(2000), "rbf", 0.5).ravel()
    assert stats.kstest(omega, "norm", args=(0, 1.0)).pvalue > 1e-3
    lap = keyed_directions(key, 20, range(2000), "laplacian", 2.0).ravel()
    assert stats.kstest(lap, "cauchy", args=(0, 2.0)).pvalue > 1e-3
    b = keyed_phases(key, range(20000))
    assert b.min() >= 0 and b.max() < 2 * np.pi
    assert stats.kstest(b, "uniform", args=(0, 2 * np.pi)).pvalue > 1e-3
