"""HyFDCA's objective reports: sums the server needs, as totals only.

The server's gap certificate and line search need, per task, the loss sum
over all rows at the round's ``w`` and the conjugate sums of the duals at
the line search's step lengths. Each row group's reporter (its first
client) holds its rows' part of these; the server receives only their total
over the row groups taking part, by the pairwise-masked secure sum of
:mod:`skfed.federation.secure_sum`.

Under partial participation the absent row groups' last values still count
(their duals did not move). So a reporter sends the *change* of its sums
since its last report: the loss sum minus the last one it reported, the
conjugate sums minus its group's conjugate sum at the accepted duals (which
it tracks exactly as the server used to, :func:`client_after_step`). The
server keeps the running totals; the line search reads only differences of
conjugate sums, which the changes keep. With every row group taking part
(the default) the server learns the totals over all rows, round by round,
and nothing per row group.

The encoding's bound is public: from the server's ``w``, the agreed scale of
the rows' norms and the number of rows (or total weight), :func:`report_bound`
bounds every per-row loss and conjugate value. A value beyond it (or not
finite) is sent as 0 and counted in a last row of the report, so the server
learns only how many values diverged, summed over the row groups.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import math

import numpy as np

from ._dual import _conj_at, conjugate_values, loss_values

__all__ = ["client_report", "client_after_step", "report_bound",
           "round_summary", "server_fold_report"]

#: headroom of the public bound over the per-row bounds (it also covers the
#: momentum point, a convex extrapolation of the duals)
_HEADROOM = 2.0 ** 10
#: the largest bound (the ring has 64 bits; a few must stay fractional)
_LARGEST = 2.0 ** 50


def report_bound(server):
    """A public bound on every entry of a row group's report this round.

    With ``m = sqrt(C) 2**e max_j ||w_j||`` (``C`` column groups, ``e`` the
    agreed binary exponent of the row parts' norms) a margin is at most
    ``m`` in magnitude; a row's loss is at most ``1 + m`` (hinge),
    ``(1 + m)^2 / 2`` (squared hinge), ``log 2 + m`` (logistic). Its
    conjugate is at most 1 (hinge), ``log 2`` (logistic), and for the
    squared hinge ``A + A^2 / 2`` with the dual bound ``A`` that the weight
    changes' encoding uses (``4 sqrt(N) + 1 + 3 sqrt(C) 2**e / sqrt(lambda)``,
    doubled for the momentum point). Sums over rows of weight at most ``N``
    in total, changes of two such sums, with :data:`_HEADROOM`.
    """
    n_columns = sum(1 for r in server.row_group_of.values() if r == 0)
    norm = float(np.max(np.linalg.norm(server.w_point, axis=0), initial=0.0))
    row_norm = math.sqrt(n_columns) * 2.0 ** server.scale_exponent
    m = row_norm * norm
    loss = server.loss
    if loss == "hinge":
        per_row = max(1.0 + m, 1.0)
    elif loss == "logistic":
        per_row = math.log(2.0) + m
    else:
        a = 2.0 * (4.0 * math.sqrt(server.N) + 1.0
                   + 3.0 * row_norm / math.sqrt(server.lam))
        per_row = max(0.5 * (1.0 + m) ** 2, a + 0.5 * a * a)
    # At least 1: the rounding errors travel scaled to [-1, 1] in the same
    # ring (a tiny total weight would otherwise leave them no room).
    bound = max(2.0 * server.N * per_row * _HEADROOM, 1.0)
    return float(min(bound, _LARGEST)) if math.isfinite(bound) else _LARGEST


def client_report(client, grid, bound, frac_bits):
    """The reporter's share of the round's report (to the secure sum).

    Per task: the change of its row group's loss sum at the round's point
    since its last report; the change of the group's conjugate sum from the
    accepted duals to ``point + s d`` at each step length ``s`` of ``grid``
    (2 for the hinge loss, 3 for the squared hinge, 17 for the logistic
    loss); then the number of entries beyond ``bound`` (sent as 0).

    The ring of the secure sum has ``frac_bits`` fractional bits: each
    entry goes as its value rounded to them, then its rounding error scaled
    by ``2**(frac_bits + 1)`` (in [-1, 1]), so that the total keeps about
    twice as many bits (:func:`split_total`).
    """
    weights = client.s
    losses = (weights * loss_values(client.loss, client.margins)).sum(axis=0)
    conj = np.stack([(weights * conjugate_values(
        client.loss, client.point + s * client.direction)).sum(axis=0)
        for s in grid])
    change = np.vstack([(losses - client.loss_sum)[None, :],
                        conj - client.conj_sum[None, :]])
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(change) | (np.abs(change) > bound)
    change[bad] = 0.0
    client.loss_sum = losses
    client.report = (np.asarray(grid, dtype=float), conj)
    report = np.vstack([change, bad.sum(axis=0)[None, :].astype(float)])
    step = 2.0 ** -int(frac_bits)
    high = np.round(report / step) * step
    return np.vstack([high, (report - high) * (2.0 / step)])


def split_total(total, frac_bits):
    """The total of :func:`client_report`'s shares: the sum of the rounded
    values plus the sum of the rounding errors."""
    total = np.asarray(total, dtype=float)
    half = total.shape[0] // 2
    return total[:half] + total[half:] * (0.5 * 2.0 ** -int(frac_bits))


def client_after_step(client, gammas, accept):
    """The reporter's conjugate sum at its new accepted duals, interpolated
    from its last report exactly as the server folds the total."""
    if client.report is None:
        return
    grid, conj = client.report
    new = np.array([_conj_at(client.loss, grid, conj[:, j], gammas[0, j])
                    for j in range(conj.shape[1])])
    client.conj_sum = np.where(accept[0], new, client.conj_sum)


def server_fold_report(server, total, frac_bits, groups):
    """Fold the round's summed report into the running loss total; returns
    ``(conj_changes, n_flagged)``: the summed conjugate changes at the grid
    (one row per step length) and how many entries were beyond the bound."""
    n_grid = len(server.grid)
    total = split_total(np.asarray(total, dtype=float).reshape(
        2 * (n_grid + 2), server.n_tasks), frac_bits)
    server.loss_total = server.loss_total + total[0]
    for r in groups:
        server.loss_version[r] = server.point_version
    return total[1:1 + n_grid], float(np.sum(total[-1]))


def round_summary(out, n_clients):
    """The server's round line for ``verbose``: what it holds, in words.

    Before every row group has reported on one ``w`` (partial
    participation's first rounds) the primal value is not known yet; while
    the dual is still near 0 the relative gap ``(P - D) / D`` is not
    meaningful (it was printed as ``1e+300`` once): both say so instead of
    printing a number.
    """
    primal = (f"primal {out['primal']:.6g}" if np.isfinite(out["primal"])
              else "primal n/a (not every row group has reported yet)")
    gap = out["gap"]
    shown = (f"relative gap {gap:.3g}" if np.isfinite(gap) and gap <= 1e6
             else "relative gap n/a (dual still ~0 before this step)")
    return f"{primal}, dual {out['dual']:.6g}, {shown} ({n_clients} clients)"
