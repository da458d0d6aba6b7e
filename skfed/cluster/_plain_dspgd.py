"""DSPGD without the communication-efficient mechanism (paper's section 4.1).

Kept so that the paper's communication comparison (Figure 2, Theorem 2) can
be reproduced: the Lanczos iterations run on the ``n x n`` matrix
``R_t = (1 - eta_t) Z_t + eta_t A_t A_t^T / D`` and ``Z_t`` (its eigenvectors
over all rows) lives on the server. Per Lanczos step user ``m`` uploads
``A_t[m]^T c_q[m]`` (``D`` floats) and ``A_t[m] A_t^T c_q`` (``n_m`` floats),
so the uploads grow with the number of rows.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np

from . import _dspgd as dspgd
from ._dspgd import SERVER, choose_lambda, phase_of
from ._lanczos import distributed_lanczos, server_collect

__all__ = ["dspgd_without_cem"]


def dspgd_without_cem(fed, users, *, n_iter, n_lambda, n_components,
                       lanczos_seeds, n_random_features, n_samples, verbose,
                       monitor):
    """Section 4.1: Lanczos on the n x n matrix R_t; Z_t lives on the server."""
    fed[SERVER].call(_server_init_plain, n_samples).result()
    lam, trace = None, []
    for t in range(1, n_iter + 1):
        eta, phase = 1.0 / t, phase_of(t)
        fed.gather(fed[u].call(dspgd.user_draw_features, t, sender=SERVER,
                               phase=phase) for u in users)

        def matvec(c):
            # 1) the server sends c[m] to user m; 2) users upload A_t[m]^T c[m];
            # 3) the server broadcasts A_t^T c; 4) users upload A_t[m] A_t^T c.
            pieces = fed[SERVER].call(dspgd.server_split_vector, c).result()
            partial = fed.gather(fed[u].call(dspgd.user_features_t_times, p,
                                             sender=SERVER, phase=phase)
                                 for u, p in zip(users, pieces))
            fed.gather(fed[SERVER].call(dspgd.server_collect_aux, p, sender=u,
                                        phase=phase)
                       for u, p in zip(users, partial))
            atc = fed[SERVER].call(dspgd.server_sum_aux).result()
            rows = fed.gather(fed[u].call(dspgd.user_features_times, atc,
                                          sender=SERVER, phase=phase)
                              for u in users)
            # 5) the server concatenates (in combine) and adds (1-eta) Z_t c.
            fed.gather(fed[SERVER].call(server_collect, r, sender=u, phase=phase)
                       for u, r in zip(users, rows))

        first, last = lam is None, t == n_iter
        q = distributed_lanczos(
            fed, SERVER, n_samples, matvec,
            threshold=np.inf if first else eta * lam,
            n_min=n_lambda if first else (n_components if last else 1),
            seed=lanczos_seeds[t - 1],
            combine=dspgd.server_plain_combine(eta, n_random_features))
        if first:
            theta_all = fed[SERVER].call(dspgd.server_select_pairs, np.inf,
                                         n_lambda).result()[0]
            lam = choose_lambda(theta_all, n_lambda)
        shrink = eta * lam
        theta, V = fed[SERVER].call(dspgd.server_select_pairs, shrink,
                                    n_components if last else 0).result()
        fed[SERVER].call(dspgd.server_plain_update, theta, V, shrink).result()
        rank = int(np.sum(theta > shrink))
        trace.append((q, rank))
        if verbose:
            print(f"[FederatedKernelKMeans] t={t}: {q} Lanczos steps, "
                  f"dimension {n_samples}, rank {rank}")
        if monitor is not None:
            monitor(t, theta + (1.0 - eta) * lam,
                    [fed[SERVER].call(_evaluation_only_rows).result()])
    # The server holds H; each user receives its own rows of it.
    scales = np.sqrt(theta[:n_components] + (1.0 - eta) * lam)
    for m, u in enumerate(users):
        H_m = fed[SERVER].call(dspgd.server_rows_of_h, scales, m).result()
        fed[u].call(dspgd.user_receive_h, H_m, sender=SERVER,
                    phase="dspgd: rows of H").result()
    return lam, scales ** 2, trace


def _server_init_plain(state, n_samples):
    state.Z_vectors = np.zeros((n_samples, 0))
    state.Z_values = np.zeros(0)


def _evaluation_only_rows(state):
    # Not a protocol message: the benchmark's recovery-error curve reads the
    # server's eigenvectors through this local call.
    return state.U
