"""DSPGD without the communication-efficient mechanism (paper's section 4.1).

Kept so that the paper's communication comparison (Figure 2, Theorem 2) can
be reproduced: the Lanczos iterations run on the ``n x n`` matrix
``R_t = (1 - eta_t) Z_t + eta_t A_t A_t^T / D`` and ``Z_t`` (its eigenvectors
over all rows) lives on the server. Per Lanczos step user ``m`` uploads
``A_t[m]^T c_q[m]`` (``D`` floats, masked: the server needs only their sum)
and ``A_t[m] A_t^T c_q`` (``n_m`` floats, one per row: the server
concatenates them, so they cannot be summed away), so the uploads grow with
the number of rows. The server holds the eigenvectors, hence ``H``, and
measures the embedding change of the stopping rule itself.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np

from ..federation import protocol_rounds
from ..federation.secure_sum import RingEncoder, secure_sum
from . import _dspgd as dspgd
from ._dspgd import PHASE_ITERATION, PHASE_LANCZOS, SERVER
from ._lanczos import server_collect

__all__ = ["dspgd_without_cem"]


def dspgd_without_cem(fed, users, *, max_iter, tol, n_lambda, n_components,
                      lanczos_seed, n_random_features, n_samples, gamma,
                      lambda_margin, verbose, monitor):
    """Section 4.1: Lanczos on the n x n matrix R_t; Z_t lives on the server.

    Returns ``(lambda, eigenvalues of H's columns, trace, changes,
    per_iteration)`` as :func:`~._protocol.dspgd_with_cem` does.
    """

    s = n_components
    fed[SERVER].call(_server_init_plain, n_samples).result()
    encoder = RingEncoder.for_bound(2.0 * n_samples, margin_bits=3)
    lam, trace, changes = None, [], []
    per_iteration, counted = [], fed.summary()
    phase = PHASE_LANCZOS
    for t in protocol_rounds(range(1, max_iter + 1)):
        eta = 1.0 / t
        fed.gather(fed[u].call(dspgd.user_draw_features, t, sender=SERVER,
                               phase=PHASE_ITERATION) for u in users)

        def matvec(c):
            # 1) the server sends c[m] to user m; 2) users upload A_t[m]^T c[m],
            # masked, and the server decodes the sum A_t^T c; 3) the server
            # broadcasts it; 4) users upload A_t[m] A_t^T c (one value per
            # row); 5) the server concatenates (in combine), adds (1-eta) Z_t c.
            pieces = fed[SERVER].call(dspgd.server_split_vector, c).result()
            fed.gather(fed[u].call(dspgd.user_take_part, p, sender=SERVER,
                                   phase=phase)
                       for u, p in zip(users, pieces))
            atc = secure_sum(fed, users, SERVER, dspgd.user_features_t_times,
                             phase=phase, encoder=encoder).result()
            rows = fed.gather(fed[u].call(dspgd.user_features_times, atc,
                                          sender=SERVER, phase=phase)
                              for u in users)
            fed.gather(fed[SERVER].call(server_collect, r, sender=u,
                                        phase=f"{phase}/rows")
                       for u, r in zip(users, rows))

        q, lam, shrink, theta, V = dspgd.server_eigenpairs(
            fed, n_samples, matvec, t=t, lam=lam, eta=eta, n_lambda=n_lambda,
            s=s, seed=lanczos_seed, gamma=gamma, margin=lambda_margin,
            combine=dspgd.server_plain_combine(eta, n_random_features))
        values = theta[:s] + (1.0 - eta) * lam
        change = fed[SERVER].call(dspgd.server_plain_update, theta, V, shrink,
                                  values).result()
        if change is not None:
            changes.append(change)
        rank = int(np.sum(theta > shrink))
        trace.append((q, rank))
        if verbose:
            print(f"[FederatedKernelKMeans] t={t}: {q} Lanczos steps, "
                  f"dimension {n_samples}, rank {rank}")
        if monitor is not None:
            monitor(t, theta + (1.0 - eta) * lam,
                    [fed[SERVER].call(_evaluation_only_rows).result()])
        counts, counted = dspgd.iteration_counts(fed, counted)
        per_iteration.append(counts)
        if dspgd.converged(changes, tol):
            break
    else:
        dspgd.warn_not_converged(changes, tol, max_iter, n_random_features,
                                 lambda_margin)
    # The server holds H; each user receives its own rows of it.
    scales = np.sqrt(values)
    for m, u in enumerate(users):
        H_m = fed[SERVER].call(dspgd.server_rows_of_h, scales, m).result()
        fed[u].call(dspgd.user_receive_h, H_m, sender=SERVER,
                    phase="dspgd: rows of H").result()
    return lam, values, trace, changes, per_iteration


def _server_init_plain(state, n_samples):
    state.Z_vectors = np.zeros((n_samples, 0))
    state.Z_values = np.zeros(0)


def _evaluation_only_rows(state):
    # Not a protocol message: the benchmark's recovery-error curve reads the
    # server's eigenvectors through this local call.
    return state.U
