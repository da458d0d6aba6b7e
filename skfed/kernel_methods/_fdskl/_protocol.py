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
it is locally saved" and runs Algorithm 3 otherwise. Each pair ``(i, j)`` of
a saved row crosses the network once: when row ``i`` is drawn again, only the
features created since its last visit go through Algorithm 3. Which pairs
are needed is a function of the public history (the rows and feature ids
broadcast at each step, and by whom), so every party derives it itself and
nothing beyond the paper's messages is sent. What the owner saves is not
the features themselves but what Algorithm 2 makes of them: per saved row,
the partial sum ``sum_j alpha_j phi_j(x_i)`` over the features it already
received, in the units of its
:class:`~skfed.kernel_methods._vertical_features.CoefficientStore`
(coefficients only ever decay, all by the same factor, after they are
created, so the running scale of the store brings the sum up to date). That
is ``n_outputs`` floats per row instead of one per (row, feature), so the
byte budget (``cache_size``) covers every row of most tables; rows past
``n_cache_rows`` are recomputed every time, which is the paper's plain loop.

A pool of features (``n_components``). Step ``t``'s feature ids are then
taken modulo the pool size: an owner's list holds each feature once (its
``_History.position``), a returning id's new coefficient is added to the
old one, and no row is saved (a pool's coefficients change between two
visits of a row), so every drawn row gets all of its owner's pool features:
at most ``B n_components`` pairs a step, whatever ``n`` or ``t``.

