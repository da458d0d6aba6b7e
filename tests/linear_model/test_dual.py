"""HyFDCA's one-dimensional dual maths (:mod:`skfed.linear_model._dual`):
the exact coordinate step against a numerical maximiser and the paper's
closed form."""

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from skfed.linear_model._dual import conjugate_values, dual_step


@pytest.mark.parametrize("loss", ["hinge", "squared_hinge", "logistic"])
def test_dual_step_maximises_the_one_dimensional_subproblem(loss):
    rng = np.random.RandomState(0)
    upper = 1.0 if loss != "squared_hinge" else 10.0
    for _ in range(20):
        a = rng.uniform(0.01, 0.99)
        b, c = rng.normal(scale=2.0), rng.uniform(0.05, 5.0)

        def objective(x):
            return -(conjugate_values(loss, x) - (x - a) * b - 0.5 * c * (x - a) ** 2)

        ref = minimize_scalar(objective, bounds=(0.0, upper), method="bounded",
                              options=dict(xatol=1e-12)).x
        got = dual_step(loss, np.array([a]), np.array([b]), np.array([c]))[0]
        assert objective(got) <= objective(ref) + 1e-10
        assert got == pytest.approx(ref, abs=1e-5)


def test_hinge_step_is_the_papers_closed_form_with_the_row_norm():
    # a' = clip(a + lambda N (1 - y x^T w) / ||x||^2, 0, 1), c = ||x||^2/(lambda N)
    a = np.array([0.2, 0.5, 0.9])
    b, c = np.array([0.5, 3.0, -1.0]), np.array([2.0, 1.0, 0.5])
    np.testing.assert_allclose(dual_step("hinge", a, b, c), [0.45, 0.0, 1.0])
