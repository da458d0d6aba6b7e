"""What HyFDCA's server can learn about a client's rows.

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
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np

from .._privacy_core import attack_row

__all__ = ["row_reconstruction"]

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
    from ._hyfdca_encryption import weight_change_encoder

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
                or str(m.phase).startswith(("setup/weights",
                                            "objective report"))):
            # the total weight's sum is a scalar, the reports' sums are
            # per task: neither has a row's shape
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
