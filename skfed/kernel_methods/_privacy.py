"""Who learns what in FDSKL and AVFKAM: the estimators' privacy hooks.

:class:`KernelPrivacyMixin` gives :class:`FDSKLClassifier`,
:class:`FDSKLRegressor` and :class:`AVFKAMRanker` the hooks read by
:mod:`skfed.privacy`: their contract (:mod:`._contracts`), their secrets
and the attacks of :mod:`skfed.privacy._attacks_kernel`.

:func:`masked_sum_instances` lays out the recorded messages of every masked
two-tree sum (Algorithm 3) of a fit: which rows and features each entry
stands for, and which party sent which partial sum to whom. All of it is
public to the parties (the row and feature ids are broadcast, the trees and
``l'_j`` follow from the public seed, the message sizes are seen by their
receivers); the attacks use it to assemble what each party received.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import numbers
from dataclasses import dataclass, field

import numpy as np

from ..base import party_seeds
from ..kernel_approximation import keyed_directions, spectral_directions
from . import _vertical_features
from ._vertical_features import (
    excluded_parties,
    party_name,
    resolve_party_keys,
    trees_for,
)

__all__ = ["KernelPrivacyMixin", "MaskedSum", "masked_sum_instances"]


@dataclass
class MaskedSum:
    """One masked two-tree sum of a recorded fit.

    Attributes
    ----------
    receiver : str
        The party that gets the result (the owner of the features).
    excluded : str or None
        The party ``l'`` whose value is not masked (``None``: one party).
    trees : tuple
        ``(T1, T2)``.
    rows, features : ndarray of int
        For each entry of a payload (flattened row-major), its row (in the
        parties' row order) and its feature id.
    t1, t2 : list of Message
        The ``T1`` and ``T2`` messages, in the order they were sent.
    """

    receiver: str
    excluded: object
    trees: tuple
    rows: np.ndarray
    features: np.ndarray
    t1: list = field(default_factory=list)
    t2: list = field(default_factory=list)


def _names(estimator):
    return [party_name(k) for k in range(estimator.partition_.n_parties)]


def _chunks(messages, phase, size):
    stream = [m for m in messages if m.phase == phase]
    return [stream[i:i + size] for i in range(0, len(stream), size)] if size else []


def _requested_sums(estimator, messages, prefix, n_rows):
    """Masked sums started by a request (``masked_features``): AVFKAM's
    preprocessing and every prediction. Each request carries ``(rows, ids)``
    to every other party."""
    names = _names(estimator)
    q = len(names)
    if q == 1:
        return []
    requests = _chunks(messages, f"{prefix}/request", q - 1)
    t1s = _chunks(messages, f"{prefix}/T1", q - 1)
    t2s = _chunks(messages, f"{prefix}/T2", q - 2)
    out = []
    for k, group in enumerate(requests):
        receiver = group[0].sender
        rows, ids = group[0].payload[:2]
        rows = np.arange(n_rows) if rows is None else np.asarray(rows)
        ids = np.asarray(ids, dtype=np.int64)
        excluded = str(excluded_parties(estimator._basis_seed, ids[:1], receiver,
                                        names)[0])
        grid_rows = np.repeat(rows, len(ids))
        grid_ids = np.tile(ids, len(rows))
        out.append(MaskedSum(receiver, excluded, trees_for(names, receiver, excluded),
                             grid_rows, grid_ids, t1s[k] if k < len(t1s) else [],
                             t2s[k] if q > 2 and k < len(t2s) else []))
    return out


class _Bookkeeping:
    """FDSKL's public record of which (row, feature) pairs each owner holds
    (the same rules as the protocol's ``_History``/``_pairs``)."""

    def __init__(self, names, owners, n_cache_rows, basis_seed):
        self.names, self.owners = names, owners
        self.n_cache_rows, self.basis_seed = n_cache_rows, basis_seed
        self.ids = {p: np.empty(0, dtype=np.int64) for p in owners}
        self.excluded = {p: np.empty(0, dtype=np.int64) for p in owners}
        self.upto = {p: np.zeros(n_cache_rows, dtype=np.int64) for p in owners}

    def add(self, creator, new_ids):
        self.ids[creator] = np.concatenate([self.ids[creator], new_ids])
        ex = excluded_parties(self.basis_seed, new_ids, creator, self.names)
        self.excluded[creator] = np.concatenate(
            [self.excluded[creator], [self.names.index(e) for e in ex]])

    def requests(self, rows):
        """Per owner ``(start, width)`` for these rows, and the new ``upto``."""
        cached = rows < self.n_cache_rows
        out, upto = {}, {}
        for owner in self.owners:
            width = len(self.ids[owner])
            if width == 0:
                continue
            start = np.zeros(len(rows), dtype=np.int64)
            start[cached] = self.upto[owner][rows[cached]]
            new = self.upto[owner].copy()
            new[rows[cached]] = width
            out[owner], upto[owner] = (start, width), new
        return out, upto

    def pairs(self, owner, ex, rows, request):
        start, width = request
        cols = np.arange(int(start.min()), width)
        cols = cols[self.excluded[owner][cols] == ex]
        need = cols[None, :] >= start[:, None]
        r, c = np.nonzero(need)
        return rows[r], self.ids[owner][cols[c]]


def _fdskl_fit_sums(estimator, messages, n_rows):
    """FDSKL's training sums (Algorithm 1, line 5), replayed from the public
    history: the step broadcasts give the rows and feature ids, the
    bookkeeping of locally saved features gives the pairs of every sum.
    Held-out rows (early stopping) join the rows of some steps; whether they
    did is read from the sizes of the step's ``T1`` messages."""
    from ._fdskl_protocol import owner_capacity

    names = _names(estimator)
    q = len(names)
    if q == 1:
        return []
    owners = [names[k] for k in estimator.partition_.active_parties]
    m = estimator.n_components_per_iter
    capacity = max(owner_capacity(k, len(owners), estimator.max_iter, m)
                   for k in range(len(owners)))
    n_cache_rows = int(min(n_rows, estimator.cache_size * 2**20 // (8 * capacity)))
    book = _Bookkeeping(names, owners, n_cache_rows, estimator._basis_seed)
    steps, seen = [], set()
    for msg in messages:
        if msg.phase == "step/indices":
            creator, rows, new_ids = msg.payload[0]
            if int(new_ids[0]) not in seen:
                seen.add(int(new_ids[0]))
                steps.append((creator, np.asarray(rows), np.asarray(new_ids)))
    t1s = _chunks(messages, "step/features/T1", q - 1)
    t2s = _chunks(messages, "step/features/T2", q - 2)
    out, n_val, k = [], 0, 0
    for t, (creator, rows, new_ids) in enumerate(steps):
        book.add(creator, new_ids)
        groups = [(o, ex) for o in owners[:t + 1]
                  for ex, other in enumerate(names) if other != o]
        if k + len(groups) > len(t1s):
            break  # the fit stopped inside this step
        sizes = [t1s[k + i][0].payload[0].size for i in range(len(groups))]
        if t == 0 and n_val == 0:
            # At the first step every row of a sum holds every feature of its
            # group: a size above rows x features counts the held-out rows.
            for (o, ex), size in zip(groups, sizes):
                g = int(np.sum(book.excluded[o] == ex))
                if g:
                    n_val = max(size // g - len(rows), 0)
                    break
        choices = [rows] + ([np.concatenate([rows, np.arange(n_val)])]
                            if n_val else [])
        for step_rows in choices:
            requests, upto = book.requests(step_rows)
            layout = [book.pairs(o, ex, step_rows, requests[o]) for o, ex in groups]
            if [len(r) for r, _ in layout] == sizes:
                break
        else:
            # The replay no longer matches the messages: stop rather than
            # mislabel entries (the caller sees fewer sums than messages).
            break
        book.upto.update(upto)
        for (owner, ex), (r, f) in zip(groups, layout):
            out.append(MaskedSum(owner, names[ex],
                                 trees_for(names, owner, names[ex]), r, f,
                                 t1s[k], t2s[k] if q > 2 else []))
            k += 1
    return out


def masked_sum_instances(estimator, messages, n_rows):
    """Every masked two-tree sum of a recorded FDSKL or AVFKAM run.

    Parameters
    ----------
    estimator : fitted FDSKL or AVFKAM estimator
    messages : list of Message
        A recorded fit (and, possibly, predictions).
    n_rows : int
        Rows of the fitted ``X`` (``rows=None`` in a request means all).

    Returns
    -------
    list of MaskedSum
    """
    out = []
    if hasattr(estimator, "n_components_per_iter"):
        out += _fdskl_fit_sums(estimator, messages, n_rows)
    out += _requested_sums(estimator, messages, "preprocess", n_rows)
    return out


class KernelPrivacyMixin:
    """The privacy hooks of the kernel estimators (see :mod:`skfed.privacy`).

    ``_privacy_protocol`` names the contract (``"fdskl"`` or ``"avfkam"``).
    """

    _privacy_protocol = "fdskl"

    def _keep_party_keys(self, fed, names, n_rows, row_order=None):
        """File each party's key with the fitted model (prediction needs
        them), with the row facts the privacy checks need.

        The simulation keeps every party's share in the estimator, as it
        does the coefficient stores; fetching them is not a message.
        """
        self._party_keys = fed.gather(fed[p].call(_vertical_features.party_key)
                                      for p in names)
        self._privacy_n_rows = int(n_rows)
        self._row_order = None if row_order is None else np.asarray(row_order)

    def _privacy_contract(self):
        from ._contracts import avfkam_contract, fdskl_contract

        return (fdskl_contract if self._privacy_protocol == "fdskl"
                else avfkam_contract)(self)

    def _privacy_attacks(self):
        from ..privacy._attacks_kernel import KERNEL_ATTACKS

        return list(KERNEL_ATTACKS)

    def _privacy_row_order(self, n_rows):
        """Row ``r`` of the parties' blocks is row ``order[r]`` of the
        caller's ``X`` (a fit may put held-out rows first)."""
        order = getattr(self, "_row_order", None)
        return np.arange(n_rows) if order is None else np.asarray(order)

    def _privacy_secrets(self, X, y=None, **fit_params):
        # The messages refer to rows in the parties' order: so do the secrets.
        secrets = super()._privacy_secrets(X, y, **fit_params)
        order = self._privacy_row_order(len(X))
        for secret in secrets:
            if secret.kind != "rows" and len(secret.values) == len(order):
                secret.values = np.asarray(secret.values)[order]
        return secrets

    def _privacy_keys_from_random_state(self):
        """The keys ``party_keys="random_state"`` derives, as anyone who
        knows an integer ``random_state`` can (None otherwise)."""
        if not isinstance(self.random_state, numbers.Integral):
            return None
        q = self.partition_.n_parties
        return resolve_party_keys("random_state",
                                  party_seeds(self.random_state, 2 + q)[2:])

    def _privacy_direction_guesses(self, attacker, victim, feature_ids,
                                   knows_random_state=False):
        """What ``attacker`` can compute as ``victim``'s block of ``omega``.

        The paper's public seed (what every party could draw before the
        blocks came from private keys) and the attacker's own key (what it
        would be if keys were shared). Neither is the victim's block unless
        the protocol leaks it. With ``knows_random_state``, also the block
        from the key ``random_state`` gives the victim: exactly the victim's
        in a fit with ``party_keys="random_state"``.
        """
        partition = self.partition_
        names = _names(self)
        columns = partition.columns(names.index(victim))
        guesses = [("public seed", spectral_directions(
            self._basis_seed, columns, feature_ids, self.kernel, self.gamma_))]
        keys = getattr(self, "_party_keys", None)
        if keys is not None:
            guesses.append(("own key", keyed_directions(
                keys[names.index(attacker)], len(columns), feature_ids,
                self.kernel, self.gamma_)))
        derived = self._privacy_keys_from_random_state() if knows_random_state \
            else None
        if derived is not None:
            guesses.append(("random_state", keyed_directions(
                derived[names.index(victim)], len(columns), feature_ids,
                self.kernel, self.gamma_)))
        return guesses
