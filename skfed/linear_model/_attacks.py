"""What HyFDCA's server can still infer: the attacks on its protocol.

``row_reconstruction``: the server receives, per round, changes of the
weights ``w``: in the paper each client's ``w_hat_k = X_k^T alpha_k`` in
plaintext, in skfed one secure sum per column group. A vector of the form
``X_k^T (y * v) / (lambda N)`` with one non-zero ``v_i`` is a multiple of a
private row: with ``local_iterations=1`` on a horizontal split the paper's
first ``w_hat_k`` is ``y_i x_i`` exactly (when ``lambda N >= ||x_i||^2``).

The attack takes every plaintext vector the server received that has the
width of a client's columns, the difference of consecutive ones from the
same sender (the paper's ``w_hat_k`` is cumulative), and the total of every
secure aggregation it received (adding the masked uploads of one sum cancels
the masks; the fixed-point scale is public). Two scores per client, against
the private rows of the clients of that column group:

- ``relative_error``: ``||x_hat - x|| / ||x||`` of the best estimate
  ``x_hat = +-lambda N v`` (a single row whose dual moved by the largest
  possible step, 1), against the best row; 0 is a row read exactly.
- ``direction_error``: scale-free, in the attacker's favour:
  ``min_c ||c v - x|| / ||x|| = sqrt(1 - cos^2)`` of the best candidate and
  row. It measures what the sequence of models itself reveals (their
  differences are combinations of the rows whose duals moved, few of them
  with small ``local_iterations``).

``chance`` is the same score for as many aggregates of the victim's rows
with random weights (scaled to the norms of the attacker's estimates): what
sums in which no row is singled out achieve. With hundreds of candidates in
few dimensions, or on data whose sums resemble outlying rows (breast cancer,
along its first principal axis), this is well below 1; an attack learns a
row only where it beats ``chance``.

``report_inversion``: what the objective reports give the server. It holds
the round's weights ``w_t`` (it sends each client those of its columns) and
receives the loss sum ``L_t = sum_i l(z_i^T w_t)`` over the rows the report
covers, with ``z_i = y_i [x_i, c]`` (``c`` the intercept scaling). Over
rounds this is a system in the rows: fitted as a sum of ``l`` (hinge,
squared hinge or logistic) by non-linear least squares from random starts,
it returns the rows and, from the sign of the intercept coordinate, their
labels.

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
from ._protocol import weight_change_encoder
from ._reports import split_total

__all__ = ["row_reconstruction", "report_inversion", "report_series",
           "fit_rows"]


# -- row_reconstruction: rows from the weight changes ---------------------------

_MAX_CANDIDATES = 20000


def _client_columns(estimator):
    """Client name -> (column group, number of columns it sends weights of)."""
    partition = estimator.partition_
    out = {}
    for k in range(partition.n_clients):
        c = partition.client_cell(k)[1]
        width = len(partition.client_columns(k)) + int(
            bool(getattr(estimator, "fit_intercept", False)) and c == 0)
        out[f"client{k}"] = (c, width)
    return out


def _float_vectors(payload, width):
    """Plaintext float arrays in ``payload`` with a leading axis ``width``."""
    stack = list(payload)
    while stack:
        leaf = stack.pop()
        if isinstance(leaf, (list, tuple)):
            stack.extend(leaf)
        elif isinstance(leaf, dict):
            stack.extend(leaf.values())
        elif (isinstance(leaf, np.ndarray) and leaf.dtype.kind == "f"
              and leaf.ndim in (1, 2) and leaf.shape[0] == width):
            yield leaf.reshape(width, -1)


def _total_weight(messages):
    """The total weight ``S`` the server sent at setup (weighted fits), or
    ``None``."""
    for m in messages:
        if m.sender == "server" and m.phase == "setup/weights":
            return float(np.ravel(m.payload[0])[0])
    return None


def _public_decoder(estimator, messages):
    """``decode(ring_total, n_terms)``: the secure sums' public encoding."""
    partition = estimator.partition_
    sizes = [len(partition.client_rows(k)) for k in range(partition.n_clients)]
    scales = [int(np.ravel(m.payload[0])[0]) for m in messages
              if m.receiver == "server" and m.phase == "setup/scale"]
    scale = max(scales) if scales else 0
    total_weight = _total_weight(messages)

    def decode(total, n_terms):
        encoder = weight_change_encoder(
            estimator.loss, float(estimator.alpha),
            sum(sizes) if total_weight is None else total_weight, max(sizes),
            scale, n_terms, weighted=total_weight is not None)
        return encoder.decode(total)

    return decode


def _candidates(estimator, messages):
    """Column group -> candidate weight changes (in weight units)."""
    columns = _client_columns(estimator)
    decode = _public_decoder(estimator, messages)
    out = {}
    last_plain = {}
    state = {"total": None, "key": None, "members": set()}

    def close():
        if state["total"] is not None:
            _, c, width = state["key"]
            total = decode(state["total"], len(state["members"]))
            out.setdefault(c, []).extend(total.reshape(width, -1).T)
        state.update(total=None, key=None, members=set())

    for m in messages:
        if (m.receiver != "server" or m.sender not in columns
                or str(m.phase).startswith(("setup/weights", "curvature",
                                            "objective report"))):
            # the total weight's and the mean curvature's sums are
            # scalars, the reports' sums are per task: none has a row's
            # shape
            continue
        c, width = columns[m.sender]
        payload = tuple(m.payload or ())
        if str(m.phase).endswith("/upload") and payload and isinstance(
                payload[0], np.ndarray) and payload[0].dtype == np.uint64:
            # Masked uploads of one secure sum arrive one after the other:
            # their wrap-around sum is the total (the masks cancel).
            key = (m.phase, c, width)
            if key != state["key"] or m.sender in state["members"]:
                close()
                state["key"] = key
            upload = payload[0].ravel()
            state["total"] = (upload.copy() if state["total"] is None
                              else state["total"] + upload)
            state["members"].add(m.sender)
            continue
        for v in _float_vectors(payload, width):
            out.setdefault(c, []).extend(v.T)
            previous = last_plain.get((m.sender, m.phase))
            if previous is not None and previous.shape == v.shape:
                out[c].extend((v - previous).T)
            last_plain[(m.sender, m.phase)] = v
    close()
    return out


