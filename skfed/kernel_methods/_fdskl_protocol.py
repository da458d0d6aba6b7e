"""FDSKL's training loop (Algorithm 1), played out between the parties.

Functions named ``_party_*``, ``_owner_*`` and ``_active_*`` run on one
party's thread and see only that party's private state and the message it
received (an *owner* is a party holding coefficients; only active parties
create them). :func:`train` is the driver: a loop whose steps name who acts,
in the order of the paper's Algorithm 1.

Minibatches. Step ``t`` uses ``B`` rows and ``m`` fresh random features with
ids ``t m, ..., t m + m - 1`` (the id is the paper's "random seed ``i``").
With ``B = m = 1`` this is the paper's loop. The new coefficients are the
minibatch average of the doubly stochastic gradient::

    alpha_j = -gamma / (B m) * sum_{i in batch} L'(f(x_i), y_i) phi_j(x_i)

that is ``-gamma`` times the unbiased estimate of the functional gradient
with the kernel approximated by the ``m`` new features.

Locally saved features. Algorithm 2 (line 4) reuses ``omega_j^T x + b`` "if
it is locally saved" and runs Algorithm 3 otherwise. An owner keeps
``phi_j(x_i)`` of the training rows it received, so each pair ``(i, j)``
crosses the network once: when row ``i`` is drawn again, only the features
created since its last visit go through Algorithm 3. Which pairs are needed
is a function of the public history (the rows and feature ids broadcast at
each step, and by whom), so every party derives it itself and nothing beyond
the paper's messages is sent. ``n_cache_rows`` bounds the memory: rows past
it are recomputed every time, which is the paper's plain loop.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np

from ..federation import Local, balanced_tree, masked_tree_sum, tree_broadcast, tree_sum
from ..kernel_approximation import random_offsets, spectral_directions
from ..losses import get_loss
from ._vertical_features import CoefficientStore, excluded_parties, trees_for

__all__ = ["setup_party", "train", "owner_capacity"]


def owner_capacity(owner_index, n_owners, max_iter, m):
    """How many features the ``owner_index``-th active party will create."""
    return len(range(owner_index, max_iter, n_owners)) * m


class _History:
    """Public facts about one owner's features, kept by every party.

    ``ids``: the feature ids the owner created, in order; ``excluded``: the
    index of the party ``l'_j`` of each (fixed by the public seed);
    ``upto[r]``: how many of the owner's features it already holds for the
    cached training row ``r``.
    """

    def __init__(self, n_cache_rows):
        self.ids = np.empty(0, dtype=np.int64)
        self.excluded = np.empty(0, dtype=np.int64)
        self.upto = np.zeros(n_cache_rows, dtype=np.int64)


def setup_party(state, config):
    """Local set-up of a party from the public configuration of the run."""
    state.names = list(config["names"])
    state.owners = list(config["owners"])
    state.n_samples = config["n_samples"]
    state.n_cache_rows = config["n_cache_rows"]
    state.n_outputs = config["n_outputs"]
    state.history = {p: _History(state.n_cache_rows) for p in state.owners}
    # This party's rows of omega and its offsets b^l, one column per feature
    # id, drawn from the public seed and its private offset seed.
    n_total = config["max_iter"] * config["m"]
    state.omega = np.empty((len(state.columns), n_total))
    state.offsets = np.empty(n_total)
    state.n_drawn = 0
    state.step = None
    me = state.names[state.index]
    if me in state.owners:
        k = state.owners.index(me)
        state.store = CoefficientStore(state.n_outputs)
        state.capacity = owner_capacity(k, len(state.owners), config["max_iter"],
                                        config["m"])
        state.phi_cache = None  # rows x features, allocated on first use
        state.loss = get_loss(config["loss"])
        state.rng = np.random.RandomState(config["sampling_seeds"][k])
        state.order, state.pos = np.empty(0, dtype=np.int64), 0


def _active_pick_minibatch(state, batch_size):
    """Algorithm 1, line 2: the active party draws this step's rows.

    Rows are drawn without replacement within an epoch (a new permutation
    for every pass over the data), from the active party's random stream.
    """
    if state.pos + batch_size > len(state.order):
        state.order, state.pos = state.rng.permutation(state.n_samples), 0
    rows = state.order[state.pos:state.pos + batch_size]
    state.pos += batch_size
    return rows


def _party_receive_step(state, message):
    """Algorithm 1, lines 3-4: the step's rows and feature ids arrive.

    Every party draws its own rows of the new directions ``omega_j`` and its
    private offsets ``b^l_j``, and updates the public bookkeeping of which
    (row, feature) pairs each owner still needs.
    """
    creator, rows, new_ids = message
    state.step = dict(rows=rows, requests={})
    new = slice(state.n_drawn, state.n_drawn + len(new_ids))
    state.omega[:, new] = spectral_directions(
        state.basis_seed, state.columns, new_ids, state.kernel, state.gamma)
    state.offsets[new] = random_offsets(state.offset_seed, new_ids)
    state.n_drawn += len(new_ids)
    cached = rows < state.n_cache_rows
    for owner in state.owners:
        hist = state.history[owner]
        if owner == creator:
            hist.ids = np.concatenate([hist.ids, new_ids])
            if len(state.names) > 1:
                excluded = excluded_parties(state.basis_seed, new_ids, owner,
                                            state.names)
                hist.excluded = np.concatenate(
                    [hist.excluded, [state.names.index(e) for e in excluded]])
        width = len(hist.ids)
        if width == 0:
            continue
        start = np.zeros(len(rows), dtype=np.int64)
        start[cached] = hist.upto[rows[cached]]
        hist.upto[rows[cached]] = width
        state.step["requests"][owner] = (start, width)


def _pairs(state, owner, excluded):
    """Columns (positions in the owner's list) and needed-pair mask of a group.

    The group is the owner's features whose ``l'`` is ``excluded`` (all of
    them when there is one party); pairs are taken in row-major order.
    """
    start, width = state.step["requests"][owner]
    hist = state.history[owner]
    cols = np.arange(int(start.min()), width)
    if excluded is not None:
        cols = cols[hist.excluded[cols] == excluded]
    need = cols[None, :] >= start[:, None]
    return cols, need


def _party_pair_projection(state, owner, excluded):
    """Algorithm 3, lines 2-3, on the needed pairs of one owner's group.

    Returns ``(omega_G^T x_G, b^l)`` per pair; the masked-sum helper sends
    their sum up ``T1`` and keeps ``b^l`` for ``T2``.
    """
    cols, need = _pairs(state, owner, excluded)
    ids = state.history[owner].ids[cols]
    values = state.X[state.step["rows"]] @ state.omega[:, ids]
    offsets = np.broadcast_to(state.offsets[ids], values.shape)
    return values[need], offsets[need]


def _owner_save_features(state, received):
    """The owner turns ``omega^T x + b`` into ``phi`` and saves it (Alg. 2, l. 4-5).

    ``received`` maps each group (excluded party) to the values of its pairs.
    The features never leave the owner.
    """
    me = state.names[state.index]
    rows = state.step["rows"]
    start, width = state.step["requests"][me]
    if state.phi_cache is None:
        state.phi_cache = np.zeros((state.n_cache_rows, state.capacity))
    cached = rows < state.n_cache_rows
    lo = int(start.min())
    if cached.all():
        phi = state.phi_cache[rows, :width]  # a copy, valid left of each start
    else:
        phi = np.zeros((len(rows), width))
        phi[cached] = state.phi_cache[rows[cached], :width]
    for excluded, values in received.items():
        cols, need = _pairs(state, me, excluded)
        block = phi[:, cols]
        block[need] = np.sqrt(2.0) * np.cos(values)
        phi[:, cols] = block
    # Only the columns from the smallest start on changed.
    state.phi_cache[rows[cached], lo:width] = phi[cached, lo:]
    state.step["phi"] = phi


def _party_local_decision(state):
    """Algorithm 2: ``f^l(x_i)`` from the coefficients this party holds."""
    store = getattr(state, "store", None)
    n_rows = len(state.step["rows"])
    if store is None or len(store) == 0:
        return np.zeros((n_rows, state.n_outputs))
    return state.step["phi"][:, :len(store)] @ store.coef


def _active_new_coefficients(state, f, learning_rate, n_new):
    """Algorithm 1, lines 8-9: the new ``alpha_j`` from ``L'(f(x_i), y_i)``."""
    rows = state.step["rows"]
    phi_new = state.step["phi"][:, -n_new:]
    grad = state.loss.derivative(state.y[rows], f)
    return -learning_rate / (len(rows) * n_new) * (phi_new.T @ grad)


def _party_decay(state, factor):
    """Algorithm 1, line 10: every holder of coefficients scales them."""
    store = getattr(state, "store", None)
    if store is not None:
        store.decay(factor)


def _owner_add(state, new_ids, coef):
    state.store.add(new_ids, coef)


def _sum_local(state, value_offset):
    value, offset = value_offset
    return value + offset


def _result(item):
    return item.result() if hasattr(item, "result") else item


def _features_for(fed, names, owner, phase):
    """Algorithm 3 on every pair the owner needs, one masked sum per ``l'``."""
    if len(names) == 1:
        # One party holds every column: nothing to mask and nothing to send.
        local = fed[owner].call(_party_pair_projection, owner, None).result()
        received = {None: fed[owner].call(_sum_local, Local(local)).result()}
    else:
        received = {}
        for ex, other in enumerate(names):
            if other != owner:
                # The trees are totally different and checked node by node
                # (no party can cancel its T1 inputs with its T2 inputs).
                received[ex] = masked_tree_sum(
                    fed, trees_for(names, owner, other), _party_pair_projection,
                    owner, ex, phase=phase).result()
    fed[owner].call(_owner_save_features, Local(received)).result()


def train(fed, names, owners, *, max_iter, batch_size, m, learning_rate, alpha,
          verbose=0):
    """Run Algorithm 1 for ``max_iter`` steps; the active parties take turns.

    Several active parties (the paper's parallel active workers) run their
    steps in a fixed round-robin order, which keeps a run deterministic.
    """
    decay = 1.0 - learning_rate * alpha
    for t in range(max_iter):
        # Line 2: this step's active party picks the minibatch.
        active = owners[t % len(owners)]
        t0 = balanced_tree([active] + [p for p in names if p != active])
        rows = fed[active].call(_active_pick_minibatch, batch_size).result()
        new_ids = np.arange(t * m, (t + 1) * m, dtype=np.int64)
        # Lines 3-4: the row indices and the feature seeds go down T0; every
        # party draws its own block of omega_j.
        fed.gather(tree_broadcast(fed, t0, (active, rows, new_ids),
                                  _party_receive_step, phase="step/indices").values())
        # Lines 5-6 and Algorithm 2, line 4: every owner gets by Algorithm 3
        # the features of these rows that it has not saved yet.
        for owner in owners[:t + 1]:
            _features_for(fed, names, owner, phase="step/features")
        # Line 7: f(x_i) = sum_l f^l(x_i), summed over T0 to the active party.
        local = {p: fed[p].call(_party_local_decision) for p in names}
        f = _result(tree_sum(fed, t0, local, phase="step/decision"))
        # Lines 8-9: the active party computes the new coefficients.
        coef = fed[active].call(_active_new_coefficients, Local(f),
                                learning_rate, m).result()
        # Line 10: every holder decays the old coefficients (reverse-order
        # tree); then the active party saves the new ones, which stay there.
        fed.gather(tree_broadcast(fed, t0, decay, _party_decay,
                                  phase="step/decay").values())
        fed[active].call(_owner_add, Local(new_ids), Local(coef)).result()
        if verbose:
            print(f"[FDSKL] step {t + 1}/{max_iter} by {active}: mean |alpha| "
                  f"of the new coefficients {np.abs(coef).mean():.3g}")
    return max_iter
