"""Who learns what in FDSKL and AVFKAM: the estimators' privacy hooks.

:class:`KernelPrivacyMixin` gives :class:`FDSKLClassifier`,
:class:`FDSKLRegressor` and :class:`AVFKAMRanker` the hooks read by
:mod:`skfed.privacy`: their secrets and the attacks of
:mod:`skfed.kernel_methods._attacks`.

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
from sklearn.utils.validation import _num_samples

from ..base import party_seeds
from ..federation._fingerprint import new_fingerprint
from ..kernel_approximation import keyed_directions, spectral_directions
from . import _vertical_features
from ._vertical_features import (
    excluded_parties,
    party_key_mode,
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


#: Static public facts of a run that every party holds (set up from the
#: configuration broadcast at the start); kept for the replay below.
_PUBLIC_FACTS = ("names", "owners", "n_samples", "n_cache_rows", "n_outputs",
                 "validation_rows", "train_rows", "cache_slot", "check_every",
                 "m", "basis_seed", "kernel", "gamma")


def _public_facts(state):
    return {k: getattr(state, k) for k in _PUBLIC_FACTS if hasattr(state, k)}


def _fdskl_fit_sums(estimator, messages, n_rows):
    """FDSKL's training sums (Algorithm 1, line 5), replayed from the public
    history with the protocol's own code: a surrogate party receives the
    step broadcasts (``_party_receive_step``) and computes its share of
    every sum (``_party_pair_projection``), as every party does; its one
    column holds the row ids, its directions are 1 and its phases the
    feature ids, so each entry of a share names its (row, feature) pair.
    Stops where the replay and the recorded sizes disagree (the caller then
    sees fewer sums)."""
    from ..federation import PartyState
    from ._fdskl._protocol import _History, _party_pair_projection, _party_receive_step

    facts = getattr(estimator, "_privacy_public", None)
    names = _names(estimator)
    q = len(names)
    if q == 1 or facts is None or "cache_slot" not in facts:
        return []
    owners = list(facts["owners"])
    n_total = estimator._n_feature_ids
    state = PartyState(**facts, index=0, columns=np.zeros(1, dtype=np.int64),
                       X=np.arange(facts["n_samples"], dtype=float)[:, None],
                       key=b"\0" * 32)
    state.history = {p: _History(state.n_cache_rows) for p in owners}
    state.omega, state.offsets = np.empty((1, n_total)), np.empty(n_total)
    state.n_drawn, state.step = 0, None
    steps, seen = [], set()
    for msg in messages:
        if msg.phase == "step/indices":
            creator, rows, new_ids = msg.payload[0]
            # One broadcast per step (a pool's feature ids come back).
            key = (msg.round, int(new_ids[0]))
            if key not in seen:
                seen.add(key)
                steps.append((creator, np.asarray(rows), np.asarray(new_ids)))
    t1s = _chunks(messages, "step/features/T1", q - 1)
    t2s = _chunks(messages, "step/features/T2", q - 2)
    out, k = [], 0
    for t, (creator, rows, new_ids) in enumerate(steps):
        _party_receive_step(state, (creator, rows, new_ids))
        state.omega[:] = 1.0
        state.offsets[:] = np.arange(n_total)
        for owner in owners[:t + 1]:
            for ex, other in enumerate(names):
                if other == owner:
                    continue
                if k >= len(t1s):
                    return out
                row_ids, feature_ids = _party_pair_projection(state, owner, ex)
                if t1s[k][0].payload[0].size != len(row_ids):
                    return out
                out.append(MaskedSum(owner, other, trees_for(names, owner, other),
                                     row_ids.astype(np.int64),
                                     feature_ids.astype(np.int64),
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
    """The privacy hooks of the kernel estimators (see :mod:`skfed.privacy`)."""

    def _keep_party_keys(self, fed, names, n_rows, row_order=None):
        """File each party's key with the fitted model (prediction needs
        them), with the row facts the privacy checks need and the fit's
        fingerprint (which its exported shares carry).

        The simulation keeps every party's share in the estimator, as it
        does the coefficient stores; fetching them is not a message. The
        estimator thus holds every party's key: it is the whole simulation,
        never a thing to hand to one party (``export_shares()`` splits it).
        """
        self.party_keys_ = party_key_mode(self.party_keys, self.random_state)
        self._party_keys = fed.gather(fed[p].call(_vertical_features.party_key)
                                      for p in names)
        # The public bookkeeping of the run (the same at every party), for
        # the attacks' replay of which pairs each masked sum carried.
        self._privacy_public = fed[names[-1]].call(_public_facts).result()
        self._privacy_n_rows = int(n_rows)
        self._row_order = None if row_order is None else np.asarray(row_order)
        # Names this fit in every share export_shares() makes of it, so that
        # shares of two fits refuse to be used together (never shapes the
        # model: drawn from secrets, after training).
        self._model_fingerprint = new_fingerprint()

    def _privacy_attacks(self):
        from ._attacks import KERNEL_ATTACKS
        from ._mds_attack import distance_mds

        return [*KERNEL_ATTACKS, distance_mds]

    def _privacy_row_order(self, n_rows):
        """Row ``r`` of the parties' blocks is row ``order[r]`` of the
        caller's ``X`` (a fit may put held-out rows first)."""
        order = getattr(self, "_row_order", None)
        return np.arange(n_rows) if order is None else np.asarray(order)

    def _privacy_secrets(self, X, y=None, **fit_params):
        # The messages refer to rows in the parties' order: so do the secrets.
        secrets = super()._privacy_secrets(X, y, **fit_params)
        order = self._privacy_row_order(_num_samples(X))
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
