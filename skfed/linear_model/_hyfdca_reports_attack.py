"""What HyFDCA's objective reports give the server: ``report_inversion``.

The server holds the round's weights ``w_t`` (it sends each client those of
its columns) and receives the loss sum ``L_t = sum_i l(z_i^T w_t)`` over the
rows the report covers, with ``z_i = y_i [x_i, c]`` (``c`` the intercept
scaling). Over rounds this is a system in the rows: fitted as a sum of
``l`` (hinge, squared hinge or logistic) by non-linear least squares from
random starts, it returns the rows and, from the sign of the intercept
coordinate, their labels.

The attack reads the report series the server received:

- a plaintext report per row group (the protocol before issue 25, or a
  planted leak): one series per reporter, over its row group's rows;
- a one-term secure sum (``"objective report/alone"``: a single row group
  took part): the group's changes, summed up while all of its reports came
  alone;
- the secure sums over the row groups taking part: the total over all rows
  (decoded with the public encoding; the masks cancel), exact when every
  row group takes part in every round (the default).

It scores every row group (the victims: its clients, who hold its rows
and labels) on whole rows, matched to the estimated rows of a series by a
linear assignment (in the attacker's favour), each row by the series that
serves the attacker best: ``median_relative_error`` (``||x_hat - x|| /
||x||``, capped at 1, median over the group's rows; chance: the group's
mean row as the guess) and ``label_accuracy`` (chance: the group's
majority label). The assignment favours the attacker most in few
dimensions: there even rough estimates land near some row. A series with
more unknowns (rows times weights) than ``_MAX_RATIO`` times its reports,
or than ``_MAX_UNKNOWNS``, is far underdetermined and not fitted: its rows
score error 1 and the majority label.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
from scipy.optimize import least_squares, linear_sum_assignment

from .._privacy_core import attack_row
from ..federation.secure_sum import RingEncoder
from ._reports import split_total

__all__ = ["report_inversion", "report_series", "fit_rows"]

_PHASE = "objective report"
#: random starts of the least-squares fit (fewer for large systems)
_STARTS = 24
#: systems not fitted: more unknowns than this, or than this many per report
_MAX_UNKNOWNS = 4000
_MAX_RATIO = 20


def _weight_ids(estimator, k):
    """Weight ids of client ``k``'s columns (the intercept's last)."""
    partition = estimator.partition_
    ids = list(partition.client_columns(k))
    if estimator.fit_intercept and partition.client_cell(k)[1] == 0:
        ids.append(estimator.n_features_in_)
    return np.asarray(ids, dtype=int)


def _client_index(name):
    return int(str(name)[len("client"):])


def _n_weights(estimator):
    return estimator.n_features_in_ + int(bool(estimator.fit_intercept))


def report_series(estimator, messages):
    """The loss series the server can read off its messages.

    Returns a list of ``(rows, W, L)``: the row indices the series covers,
    the weights at each report (``(T, n_weights)``, task 0) and the loss
    sums (``(T,)``, task 0).
    """
    partition = estimator.partition_
    n_grid = None
    w = np.zeros(_n_weights(estimator))
    plain, alone, total = {}, {}, []
    alone_valid, running_alone, running = {}, {}, 0.0
    pending, frac_bits = None, None

    def close():
        nonlocal pending, running
        if pending is not None:
            change = _decoded(pending, frac_bits, n_grid)
            running = running + change
            total.append((w.copy(), running))
            pending = None

    for m in messages:
        phase = str(m.phase)
        if phase != _PHASE + "/upload":
            close()  # a sum's uploads arrive one after the other
        if m.sender == "server" and phase == "primal weights":
            k = _client_index(m.receiver)
            w[_weight_ids(estimator, k)] = np.asarray(
                m.payload[0], dtype=float)[:, 0]
        elif m.sender == "server" and phase.startswith(_PHASE) and (
                phase.endswith("/request")):
            n_grid = len(np.ravel(m.payload[0]))
            frac_bits = int(m.payload[2])
        elif m.receiver != "server" or not phase.startswith(_PHASE):
            continue
        elif phase == _PHASE + "/upload":
            upload = np.asarray(m.payload[0]).view(np.uint64)
            pending = upload.copy() if pending is None else pending + upload
            for k in partition.clients_of_row_group(
                    partition.client_cell(_client_index(m.sender))[0]):
                alone_valid[f"client{k}"] = False
        elif phase == _PHASE + "/alone/upload":
            change = _decoded(np.asarray(m.payload[0]).view(np.uint64),
                              frac_bits, n_grid)
            if alone_valid.get(m.sender, True):
                running_alone[m.sender] = running_alone.get(m.sender, 0.0) + change
                alone.setdefault(m.sender, []).append(
                    (w.copy(), running_alone[m.sender]))
            running = running + change
            total.append((w.copy(), running))
        else:
            payload = m.payload[0] if m.payload else None
            if isinstance(payload, np.ndarray) and payload.dtype.kind == "f":
                plain.setdefault(m.sender, []).append(
                    (w.copy(), float(np.asarray(payload).reshape(
                        payload.shape[0], -1)[0, 0])))
    close()
    out = []
    for series in (plain, alone):
        for sender, pairs in series.items():
            r = partition.client_cell(_client_index(sender))[0]
            rows = np.concatenate([partition.client_rows(k) for k in
                                   partition.clients_of_row_group(r)[:1]])
            out.append((rows, np.array([p[0] for p in pairs]),
                        np.array([p[1] for p in pairs])))
    if total:
        every = np.concatenate([partition.client_rows(k) for k in
                                range(partition.n_clients)
                                if partition.client_cell(k)[1] == 0])
        out.append((np.sort(every), np.array([p[0] for p in total]),
                    np.array([p[1] for p in total])))
    return out


def _decoded(ring, frac_bits, n_grid):
    """Task 0's loss change of a decoded report sum."""
    values = RingEncoder(frac_bits).decode(ring)
    rows = 2 * (n_grid + 2)
    values = split_total(values.reshape(rows, -1), frac_bits)
    return float(values[0, 0])


