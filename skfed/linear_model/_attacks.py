"""What HyFDCA's parties can still infer: the attacks on its protocol.

The server: ``row_reconstruction`` and ``report_inversion`` (below). The
clients: ``partner_block`` (a client's reconstruction of its row-group
partners' columns from its partners' parts of the margins, with or without
their squared norms) and ``model_differences`` (on a horizontal split, the
other clients' rows in the changes of ``w``); their docstrings describe
them. Both read what the attacking client holds beyond its messages, its
row group's private key and its own duals, from the fit's ``_audit_log``,
which a fit keeps only while messages are recorded: ``{"keys": {client
name: private key of its row group}, "duals": {client name: [(point,
duals) at each receipt of "primal weights"]}}``.

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

from .._privacy_core import attack_row, column_r2, psd_root
from ..federation.secure_sum import RingEncoder
from ._protocol import client_blocks, weight_change_encoder
from ._reports import split_total

__all__ = ["row_reconstruction", "report_inversion", "partner_block",
           "model_differences", "report_series",
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


# -- partner_block: a client's view of its row-group partners' columns --------

#: the direction error below which a weight change "is" a row
_ON_A_ROW = 1e-6
#: rounds of the vertical Gram solve tried one by one (then all of them)
_MAX_ROUNDS_TRIED = 60


def _hyfdca_audit_log(estimator, attack):
    """The fit's ``_audit_log`` (keys and own duals of the clients), kept
    only while messages are recorded."""
    log = getattr(estimator, "_audit_log", None)
    if log is None:
        raise ValueError(
            f"{attack} needs what the attacking client holds beyond its "
            "messages (its row group's private key, its own duals), which a "
            "fit keeps aside only while messages are recorded: run it "
            "through skfed.privacy.audit, or fit inside "
            "skfed.federation.record_messages().")
    return log


def _basis(M, rel=1e-9):
    """Orthonormal basis of the column space of ``M`` (numerical rank)."""
    if M.size == 0:
        return np.zeros((M.shape[0], 0))
    U, s, _ = np.linalg.svd(M, full_matrices=False)
    if s[0] == 0:
        return np.zeros((M.shape[0], 0))
    return U[:, s > rel * s[0]]


def _gram_from_norms(U, sqnorms):
    """Symmetric ``G`` with ``diag(U G U^T) = sqnorms`` (least squares: the
    diagonal is linear in the upper triangle of ``G``)."""
    d = U.shape[1]
    iu = np.triu_indices(d)
    A = U[:, iu[0]] * U[:, iu[1]] * np.where(iu[0] == iu[1], 1.0, 2.0)
    g = np.linalg.lstsq(A, sqnorms, rcond=None)[0]
    G = np.zeros((d, d))
    G[iu] = g
    return G + G.T - np.diag(np.diag(G))


def _gram_from_products(U, V, M):
    """Symmetric ``G`` with ``U G U^T V = M`` (the margins ``M`` of the
    known dual combinations ``V``), least squares."""
    G = np.linalg.lstsq((U.T @ V).T, (U.T @ M).T, rcond=None)[0].T
    return 0.5 * (G + G.T)


def _rotated_r2(estimate, truth):
    """r2 per truth column of ``estimate @ Q``, ``Q`` the best
    (semi-)orthogonal map (Procrustes: in the attacker's favour)."""
    u, _, vt = np.linalg.svd(estimate.T @ truth, full_matrices=False)
    return column_r2(estimate @ (u @ vt), truth)


def _gram_error(estimate, truth):
    K = truth @ truth.T
    return float(np.linalg.norm(estimate @ estimate.T - K) / np.linalg.norm(K))


def _dense(block):
    return np.asarray(block.toarray() if hasattr(block, "toarray") else block,
                      dtype=float)


def _tasks(estimator, y):
    """The +-1 label signs per one-vs-rest task (as the fit codes them)."""
    classes = estimator.classes_
    index = np.searchsorted(classes, np.asarray(y))
    if len(classes) == 2:
        return np.where(index == 1, 1.0, -1.0)[:, None]
    return np.where(index[:, None] == np.arange(len(classes)), 1.0, -1.0)


def _signed_weights(estimator, y, sample_weight, n_rows):
    """``(y * s, lambda N)``: each row's label signs per task times its
    weight, and ``lambda`` times the total weight (``w = X^T (y * s *
    a) / (lambda N)`` for duals ``a`` per unit weight)."""
    s = (np.ones(n_rows) if sample_weight is None
         else np.asarray(sample_weight, dtype=float))
    return _tasks(estimator, y) * s[:, None], float(estimator.alpha) * float(
        s.sum())


def _fit_blocks(estimator, X):
    """Each client's block as the fit made it (the intercept's column on
    column group 0), its rows and its columns."""
    blocks, rows, _ = client_blocks(
        X, estimator.partition_, bool(estimator.fit_intercept),
        float(estimator.intercept_scaling))
    return {k: _dense(b) for k, b in blocks.items()}, rows


def _client_view(estimator, messages, k, own, key):
    """What client ``k`` received, per ``primal weights`` receipt: the
    weights of its columns, its partners' parts ``X_p w_p`` of its rows'
    margins (decrypted with its row group's key, minus its own part where
    it received the whole margin) and, if any reached it, its partners'
    squared row norms."""
    name, n = f"client{k}", own.shape[0]
    paper = getattr(estimator, "solver", "accelerated") == "paper"
    weights, margins, norms, w = [], [], None, None

    def decrypt(payload, size):
        values = np.asarray(key.decrypt(payload), dtype=float).ravel()
        return values[:size]

    for m in messages:
        if m.receiver != name:
            continue
        if m.phase == "primal weights":
            w = np.asarray(m.payload[0], dtype=float)
            weights.append(w)
        elif m.phase == "inner products" and m.sender == "server":
            tasks = w.shape[1]
            v = decrypt(m.payload[0], n * tasks).reshape(n, tasks)
            # the paper solver: every client decrypts the whole margin
            margins.append(v - own @ w if paper else v)
        elif m.phase == "inner products/shared":
            v = np.asarray(m.payload[0], dtype=float).reshape(n, -1)
            margins.append(v - own @ w)
        elif m.phase == "squared norms" and m.sender == "server":
            norms = decrypt(m.payload[0], n)
        elif m.phase == "squared norms/shared":
            norms = (np.asarray(m.payload[0], dtype=float).ravel()
                     - np.einsum("ij,ij->i", own, own))
    return weights, margins, norms


def _rounds_to_exact(V, margins, truth):
    """The first round count ``t`` after which the vertical Gram solve over
    rounds ``1..t`` is exact (error below 1e-6), or inf."""
    for t in range(1, min(len(V), len(margins), _MAX_ROUNDS_TRIED) + 1):
        M = np.hstack(margins[:t])
        U = _basis(M)
        if U.shape[1] == 0:
            continue
        G = _gram_from_products(U, np.hstack(V[:t]), M)
        if _gram_error(U @ psd_root(G), truth) < 1e-6:
            return t
    return np.inf


def partner_block(estimator, messages, X, y=None, sample_weight=None,
                  **fit_params):
    """Each client's reconstruction of its row-group partners' columns.

    Attacker: every client ``a`` of a split with more than one column
    group; victims: its row-group partners ``p`` (the clients holding the
    other columns of its rows). Per round ``a`` learns ``X_p w_p`` of its
    rows: the row group's decryptor decrypts the partners' summed parts
    (with its row group's key, from the fit's ``_audit_log``), its partners
    receive ``x_i^T w`` and subtract their own part (``w_a`` from their
    ``primal weights``); with ``solver="paper"`` every client decrypts
    ``x_i^T w`` and subtracts its own part. Over the rounds these span the
    column space of the partners' block ``X_p = U C`` (``U`` the span's
    orthonormal basis): the paper's protocol reveals it.

    What fixes ``C`` up to a rotation:

    - hybrid split, ``dual_curvature="row_norm"``: the partners' squared
      row norms (decrypted at setup, or ``||x_i||^2`` minus the client's
      own), the diagonal of ``U G U^T`` with ``G = C C^T``: a linear least
      squares for ``G``, and ``U G^(1/2)`` is the block up to a rotation
      (the *norm route*);
    - hybrid split, the public mean curvature (the default): no norm
      reaches the client; the attack assumes standardised, uncorrelated
      partner columns (``X_p^T X_p = n I``, a *whitened prior*: ``sqrt(n)
      U``). Where the partners' columns are close to that (standardised
      synthetic data) the prior is close to the truth; the number depends
      on the data, never a bound;
    - one row group (vertical split): every row's dual is the client's
      own, and ``w_p = X_p^T (y * s * a) / (lambda N)``, so the margins are
      ``K_p v_t`` with ``v_t`` known (its duals at each ``primal weights``
      receipt, from ``_audit_log``): ``U G U^T V = M``, linear in ``G``
      without any norm. Exact after a few more rounds than the block's
      width.

    Metrics per (attacker, victim):

    - ``gram_error``: ``||K_hat - K|| / ||K||`` of the partners' Gram
      matrix ``K = X_p X_p^T`` (joint over the attacker's partners: the
      margins carry their sum); chance 1.0 (the zero guess);
    - ``r2_rotation``: r2 of the victim's columns after the best
      orthogonal map of the estimate (mean over its non-constant columns,
      Procrustes: in the attacker's favour); chance 0 (the mean guess);
    - ``known_rows_r2``: with ``d`` of the victim's rows known (``d`` the
      span's rank, drawn with ``RandomState(0)``), the column space alone
      gives ``C`` by least squares; r2 on the other rows; chance: the
      victim's columns predicted from the attacker's own columns by least
      squares fitted on every row (in chance's favour);
    - ``rounds_to_exact_gram`` (vertical split only): the first round
      count after which ``gram_error < 1e-6``; chance inf.

    Parameters
    ----------
    estimator : fitted HyFDCAClassifier
        Fitted while messages were recorded (``_audit_log``).
    messages : list of Message
    X, y : array-like
        The fit's data: the attacker's own block and labels, and the
        victims' columns to score against.
    sample_weight : array-like, optional
        The fit's row weights (their rows' clients hold them).
    **fit_params
        Unused.

    Returns
    -------
    list of dict
        :func:`~skfed.privacy.attack_row` per attacker and victim; empty on
        a horizontal split (no partner).
    """
    partition = estimator.partition_
    if partition.n_column_groups < 2:
        return []
    log = _hyfdca_audit_log(estimator, "partner_block")
    X = np.asarray(X.toarray() if hasattr(X, "toarray") else X, dtype=float)
    blocks, rows = _fit_blocks(estimator, X)
    vertical = partition.n_row_groups == 1
    if vertical:
        signs, lam_n = _signed_weights(estimator, y, sample_weight, len(X))
    use = 1 if getattr(estimator, "solver", "accelerated") == "paper" else 0
    out = []
    for a in range(partition.n_clients):
        name = f"client{a}"
        key = log["keys"].get(name)
        r = partition.client_cell(a)[0]
        partners = [p for p in partition.clients_of_row_group(r) if p != a]
        if key is None or not partners:
            continue
        own = blocks[a]
        _, margins, norms = _client_view(estimator, messages, a, own, key)
        truth = np.hstack([blocks[p] for p in partners])
        n = truth.shape[0]
        M = (np.hstack(margins) if margins else np.zeros((n, 0)))
        U = _basis(M)
        d = U.shape[1]
        rounds = None
        if vertical and d:
            V = [signs[rows[a]] * entry[use] / lam_n
                 for entry in log["duals"][name]]
            rounds = _rounds_to_exact(V, margins, truth)
            G = _gram_from_products(U, np.hstack(V[:len(margins)]), M)
            estimate = U @ psd_root(G)
            gram = _gram_error(estimate, truth)
        elif norms is not None and d:
            estimate = U @ psd_root(_gram_from_norms(U, norms))
            gram = _gram_error(estimate, truth)
        else:  # the whitened prior: standardised, uncorrelated columns
            estimate = np.sqrt(n) * U
            gram = _gram_error(estimate, truth) if d else 1.0
        fit_r2 = (_rotated_r2(estimate, truth) if d
                  else np.zeros(truth.shape[1]))
        rng = np.random.RandomState(0)
        if d:
            known = rng.choice(n, min(d, n), replace=False)
            rest = np.setdiff1d(np.arange(n), known)
            C = np.linalg.lstsq(U[known], truth[known], rcond=None)[0]
            known_r2 = column_r2((U @ C)[rest], truth[rest])
        else:
            rest = np.arange(n)
            known_r2 = np.zeros(truth.shape[1])
        Z = np.hstack([np.ones((n, 1)), own])
        coef = np.linalg.lstsq(Z, truth, rcond=None)[0]
        chance_r2 = column_r2((Z @ coef)[rest], truth[rest])
        start = 0
        for p in partners:
            width = blocks[p].shape[1]
            cols = slice(start, start + width)
            start += width
            victim = f"client{p}"

            def mean(v):
                v = v[cols]
                return float(np.nanmean(v)) if np.any(np.isfinite(v)) \
                    else float("nan")

            out.append(attack_row("partner_block", name, victim,
                                  "Gram matrix of the partners' block",
                                  "gram_error", gram, 1.0))
            out.append(attack_row("partner_block", name, victim,
                                  "columns, up to a rotation", "r2_rotation",
                                  mean(fit_r2), 0.0))
            out.append(attack_row("partner_block", name, victim,
                                  f"columns, with {d} rows known",
                                  "known_rows_r2", mean(known_r2),
                                  mean(chance_r2)))
            if rounds is not None:
                out.append(attack_row("partner_block", name, victim,
                                      "Gram matrix, exact after",
                                      "rounds_to_exact_gram", rounds,
                                      np.inf))
    return out


# -- model_differences: the other clients' weight changes (horizontal) --------

def model_differences(estimator, messages, X, y=None, sample_weight=None,
                      **fit_params):
    """Each client's reading of the other clients' rows in the model's
    changes (horizontal split).

    On one column group every client receives all of ``w`` (its
    ``primal weights``) at every round and knows its own part of each
    change, ``X_a^T (y * s * delta_a) / (lambda N)`` (its own duals at each
    receipt, from the fit's ``_audit_log``). The difference of consecutive
    ``w`` minus its own change is the sum of the other clients' changes,
    a combination of the rows whose duals moved: when a single row moved
    (few coordinates per round, or late rounds of the paper solver, whose
    constant step moves few duals) it *is* that row's direction.

    Metrics per (attacker, victim):

    - ``share_on_a_row``: the share of the attacker's nonzero differences
      whose direction is one of the victim's rows to ``1e-6``;
    - ``rows_read``: the share of the victim's rows read that way (in
      direction; the magnitude too when the dual jumped by a whole box);
    - ``direction_error``: ``sqrt(1 - cos^2)`` of the best difference and
      row.

    ``chance`` scores as many random combinations of the victim's rows
    (no row singled out) the same way.

    Returns
    -------
    list of dict
        Three :func:`~skfed.privacy.attack_row` per attacker and victim;
        empty unless the split is horizontal.
    """
    partition = estimator.partition_
    if partition.n_column_groups != 1 or partition.n_clients < 2:
        return []
    log = _hyfdca_audit_log(estimator, "model_differences")
    X = np.asarray(X.toarray() if hasattr(X, "toarray") else X, dtype=float)
    blocks, rows = _fit_blocks(estimator, X)
    signs, lam_n = _signed_weights(estimator, y, sample_weight, len(X))
    use = 1 if getattr(estimator, "solver", "accelerated") == "paper" else 0
    rng = np.random.RandomState(0)
    out = []
    for a in range(partition.n_clients):
        name = f"client{a}"
        weights, _, _ = _client_view(estimator, messages, a, blocks[a], None)
        duals = [entry[use] for entry in log["duals"][name]]
        T = min(len(weights), len(duals))
        own, z = blocks[a], signs[rows[a]]
        diffs = []
        for t in range(1, T):
            mine = own.T @ (z * (duals[t] - duals[t - 1])) / lam_n
            diffs.extend(((weights[t] - weights[t - 1]) - mine).T)
        diffs = np.array(diffs).reshape(-1, own.shape[1])
        diffs = diffs[np.linalg.norm(diffs, axis=1) > 1e-12 * max(
            1.0, float(np.max(np.abs(diffs), initial=0.0)))]
        for p in range(partition.n_clients):
            if p == a:
                continue
            victim = blocks[p]
            guesses = rng.normal(size=(max(1, len(diffs)),
                                       len(victim))) @ victim
            scores = [_difference_scores(c, victim) for c in (diffs, guesses)]
            for metric, target, index in (
                    ("share_on_a_row", "weight changes that are one row", 0),
                    ("rows_read", "rows read in direction", 1),
                    ("direction_error", "best row direction", 2)):
                out.append(attack_row("model_differences", name,
                                      f"client{p}", target, metric,
                                      scores[0][index], scores[1][index]))
    return out


def _difference_scores(candidates, rows):
    """(share of candidates on a row, share of rows hit, best direction
    error) of candidate vectors against a block's rows."""
    if len(candidates) == 0:
        return 0.0, 0.0, 1.0
    C, R = _unit_rows(candidates), _unit_rows(rows)
    cos = np.abs(C @ R.T)
    error = np.sqrt(np.maximum(0.0, 1.0 - cos.max(axis=1) ** 2))
    hit = error < _ON_A_ROW
    read = np.unique(cos.argmax(axis=1)[hit]).size
    return float(hit.mean()), read / len(rows), float(error.min())
