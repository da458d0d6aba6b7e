"""The accumulation attack: every row-indexed vector a party received.

Each algorithm ships attacks on its own protocol; this one is generic and
runs in :func:`~skfed.privacy.audit` for every estimator after those. It
plays an attacker that keeps every message of every round and phase and
asks one question of them: how much of another party's columns over the
rows they share lies in the span of what it received, beyond its own
columns.

Who attacks whom
    Every party ``R`` holding rows (``_privacy_rows``) attacks every other
    party holding the same rows: on a vertical split every pair of parties,
    on a hybrid one the clients of one row group. A horizontal split has no
    shared rows (nothing is indexed by the rows of another party), and a
    party without data (a server) has no rows to index by: the attack
    returns no row for them; the estimators' own attacks
    (``row_reconstruction``) cover what a server or a user sees.

What counts as a row-indexed vector
    Each message ``R`` received is matched to its contract rule (an
    undeclared one, which :func:`~skfed.privacy.check_messages` reports, is
    read as plaintext declared ``Inherent``), and of its payload elements:

    - plaintext numeric leaves with an axis of ``R``'s row count, one vector
      per column along that axis; elements declared ``Masked`` or
      ``RandomIds`` are skipped (a mask is uniform noise to ``R``), and so
      are ring-encoded shares (``uint64``: only a sum decodes them) and
      elements declared ``OwnShare`` (``R``'s own values);
    - ciphertexts under a key ``R`` holds (the rule's ``Ciphertext.key_owner``
      is one of ``R``'s roles), decrypted: in plaintext mode the stand-in's
      values; otherwise with the private key the estimator's audit log
      holds for ``R`` (``estimator._audit_log["keys"]``, kept only while an
      audit records the fit). Without it those ciphertexts are skipped and
      counted (metric ``undecrypted``). A packed decryption whose slots
      hold the rows times a number of tasks, padded within its last
      ciphertext, gives those values (row-major);
    - integer leaves of ``Inherent`` elements that are sets of row ids
      (distinct, in range, fewer than every row): their 0/1 indicator over
      ``R``'s rows (an instance space is a row-indexed vector);
    - minibatch vectors: a vector as long as the last id set ``R`` sent or
      received, scattered over those rows (0 elsewhere).

    After an ``OwnShare`` weight vector ``w`` as wide as ``R``'s block (as
    the protocol computes with it: ``_privacy_own_block``, HyFDCA's
    intercept column included), a vector ``v`` also yields
    ``v - own @ w`` (phase ``"<phase> - own part"``): a sum of parts of
    which ``R`` knows its own. These derived vectors only serve stage 2.

    Per receiver and phase, the elements of at most :data:`PHASE_CAP` times
    ``R``'s rows messages are kept: the first half and the last half (the
    rank is what matters, and it cannot exceed the rows; ciphertexts are
    decrypted only when kept).

Stage 1: linear (metrics ``span_r2`` and ``cv_r2``)
    ``U``: an orthonormal basis of the normalised stack (numerical rank
    ``r``, metric ``rank``; metric ``vectors`` counts them). Per victim
    column ``x``, ``span_r2`` is the partial r2 of ``x`` on ``[1, own, U]``
    beyond ``[1, own]``: the share of what ``R``'s own columns leave
    unexplained that the received span explains; its ``chance`` is the
    same with a random ``r``-dimensional subspace (the mean of
    :data:`CHANCE_DRAWS` draws, about ``r / rows``). A stack of rank near
    the rows makes ``span_r2`` meaningless (its chance goes to 1), which
    ``cv_r2`` corrects: the 5-fold cross-validated ridge r2 of ``x`` from
    ``[own, stack]``, as a partial r2 beyond ``[own]``, with random vectors
    of the stack's shape as chance. The value reported per victim is the
    mean over its columns (constant columns, such as an intercept, left
    out).

Stage 2: the metric (metric ``gram_r2``)
    A span alone fixes the victim block up to an invertible map. A vector
    ``q`` of one phase that is a quadratic form of another phase's span,
    ``q`` minus ``R``'s own squared row norms, or ``q`` itself, equal to
    ``diag(U G U^T)`` (the first that is, in this order),
    with ``G`` identified (``d (d + 1) / 2 < rows``, ``d`` the span's rank)
    and a relative residual below :data:`QUADRATIC_TOLERANCE`, and ``q``
    not already in the span (a 0/1 indicator is its own square), fixes the
    metric: the Gram matrix ``U G U^T`` of the block, hence the block up to
    a rotation. ``gram_r2`` is the mean r2 of the victim's columns after
    the best orthogonal (Procrustes) rotation of ``U G^(1/2)``, NaN when no
    such pair of phases exists (the metric is not fixed); ``chance``: the
    better of the mean (r2 0) and the same rotation fit of a matrix with
    the estimate's singular values on a random column space. This is how the
    attack finds a squared-norm exchange on top of inner products (HyFDCA's
    ``dual_curvature="row_norm"``) without knowing the protocol.

Reading it
    An upper bound of what is linear in the messages, plus one quadratic
    step; it does not model what needs the attacker's own secret state
    beyond its columns (HyFDCA's vertical Gram leak needs the receiver's
    own duals, which only an attack of the estimator's own can use), and
    the "own part" step is a heuristic about sums of parts. Row vectors
    are read in increasing row order, the order in which the partitions
    hand every party its rows. An estimator whose audit log holds no keys
    (SecureBoost's) has its encrypted fits' ciphertexts counted, not read:
    in plaintext mode the same fit shows what they hold.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

from collections import defaultdict, deque

import numpy as np
from scipy.linalg import orth
from sklearn.linear_model import RidgeCV
from sklearn.model_selection import KFold

from .._privacy_core import (Ciphertext, Inherent, Masked, OwnShare,
                             RandomIds, attack_row, column_r2, psd_root)
from .._privacy_core._leaves import leaves
from ..crypto._array import EncryptedArray
from ..crypto._plaintext import PlaintextArray

__all__ = ["accumulation", "row_vectors", "stack_scores", "PHASE_CAP"]

#: messages kept per receiver and phase, as a multiple of the receiver's
#: rows (half the first ones, half the last ones)
PHASE_CAP = 1
#: random subspaces (and random stacks) averaged for ``chance``
CHANCE_DRAWS = 5
#: relative singular-value cut of the stack's numerical rank
RANK_TOLERANCE = 1e-9
#: relative residual below which a vector is a quadratic form of a span
QUADRATIC_TOLERANCE = 1e-6
#: vectors of a phase tried as the quadratic form of another phase's span
FORMS_TRIED = 3
_OWN = " - own part"


# -- what a party can read ---------------------------------------------------

def _party_rows(estimator, n_total):
    """``{party: sorted row ids}`` of the parties holding rows."""
    hook = getattr(estimator, "_privacy_rows", None)
    held = {} if hook is None else hook()
    return {party: (np.arange(n_total) if rows is None
                    else np.asarray(sorted(rows), dtype=np.intp))
            for party, rows in held.items()}


def _default_own_block(estimator, party, X):
    """The party's block from the resolved partition (vertical or hybrid)."""
    names = estimator._privacy_party_names()
    k = names.index(party)
    partition = estimator.partition_
    if estimator._partition_kind == "vertical":
        return X[:, partition.columns(k)]
    return X[np.ix_(partition.client_rows(k), partition.client_columns(k))]


