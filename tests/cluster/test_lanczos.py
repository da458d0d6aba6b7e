import numpy as np
import pytest

from skfed.cluster._lanczos import (
    LanczosState,
    distributed_lanczos,
    server_collect,
    server_ritz_pairs,
)
from skfed.federation import Federation, record_messages


def _spd(dim, rng):
    Q, _ = np.linalg.qr(rng.standard_normal((dim, dim)))
    values = np.concatenate([[50.0, 40.0, 30.0, 20.0], rng.uniform(0, 5, dim - 4)])
    return (Q * values) @ Q.T, np.sort(values)[::-1]


def test_top_pairs_match_eigh_and_basis_stays_orthogonal():
    rng = np.random.RandomState(0)
    R, values = _spd(60, rng)
    run = LanczosState(60, rng.standard_normal(60))
    while not run.converged(threshold=10.0, n_min=0):
        run.absorb(R @ run.vector())
    theta, V = run.pairs()
    np.testing.assert_allclose(theta[:4], values[:4], rtol=1e-8)
    for i in range(4):
        np.testing.assert_allclose(R @ V[:, i], theta[i] * V[:, i], atol=1e-4)
    C = np.asarray(run.basis[: run.n_steps])
    np.testing.assert_allclose(C @ C.T, np.eye(run.n_steps), atol=1e-10)
    # Stopped early: the threshold rule did not need the whole space.
    assert run.n_steps < 60


def test_exhausts_at_dimension_and_is_exact():
    rng = np.random.RandomState(1)
    R, values = _spd(8, rng)
    run = LanczosState(8, rng.standard_normal(8))
    while not run.converged(threshold=-np.inf, n_min=8):
        run.absorb(R @ run.vector())
    assert run.n_steps == 8 and run.exhausted
    np.testing.assert_allclose(run.pairs()[0], values, rtol=1e-9, atol=1e-9)


def test_invariant_subspace_stops():
    # A rank-2 matrix: the Krylov space closes after two steps.
    rng = np.random.RandomState(2)
    u = np.linalg.qr(rng.standard_normal((10, 2)))[0]
    R = (u * [3.0, 1.0]) @ u.T
    run = LanczosState(10, rng.standard_normal(10))
    while not run.converged(threshold=0.5, n_min=3):
        run.absorb(R @ run.vector())
    assert run.n_steps <= 3 and run.exhausted
    np.testing.assert_allclose(run.pairs()[0][:2], [3.0, 1.0], rtol=1e-9)


def _gram_product(state, c):
    return state.W.T @ (state.W @ c)


@pytest.mark.parametrize("n_users", [1, 3])
def test_distributed_run_sums_user_products(n_users):
    rng = np.random.RandomState(3)
    blocks = [rng.standard_normal((15, 12)) for _ in range(n_users)]
    users = [f"user{m}" for m in range(n_users)]
    states = {"server": {}, **{u: {"W": W} for u, W in zip(users, blocks)}}
    with record_messages() as rec, Federation(states) as fed:
        def matvec(c):
            parts = fed.gather(fed[u].call(_gram_product, c, sender="server")
                               for u in users)
            fed.gather(fed["server"].call(server_collect, g, sender=u)
                       for u, g in zip(users, parts))

        q = distributed_lanczos(fed, "server", 12, matvec, threshold=-np.inf,
                                n_min=12, seed=0)
        theta, _ = fed["server"].call(server_ritz_pairs).result()
    W = np.vstack(blocks)
    expected = np.sort(np.linalg.eigvalsh(W.T @ W))[::-1]
    np.testing.assert_allclose(theta, expected, rtol=1e-8)
    # One broadcast and one upload of 12 floats per user and step.
    up = [m for m in rec.messages if m.receiver == "server"]
    assert len(up) == q * n_users and {m.n_scalars for m in up} == {12}


def test_resumed_run_continues_to_a_lower_threshold():
    # DSPGD's first iteration: the run stops at two converged pairs, the
    # threshold is then chosen lower (threshold="auto"), and the same run
    # continues until every Ritz value above it has converged; a run that
    # already meets the new target asks for no further product.
    rng = np.random.RandomState(4)
    Q, _ = np.linalg.qr(rng.standard_normal((60, 60)))
    values = np.concatenate([[50.0, 40.0, 10.6, 10.4], rng.uniform(0, 10, 56)])
    R = (Q * values) @ Q.T
    values = np.sort(values)[::-1]
    states = {"server": {}}
    products = []
    with Federation(states) as fed:
        def matvec(c):
            products.append(c)
            fed["server"].call(server_collect, R @ c).result()

        first = distributed_lanczos(fed, "server", 60, matvec,
                                    threshold=np.inf, n_min=2, seed=0)
        theta, _ = fed["server"].call(server_ritz_pairs).result()
        assert not np.allclose(theta[2:4], values[2:4], rtol=1e-6)
        total = distributed_lanczos(fed, "server", 60, matvec, threshold=10.0,
                                    n_min=2, seed=None, resume=True)
        theta, _ = fed["server"].call(server_ritz_pairs).result()
        again = distributed_lanczos(fed, "server", 60, matvec, threshold=10.0,
                                    n_min=2, seed=None, resume=True)
    assert first < total == again == len(products)
    np.testing.assert_allclose(theta[:4], values[:4], rtol=1e-8)
