"""What the server of federated kernel k-means can learn of a user's rows.

:func:`row_reconstruction` plays the honest-but-curious server of
:class:`~skfed.cluster.FederatedKernelKMeans`: from the messages it received
(and the broadcasts it sent itself) it forms every estimate of a private row
that the protocol's messages suggest, and reports the best one.
:func:`refinement_differences` and :func:`totals_inversion` play a holder of
the refinement's totals (a user; the server in the refinement as first
built): the rows behind two consecutive releases, and behind one.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
from scipy.optimize import least_squares, minimize
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import maximum_bipartite_matching
from threadpoolctl import threadpool_limits

from .._privacy_core import attack_row
from ..base import party_seeds
from ..kernel_approximation import RandomFourierBasis
from ._dspgd import oos_seed
from ._protocol import moment_encoder, users_key_from_seed
from ._refine import PHASE_REFINE_RELAY, PHASE_REFINE_TOTALS, totals_encoder

__all__ = ["row_reconstruction", "candidate_rows", "recover_rows",
           "refinement_differences", "totals_inversion", "inversion_scores",
           "map_inversion", "map_inversion_scores",
           "RECOVERY_TOLERANCE", "MAX_INVERSION_ATOMS", "MAX_JOINT_UNKNOWNS"]

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


# -- refinement_differences: the moved rows behind consecutive totals ---------

#: a moved row counts as recovered when a guess lies within this share of
#: the data's scale (the root of the summed column variances)
RECOVERY_TOLERANCE = 0.1

#: an atom is kept while its correlation with the residual is above this
#: (a moved row's own features give ``||z(x)||^2 ~ 1``)
_ATOM_THRESHOLD = 0.5

_N_CANDIDATES = 4000


class _Features:
    """``z(x) = sqrt(2 / D') cos(W^T x + b)`` and its gradient, from a key."""

    def __init__(self, key, gamma, n_features, d):
        basis = RandomFourierBasis(oos_seed(key), gamma=gamma)
        ids = np.arange(n_features)
        self.W = basis.directions(np.arange(d), ids)
        self.b = basis.offsets(ids)
        self.scale = np.sqrt(2.0 / n_features)

    def __call__(self, X):
        return self.scale * np.cos(np.atleast_2d(X) @ self.W + self.b)

    def jacobian(self, x):
        """``d z(x) / dx``, shape ``(D', d)``."""
        return -self.scale * np.sin(x @ self.W + self.b)[:, None] * self.W.T


def _ring_groups(messages, receiver, phase, n_users):
    """The sums of the masked uploads ``receiver`` got in ``phase``, by sum."""
    uploads = [np.asarray(m.payload[0]) for m in messages
               if m.receiver == receiver and m.phase == phase]
    out = []
    for start in range(0, len(uploads) - n_users + 1, n_users):
        total = uploads[start]
        for v in uploads[start + 1:start + n_users]:
            total = total + v  # uint64: wraps as the ring does
        out.append(total)
    return out


def _attacker_totals(messages, users, attacker, n_samples):
    """The refinement totals the attacker holds in plaintext, in order: the
    server decodes the sums of the uploads it received; a user reads the
    totals relayed to it (or that it relayed)."""
    if attacker == _SERVER:
        encoder = totals_encoder(n_samples)
        return [encoder.decode(t) for t in _ring_groups(
            messages, _SERVER, f"{PHASE_REFINE_TOTALS}/upload", len(users))]
    # The first user relayed the totals: read them on their way to user1.
    peer = users[1] if attacker == users[0] and len(users) > 1 else attacker
    return [np.asarray(m.payload[0], dtype=float) for m in messages
            if m.phase == PHASE_REFINE_RELAY and m.receiver == peer]


def _attacker_key(estimator, attacker):
    """The users' key as the attacker knows it: a user holds it; the server
    derives it from the public random_state (right when
    ``party_keys="random_state"``, a wrong guess with ``"os"``)."""
    if attacker != _SERVER:
        return estimator._users_key
    n_users = estimator.partition_.n_parties
    return users_key_from_seed(
        party_seeds(estimator.random_state, n_users + 3)[-1])


def _refine_atom(features, residual, sign, x0, low, high):
    def loss(x):
        z = features(x)[0]
        value = -sign * float(residual @ z)
        return value, -sign * (features.jacobian(x).T @ residual)
    found = minimize(loss, x0, jac=True, method="L-BFGS-B",
                     bounds=list(zip(low, high)), options={"maxiter": 60})
    return found.x


def _joint_fit(features, target, signs, atoms, low, high):
    """Least squares on the features: ``target ~ sum_a s_a z(x_a)``."""
    signs = np.asarray(signs, dtype=float)
    d = atoms.shape[1]

    def residual(theta):
        X = theta.reshape(-1, d)
        return signs @ features(X) - target

    def jacobian(theta):
        X = theta.reshape(-1, d)
        return np.hstack([s * features.jacobian(x) for s, x in zip(signs, X)])

    found = least_squares(residual, atoms.ravel(), jac=jacobian,
                          bounds=(np.tile(low, len(atoms)),
                                  np.tile(high, len(atoms))), max_nfev=30,
                          tr_solver="lsmr")
    return found.x.reshape(-1, d)


def recover_rows(features, differences, candidates, low, high, max_atoms,
                 signed=True, max_unknowns=None):
    """Matching pursuit on signed sums of features, refined by least squares.

    ``differences`` is ``(k, D')``: per cluster, the features of the rows
    that came in minus those of the rows that left. Atoms are picked greedily
    among ``candidates`` (the highest ``|<residual, z(c)>|``) and moved
    uphill by gradient steps, until no candidate correlates above 0.5 (a
    row's own features give ``||z(x)||^2 ~ 1``) or ``max_atoms`` are found
    (an int, or one per row of ``differences``); then all atoms of the
    cluster are fitted jointly by least squares on the features. With
    ``signed=False`` the targets are plain sums (every atom counts ``+1``,
    the highest ``<residual, z(c)>`` is picked): the greedy steps are
    kernel herding on the continuous space. The joint fit is skipped for a
    cluster with more than ``max_unknowns`` coordinates (``n_atoms x d``;
    None: no limit), whose cost grows with their square. Returns the atoms'
    positions ``(n_atoms, d)``.
    """
    Zc = features(candidates)
    caps = np.broadcast_to(np.asarray(max_atoms), (len(differences),))
    out = []
    for target, cap in zip(differences, caps):
        signs, atoms = [], []
        residual = target.copy()
        while len(atoms) < cap:
            scores = Zc @ residual
            best = int(np.argmax(np.abs(scores) if signed else scores))
            if (abs(scores[best]) if signed else scores[best]) \
                    < _ATOM_THRESHOLD:
                break
            sign = float(np.sign(scores[best])) if signed else 1.0
            x = _refine_atom(features, residual, sign, candidates[best], low,
                             high)
            signs.append(sign)
            atoms.append(x)
            residual = residual - sign * features(x)[0]
        if atoms and (max_unknowns is None
                      or len(atoms) * len(low) <= max_unknowns):
            out.append(_joint_fit(features, target, signs, np.vstack(atoms),
                                  low, high))
        elif atoms:
            out.append(np.vstack(atoms))
    return (np.vstack(out) if out
            else np.zeros((0, candidates.shape[1])))


def _moved_rows(history, m, start, stop):
    """Indices (into user ``m``'s rows) of the rows whose released label
    changed between releases ``start`` and ``stop``."""
    return np.flatnonzero(history[m][start] != history[m][stop])


def _nearest_errors(points, rows, scale):
    """Distance of each row to its nearest point, in the data's scale."""
    if not len(points):
        return np.full(len(rows), np.inf)
    dist = np.sqrt(np.maximum(
        (rows ** 2).sum(1)[:, None] - 2 * rows @ points.T
        + (points ** 2).sum(1)[None, :], 0.0))
    return dist.min(axis=1) / scale


def _matched(points, rows, scale):
    """Which rows get a guess of their own within the tolerance: a maximum
    matching of rows to points (each point serves one row)."""
    if not len(points):
        return np.zeros(len(rows), dtype=bool)
    dist = np.sqrt(np.maximum(
        (rows ** 2).sum(1)[:, None] - 2 * rows @ points.T
        + (points ** 2).sum(1)[None, :], 0.0))
    close = csr_matrix(dist <= RECOVERY_TOLERANCE * scale)
    return maximum_bipartite_matching(close, perm_type="column") >= 0


def _score(guesses, rows, scale, rng, low, high, n_guesses=None):
    """``(share recovered, mean relative error)`` of ``guesses`` and of as
    many uniform guesses in the public range (chance; ``n_guesses`` of them
    if given), averaged over 20 draws."""
    def errors(points):
        return _nearest_errors(points, rows, scale)

    if n_guesses is None:
        n_guesses = len(guesses) if len(guesses) else len(rows)
    chance = np.array([errors(rng.uniform(low, high, (n_guesses, len(low))))
                       for _ in range(20)])
    # No guess at all: the attacker guesses at random, i.e. scores chance.
    found = errors(guesses) if len(guesses) else chance
    return (float(np.mean(found <= RECOVERY_TOLERANCE)), float(found.mean()),
            float(np.mean(chance <= RECOVERY_TOLERANCE)), float(chance.mean()))


def refinement_differences(estimator, messages, X, y=None, **fit_params):
    """Rows recovered from the differences of consecutive refinement totals.

    Two consecutive releases of the refinement's totals (per cluster, the
    sum of the features ``z(x)`` and the row count) differ by the features
    of the rows that moved between them: ``+z(x)`` in the new cluster,
    ``-z(x)`` in the old one. An attacker who holds the totals in plaintext
    and knows the users' key (hence the frequencies of ``z``) reads in each
    difference a small signed sum of known functions of the moved rows, and
    solves for them: matching pursuit over candidate points (uniform in the
    data's range, public; a user adds its own rows), each atom refined by
    gradient steps and all atoms of a cluster by least squares on the
    ``D'`` features (:func:`recover_rows`).

    Attackers: the server (it derives the key from ``random_state``: the
    right key with ``party_keys="random_state"``, a wrong one with
    ``"os"``) and every user (it holds the key, and subtracts the features
    of its own moved rows). Victims: every other user. Per attacker and
    victim, two rows: the share of the victim's moved rows (over all
    differences the attacker holds) with a guess within
    :data:`RECOVERY_TOLERANCE` of the data's scale
    (``sqrt(sum of column variances)``), and the mean distance of each moved
    row to its nearest guess in that scale; ``chance`` is the same for as
    many uniform guesses in the data's range. An attacker who holds no
    totals, or only one (``refine="once"``: nothing to difference), guesses
    at random: its value is chance; the moved rows are then those of the
    update after the last release, which no total reveals. A victim none
    of whose rows moved gets a share of 0 (chance 0) and no error row. No
    rows with ``refine=None``. The data and the users' release history
    (local records) are used only to score.

    The parameters and the returned rows are those of
    :func:`row_reconstruction` (``estimator`` fitted, the fit's ``messages``,
    ``X``; ``y`` and ``fit_params`` ignored).
    """
    return _on_the_totals(estimator, _refinement_differences, estimator,
                          messages, X)


def _on_the_totals(estimator, attack, *args):
    """Run an attack on the refinement's totals: no rows without a
    refinement; one BLAS thread (many small solves: more threads only add
    contention, 34x slower on two loaded cores)."""
    if estimator.refine is None:
        return []  # no refinement, no totals
    with threadpool_limits(limits=1, user_api="blas"):
        return attack(*args)


def _search_space(X):
    """``(low, high, scale, box)``: the data's range (public), its scale
    (``sqrt(sum of column variances)``, to score) and the box the atoms are
    searched in."""
    low, high = X.min(axis=0), X.max(axis=0)
    scale = max(float(np.sqrt(X.var(axis=0).sum())), 1e-12)
    # The search may leave the range a little (and a constant column needs
    # room): 5% of the range or of the scale beyond each end.
    margin = 0.05 * np.maximum(high - low, scale)
    return low, high, scale, (low - margin, high + margin)


def _attacker_features(estimator, attacker, totals, d):
    """The map's features ``z`` as the attacker computes them, with ``D'``
    read from the length of the totals (``k`` sums of ``D'``, ``k`` counts)."""
    k = estimator.n_clusters
    return _Features(_attacker_key(estimator, attacker), estimator.gamma_,
                     (len(totals[0]) - k) // k, d)


def _attack_setup(estimator, X):
    """What the refinement's attacks start from: ``X`` as floats, the
    partition, the users' names, their release history (local records)
    and a fixed generator (candidates and chance)."""
    X = np.asarray(X, dtype=float)
    partition = estimator.partition_
    users = [f"user{m}" for m in range(partition.n_parties)]
    history = getattr(estimator, "_refine_history", None) or []
    return X, partition, users, history, np.random.default_rng(0)


def _refinement_differences(estimator, messages, X):
    X, partition, users, history, rng = _attack_setup(estimator, X)
    k = estimator.n_clusters
    low, high, scale, box = _search_space(X)
    rows = []
    for attacker in [_SERVER] + users:
        totals = _attacker_totals(messages, users, attacker, X.shape[0])
        guesses = {u: [] for u in users}
        moved = {u: [] for u in users}
        if history and totals:
            features = _attacker_features(estimator, attacker, totals,
                                          X.shape[1])
            n_features = features.W.shape[1]
            own = (None if attacker == _SERVER
                   else X[partition.rows(users.index(attacker))])
            candidates = rng.uniform(low, high, (_N_CANDIDATES, X.shape[1]))
            if own is not None:
                candidates = np.vstack([candidates, own])
            for r in range(len(totals) - 1):
                diff = (totals[r + 1] - totals[r])[:k * n_features]
                diff = diff.reshape(k, n_features)
                if own is not None:
                    # The attacker's own moves, which it knows, come off.
                    m = users.index(attacker)
                    for i in _moved_rows(history, m, r, r + 1):
                        z = features(own[i])[0]
                        diff[history[m][r + 1][i]] -= z
                        diff[history[m][r][i]] += z
                n_moves = sum(len(_moved_rows(history, v, r, r + 1))
                              for v in range(len(users)))
                # Two clusters: one difference is minus the other.
                found = recover_rows(features, diff[:1] if k == 2 else diff,
                                     candidates, *box,
                                     max_atoms=max(n_moves, 1))
                for v, victim in enumerate(users):
                    if victim != attacker:
                        guesses[victim].append(found)
        for v, victim in enumerate(users):
            if victim == attacker:
                continue
            own_rows = X[partition.rows(v)]
            truth = [own_rows[_moved_rows(history, v, r, r + 1)]
                     for r in range(len(history[v]) - 1)] if history else []
            if len(totals) > 1:
                pairs = [(g, t) for g, t in zip(guesses[victim], truth)
                         if len(t)]
            else:
                # No difference held: no guess (chance is as many guesses
                # as the victim's moved rows).
                pairs = [(np.zeros((0, X.shape[1])), t) for t in truth
                         if len(t)]
            scores = [_score(g, t, scale, rng, low, high) for g, t in pairs]
            counts = np.array([len(t) for _, t in pairs], dtype=float)
            if not len(counts):
                share, error, share0, error0 = 0.0, None, 0.0, None
            else:
                share, error, share0, error0 = (
                    np.average(np.array(scores)[:, c], weights=counts)
                    for c in range(4))
            rows.append(attack_row("refinement_differences", attacker, victim,
                                   "moved rows", "recovered_share", share,
                                   share0))
            if len(counts):
                # No row of the victim moved: no distance to report.
                rows.append(attack_row("refinement_differences", attacker,
                                       victim, "moved rows",
                                       "mean_relative_error", error, error0))
    return rows


# -- totals_inversion: the others' rows behind one release of the totals ------

#: at most this many atoms per cluster (the joint least squares fits
#: ``atoms x n_features`` unknowns)
MAX_INVERSION_ATOMS = 400

#: the atoms of a cluster are fitted jointly while they have at most this
#: many coordinates (one cluster of the digits, 155 atoms x 64, took 300 s)
MAX_JOINT_UNKNOWNS = 2000

_INVERSION_METRICS = ("recovered_share", "mean_relative_error",
                      "matched_share")


def totals_inversion(estimator, messages, X, y=None, **fit_params):
    """The other users' rows recovered from one release of the totals.

    The first release of the refinement's totals holds, per cluster ``c``,
    the sum of the features ``z(x)`` over the rows labelled ``c`` and their
    count. An attacker who holds it in plaintext and knows the users' key
    (hence the frequencies of ``z``) subtracts the features and the count of
    its own rows released in ``c`` (a user; the server, in the refinement as
    first built, owns none): what is left is the sum of ``z`` over the other
    users' ``n_c`` rows in ``c``, an estimate of their density in the
    kernel's feature space. It solves for ``n_c`` points whose features sum
    to it (:func:`recover_rows` with ``signed=False``: kernel herding over
    candidates uniform in the data's range plus the attacker's own rows,
    each atom moved uphill by gradient steps, then all atoms of the cluster
    fitted jointly by least squares while they have at most
    :data:`MAX_JOINT_UNKNOWNS` coordinates), with at most
    :data:`MAX_INVERSION_ATOMS` atoms per cluster. Later releases are not
    read (:func:`refinement_differences` reads their differences).

    Attackers: the server and every user; victims: every other user. Per
    attacker and victim, three rows scoring the recovered points (all
    clusters together: the attacker cannot tell the victims apart) against
    all of the victim's rows: ``recovered_share``, the share of the rows
    with a guess within :data:`RECOVERY_TOLERANCE` of the data's scale
    (``sqrt(sum of column variances)``); ``mean_relative_error``, the mean
    distance of each row to its nearest guess in that scale; and
    ``matched_share``, the share of the rows that get a guess of their own
    within the tolerance (a maximum matching: one guess serves one row).
    With as many guesses as rows in a few dimensions the first saturates
    (on 1,000 moons 667 uniform guesses put one within 0.1 of 97% of the
    rows); the matched share does not (67%). ``chance`` is what the
    attacker gets without any message, the better (per metric) of two
    baselines: as many uniform guesses in the data's range as the other
    users hold rows (the row counts are known; mean of 20 draws), and the
    attacker's own rows as guesses (in an IID split they already sample
    the others' distribution). :func:`inversion_scores` gives both apart
    (the benchmark prints them). An attacker who holds no totals (the
    server: they go to the users only) guesses without a message: its value
    is chance. No rows with ``refine=None``. The data and the users'
    release history (local records) are used only to score; fits with
    ``sample_weight`` release weighted sums, which this attack reads as
    plain ones.

    Measured (``benchmarks/bench_kernel_kmeans.py --only 8``, the default
    ``refine="once"``, 3 users on 1,000 moons, gamma=8): with an IID split
    each user gives 0.99-1.00 of another's rows a guess of their own (own
    rows 0.87-0.90, uniform 0.67-0.69; mean error 0.026-0.029 against
    0.031-0.033); split
    by terciles of the first coordinate 0.89-0.99 (chance 0.29-0.33). On
    the digits (64 features, 5 users) no row is within the tolerance and
    the guesses are farther than the attacker's own rows (0.66-0.70
    against 0.61-0.68): one release tells nothing there. About 12 s per
    attacker on one core for either set.

    The parameters and the returned rows are those of
    :func:`row_reconstruction` (``estimator`` fitted, the fit's ``messages``,
    ``X``; ``y`` and ``fit_params`` ignored).
    """
    return _on_the_totals(estimator, lambda: _inversion_rows(
        "totals_inversion", inversion_scores(estimator, messages, X)))


def _inversion_rows(attack, scores):
    """The attack rows of an inversion's scores (three metrics each)."""
    return [attack_row(attack, score["attacker"], score["victim"], "rows",
                       metric, score["attack"][i], score["chance"][i])
            for score in scores
            for i, metric in enumerate(_INVERSION_METRICS)]


def _others_sums(features, totals, own, own_labels, k):
    """Per cluster, the features' sum and the count of the rows the
    attacker does not own (``own`` None: all rows)."""
    n_features = features.W.shape[1]
    sums = totals[:k * n_features].reshape(k, n_features).copy()
    counts = totals[k * n_features:].copy()
    if own is not None:
        Z = features(own)
        for c in range(k):
            sums[c] -= Z[own_labels == c].sum(axis=0)
        counts -= np.bincount(own_labels, minlength=k)
    return sums, np.maximum(np.rint(counts), 0).astype(int)


def inversion_scores(estimator, messages, X):
    """The scores of :func:`totals_inversion`, one dict per attacker and
    victim: ``attack``, ``uniform``, ``own_rows`` and ``chance`` (the better
    baseline), each ``(recovered share, mean error, matched share)``, the
    attacker's ``guesses`` and their number. A generator, BLAS threads as
    the caller sets them."""
    X, partition, users, history, rng = _attack_setup(estimator, X)
    k = estimator.n_clusters
    low, high, _, box = _search_space(X)
    empty = np.zeros((0, X.shape[1]))
    for attacker in [_SERVER] + users:
        totals = _attacker_totals(messages, users, attacker, X.shape[0])
        own = (empty if attacker == _SERVER
               else X[partition.rows(users.index(attacker))])
        guesses = empty
        if history and totals:
            features = _attacker_features(estimator, attacker, totals,
                                          X.shape[1])
            own_labels = (None if attacker == _SERVER
                          else history[users.index(attacker)][0])
            sums, counts = _others_sums(features, np.asarray(totals[0]),
                                        None if attacker == _SERVER else own,
                                        own_labels, k)
            candidates = np.vstack([
                rng.uniform(low, high, (_N_CANDIDATES, X.shape[1])), own])
            guesses = recover_rows(features, sums, candidates, *box,
                                   np.minimum(counts, MAX_INVERSION_ATOMS),
                                   signed=False,
                                   max_unknowns=MAX_JOINT_UNKNOWNS)
        yield from _scored(attacker, guesses, own, X, partition, users, rng)


def _scored(attacker, guesses, own, X, partition, users, rng):
    """Per victim, the scores of an inversion's ``guesses`` and of the two
    baselines without a message (the dicts of :func:`inversion_scores`)."""
    low, high, scale, _ = _search_space(X)
    others = [v for v, u in enumerate(users) if u != attacker]
    truth = [X[partition.rows(v)] for v in others]
    pooled = np.vstack(truth)
    owner = np.repeat(others, [len(t) for t in truth])

    def measures(points):
        # Per victim: (recovered share, mean error, matched share).
        err = _nearest_errors(points, pooled, scale)
        return {v: (float(np.mean(err[owner == v] <= RECOVERY_TOLERANCE)),
                    float(np.mean(err[owner == v])),
                    float(np.mean(_matched(points, pooled[owner == v],
                                           scale))))
                for v in others}

    # Without a message: as many uniform guesses as the others' rows
    # (20 draws), and the attacker's own rows.
    draws = [measures(rng.uniform(low, high, (len(pooled), X.shape[1])))
             for _ in range(20)]
    uniform = {v: tuple(np.mean([d[v] for d in draws], axis=0))
               for v in others}
    own_rows = measures(own)
    found = measures(guesses)
    for v in others:
        best = (max(uniform[v][0], own_rows[v][0]),
                min(uniform[v][1], own_rows[v][1]),
                max(uniform[v][2], own_rows[v][2]))
        yield {"attacker": attacker, "victim": users[v],
               "guesses": guesses, "n_guesses": len(guesses),
               "attack": found[v] if len(guesses) else best,
               "uniform": uniform[v], "own_rows": own_rows[v],
               "chance": best}


# -- map_inversion: the rows behind the published out-of-sample map -----------

def map_inversion(estimator, messages, X, y=None, **fit_params):
    """The other users' rows recovered from the out-of-sample map.

    The map ``P = Lambda^{-1} H^T A' / D'`` (``embedding_map_``, ``s x
    D'``; skfed's addition, published with the model so that ``predict``
    needs no message) is, row by row, a sum of the features ``z(x)`` of all
    rows weighted by a column of the embedding ``H``. Its row space holds,
    nearly, a sum with positive weights of similar size (the kernel's
    top eigenvector is positive): a kernel mean of all rows. An attacker
    who holds ``P`` and the users' key picks the combination of ``P``'s
    rows nearest its guess of that kernel mean (a user: the features of its
    own rows times ``N / n_own``; the server, which owns no row: those of
    ``N`` uniform points in the data's range), subtracts its own rows'
    features (weight one each) and solves for the ``N - n_own`` other rows
    as :func:`totals_inversion` does for a cluster (kernel herding, gradient
    steps, joint least squares while at most :data:`MAX_JOINT_UNKNOWNS`
    coordinates; at most ``2 MAX_INVERSION_ATOMS`` atoms).

    Attackers: the server (it publishes ``P`` and derives the key from
    ``random_state``: right with ``party_keys="random_state"``, a wrong
    key with ``"os"``) and every user; victims: every other user. The rows
    and their chance are those of :func:`totals_inversion` (recovered
    share, mean relative error, matched share; chance the better of uniform
    guesses and the attacker's own rows). It reads the model, so it runs
    for every ``refine``, ``None`` included. The data are used only to
    score.

    The parameters and the returned rows are those of
    :func:`row_reconstruction` (``estimator`` fitted, the fit's ``messages``,
    ``X``; ``y`` and ``fit_params`` ignored).
    """
    with threadpool_limits(limits=1, user_api="blas"):
        return _inversion_rows("map_inversion",
                               map_inversion_scores(estimator, messages, X))


def map_inversion_scores(estimator, messages, X):
    """The scores of :func:`map_inversion`, as :func:`inversion_scores`
    gives them for the totals (a generator)."""
    X, partition, users, _, rng = _attack_setup(estimator, X)
    P = np.asarray(estimator.embedding_map_, dtype=float)
    low, high, _, box = _search_space(X)
    n, d = X.shape
    for attacker in [_SERVER] + users:
        features = _Features(_attacker_key(estimator, attacker),
                             estimator.gamma_, P.shape[1], d)
        own = (np.zeros((0, d)) if attacker == _SERVER
               else X[partition.rows(users.index(attacker))])
        own_sum = features(own).sum(axis=0)
        # The guess of the kernel mean of all n rows: the own rows scaled
        # up (a user), or n uniform points (the server).
        Z_prior = (own_sum * (n / len(own)) if len(own) else
                   features(rng.uniform(low, high, (n, d))).sum(axis=0))
        weights = np.linalg.lstsq(P.T, Z_prior, rcond=None)[0]
        target = P.T @ weights - own_sum
        candidates = np.vstack([rng.uniform(low, high, (_N_CANDIDATES, d)),
                                own])
        guesses = recover_rows(features, target[None], candidates, *box,
                               min(n - len(own), 2 * MAX_INVERSION_ATOMS),
                               signed=False, max_unknowns=MAX_JOINT_UNKNOWNS)
        yield from _scored(attacker, guesses, own, X, partition, users, rng)