Local compute (Algorithms 2 and 3 on the parties, the second half of this
module). Every step is a few matrix products over blocks of rows and
features: which (row, feature) pairs a step needs, each party's share of
them, and the owner's saved partial sums; nothing loops over features or
pairs in Python. The needed pairs are a function of the public history, so
every party enumerates them in the same order: the steps' rows by increasing
*start* (the owner's feature count at the row's last visit), in blocks,
row-major within a block. A party projects blocks of rows on blocks of its
directions (``X_G omega_G``); the owner takes the cosines of every received
pair at once, multiplies them with its coefficients, and adds the result to
the partial sums it saves per row (``sum_j alpha_j phi_j(x_i)`` in the raw
units of its coefficient store: coefficients only ever decay, all by one
factor, so the store's running scale brings a saved sum up to date).

Guard and early stopping. The first active party (the *lead*) watches the
mean loss of every minibatch
(:class:`~skfed.kernel_methods._convergence.LossMonitor`): a
non-finite or exploding value stops the loop, every owner restores the
coefficients it kept at the best check, and the estimator raises. Held-out
rows (early stopping) have public ids and are never drawn into a minibatch;
at every check step (a public schedule) every party adds them to the step's
rows, so their features and ``f`` travel in the step's own messages
(Algorithm 2 with locally saved features, which they are first in line
for) and the lead scores them.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import copy
import sys

import numpy as np
import scipy.sparse as sp

from ...federation import (Local, balanced_tree, masked_tree_sum, protocol_rounds,
                           tree_broadcast, tree_sum)
from ..._progress import Progress
from ...losses import get_loss
from .._convergence import EarlyStopping, LossMonitor
from .._vertical_features import (
    _UNITS_PER_RADIAN,
    ANGLES,
    CoefficientStore,
    excluded_parties,
    party_directions,
    party_phases,
    ring_angles,
    trees_for,
)

__all__ = ["setup_party", "train", "owner_capacity"]


def owner_capacity(owner_index, n_owners, max_iter, m):
    """How many features the ``owner_index``-th active party will create."""
    return len(range(owner_index, max_iter, n_owners)) * m


class _History:
    """Public facts about one owner's features, kept by every party.

    ``ids``: the feature ids the owner created, in order; ``excluded``: the
    index of the party ``l'_j`` of each (fixed by the public seed);
    ``upto[s]``: how many of the owner's features it already holds for the
    row in cache slot ``s``; ``groups``: per ``l'``, the positions of its
    features so far (see :func:`_group`).
    """

    def __init__(self, n_cache_rows):
        self.ids = np.empty(0, dtype=np.int64)
        self.excluded = np.empty(0, dtype=np.int64)
        self.upto = np.zeros(n_cache_rows, dtype=np.int64)
        self.groups = {}
        #: position of each feature id in ``ids`` (-1: not created yet)
        self.position = np.empty(0, dtype=np.int64)


def setup_party(state, config):
    """Local set-up of a party from the public configuration of the run."""
    state.names = list(config["names"])
    state.owners = list(config["owners"])
    state.n_samples = config["n_samples"]
    state.n_cache_rows = config["n_cache_rows"]
    state.n_outputs = config["n_outputs"]
    state.history = {p: _History(state.n_cache_rows) for p in state.owners}
    # This party's rows of omega and its phases b^l, one column per feature
    # id, drawn from its private key.
    # Feature ids run 0, 1, ... (step t's are t m, ..., t m + m - 1), modulo
    # the pool size when there is a pool (``n_components``).
    state.pool = config.get("pool")
    n_total = config["max_iter"] * config["m"]
    if state.pool is not None:
        n_total = min(n_total, state.pool)
    state.omega = np.empty((len(state.columns), n_total))
    state.offsets = np.empty(n_total)
    state.n_drawn = 0
    state.step = None
    # Held-out rows: public ids, never in a batch; every party adds them to
    # the rows of each check step. They get the first cache slots, then the
    # other rows in order while the budget lasts (-1: not saved).
    state.validation_rows = np.asarray(config["validation_rows"], dtype=np.int64)
    state.train_rows = np.setdiff1d(np.arange(state.n_samples),
                                    state.validation_rows)
    state.cache_slot = np.full(state.n_samples, -1, dtype=np.int64)
    first = np.concatenate([state.validation_rows, state.train_rows])
    first = first[:state.n_cache_rows]
    state.cache_slot[first] = np.arange(len(first))
    state.check_every = config["check_every"]
    state.ring = len(state.names) > 1
    state.m = config["m"]
    me = state.names[state.index]
    if me in state.owners:
        k = state.owners.index(me)
        state.store = CoefficientStore(state.n_outputs)
        # Algorithm 2's saved values: sum_j alpha_j phi_j(x) per saved row,
        # in the store's raw units (see the module docstring).
        state.partial = np.zeros((state.n_cache_rows, state.n_outputs))
        state.loss = get_loss(config["loss"])
        state.rng = np.random.RandomState(config["sampling_seeds"][k])
        state.order, state.pos = np.empty(0, dtype=np.int64), 0
        state.kept = (0, copy.deepcopy(state.store))
        # Row weights (label holders only), scaled to mean 1 over the
        # training rows: the weighted mean loss, so that integer weights
        # are repeated rows and the step size keeps its meaning.
        weight = getattr(state, "sample_weight", None)
        if weight is None:
            state.weight = np.ones(state.n_samples)
        else:
            weight = np.asarray(weight, dtype=float)
            state.weight = weight / weight[state.train_rows].mean()
        if k == 0:
            # The lead watches the training loss, starting from the zero
            # model's (every fit starts at f = 0), over its training rows.
            zero = _weighted_loss(state, state.train_rows, 0.0)
            state.monitor = LossMonitor(zero,
                                        config["batch_size"])
            state.early = EarlyStopping(config["n_iter_no_change"], config["tol"])


def _active_pick_minibatch(state, batch_size):
    """Algorithm 1, line 2: the active party draws this step's rows.

    Rows are drawn without replacement within an epoch (a new permutation
    for every pass over the training rows), from the active party's random
    stream; held-out rows are never drawn.
    """
    if state.pos + batch_size > len(state.order):
        state.order = state.train_rows[state.rng.permutation(len(state.train_rows))]
        state.pos = 0
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
    n_batch = len(rows)
    step_index = state.n_steps = getattr(state, "n_steps", -1) + 1
    if len(state.validation_rows) and step_index % state.check_every == 0:
        rows = np.concatenate([rows, state.validation_rows])
    state.step = dict(rows=rows, n_batch=n_batch, requests={})
    # Ids never drawn before (all of them, but for a pool that wrapped
    # around): they are the next ones, in order.
    fresh_ids = new_ids[new_ids >= state.n_drawn]
    if len(fresh_ids):
        new = slice(state.n_drawn, state.n_drawn + len(fresh_ids))
        # From this party's private key: nobody else can draw its block.
        state.omega[:, new] = party_directions(state, fresh_ids)
        state.offsets[new] = party_phases(state, fresh_ids)
        state.n_drawn += len(fresh_ids)
        # The largest l1 norm of a direction: bounds |omega^T x| (ring
        # encoding).
        state.omega_l1 = max(getattr(state, "omega_l1", 0.0),
                             float(np.abs(state.omega[:, new]).sum(axis=0).max()))
    slots = state.cache_slot[rows]
    cached = slots >= 0
    for owner in state.owners:
        hist = state.history[owner]
        if owner == creator:
            # The owner's list holds each feature once: a pool's ids come
            # back, and their coefficients then grow in place.
            if len(hist.position) < len(state.offsets):
                hist.position = np.full(len(state.offsets), -1, dtype=np.int64)
                hist.position[hist.ids] = np.arange(len(hist.ids))
            added = new_ids[hist.position[new_ids] < 0]
            hist.position[added] = len(hist.ids) + np.arange(len(added))
            state.step["creator"] = creator
            state.step["new_pos"] = hist.position[new_ids]
            hist.ids = np.concatenate([hist.ids, added])
            if len(state.names) > 1 and len(added):
                excluded = excluded_parties(state.basis_seed, added, owner,
                                            state.names)
                hist.excluded = np.concatenate(
                    [hist.excluded, [state.names.index(e) for e in excluded]])
        width = len(hist.ids)
        if width == 0:
            continue
        start = np.zeros(len(rows), dtype=np.int64)
        start[cached] = hist.upto[slots[cached]]
        hist.upto[slots[cached]] = width
        state.step["requests"][owner] = (start, width)
        state.step.setdefault("blocks", {})[owner] = _row_blocks(start, width)


def _active_new_coefficients(state, f, learning_rate, n_new):
    """Algorithm 1, lines 8-9: the new ``alpha_j`` from ``L'(f(x_i), y_i)``.

    Also returns what the lead's monitor needs: the batch's mean loss, its
    largest ``|f|`` and, at a check step, the mean loss of the held-out rows
    (``nan`` otherwise). All three come from ``f`` and labels this party
    holds.
    """
    rows, B = state.step["rows"], state.step["n_batch"]
    with np.errstate(all="ignore"):  # a diverging f is reported, not warned
        phi_new = state.step["new_phi"][:B]
        y, fb = state.y[rows[:B]], f[:B]
        grad = state.loss.derivative(y, fb) * state.weight[rows[:B], None]
        coef = -learning_rate / (B * n_new) * (phi_new.T @ grad)
        report = [_weighted_loss(state, rows[:B], fb),
                  float(np.abs(f).max()), np.nan]
        if len(rows) > B:
            report[2] = _weighted_loss(state, rows[B:], f[B:])
    return coef, np.array(report)


def _weighted_loss(state, rows, f):
    """The label holder's weighted mean loss of ``rows`` at scores ``f``
    (weights ``state.weight``, mean 1 over the training rows)."""
    loss = np.sum(state.loss(state.y[rows], f), axis=1)
    w = state.weight[rows]
    return float(loss @ w / w.sum()) if w.sum() > 0 else 0.0


def _lead_watch(state, step, report, check):
    """The lead's verdict on a step: ``(status, keep, stop)``.

    ``status`` is ``None``, ``"non-finite"`` or ``"exploding"`` (the loop
    stops and rolls back); at a check, ``keep`` says the running loss is the
    best so far (owners keep this iterate) and ``stop`` that the held-out
    loss has not improved for ``n_iter_no_change`` checks.
    """
    batch_loss, f_max, val_loss = report
    status = state.monitor.observe(batch_loss, f_max)
    if status is None and not np.isnan(val_loss) and not np.isfinite(val_loss):
        status = "non-finite"
    keep = stop = False
    if status is None and check:
        keep = state.monitor.check(step)
        if not np.isnan(val_loss):
            stop = state.early.update(-val_loss)
    return status, keep, stop


def _lead_summary(state, final_step, finished):
    """What the lead reports at the end: its curves and the state of its
    monitor (for the estimator's attributes and messages)."""
    monitor = state.monitor
    if finished:
        monitor.check(final_step)
    return dict(curve=np.array(monitor.curve),
                validation=np.array(state.early.scores),
                best_check=monitor.best_check, rising=monitor.rising(),
                state=monitor.state(),
                no_change=state.early.no_change)


def _owner_keep(state, step):
    """An owner keeps a copy of its coefficients (the last good iterate)."""
    state.kept = (step, copy.deepcopy(state.store))


def _owner_restore(state, step):
    """An owner goes back to the coefficients it kept at ``step``."""
    kept_step, store = state.kept
    assert kept_step == step, (kept_step, step)
    state.store = store


def _features_for(fed, names, owner, phase):
    """Algorithm 3 on every pair the owner needs, one masked sum per ``l'``."""
    if len(names) == 1:
        # One party holds every column: nothing to mask and nothing to send.
        local = fed[owner].call(_party_pair_projection, owner, None)
        values = fed[owner].call(_sum_local, Local(local))
        taken = [fed[owner].call(_owner_take_pairs, Local(None), Local(values))]
    else:
        taken = []
        for ex, other in enumerate(names):
            if other != owner:
                # The trees are totally different and checked node by node
                # (no party can cancel its T1 inputs with its T2 inputs).
                # The sum stays with the owner: the driver does not read it.
                values = masked_tree_sum(
                    fed, trees_for(names, owner, other), _party_pair_projection,
                    owner, ex, phase=phase, encoder=ANGLES)
                # The owner takes this group while the others start the next.
                taken.append(fed[owner].call(_owner_take_pairs, Local(ex),
                                             Local(values)))
    # Not read here: the owner's next calls come after these, and a failure
    # reaches them (a party whose call failed runs no later call).
    del taken
    fed[owner].call(_owner_save_features)


def train(fed, names, owners, *, max_iter, batch_size, m, learning_rate, alpha,
          check_every=1, pool=None, verbose=0):
    """Run Algorithm 1 for at most ``max_iter`` steps; the active parties take
    turns.

    Several active parties (the paper's parallel active workers) run their
    steps in a fixed round-robin order, which keeps a run deterministic. The
    lead (``owners[0]``) watches every step's loss; the loop ends early when
    it reports a divergence (every owner then restores the coefficients it
    kept at the best check) or when the held-out loss stopped improving.

    Returns
    -------
    dict
        ``n_iter`` (steps applied), ``status`` (``None``, ``"non-finite"``
        or ``"exploding"``), ``kept_step`` (the restored iterate, after a
        divergence), ``stopped_early`` and the lead's summary (curves).
    """
    decay = 1.0 - learning_rate * alpha
    lead = owners[0]
    status, stopped_early, t = None, False, 0
    progress = Progress("FDSKL", max_iter, verbose, fed=fed, unit="step")
    for t in protocol_rounds(range(max_iter)):
        check = t % check_every == 0
        # Line 2: this step's active party picks the minibatch.
        active = owners[t % len(owners)]
        t0 = balanced_tree([active] + [p for p in names if p != active])
        rows = fed[active].call(_active_pick_minibatch, batch_size).result()
        if np.shape(rows) != (batch_size,):  # would train on a wrong minibatch
            raise ValueError(f"Party {active!r} drew a minibatch of shape "
                             f"{np.shape(rows)}, expected ({batch_size},).")
        new_ids = np.arange(t * m, (t + 1) * m, dtype=np.int64)
        if pool is not None:  # the seeds cycle over the pool
            new_ids %= pool
        # Lines 3-4: the row indices and the feature seeds go down T0; every
        # party draws its own block of omega_j.
        # The driver reads only what steers the loop (the rows, the
        # coefficients' report, the lead's verdict): a party's calls run in
        # order, so a step's calls go out without waiting for the last ones.
        tree_broadcast(fed, t0, (active, rows, new_ids), _party_receive_step,
                       phase="step/indices")
        # Lines 5-6 and Algorithm 2, line 4: every owner gets by Algorithm 3
        # the features of these rows that it has not saved yet.
        for owner in owners[:t + 1]:
            _features_for(fed, names, owner, phase="step/features")
        # Line 7: f(x_i) = sum_l f^l(x_i), summed over T0 to the active party.
        local = {p: fed[p].call(_party_local_decision) for p in names}
        # (a future held by the active party: passed on, not read here)
        f = tree_sum(fed, t0, local, phase="step/decision")
        # Lines 8-9: the active party computes the new coefficients (and
        # the losses of its batch and, at a check, of the held-out rows).
        coef, report = fed[active].call(_active_new_coefficients, Local(f),
                                        learning_rate, m).result()
        # The lead judges the step before it is applied: a divergence or
        # the end of patience leaves the model as it was after t steps.
        if active == lead:
            verdict = fed[lead].call(_lead_watch, Local(t), Local(report),
                                     Local(check))
        else:
            verdict = fed[lead].call(_lead_watch, t, report, check,
                                     sender=active, phase="step/loss")
        status, keep, stop = verdict.result()
        if keep:
            _tell_owners(fed, owners, lead, _owner_keep, t, "step/keep")
        progress.report(
            t + 1, f"batch loss {report[0]:.4g} ({active})" + (
                "" if np.isnan(report[2]) else
                f", held-out loss {report[2]:.4g}"),
            last=status is not None or stop)
        if status is not None or stop:
            stopped_early = stop
            break
        # Line 10: every holder decays the old coefficients (reverse-order
        # tree); then the active party saves the new ones, which stay there.
        tree_broadcast(fed, t0, decay, _party_decay, phase="step/decay")
        fed[active].call(_owner_add, Local(new_ids), Local(coef))
    else:
        t = max_iter
    summary = fed[lead].call(_lead_summary, Local(t),
                             Local(status is None and not stopped_early)).result()
    kept_step = None
    if status is not None:
        kept_step = summary["best_check"]
        fed.gather(_tell_owners(fed, owners, lead, _owner_restore, kept_step,
                                "step/restore"))
    return dict(summary, n_iter=t if status is None else kept_step,
                n_iter_seen=t, status=status, kept_step=kept_step,
                stopped_early=stopped_early)


def _tell_owners(fed, owners, lead, function, step, phase):
    # The lead tells every owner a step number (public: all parties count
    # steps); its own call is local work. Returns the calls' futures.
    return [fed[o].call(function, Local(step)) if o == lead else
            fed[o].call(function, step, sender=lead, phase=phase)
            for o in owners]


# --------------------------------------------------------------------------
# Algorithms 2 and 3 on the parties: the needed pairs, each party's share
# of them, the owner's saved partial sums (called by the party functions
# above).

#: a block of rows may span this share of unneeded pairs (the owner's
#: rectangle of cosines over the block's widest need, and a sparse block's
#: product) to save the per-block overhead
_SLACK = 0.25

#: adding it to a float below 2^51 in magnitude rounds it to an integer (to
#: nearest, ties to even, as np.rint) held in two's complement by the low
#: bits of the mantissa
_ROUND_MAGIC = 1.5 * 2.0**52
_LITTLE_ENDIAN = sys.byteorder == "little"


def _ring_units(units, bound):
    """:func:`ring_angles` of angles in ring units whose magnitude is at
    most ``bound``, rounded in place.

    Below ``2^50`` the ring element is read off the low 32 bits of
    ``units + 1.5 * 2^52`` (two passes instead of a range check and three
    casts; the same elements).
    """
    if bound < 2.0**50 and _LITTLE_ENDIAN:
        units += _ROUND_MAGIC
        return units.view(np.uint32)[::2].copy()
    return ring_angles(units, scaled=True)


def _angle_bound(state, phased):
    """A bound of this party's ``|omega^T x (+ b)|`` in ring units."""
    x_max = getattr(state, "x_abs_max", None)
    if x_max is None:
        data = state.X.data if sp.issparse(state.X) else state.X
        x_max = state.x_abs_max = float(np.abs(data).max(initial=0.0))
    return (x_max * state.omega_l1 + (2 * np.pi if phased else 0.0)) * _UNITS_PER_RADIAN


def _row_blocks(start, width):
    """The step's rows in blocks for :func:`_pairs` (a public order).

    Rows by increasing start; consecutive rows that share a start form a
    unit, and units are merged while the block's dense rectangle (every row
    over the first row's features) has at most ``_SLACK`` of unneeded pairs.
    Returns a list of ``(idx, exact)``: the rows' positions in the step, and
    whether they all share one start.
    """
    order = np.argsort(start, kind="stable")
    units = np.split(order, np.flatnonzero(np.diff(start[order])) + 1)
    blocks, current, need = [], [], 0
    for unit in units:
        n_need = (width - int(start[unit[0]])) * len(unit)
        if current:
            rows = sum(len(u) for u in current) + len(unit)
            dense = (width - int(start[current[0][0]])) * rows
            if dense - need - n_need <= _SLACK * (need + n_need):
                current.append(unit)
                need += n_need
                continue
            blocks.append(current)
        current, need = [unit], n_need
    if current:
        blocks.append(current)
    return [(np.concatenate(b), len(b) == 1) for b in blocks]


def _pairs(state, owner, excluded):
    """:func:`_pair_blocks` as a list, computed once per step (the owner
    enumerates a group twice: for its share, then to take the sums)."""
    memo = state.step.setdefault("pairs", {})
    if (owner, excluded) not in memo:
        memo[owner, excluded] = list(_pair_blocks(state, owner, excluded))
    return memo[owner, excluded]


def _pair_blocks(state, owner, excluded):
    """The needed pairs of a group, as rectangles of rows x features.

    The group is the owner's features whose ``l'`` is ``excluded`` (all of
    them when there is one party). A row needs the group's features from
    its *start* on (the owner's feature count at its last visit; 0 for a
    row never seen or past the budget), and the rows of one earlier step
    share their start: so the step's rows, taken by increasing start (a
    public order: every party derives it from the public history), fall in
    a few blocks that each need the same features. Yields ``(idx, cols)``
    per block: the rows' positions in the step and the columns (positions
    in the owner's list). Concatenated row-major, the blocks list the pairs
    of a masked sum; nothing that is not needed is computed or sent.

    Blocks of rows with nearby starts are merged (:func:`_row_blocks`); such
    a block also yields its units (``None`` for a rectangle): per run of
    rows that share a start, ``(first row, end row, first column)`` in the
    block, and its pairs are each row's columns from its unit's first,
    row-major.
    """
    start, width = state.step["requests"][owner]
    if excluded is None:
        group = np.arange(width)
    else:
        group = _group(state.history[owner], excluded, width)
    for idx, exact in state.step["blocks"][owner]:
        cols = group[np.searchsorted(group, start[idx[0]]):]
        if not len(cols):
            continue
        if exact:
            yield idx, cols, None
            continue
        # idx is sorted by start: runs of one start, each a suffix of cols.
        starts = start[idx]
        bounds = np.concatenate([[0], np.flatnonzero(np.diff(starts)) + 1,
                                 [len(idx)]])
        firsts = np.searchsorted(cols, starts[bounds[:-1]])
        yield idx, cols, [(int(lo), int(hi), int(f)) for lo, hi, f in
                          zip(bounds[:-1], bounds[1:], firsts) if f < len(cols)]


def _group(hist, excluded, width):
    """Positions of the owner's first ``width`` features whose ``l'`` is
    ``excluded``, extended from the last step's (features only append)."""
    groups = hist.groups
    seen, group = groups.get(excluded, (0, np.empty(0, dtype=np.int64)))
    if width > seen:
        new = np.flatnonzero(hist.excluded[seen:width] == excluded) + seen
        group = np.concatenate([group, new])
        groups[excluded] = (width, group)
    return group[:np.searchsorted(group, width)]


def _n_pairs(idx, cols, units):
    """Pairs of a block of :func:`_pairs`."""
    if units is None:
        return len(idx) * len(cols)
    return sum((hi - lo) * (len(cols) - f) for lo, hi, f in units)


def _take(v, units):
    """The needed pairs of a block's rectangle ``v``, row-major."""
    if units is None:
        return v.ravel()
    return np.concatenate([v[lo:hi, f:].ravel() for lo, hi, f in units])


def _project(X_block, omega, ids, scale=1.0):
    """``X_block @ omega[:, ids] * scale``, dense, without copying all of
    ``omega``.

    For sparse rows only the directions of the columns they use are taken
    (a wide sparse block touches few of its columns), so the cost follows
    the nonzeros, not the width of the party's block. ``scale`` multiplies
    the directions taken (cheaper than the product's entries).
    """
    if not sp.issparse(X_block):
        return X_block @ (omega[:, ids] * scale)
    X_block = sp.csr_matrix(X_block)
    used, local = np.unique(X_block.indices, return_inverse=True)
    X_block = sp.csr_matrix((X_block.data, local.ravel(), X_block.indptr),
                            shape=(X_block.shape[0], len(used)))
    return np.asarray(X_block @ (omega[np.ix_(used, ids)] * scale))


def _party_pair_projection(state, owner, excluded):
    """Algorithm 3, lines 2-3, on the needed pairs of one owner's group.

    Returns ``(omega_G^T x_G, b^l)`` per pair; the masked-sum helper sends
    their sum up ``T1`` and keeps ``b^l`` for ``T2``.
    """
    rows, ids_of = state.step["rows"], state.history[owner].ids
    # In a masked sum (``state.ring``) the shares leave as ring elements and
    # only l' adds its phases (the others' would not cancel); with one party
    # the phase is added here. The privacy replay's surrogate party (no
    # ``ring``) gets values and phases apart, one per pair.
    ring = getattr(state, "ring", False)
    phased = excluded is None or (ring and state.index == excluded)
    blocks = _pairs(state, owner, excluded)
    # Ring shares are computed in ring units at once (the directions and
    # phases scaled, not the products), straight into the share's buffer
    # (a product per run of rows that share a start), rounded in place.
    scale = _UNITS_PER_RADIAN if ring else 1.0
    values = np.empty(sum(_n_pairs(*block) for block in blocks))
    offsets, done = [], 0
    for idx, cols, need in blocks:
        ids = ids_of[cols]
        X_block = state.X[rows[idx]]
        if not (ring or phased):  # the privacy replay's surrogate party
            offsets.append(_take(np.broadcast_to(
                state.offsets[ids], (len(idx), len(cols))), need))
        if sp.issparse(X_block):
            v = _project(X_block, state.omega, ids, scale)
        else:
            directions = state.omega[:, ids] * scale
        phases = state.offsets[ids] * scale if phased else None
        for lo, hi, f in ([(0, len(idx), 0)] if need is None else need):
            out = values[done:done + (hi - lo) * (len(cols) - f)].reshape(hi - lo, -1)
            if sp.issparse(X_block):
                out[...] = v[lo:hi, f:]
            else:
                np.matmul(X_block[lo:hi], directions[:, f:], out=out)
            if phased:
                out += phases[f:]
            done += out.size
    if ring:
        return _ring_units(values, _angle_bound(state, phased)), None
    if phased:
        return values, None
    return values, np.concatenate(offsets) if offsets else np.empty(0)


def _owner_take_pairs(state, excluded, values):
    """The owner turns one group's ``omega^T x + b`` into ``phi`` (Alg. 2).

    ``values`` are the pairs of the group whose ``l'`` is ``excluded``. The
    cosines of a block of pairs are multiplied at once with the
    coefficients of their features and added to the step's sums; the
    features without a coefficient yet (this step's new ones, at the
    creator) are kept for the gradient. A group is taken as soon as its sum
    arrives, while the other parties already compute the next group's
    shares. Nothing leaves the owner.
    """
    me = state.names[state.index]
    step = state.step
    store = state.store
    n_coef, raw = len(store), store.raw_coef
    if "fresh" not in step:
        _, width = step["requests"][me]
        # The creator's features of this step, by position in its list
        # (fresh ones past n_coef; a pool's returning ones before it).
        new_pos = (step["new_pos"] if step.get("creator") == me
                   else np.empty(0, dtype=np.int64))
        step["fresh"] = np.zeros((len(step["rows"]), state.n_outputs))
        step["new_phi"] = np.zeros((len(step["rows"]), len(new_pos)))
        step["new_of"] = np.full(width, -1, dtype=np.int64)
        step["new_of"][new_pos] = np.arange(len(new_pos))
    fresh, new_phi, new_of = step["fresh"], step["new_phi"], step["new_of"]
    done = 0
    for idx, cols, need in _pairs(state, me, excluded):
        if need is None:
            k = len(idx) * len(cols)
            phi = np.cos(values[done:done + k]).reshape(len(idx), len(cols))
            done += k
        else:
            phi = np.zeros((len(idx), len(cols)))
            for lo, hi, f in need:
                k = (hi - lo) * (len(cols) - f)
                phi[lo:hi, f:] = np.cos(values[done:done + k]).reshape(
                    hi - lo, len(cols) - f)
                done += k
        split = int(np.searchsorted(cols, n_coef))
        if split:
            fresh[idx] += phi[:, :split] @ raw[cols[:split]]
        new = new_of[cols]
        taken = new >= 0
        if taken.any():
            new_phi[np.ix_(idx, new[taken])] = phi[:, taken]


def _owner_save_features(state):
    """The owner's ``f^l`` of the step's rows, and its saved sums (Alg. 2).

    A saved row adds the step's sum to its partial sum; a row past the
    budget (which received every feature) takes the step's sum as it is.
    """
    step = state.step
    if "fresh" not in step:  # no group had a pair for this owner
        _owner_take_pairs(state, None, np.empty(0))
    fresh = step.pop("fresh") * np.sqrt(2.0)
    step["new_phi"] *= np.sqrt(2.0)
    slots = state.cache_slot[step["rows"]]
    cached = slots >= 0
    if cached.any():
        state.partial[slots[cached]] += fresh[cached]
        fresh[cached] = state.partial[slots[cached]]
    step["local"] = fresh * state.store.scale


def _party_local_decision(state):
    """Algorithm 2: ``f^l(x_i)`` from the coefficients this party holds."""
    store = getattr(state, "store", None)
    n_rows = len(state.step["rows"])
    if store is None or len(store) == 0:
        return np.zeros((n_rows, state.n_outputs))
    return state.step["local"]


def _party_decay(state, factor):
    """Algorithm 1, line 10: every holder of coefficients scales them."""
    store = getattr(state, "store", None)
    if store is not None:
        folded = store.decay(factor)
        if folded != 1.0:  # the saved partial sums are in the raw units
            state.partial *= folded


def _owner_add(state, new_ids, coef):
    """Algorithm 1, line 9: the creator saves its new coefficients, and adds
    their terms to the saved partial sums of this step's saved rows."""
    state.store.add(new_ids, coef)
    rows = state.step["rows"]
    slots = state.cache_slot[rows]
    cached = slots >= 0
    if cached.any():  # (never with a pool: its rows are not saved)
        raw_new = state.store.raw_coef[-len(new_ids):]
        state.partial[slots[cached]] += state.step["new_phi"][cached] @ raw_new


def _sum_local(state, value_offset):
    value, offset = value_offset
    return value if offset is None else value + offset
