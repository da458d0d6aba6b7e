"""What the server of federated kernel k-means can learn of a user's rows.

:func:`row_reconstruction` plays the honest-but-curious server of
:class:`~skfed.cluster.FederatedKernelKMeans`: from the messages it received
(and the broadcasts it sent itself) it forms every estimate of a private row
that the protocol's messages suggest, and reports the best one.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np

from .._privacy_core import attack_row
from ._protocol import moment_encoder

__all__ = ["row_reconstruction", "candidate_rows"]

_SERVER = "server"


def _plain_arrays(payload):
    """Plaintext numeric arrays of a payload (containers walked; ring values,
    i.e. ``uint64`` arrays, left out)."""
    for item in payload:
        if isinstance(item, (list, tuple)):
            yield from _plain_arrays(item)
        elif isinstance(item, dict):
            yield from _plain_arrays(list(item.values()))
        elif np.isscalar(item) and isinstance(item, (int, float, np.number)):
            continue
        else:
            array = np.asarray(item) if isinstance(item, np.ndarray) else None
            if (array is not None and array.dtype.kind in "biuf" and array.size
                    and array.dtype != np.uint64):
                yield array.astype(float)


def _vectors_of(array, d, n_rows):
    """Estimates of a row from one array: length-``d`` vectors along any
    axis, and the moment formats ``(sum x, sum ||x||^2)`` and ``(n, sum x,
    sum ||x||^2)`` divided by the row count."""
    out = []
    for axis in range(array.ndim):
        if array.shape[axis] == d:
            out.append(np.moveaxis(array, axis, -1).reshape(-1, d))
    flat = array.ravel()
    if flat.size == d + 1:
        out.append(flat[None, :d] / max(n_rows, 1))
    if flat.size == d + 2 and flat[0] >= 1:
        out.append(flat[None, 1:d + 1] / flat[0])
    return out


def _decoded_moments(received, sent, users, n_rows, d):
    """The masked moment uploads, decoded one by one and summed, with the
    scale the server announced itself: ``{user: estimates}`` and the total."""
    shifts = [m.payload[0] for m in sent if m.phase == "setup: scale"]
    uploads = {m.sender: np.asarray(m.payload[0]) for m in received
               if m.phase == "setup: moments/upload"}
    if not shifts or not uploads:
        return {}, None
    encoder = moment_encoder(len(users), int(shifts[0]))
    single = {u: [encoder.decode(v)[None, :d] / max(n_rows.get(u, 1), 1)]
              for u, v in uploads.items()}
    total = np.zeros_like(next(iter(uploads.values())))
    for v in uploads.values():
        total = total + v  # uint64: wraps modulo 2**64, as the ring does
    n_total = max(sum(n_rows.values()), 1)
    return single, encoder.decode(total)[None, :d] / n_total


def candidate_rows(messages, users, d, embedding_dim=None):
    """Every estimate of a private row the server can form, per user.

    Parameters
    ----------
    messages : list of Message
        The messages of a fit (only those the server received or sent are
        read).

    users : list of str
        The users' names.

    d : int
        The number of features (public).

    embedding_dim : int, optional
        The width of the embedding ``H`` (public). When it equals ``d``, the
        vectors of the k-means phases (group means of rows of ``H``) are left
        out: they cannot be told from rows of ``X``.

    Returns
    -------
    dict
        ``{user: ndarray of shape (n_candidates, d)}``; the zero guess is
        always among them.
    """
    received = [m for m in messages if m.receiver == _SERVER]
    sent = [m for m in messages if m.sender == _SERVER]
    n_rows = {}
    for m in received:
        if m.phase == "setup: row counts":
            n_rows[m.sender] = int(np.asarray(m.payload[0]).ravel()[0])
    single, total = _decoded_moments(received, sent, users, n_rows, d)
    out = {}
    for user in users:
        found = [np.zeros((1, d))] + single.get(user, [])
        if total is not None:
            found.append(total)
        for m in received:
            # The k-means phases carry rows of the embedding H, not of X.
            if m.sender != user or (m.phase.startswith("kmeans:")
                                    and embedding_dim in (None, d)):
                continue
            for array in _plain_arrays(m.payload):
                found.extend(_vectors_of(array, d, n_rows.get(user, 1)))
        out[user] = np.vstack(found)
    return out


def _best_relative_error(candidates, rows):
    norms = np.maximum(np.linalg.norm(rows, axis=1), 1e-12)
    best = np.inf
    for start in range(0, len(candidates), 1024):
        block = candidates[start:start + 1024]
        dist = np.sqrt(np.maximum(
            np.square(block).sum(1)[:, None] - 2 * block @ rows.T
            + np.square(rows).sum(1)[None, :], 0.0))
        best = min(best, float(np.min(dist / norms[None, :])))
    return best


def row_reconstruction(estimator, messages, X, y=None, **fit_params):
    """The server's best estimate of each user's private rows.

    The server gathers every estimate its messages suggest (plaintext
    vectors of length ``n_features`` from the user -- outside the k-means
    phases when the embedding has ``n_features`` columns too, since those
    are group means of rows of ``H`` --; moment sums divided by the user's
    row count; the masked moment uploads decoded as if unmasked, one by one
    and summed over users, the sum divided by the number of rows) and the
    zero guess. The decoded sum is the users' total of ``Q sum x`` for an
    orthogonal ``Q`` the server does not know: as a row estimate it has the
    norm of the mean row and a random direction, which on data far from the
    origin can land within ~0.3 relative error of some row by chance.
    ``value`` is the relative error of the best-recovered row,
    ``min ||x_hat - x|| / ||x||`` over the candidates and the user's rows;
    ``chance`` is that of the zero guess, 1. The data are used only to
    score.

    Parameters
    ----------
    estimator : FederatedKernelKMeans
        Fitted.

    messages : list of Message

    X : array-like of shape (n_samples, n_features)

    y : ignored

    **fit_params
        Ignored (the partition is read from the estimator).

    Returns
    -------
    list of dict
        One row per user (see :func:`~skfed.privacy.attack_row`).
    """
    X = np.asarray(X, dtype=float)
    partition = estimator.partition_
    users = [f"user{m}" for m in range(partition.n_parties)]
    candidates = candidate_rows(messages, users, X.shape[1],
                                getattr(estimator, "n_components_", None))
    rows = []
    for m, user in enumerate(users):
        value = _best_relative_error(candidates[user], X[partition.rows(m)])
        rows.append(attack_row("row_reconstruction", _SERVER, user,
                               "best-recovered row", "relative_error",
                               value, 1.0))
    return rows