def _loss(loss, m):
    if loss == "hinge":
        return np.maximum(0.0, 1.0 - m), -(m < 1.0).astype(float)
    if loss == "squared_hinge":
        h = np.maximum(0.0, 1.0 - m)
        return 0.5 * h ** 2, -h
    return np.logaddexp(0.0, -m), -1.0 / (1.0 + np.exp(np.clip(m, -700, 700)))


def fit_rows(loss, W, L, n_rows, scale, intercept=0.0, random_state=0):
    """Rows ``Z`` (``n_rows x n_weights``) minimising
    ``sum_t (sum_i l(z_i^T w_t) - L_t)^2``: the best of several random
    starts (a non-convex fit; rows are found up to their order).

    ``scale`` bounds a row's norm (the starts are drawn at half of it);
    ``intercept`` (the public intercept scaling, 0 without one) starts the
    last coordinate at ``+-intercept``."""
    W, L = np.asarray(W, dtype=float), np.asarray(L, dtype=float)
    d = W.shape[1]
    rng = np.random.RandomState(random_state)

    def residuals(z):
        values, _ = _loss(loss, W @ z.reshape(n_rows, d).T)
        return values.sum(axis=1) - L

    def jacobian(z):
        _, slope = _loss(loss, W @ z.reshape(n_rows, d).T)  # (T, n)
        return (slope[:, :, None] * W[:, None, :]).reshape(len(W), -1)

    starts = _STARTS if n_rows * d <= 200 else _STARTS // 4
    best, best_cost = np.zeros(n_rows * d), np.inf
    for _ in range(starts):
        z0 = rng.normal(scale=0.5 * scale / np.sqrt(d), size=(n_rows, d))
        if intercept > 0:
            z0[:, -1] = intercept * rng.choice([-1.0, 1.0], n_rows)
        z0 = z0.ravel()
        fit = least_squares(residuals, z0, jac=jacobian, method="trf",
                            tr_solver="lsmr", max_nfev=200)
        if fit.cost < best_cost:
            best, best_cost = fit.x, fit.cost
    return best.reshape(n_rows, d)