def _unit_rows(matrix):
    matrix = np.asarray(matrix, dtype=float)
    matrix = matrix[np.all(np.isfinite(matrix), axis=1)]
    norms = np.linalg.norm(matrix, axis=1)
    return matrix[norms > 0] / norms[norms > 0, None]


def _direction_error(candidates, rows):
    """``min over candidates and rows of sqrt(1 - cos^2)``."""
    V = _unit_rows(np.asarray(candidates, dtype=float)[:_MAX_CANDIDATES]
                   if len(candidates) else np.zeros((0, rows.shape[1])))
    R = _unit_rows(rows)
    if len(V) == 0 or len(R) == 0:
        return 1.0
    best = max(float(np.max(np.abs(V[s:s + 2048] @ R.T)))
               for s in range(0, len(V), 2048))
    return float(np.sqrt(max(0.0, 1.0 - min(best, 1.0) ** 2)))


def _relative_error(estimates, rows):
    """``min over estimates, signs and rows of ||x_hat - x|| / ||x||``."""
    V = np.asarray(estimates, dtype=float)[:_MAX_CANDIDATES] if len(
        estimates) else np.zeros((0, rows.shape[1]))
    V = V[np.all(np.isfinite(V), axis=1)]
    norms = np.linalg.norm(rows, axis=1)
    R = rows[norms > 0]
    norms = norms[norms > 0]
    if len(V) == 0 or len(R) == 0:
        return 1.0
    v2 = np.sum(V ** 2, axis=1)
    best = np.inf
    for s in range(0, len(V), 2048):
        cross = np.abs(V[s:s + 2048] @ R.T)  # the better sign
        d2 = v2[s:s + 2048, None] - 2.0 * cross + norms[None, :] ** 2
        best = min(best, float(np.min(np.sqrt(np.maximum(d2, 0.0))
                                      / norms[None, :])))
    return min(best, 1.0) if np.isfinite(best) else 1.0


def row_reconstruction(estimator, messages, X, y=None, **fit_params):
    """The server's best reconstruction of each client's private rows.

    Parameters
    ----------
    estimator : fitted HyFDCAClassifier
    messages : list of Message
        The recorded messages of the fit (only those the server received are
        used).
    X : array-like
        The fit's data, used only to score the attack.
    y : array-like, optional
        Unused (the partition is read from the fitted estimator).

    **fit_params
        Unused. With sample weights the server reads the total weight
        ``S`` from its own setup messages: the weight changes it sums are
        scaled by ``1 / (lambda S)``.

    Returns
    -------
    list of dict
        Two :func:`~skfed.privacy.attack_row` per client: metrics
        ``relative_error`` and ``direction_error`` of its best-recovered row
        (lower is a better attack), with their ``chance``.
    """
    # Scored against dense rows (sparse input included).
    X = np.asarray(X.toarray() if hasattr(X, "toarray") else X, dtype=float)
    partition = estimator.partition_
    candidates = _candidates(estimator, messages)
    total = _total_weight(messages)
    lam_n = float(estimator.alpha) * (X.shape[0] if total is None else total)
    rng = np.random.RandomState(0)
    rows = []
    for k in range(partition.n_clients):
        c = partition.client_cell(k)[1]
        cols = partition.client_columns(k)
        block = X[np.ix_(partition.client_rows(k), cols)]
        found = np.array([v[:len(cols)] for v in candidates.get(c, [])])
        found = found.reshape(-1, len(cols))
        victim = f"client{k}"
        # Chance: as many aggregates of the victim's rows with random
        # weights (no row singled out), scaled to the norms of the
        # attacker's estimates. Sums of many rows can resemble an outlying
        # row (on breast cancer, along the first principal axis); the attack
        # learns a row only when it beats this.
        n_guesses = max(1, min(len(found), _MAX_CANDIDATES))
        aggregates = _unit_rows(rng.normal(size=(n_guesses, len(block)))
                                @ block)
        norms = (np.linalg.norm(lam_n * found, axis=1)[:n_guesses, None]
                 if len(found) else np.zeros((n_guesses, 1)))
        rows.append(attack_row(
            "row_reconstruction", "server", victim,
            "best-recovered private row", "relative_error",
            _relative_error(lam_n * found, block),
            _relative_error(aggregates[:len(norms)] * norms, block)
            if len(found) else 1.0))
        rows.append(attack_row(
            "row_reconstruction", "server", victim,
            "best-recovered private row direction", "direction_error",
            _direction_error(found, block), _direction_error(aggregates, block)))
    return rows


# -- report_inversion: rows and labels from the objective reports -------------

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

