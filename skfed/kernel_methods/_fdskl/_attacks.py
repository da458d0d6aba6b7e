"""FDSKL's masked sums, laid out from a recorded fit for the attacks.

The attacks (:mod:`skfed.kernel_methods._attacks`) are FDSKL's and AVFKAM's
alike: they assemble what each party received in the masked two-tree sums
of Algorithm 3. What is FDSKL's own is which (row, feature) pair each entry
of a training sum (Algorithm 1, line 5) stands for. Which pairs a step sends
follows from the public history (the rows and feature ids broadcast at every
step, the owners' saved rows), so :func:`masked_sums` replays that history
with the protocol's own party functions, as every party does; the facts it
starts from (:func:`public_facts`) are the public configuration every party
holds, filed with the fitted model.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np

from ...federation import PartyState
from .._attacks import MaskedSum, message_chunks
from .._vertical_features import party_name, trees_for
from ._protocol import _History, _party_pair_projection, _party_receive_step

__all__ = ["masked_sums", "public_facts"]


#: Static public facts of a run that every party holds (set up from the
#: configuration broadcast at the start); kept for the replay below.
_PUBLIC_FACTS = ("names", "owners", "n_samples", "n_cache_rows", "n_outputs",
                 "validation_rows", "train_rows", "cache_slot", "check_every",
                 "m", "basis_seed", "kernel", "gamma")


def public_facts(state):
    """The public facts of ``state`` the replay needs (a party function)."""
    return {k: getattr(state, k) for k in _PUBLIC_FACTS if hasattr(state, k)}


def masked_sums(estimator, messages, n_rows):
    """FDSKL's training sums (Algorithm 1, line 5), replayed from the public
    history with the protocol's own code: a surrogate party receives the
    step broadcasts (``_party_receive_step``) and computes its share of
    every sum (``_party_pair_projection``), as every party does; its one
    column holds the row ids, its directions are 1 and its phases the
    feature ids, so each entry of a share names its (row, feature) pair.
    Stops where the replay and the recorded sizes disagree (the caller then
    sees fewer sums)."""
    facts = getattr(estimator, "_privacy_public", None)
    names = [party_name(k) for k in range(estimator.partition_.n_parties)]
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
    t1s = message_chunks(messages, "step/features/T1", q - 1)
    t2s = message_chunks(messages, "step/features/T2", q - 2)
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