def _matched_errors(Z_hat, X_rows, signs, scaling):
    """Relative error of each true row and whether its label was read, by
    the best assignment of estimated rows to true rows (in the attacker's
    favour)."""
    n_features = X_rows.shape[1]
    # z = y [x, c]: the label is the sign of the intercept coordinate
    # (without an intercept it is not identifiable: rows up to their sign).
    if Z_hat.shape[1] > n_features and scaling > 0:
        label = np.where(Z_hat[:, -1] >= 0, 1.0, -1.0)
        X_hat = Z_hat[:, :n_features] * label[:, None]
    else:
        label = np.ones(len(Z_hat))
        X_hat = Z_hat[:, :n_features]
    norms = np.maximum(np.linalg.norm(X_rows, axis=1), 1e-300)
    cost = np.linalg.norm(X_hat[:, None, :] - X_rows[None, :, :], axis=2)
    if Z_hat.shape[1] == n_features:
        cost = np.minimum(cost, np.linalg.norm(
            X_hat[:, None, :] + X_rows[None, :, :], axis=2))
    cost = np.minimum(cost / norms[None, :], 1.0)
    est, true = linear_sum_assignment(cost)
    errors, read = np.ones(len(X_rows)), np.zeros(len(X_rows))
    errors[true] = cost[est, true]
    read[true] = label[est] == signs[true]
    return errors, read


def report_inversion(estimator, messages, X, y=None, **fit_params):
    """The server's reconstruction of rows and labels from the reports.

    Parameters
    ----------
    estimator : fitted HyFDCAClassifier
    messages : list of Message
        The recorded messages of the fit (the server's are used).
    X, y : array-like
        The fit's data, used only to score the attack.
    **fit_params
        Unused (sample weights are taken as ones by the attacker).

    Returns
    -------
    list of dict
        Two :func:`~skfed.privacy.attack_row` per row group:
        ``median_relative_error`` of its rows (lower is a better attack) and
        ``label_accuracy`` of its labels, with their chance.
    """
    X = np.asarray(X.toarray() if hasattr(X, "toarray") else X, dtype=float)
    y = np.asarray(y)
    partition = estimator.partition_
    signs = np.where(y == estimator.classes_[-1 if len(
        estimator.classes_) == 2 else 0], 1.0, -1.0)
    scaling = float(estimator.intercept_scaling) if estimator.fit_intercept else 0.0
    # The public bound on a row's norm: sqrt(C) 2**e (the agreed scale).
    exponents = [int(np.ravel(m.payload[0])[0]) for m in messages
                 if m.sender == "server" and m.phase == "setup/scale"]
    scale = np.sqrt(partition.n_column_groups) * 2.0 ** max(exponents or [0])
    # Per row: the smallest error and whether the label was read, over the
    # series that cover it.
    errors = np.ones(len(X))
    read = np.zeros(len(X))
    covered = np.zeros(len(X), dtype=bool)
    for rows, W, L in report_series(estimator, messages):
        unknowns = len(rows) * W.shape[1]
        if len(W) == 0 or unknowns > min(_MAX_UNKNOWNS, _MAX_RATIO * len(W)):
            continue  # far underdetermined: not fitted (error 1)
        Z_hat = fit_rows(estimator.loss, W, L, len(rows), scale, scaling)
        e, r = _matched_errors(Z_hat, X[rows], signs[rows], scaling)
        better = e < errors[rows]
        errors[rows[better]] = e[better]
        read[rows] = np.maximum(read[rows], r)
        covered[rows] = True
    out = []
    for r in range(partition.n_row_groups):
        members = partition.clients_of_row_group(r)
        own = partition.client_rows(members[0])
        block = X[own]
        mean_error = np.median(np.minimum(1.0, np.linalg.norm(
            block - block.mean(axis=0), axis=1) / np.maximum(
                np.linalg.norm(block, axis=1), 1e-300)))
        majority = max(np.mean(signs[own] > 0), np.mean(signs[own] < 0))
        victim = "+".join(f"client{k}" for k in members)
        out.append(attack_row("report_inversion", "server", victim,
                              "rows of the row group, from the objective "
                              "reports", "median_relative_error",
                              np.median(errors[own]), mean_error))
        # rows no series was fitted for: the attacker guesses the majority
        accuracy = np.mean(read[own]) if np.all(covered[own]) else majority
        out.append(attack_row("report_inversion", "server", victim,
                              "labels of the row group, from the objective "
                              "reports", "label_accuracy", accuracy,
                              majority))
    return out