def own_block(estimator, party, X):
    """``party``'s block over its rows as the protocol computes with it
    (``estimator._privacy_own_block``, else its partition's cell)."""
    hook = getattr(estimator, "_privacy_own_block", None)
    block = (hook(party, X) if hook is not None
             else _default_own_block(estimator, party, X))
    return np.asarray(block, dtype=float)


def _keys(estimator):
    log = getattr(estimator, "_audit_log", None)
    keys = log.get("keys") if isinstance(log, dict) else None
    return keys or {}


def _id_set(leaf, n_total):
    """Whether ``leaf`` reads as a set of row ids (distinct, in range)."""
    return (isinstance(leaf, np.ndarray) and leaf.dtype.kind in "iu"
            and leaf.ndim == 1 and 1 < leaf.size < n_total
            and leaf.min() >= 0 and leaf.max() < n_total
            and np.unique(leaf).size == leaf.size)


class _Receiver:
    """What one party received, kept per phase (capped), as items that
    become vectors only when read (a ciphertext is decrypted then)."""

    def __init__(self, name, roles, rows, n_total, block, key):
        self.name = name
        self.roles = roles
        self.rows = rows
        self.n_rows = len(rows)
        self.all_rows = self.n_rows == n_total
        self.block = block
        self.key = key
        self.weights = None  # the last OwnShare weights as wide as block
        self.undecrypted = 0
        cap = max(2, PHASE_CAP * self.n_rows)
        self._first = defaultdict(list)
        self._last = defaultdict(lambda: deque(maxlen=cap - cap // 2))
        self._cap_first = cap // 2

    def keep(self, phase, item):
        first = self._first[phase]
        if len(first) < self._cap_first:
            first.append(item)
        else:
            self._last[phase].append(item)

    def vectors(self):
        out = []
        for phase, first in self._first.items():
            for item in first + list(self._last.get(phase, ())):
                out.extend(self._read(phase, item))
        return out

    def _read(self, phase, item):
        leaf, weights, batch = item
        if isinstance(leaf, PlaintextArray):
            values = np.asarray(leaf.values, dtype=float)
        elif isinstance(leaf, EncryptedArray):
            try:
                values = np.asarray(self.key.decrypt(leaf), dtype=float)
            except (ValueError, TypeError):
                self.undecrypted += 1
                return []
        else:
            values = np.asarray(leaf, dtype=float)
        if batch is not None:  # a minibatch vector: scattered over its rows
            position = (batch if self.all_rows
                        else np.searchsorted(self.rows, batch))
            found = []
            for column in values.reshape(batch.size, -1).T:
                full = np.zeros(self.n_rows)
                full[position] = column
                if np.ptp(full) > 0:
                    found.append((phase, full))
            return found
        packed = values.ndim > len(leaf.shape)  # a trailing slot axis
        for axis in range(0 if packed else values.ndim):
            if values.shape[axis] == self.n_rows:
                matrix = np.moveaxis(values, axis, 0).reshape(self.n_rows, -1)
                break
        else:
            if not packed:
                return []  # not along the rows
            # packed slots: rows x tasks values, row-major, padded within
            # the last ciphertext (anything longer packs something else)
            flat = values.ravel()
            tasks = flat.size // self.n_rows
            if tasks == 0 or flat.size - self.n_rows * tasks >= values.shape[-1]:
                return []
            matrix = flat[:self.n_rows * tasks].reshape(self.n_rows, tasks)
        found = []
        for task, column in enumerate(matrix.T):
            if not (np.all(np.isfinite(column)) and np.ptp(column) > 0):
                continue
            found.append((phase, column.copy()))
            if weights is not None and task < weights.shape[1]:
                found.append((phase + _OWN,
                              column - self.block @ weights[:, task]))
        return found


def _indicator(ids, receiver, n_total):
    full = np.zeros(n_total)
    full[ids] = 1.0
    vector = full if receiver.all_rows else full[receiver.rows]
    return vector if vector.any() and not vector.all() else None


def _note_weights(receiver, value):
    width = receiver.block.shape[1]
    for leaf in leaves(value):
        if (isinstance(leaf, np.ndarray) and leaf.dtype.kind == "f"
                and leaf.ndim in (1, 2) and leaf.shape[0] in (width, width + 1)):
            weights = np.asarray(leaf, dtype=float).reshape(leaf.shape[0], -1)
            # a constant column the block lacks adds a constant: drop it
            receiver.weights = weights[:width]


def _take(receiver, message, spec, value, batch, n_total):
    """Keep what ``receiver`` can read of one payload element."""
    if isinstance(spec, (Masked, RandomIds)):
        return
    for leaf in leaves(value):
        if isinstance(leaf, (EncryptedArray, PlaintextArray)):
            if not isinstance(spec, Ciphertext) or spec.key_owner not in \
                    receiver.roles:
                continue  # under another party's key
            if isinstance(leaf, EncryptedArray) and receiver.key is None:
                receiver.undecrypted += 1
                continue
            shape = leaf.shape
        elif isinstance(leaf, np.ndarray) and leaf.dtype.kind in "biuf":
            if leaf.dtype.kind == "u" and leaf.dtype.itemsize == 8:
                continue  # a ring share: only a sum decodes it
            if leaf.dtype.kind in "iu" and leaf.ndim == 1:
                if isinstance(spec, Inherent) and _id_set(leaf, n_total):
                    vector = _indicator(leaf, receiver, n_total)
                    if vector is not None:
                        receiver.keep(message.phase, (vector, None, None))
                continue  # otherwise ids or counters, not values of rows
            shape = leaf.shape
        else:
            continue
        ids = next((b for b in batch if len(shape) >= 1
                    and b.size == shape[0]), None)
        if ids is not None and ids.size != receiver.n_rows:
            receiver.keep(message.phase, (leaf, None, ids))
        elif receiver.n_rows in shape or isinstance(spec, Ciphertext):
            # a ciphertext may pack the rows in slots: read when decrypted
            receiver.keep(message.phase, (leaf, receiver.weights, None))


def row_vectors(estimator, messages, X):
    """Every row-indexed vector each party holding rows received.

    Parameters
    ----------
    estimator : fitted estimator
        Its contract, roles, rows (``_privacy_rows``) and audit log.
    messages : list of Message
    X : ndarray of shape (n_samples, n_features)

    Returns
    -------
    vectors : dict
        ``{party: [(phase, vector over the party's rows)]}``.
    undecrypted : dict
        ``{party: ciphertexts under its key it could not decrypt}``.
    """
    X = np.asarray(X, dtype=float)
    n_total = X.shape[0]
    contract = estimator._privacy_contract()
    roles = estimator._privacy_roles()
    keys = _keys(estimator)
    receivers = {}
    for party, rows in _party_rows(estimator, n_total).items():
        receivers[party] = _Receiver(party, roles.get(party, {party}), rows,
                                     n_total, own_block(estimator, party, X),
                                     keys.get(party))
    batch = defaultdict(list)  # party -> the id sets of its last step
    for message in messages:
        payload = tuple(message.payload or ())
        sets = [leaf for leaf in leaves(payload) if _id_set(leaf, n_total)]
        if sets:
            batch[message.sender] = batch[message.receiver] = sets
        receiver = receivers.get(message.receiver)
        if receiver is None:
            continue
        s_roles = roles.get(message.sender, {message.sender})
        rule = next((r for r in contract.rules_for(message.phase)
                     if r.matches(message.phase, s_roles, receiver.roles)
                     and len(r.elements) == len(payload)), None)
        # an undeclared message (a violation check_messages reports) is read
        # as plaintext: the attacker keeps it all the same
        specs = (rule.elements if rule is not None
                 else (Inherent("undeclared"),) * len(payload))
        for spec, value in zip(specs, payload):
            if isinstance(spec, OwnShare):
                _note_weights(receiver, value)
            else:
                _take(receiver, message, spec, value,
                      batch[message.receiver], n_total)
    vectors = {party: r.vectors() for party, r in receivers.items()}
    return vectors, {party: r.undecrypted for party, r in receivers.items()}


# -- the scores ----------------------------------------------------------------

def _basis(M, tolerance=RANK_TOLERANCE):
    if M.size == 0 or not np.any(M):
        return np.zeros((M.shape[0], 0))
    return orth(M, rcond=tolerance)


def _r2_in(Z, B):
    Q = _basis(Z, 1e-10)
    return column_r2(Q @ (Q.T @ B), B)


def _partial(full, base):
    """Share of what ``base`` leaves unexplained that ``full`` explains."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return (full - base) / np.maximum(1.0 - base, 1e-12)


def _mean(values):
    values = np.asarray(values, dtype=float)
    return float(np.nanmean(values)) if np.any(np.isfinite(values)) \
        else float("nan")


def _cv_r2(F, B, seed):
    """5-fold cross-validated ridge r2 of each column of ``B`` from ``F``."""
    F = (F - F.mean(axis=0)) / np.maximum(F.std(axis=0), 1e-12)
    pred = np.zeros_like(B)
    folds = KFold(5, shuffle=True, random_state=seed)
    for train, test in folds.split(F):
        model = RidgeCV(alphas=np.logspace(-4, 4, 9)).fit(F[train], B[train])
        pred[test] = model.predict(F[test])
    return column_r2(pred, B)


def _procrustes_r2(estimate, truth):
    """Per column of ``truth``: r2 of ``estimate`` after the best
    (semi-)orthogonal rotation."""
    A = estimate - estimate.mean(axis=0)
    B = truth - truth.mean(axis=0)
    u, _, vt = np.linalg.svd(A.T @ B, full_matrices=False)
    return column_r2(A @ (u @ vt) + truth.mean(axis=0), truth)


def _random_like(estimate, rng):
    """A matrix with ``estimate``'s singular values and right vectors on a
    random column space: the chance of a rotation fit."""
    _, s, vt = np.linalg.svd(estimate, full_matrices=False)
    Q, _ = np.linalg.qr(rng.normal(size=(estimate.shape[0], s.size)))
    return (Q * s) @ vt


def _gram(U, q):
    """Symmetric ``G`` with ``diag(U G U^T) = q``, or None when ``G`` is not
    identified or ``q`` is not such a form."""
    n, d = U.shape
    if d == 0 or d * (d + 1) // 2 >= n:
        return None
    iu = np.triu_indices(d)
    A = U[:, iu[0]] * U[:, iu[1]] * np.where(iu[0] == iu[1], 1.0, 2.0)
    g, _, rank, _ = np.linalg.lstsq(A, q, rcond=None)
    if rank < A.shape[1]:
        return None
    if np.linalg.norm(A @ g - q) > QUADRATIC_TOLERANCE * max(
            np.linalg.norm(q), 1e-300):
        return None
    G = np.zeros((d, d))
    G[iu] = g
    return G + G.T - np.diag(np.diag(G))


def metric_from(vectors, own):
    """Stage 2: ``(span phase, form phase, U G^(1/2))`` for the first phase
    whose span another phase's vector is a quadratic form of, else None."""
    own_sq = np.einsum("ij,ij->i", own, own)
    n = own.shape[0]
    by_phase = defaultdict(list)
    for phase, vector in vectors:
        by_phase[phase].append(vector)
    for span_phase, span in by_phase.items():
        M = np.column_stack(span)
        U = _basis(M / np.maximum(np.linalg.norm(M, axis=0), 1e-300), 1e-8)
        d = U.shape[1]
        if d == 0 or d * (d + 1) // 2 >= n:
            continue
        Z = np.hstack([np.ones((n, 1)), U])
        for form_phase, forms in by_phase.items():
            if form_phase == span_phase:
                continue
            for q in forms[:FORMS_TRIED]:
                linear = Z @ np.linalg.lstsq(Z, q, rcond=None)[0]
                if np.linalg.norm(linear - q) < 1e-3 * np.linalg.norm(q):
                    continue  # in the span itself (0/1 sets: u * u = u)
                # without its own part first: when the span holds the
                # attacker's columns too, the total is a form of it as well
                for target in (q - own_sq, q):
                    G = _gram(U, target)
                    if G is not None:
                        return span_phase, form_phase, U @ psd_root(G)
    return None


def stack_scores(vectors, own, victim, seed=0):
    """The scores of one attacker against one victim block.

    Parameters
    ----------
    vectors : list of (phase, ndarray of shape (n_rows,))
        What the attacker received (:func:`row_vectors`).
    own : ndarray of shape (n_rows, n_own)
        The attacker's block.
    victim : ndarray of shape (n_rows, n_victim)
        The victim's block over the same rows (scoring only).
    seed : int
        Seed of the chance draws and the folds.

    Returns
    -------
    dict
        ``rank``, ``span_r2``, ``span_chance``, ``cv_r2``, ``cv_chance``,
        ``gram_r2``, ``gram_chance`` (NaN when the metric is not fixed) and
        ``metric_from`` (which phases fixed it, or "").
    """
    rng = np.random.RandomState(seed)
    n = own.shape[0]
    raw = [v for phase, v in vectors if not phase.endswith(_OWN)]
    one = np.ones((n, 1))
    base = _r2_in(np.hstack([one, own]), victim)
    out = {"rank": 0, "span_r2": 0.0, "span_chance": 0.0, "cv_r2": 0.0,
           "cv_chance": 0.0, "gram_r2": float("nan"),
           "gram_chance": float("nan"), "metric_from": ""}
    if raw:
        S = np.column_stack([v / np.linalg.norm(v) for v in raw])
        U = _basis(S)
        r = U.shape[1]
        out["rank"] = r
        out["span_r2"] = _mean(_partial(
            _r2_in(np.hstack([one, own, U]), victim), base))
        out["span_chance"] = float(np.mean([_mean(_partial(_r2_in(np.hstack(
            [one, own, rng.normal(size=(n, r))]), victim), base))
            for _ in range(CHANCE_DRAWS)]))
        cv_base = _cv_r2(own, victim, seed)
        out["cv_r2"] = _mean(_partial(_cv_r2(np.hstack([own, S]), victim,
                                             seed), cv_base))
        out["cv_chance"] = _mean(_partial(_cv_r2(np.hstack(
            [own, rng.normal(size=S.shape)]), victim, seed), cv_base))
    found = metric_from(vectors, own) if vectors else None
    if found is not None:
        span_phase, form_phase, estimate = found
        out["gram_r2"] = _mean(_procrustes_r2(estimate, victim))
        # the better of the mean (r2 0) and the same fit of a random matrix
        out["gram_chance"] = max(0.0, float(np.mean([_mean(_procrustes_r2(
            _random_like(estimate, rng), victim))
            for _ in range(CHANCE_DRAWS)])))
        out["metric_from"] = f"{form_phase!r} on the span of {span_phase!r}"
    return out


def accumulation(estimator, messages, X, y=None, **fit_params):
    """Every party stacks the row-indexed vectors it received.

    See the module docstring for what is stacked, the metrics and
    ``chance``.

    Parameters
    ----------
    estimator : fitted estimator
    messages : list of Message
        The recorded messages of its fit.
    X : array-like of shape (n_samples, n_features)
        The data of the fit (scoring, and each attacker's own block).
    y, **fit_params
        Unused (the signature of every attack).

    Returns
    -------
    list of dict
        :func:`~skfed.privacy.attack_row` rows, attack ``"accumulation"``:
        per attacker ``vectors`` and ``rank`` (victim ``"-"``), ``undecrypted``
        when ciphertexts under its key could not be read, and when it
        received anything, per victim ``span_r2``, ``cv_r2`` and, when the
        metric is fixed, ``gram_r2``. No row on a horizontal split or for an
        estimator without a partition.
    """
    kind = getattr(estimator, "_partition_kind", None)
    if kind not in ("vertical", "hybrid") or not hasattr(X, "shape") \
            or getattr(estimator, "partition_", None) is None:
        return []
    X = np.asarray(X, dtype=float)
    vectors, undecrypted = row_vectors(estimator, messages, X)
    rows = _party_rows(estimator, X.shape[0])
    out = []
    for attacker in estimator._privacy_party_names():
        if attacker not in rows:
            continue
        own = own_block(estimator, attacker, X)
        received = vectors.get(attacker, [])
        raw = [v for phase, v in received if not phase.endswith(_OWN)]
        out.append(attack_row("accumulation", attacker, "-",
                              "row-indexed vectors received", "vectors",
                              len(raw), 0.0))
        if undecrypted.get(attacker):
            out.append(attack_row(
                "accumulation", attacker, "-",
                "ciphertexts under its key (no key in the audit log)",
                "undecrypted", undecrypted[attacker], 0.0))
        if not received:
            continue
        first = True
        for victim in estimator._privacy_party_names():
            if victim == attacker or victim not in rows or not np.array_equal(
                    rows[victim], rows[attacker]):
                continue
            scores = stack_scores(received, own,
                                  own_block(estimator, victim, X))
            if first:
                out.append(attack_row("accumulation", attacker, "-",
                                      "row-indexed vectors received", "rank",
                                      scores["rank"], 0.0))
                first = False
            target = f"columns of {victim}"
            for metric in ("span", "cv"):
                out.append(attack_row("accumulation", attacker, victim,
                                      target, f"{metric}_r2",
                                      scores[f"{metric}_r2"],
                                      scores[f"{metric}_chance"]))
            if scores["metric_from"]:
                out.append(attack_row(
                    "accumulation", attacker, victim,
                    f"{target} ({scores['metric_from']})", "gram_r2",
                    scores["gram_r2"], scores["gram_chance"]))
    return out


accumulation.attack_name = "accumulation"
