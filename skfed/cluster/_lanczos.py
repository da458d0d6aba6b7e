"""Distributed Lanczos with full re-orthogonalisation (paper's appendix B).

The Lanczos iteration (the paper's Algorithm 2) finds the top eigenpairs of
a symmetric matrix ``R`` from products ``g = R c`` alone. In the distributed
version (DLA) only that product is computed by the users; everything else --
the Krylov basis ``C_q``, the tridiagonal ``T_q``, its eigendecomposition and
the convergence test -- stays on the server. This module holds:

- :class:`LanczosState`: the server's side of one run, plain numpy;
- three server party functions (:func:`server_begin`,
  :func:`server_collect`, :func:`server_advance`) that keep a
  :class:`LanczosState` in the server's private state;
- :func:`distributed_lanczos`: the driver loop. It asks the server for the
  next vector ``c_q``, hands it to a protocol-specific ``matvec`` (which
  sends it to the users and delivers their answers back to the server with
  :func:`server_collect`), and lets the server advance.

Stopping rule (appendix B): the run stops once every Ritz value above the
threshold ``eta_t * lambda`` has converged, i.e. its residual
``||R y - theta y|| = beta_q |e_q^T p|`` is below ``rtol * theta_1``, and at
least ``n_min`` Ritz values are converged, and the first Ritz value left out
lies below the threshold even with its residual added (so no wanted
eigenvalue is still hidden behind it); or when the Krylov space is
exhausted (an invariant subspace, or ``q`` reaching the dimension, where the
decomposition is exact).

Full re-orthogonalisation (the paper's eq. 3) is applied twice per step, as
in the paper's implementation: it costs server flops only, never messages.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np

__all__ = [
    "LanczosState",
    "server_begin",
    "server_collect",
    "server_advance",
    "server_converged",
    "distributed_lanczos",
]

#: relative residual below which a Ritz pair counts as converged
RTOL = 1e-6
#: a new Lanczos vector shorter than this (relative) means an invariant subspace
_BREAKDOWN = 1e-10


class LanczosState:
    """The server's half of a Lanczos run on a ``dim`` x ``dim`` matrix.

    Parameters
    ----------
    dim : int
        Dimension of the symmetric matrix ``R``.

    start : ndarray of shape (dim,)
        The initial vector ``c_1`` (normalised here).
    """

    def __init__(self, dim, start):
        self.dim = int(dim)
        start = np.asarray(start, dtype=float)
        self.basis = [start / np.linalg.norm(start)]
        self.alphas = []
        self.betas = []
        self.exhausted = False

    @property
    def n_steps(self):
        return len(self.alphas)

    def vector(self):
        """The vector ``c_q`` whose product ``R c_q`` is needed next."""
        return self.basis[-1]

    def absorb(self, g):
        """Lines 5-12 of Algorithm 2 with ``g = R c_q`` computed elsewhere."""
        c = self.basis[-1]
        g = np.array(g, dtype=float)
        alpha = float(c @ g)
        g -= alpha * c
        if self.betas:
            g -= self.betas[-1] * self.basis[-2]
        # Eq. (3), twice: floating point slowly destroys the orthogonality of
        # C_q, and with it the convergence of DSPGD; two classical
        # Gram-Schmidt passes restore it to working precision.
        C = np.asarray(self.basis)
        for _ in range(2):
            g -= C.T @ (C @ g)
        beta = float(np.linalg.norm(g))
        self.alphas.append(alpha)
        scale = max(max(abs(a) for a in self.alphas), 1e-300)
        if beta <= _BREAKDOWN * scale or self.n_steps >= self.dim:
            self.exhausted = True
            self.betas.append(0.0)
            return
        self.betas.append(beta)
        self.basis.append(g / beta)

    def ritz(self):
        """Ritz values (descending), Ritz vectors of ``T_q`` and residuals."""
        q = self.n_steps
        T = np.diag(self.alphas)
        if q > 1:
            off = np.asarray(self.betas[: q - 1])
            T += np.diag(off, 1) + np.diag(off, -1)
        theta, P = np.linalg.eigh(T)
        theta, P = theta[::-1], P[:, ::-1]
        residuals = abs(self.betas[-1]) * np.abs(P[-1])
        return theta, P, residuals

    def converged(self, threshold, n_min, rtol=RTOL):
        """Whether every Ritz value above ``threshold`` (and at least
        ``n_min`` of them) has converged."""
        if self.exhausted:
            return True
        if not self.n_steps:
            return False
        theta, _, residuals = self.ritz()
        wanted = max(int(np.sum(theta > threshold)), int(n_min))
        if wanted >= self.n_steps:
            # The boundary Ritz value has not appeared yet: keep going.
            return False
        scale = max(abs(theta[0]), 1e-300)
        tol = rtol * scale
        # The first Ritz value left out must be certainly below the
        # threshold (or converged itself), else an eigenvalue above the
        # threshold may still be hiding behind it.
        boundary_ok = (theta[wanted] + residuals[wanted] <= threshold
                       or residuals[wanted] <= tol)
        return bool(boundary_ok and np.all(residuals[:wanted] <= tol))

    def pairs(self):
        """Every Ritz pair: values (descending) and vectors ``C_q P_q``."""
        theta, P, _ = self.ritz()
        C = np.asarray(self.basis[: self.n_steps])
        return theta, C.T @ P


# -- party functions run on the server ---------------------------------------

def server_begin(state, dim, seed):
    """Start a run with a random ``c_1`` drawn from the server's own seed."""
    start = np.random.RandomState(seed).standard_normal(dim)
    state.stash["lanczos"] = LanczosState(dim, start)
    state.stash["parts"] = []


