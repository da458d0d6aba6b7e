import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from skfed.losses import PAIRWISE_LOSSES, POINTWISE_LOSSES, get_loss

F = np.linspace(-3, 3, 61) + 0.013  # avoid the kinks exactly


# classification losses take labels in {-1, +1}; the squared loss any real
_CASES = [(n, y) for n in sorted(POINTWISE_LOSSES) for y in (-1.0, 1.0)] + [
    ("squared", 0.4)]


@pytest.mark.parametrize("name, y", _CASES)
def test_pointwise_derivative_matches_finite_differences(name, y):
    loss = get_loss(name)
    eps = 1e-6
    numeric = (loss(y, F + eps) - loss(y, F - eps)) / (2 * eps)
    kinks = {"hinge": [y], "smooth_hinge": [0, y]}.get(name, [])
    smooth = np.all([np.abs(F - k) > 1e-3 for k in kinks], axis=0) if kinks else True
    np.testing.assert_allclose(loss.derivative(y, F)[smooth], numeric[smooth],
                               atol=1e-5)


def test_table1_values():
    sh = get_loss("smooth_hinge")
    np.testing.assert_allclose(sh(1.0, np.array([2.0, 1.0, 0.5, 0.0, -1.0])),
                               [0.0, 0.0, 0.125, 0.5, 1.5])
    np.testing.assert_allclose(get_loss("logistic")(1.0, 0.0), np.log(2))
    np.testing.assert_allclose(get_loss("squared")(1.0, 3.0), 2.0)


@pytest.mark.parametrize("name", ["squared", "logistic", "smooth_hinge", "hinge",
                                  "squared_hinge"])
@pytest.mark.parametrize("y", [-1.0, 1.0])
def test_conjugate_matches_numeric_supremum(name, y):
    loss = get_loss(name)
    for u in (-0.9, -0.5, -0.1, 0.1, 0.5, 0.9):
        closed = float(loss.conjugate(y, u))
        res = minimize_scalar(lambda z: -(u * z - float(loss(y, z))),
                              bounds=(-60, 60), method="bounded",
                              options={"xatol": 1e-10})
        numeric = -res.fun
        if np.isinf(closed):
            assert numeric > 5, (name, y, u)  # unbounded: grows with the box
        else:
            assert numeric == pytest.approx(closed, abs=1e-4), (name, y, u)


@pytest.mark.parametrize("name", sorted(PAIRWISE_LOSSES))
def test_pairwise_derivatives(name):
    loss = get_loss(name, pairwise=True)
    eps = 1e-6
    numeric = (loss(F + eps) - loss(F - eps)) / (2 * eps)
    np.testing.assert_allclose(loss.derivative(F), numeric, atol=1e-5)


def test_unknown_loss():
    with pytest.raises(ValueError, match="Unknown pairwise loss"):
        get_loss("hinge", pairwise=True)


def _second_derivative(loss, pairwise, y, f, eps=1e-4):
    if pairwise:
        return (loss.derivative(f + eps) - loss.derivative(f - eps)) / (2 * eps)
    return (loss.derivative(y, f + eps) - loss.derivative(y, f - eps)) / (2 * eps)


@pytest.mark.parametrize("name, pairwise", [
    *((n, False) for n in sorted(POINTWISE_LOSSES) if n != "hinge"),
    *((n, True) for n in sorted(PAIRWISE_LOSSES))])
def test_smoothness_bounds_the_curvature(name, pairwise):
    # The "auto" step sizes rest on these constants: the curvature never
    # exceeds them and comes close to them somewhere.
    loss = get_loss(name, pairwise=pairwise)
    grid = np.linspace(-6, 6, 2401) + 0.0013
    curvature = np.concatenate([
        np.abs(_second_derivative(loss, pairwise, y, grid)) for y in (-1.0, 1.0)])
    assert curvature.max() <= loss.smoothness + 1e-6
    assert curvature.max() >= 0.99 * loss.smoothness


def test_hinge_has_no_smoothness_constant():
    assert get_loss("hinge").smoothness is None