def server_current_vector(state):
    return state.stash["lanczos"].vector()


def server_collect(state, part):
    """A user's (or the server's own) contribution to ``g = R c_q``."""
    state.stash.setdefault("parts", []).append(np.asarray(part, dtype=float))


def server_advance(state, threshold, n_min, combine=None):
    """Sum (or ``combine``) the collected parts into ``g``, then one step.

    Returns ``(done, n_steps)``.
    """
    parts, state.stash["parts"] = state.stash["parts"], []
    g = combine(state, parts) if combine is not None else np.sum(parts, axis=0)
    run = state.stash["lanczos"]
    run.absorb(g)
    return run.converged(threshold, n_min), run.n_steps


def server_converged(state, threshold, n_min):
    """Whether the current run already meets a (new) target; ``(done, Q)``."""
    run = state.stash["lanczos"]
    return run.converged(threshold, n_min), run.n_steps


def server_ritz_pairs(state):
    """The Ritz pairs of the finished run (kept on the server)."""
    return state.stash["lanczos"].pairs()


# -- driver -------------------------------------------------------------------

def distributed_lanczos(fed, server, dim, matvec, *, threshold, n_min, seed,
                        combine=None, resume=False):
    """Run DLA on a ``dim`` x ``dim`` matrix; the Ritz pairs stay on the server.

    Parameters
    ----------
    fed : Federation

    server : str
        The coordinating party.

    dim : int

    matvec : callable
        ``matvec(c)`` performs the distributed product for the vector ``c``
        (held by the server): it sends what the protocol sends and delivers
        every contribution to the server with :func:`server_collect`.

    threshold : float
        Eigenvalues above it must converge (``eta_t * lambda``).

    n_min : int
        At least this many top Ritz pairs must converge.

    seed : int
        Seed of the server's start vector.

    combine : callable, optional
        Server function ``combine(state, parts) -> g`` (default: the sum).

    resume : bool, default=False
        Continue the server's current run (same Krylov basis) towards the
        new ``threshold`` and ``n_min`` instead of starting a new one; no
        product is requested if the run already meets them.

    Returns
    -------
    n_steps : int
        Number of Lanczos steps ``Q`` (= rounds of user uploads) of the
        run, counting those before a resume.
    """
    if resume:
        done, n_steps = fed[server].call(server_converged, threshold,
                                         n_min).result()
        if done:
            return n_steps
    else:
        fed[server].call(server_begin, dim, seed).result()
    while True:
        c = fed[server].call(server_current_vector).result()
        matvec(c)
        done, n_steps = fed[server].call(
            server_advance, threshold, n_min, combine).result()
        if done:
            return n_steps
