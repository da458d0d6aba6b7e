"""AVFKAM's protocol: what each party runs, and the active parties' loops.

Zhang et al. (KDD 2024), Algorithms 1-3. Party functions are plain functions
of the party's private state and the message it received. The training loops
that call them (:func:`run_asynchronous`, :func:`run_synchronous`, the
second half of this module) run in one *driver* thread per active party and
act only through ``fed[...].call``, so every party's own thread stays free
to answer the other parties while its loop is busy (a party thread that
waited on another party could deadlock).

Preprocessing at the paper's order (appendix C). The paper restores every
sample of training from a random seed, so the features of a step can be
computed before training ("if we use the same rand seed in preprocessing and
training, our complexity is O(t) in preprocessing"): one masked aggregation
of ``omega_i^T x + b`` per seed the training will use, over every row (any
row may be sampled, and Algorithm 2 reads ``phi_i(x)`` of every earlier seed
at it). Here each active party replays its own sampling for the most steps
it can take (:func:`plan_steps`) and asks only for the seeds that replay
draws; and the active parties split the pool of ``n_random_features`` seeds
between them (seed ``j`` belongs to the active party of rank ``j mod m``), so
the preprocessing of the whole federation aggregates each pool seed at most
once, whatever the number of active parties.

Model. Only an active party creates coefficients (Algorithm 1 runs on active
workers; the dominator saves the new ``alpha_i``), so a passive party's
``f^l`` is zero: it takes part in the preprocessing (Algorithm 3) and in
prediction, never in a training step.

Guard and early stopping. Each active party watches the pairwise losses of
its own steps (:class:`~skfed.kernel_methods._convergence.LossMonitor`) and
refuses to apply a step whose loss or scores are non-finite or exploding;
its loop then stops every loop, and the active parties go back to the
iterate kept at the check with the lowest recent loss. Held-out rows (early stopping) are known to the
active parties only: the preprocessing computed the features of every row,
so the lead scores them from the kept features and the other active
parties' ``f^l`` there (Algorithm 2 on locally saved values), and passive
parties learn nothing of the split.

Stragglers (``party_delays``). The paper (section 6.3) makes one worker
slower than the others: with delay fraction ``d`` its iteration costs
``1 + d`` times the fastest worker's. Here a party with factor ``s`` takes
``s`` times *its own work* per update: the driver times the party's own
computation of the step (sampling and its ``f^l``, the new coefficients,
its decay) and then sleeps ``(s - 1)`` times that, so the slowdown follows
the real cost of an update at any data size and machine load. The sleep is
in the driver, so the slow party's actor thread still answers the others'
requests for ``f^l`` at once (a slow training worker next to a responsive
server), and the others' messages are not slowed down: only the party's own
computation is. The paper's fraction ``d`` is ``s = 1 + d``.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import threading
import time
from collections import deque

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit, log_expit
from sklearn.metrics import roc_auc_score

from ..._progress import Progress
from ...federation import (Local, balanced_tree, check_stop, protocol_rounds,
                          set_round, tree_sum)
from .._convergence import EarlyStopping, LossMonitor
from .._vertical_features import CoefficientStore

__all__ = ["PooledCoefficientStore", "sub_pool", "row_ids", "TrainingPlan",
           "run_asynchronous", "run_synchronous"]


class PooledCoefficientStore(CoefficientStore):
    """A party's coefficients over a finite pool of random features.

    AVFKAM draws every feature seed from a pool of ``n_random_features``
    seeds (the features of the training rows are precomputed for this pool,
    appendix C), so the coefficients a party creates for one seed over many
    iterations add up. Keeping one running sum per seed makes ``f^l(x)`` a
    single dot product and bounds the store by the pool size; the lazy
    ``(1 - gamma lambda)`` decay of :class:`CoefficientStore` is kept.
    ``feature_ids`` and ``coef`` list only the seeds used so far, so the
    store works with
    :func:`~skfed.kernel_methods._vertical_features.federated_decision`.

    ``seeds`` names the pool seed of every entry (default: entry ``i`` is
    seed ``i``): a party keeps entries only for the seeds it preprocessed.
    """

    def __init__(self, n_pool, seeds=None):
        # Not CoefficientStore.__init__: feature_ids is derived here.
        self.n_outputs = 1
        self._dense = np.zeros(int(n_pool))
        self._used = np.zeros(int(n_pool), dtype=bool)
        self._seeds = (None if seeds is None
                       else np.asarray(seeds, dtype=np.int64))
        self._scale = 1.0
        self.n_created = 0

    def __len__(self):
        return int(self._used.sum())

    def __setstate__(self, attributes):
        # Unpickled arrays may be read-only views (e.g. a Ray object store);
        # the party updates its store in place, so it owns writable copies.
        self.__dict__.update(attributes)
        self._dense = np.array(self._dense)
        self._used = np.array(self._used)

    def add(self, feature_ids, coef):
        feature_ids = np.asarray(feature_ids, dtype=np.int64)
        np.add.at(self._dense, feature_ids,
                  np.asarray(coef, dtype=float).ravel() / self._scale)
        self._used[feature_ids] = True
        self.n_created += len(feature_ids)

    def decay(self, factor):
        self._scale *= factor
        if self._scale < 1e-150:  # fold the scale in before it underflows
            self._dense *= self._scale
            self._scale = 1.0

    @property
    def dense_coef(self):
        """One coefficient per pool seed (zeros for unused seeds)."""
        return self._dense * self._scale

    @property
    def feature_ids(self):
        used = np.flatnonzero(self._used).astype(np.int64)
        seeds = getattr(self, "_seeds", None)  # absent in older pickles
        return used if seeds is None else seeds[used]

    @property
    def coef(self):
        return self.dense_coef[self._used].reshape(-1, 1)

    def empty(self):
        """A zero store over the same seeds."""
        return PooledCoefficientStore(len(self._dense),
                                      getattr(self, "_seeds", None))

    def copy(self):
        out = self.empty()
        out._dense, out._used = self.dense_coef, self._used.copy()
        out.n_created = self.n_created
        return out


#: replayed steps between two reads of the stop flag in :func:`plan_steps`
#: (a few milliseconds of replay; a read costs well under 1% of them)
_POLL_STEPS = 256

#: values (rows x seeds) of one chunk of the preprocessing's masked sums
CHUNK_VALUES = 2**21


def preprocess_chunk(n_seeds):
    """Rows per chunk of the preprocessing (about 2 million values)."""
    return max(256, CHUNK_VALUES // max(1, int(n_seeds)))


# --------------------------------------------------------------------------
# Party functions (run on the party's own thread).

def sub_pool(n_random_features, rank, n_active):
    """The pool seeds of the active party of ``rank``: ``j mod m == rank``.

    Public: every party can tell which party owns a seed.
    """
    return np.arange(rank, n_random_features, n_active, dtype=np.int64)


def row_ids(rows, n_rows):
    """Row ids as a deployment sends them: 4 bytes each below 2^32 rows."""
    return rows.astype(np.uint32 if n_rows < 2**32 else np.int64)


def _training_rows(state, split):
    train = np.arange(len(state.y)) if split is None else split[0]
    return train[state.y[train] > 0], train[state.y[train] < 0]


def _row_probabilities(state, rows):
    """Each row's chance of being drawn: its weight's share (None: uniform)."""
    w = getattr(state, "w", None)
    if w is None:
        return None
    w = w[rows]
    if not w.sum() > 0:
        raise ValueError("sample_weight is 0 on every training row of one "
                         "class; give some rows of each class a positive "
                         "weight (or change validation_fraction).")
    return w / w.sum()


def _pick(rng, rows, p, size):
    if p is None:
        return rows[rng.randint(len(rows), size=size)]
    return rows[rng.choice(len(rows), size=size, p=p)]


def _draw(state, rng, n_seeds):
    """Algorithm 1, line 2 for a block: ``B`` positive and ``B`` negative
    rows (concatenated) and ``features_per_step`` of the ``n_seeds`` seeds.

    With row weights each side is drawn with probability proportional to
    its weight: the step is then unbiased for the weighted pairwise loss.
    """
    B = state.batch_size
    pos = _pick(rng, state.positives, state.p_positives, B)
    neg = _pick(rng, state.negatives, state.p_negatives, B)
    seeds = rng.choice(n_seeds, size=state.features_per_step, replace=False)
    return np.concatenate([pos, neg]), seeds


def plan_steps(state, rng_seed, batch_size, features_per_step, seeds,
               max_steps, split=None, keep_all_rows=True):
    """Appendix C: replay this party's sampling to learn its seeds.

    The samples of training come from this party's own generator and do not
    depend on the model, so replaying it for the most steps the party can
    take (``max_steps``) gives every seed it will draw. Returns those seeds
    (pool ids, sorted): the only ones whose features it asks for.
    ``split`` is ``(training rows, held-out rows)`` when early stopping is
    on (the active parties' own choice; passive parties never see it).

    The replay also tells which rows training can draw: with
    ``keep_all_rows=False`` (one active party) the party keeps the features
    of those rows and of the held-out rows only (:attr:`state.slot`), so
    its memory follows the steps, not the table. The masked sums still span
    every row (the passive parties must not learn which rows are drawn: a
    rare class is drawn more often).
    """
    state.positives, state.negatives = _training_rows(state, split)
    state.p_positives = _row_probabilities(state, state.positives)
    state.p_negatives = _row_probabilities(state, state.negatives)
    state.validation_rows = None if split is None else split[1]
    state.batch_size = batch_size
    state.features_per_step = min(features_per_step, len(seeds))
    state.rng_seed = rng_seed
    replay = np.random.RandomState(rng_seed)
    used = np.zeros(len(seeds), dtype=bool)
    n_rows = len(state.y)
    kept = np.ones(n_rows, dtype=bool) if keep_all_rows else np.zeros(n_rows, dtype=bool)
    for step in range(max_steps):
        if step % _POLL_STEPS == 0:
            # max_iter replayed steps can take minutes (10**7: ~5 min): a
            # run told to stop (Ctrl-C, a failure, a timeout) ends here
            # instead of leaving this thread busy after the fit raised.
            check_stop(state)
        rows, drawn = _draw(state, replay, len(seeds))
        used[drawn] = True
        if keep_all_rows:
            if used.all():
                break
        else:
            kept[rows] = True
    if state.validation_rows is not None:
        kept[state.validation_rows] = True
    # column of each seed of the party's pool in its features (-1: unused)
    state.column = np.where(used, np.cumsum(used) - 1, -1)
    # slot of each row in the kept features (-1: not kept)
    state.slot = np.where(kept, np.cumsum(kept) - 1, -1)
    state.kept_rows = np.flatnonzero(kept)
    return np.asarray(seeds, dtype=np.int64)[used]


def start_features(state, n_seeds):
    """Appendix C: room for ``phi`` of the kept rows, in float32 (a
    feature is at most sqrt(2) in magnitude; float32 keeps 7 digits)."""
    state.Z = np.zeros((len(state.kept_rows), n_seeds), dtype=np.float32)


def keep_chunk(state, features, rows):
    """Appendix C, one chunk of rows: keep ``phi`` of its kept rows."""
    slots = state.slot[rows]
    mine = slots >= 0
    state.Z[slots[mine]] = features[mine]


def keep_features(state, seeds, hyper):
    """After the chunks of appendix C: the party's store and monitors.

    ``state.Z`` has one column per seed of :func:`plan_steps` (in that
    order) and one row per kept row. The party also sets up the watch over
    its steps' losses, and the lead its patience counter.
    """
    state.rng = np.random.RandomState(state.rng_seed)  # the replayed stream
    state.store = PooledCoefficientStore(len(seeds), seeds)
    state.hyper = hyper  # public hyper-parameters: loss, learning rate
    # Every fit starts at f = 0, where each pair's loss is l(0).
    state.monitor = LossMonitor(float(hyper["loss"](0.0)), state.batch_size)
    state.early = EarlyStopping(hyper["n_iter_no_change"], hyper["tol"])


def sample_step(state):
    """Algorithm 1, line 2: positive rows, negative rows and feature seeds
    (columns of the kept features); and this party's own ``f^l`` at those
    rows (its share of line 3). The rows go out as the ids a deployment
    sends (:func:`row_ids`)."""
    rows, seeds = _draw(state, state.rng, len(state.column))
    columns = state.column[seeds]
    if columns.min() < 0:  # more steps than plan_steps replayed
        raise RuntimeError("a step drew a seed that was not preprocessed")
    rows = row_ids(rows, len(state.y))
    return (rows, columns), local_scores(state, rows)


def local_scores(state, rows):
    """Algorithm 2: ``f^l`` at training rows, from the kept features
    (``None``: at every kept row)."""
    coef = state.store.dense_coef
    if rows is None:
        return state.Z @ coef.astype(np.float32) if len(coef) else np.zeros(len(state.Z))
    return state.Z[state.slot[rows]] @ coef


def prepare_update(state, f_rows, sample):
    """Algorithm 1, line 4 (eq. 5-6): the new coefficients, kept aside.

    With ``d = f(x+) - f(x-)``, ``l'_1 = dl/dd`` and ``l'_2 = -dl/dd``, so
    ``alpha_j = -gamma dl/dd (phi_j(x+) - phi_j(x-))``, averaged over the
    pairs of the step and divided by the number of seeds (an average of
    ``features_per_step`` unbiased estimates of the kernel gradient).
    """
    rows, seeds = sample
    B = len(rows) // 2
    with np.errstate(all="ignore"):  # a diverging f is reported, not warned
        d = f_rows[:B] - f_rows[B:]
        slope = state.hyper["loss"].derivative(d)
        block = state.Z[np.ix_(state.slot[rows], seeds)].astype(float)
        diff = block[:B] - block[B:]
        alpha = -state.hyper["learning_rate"] * (slope @ diff) / (B * len(seeds))
        loss = float(np.mean(state.hyper["loss"](d)))
        status = state.monitor.observe(loss, np.abs(f_rows).max())
    # A step judged non-finite or exploding is not applied.
    state.stash["pending"] = None if status else (seeds, alpha)
    return loss, status


def decay(state, factor):
    """Algorithm 1, line 5: every earlier coefficient times (1 - gamma lambda)."""
    state.store.decay(factor)


def commit_update(state):
    pending = state.stash.pop("pending")
    if pending is not None:
        state.store.add(*pending)


def apply_update(state, factor):
    """Lines 4-5 after :func:`prepare_update`: own decay and save (a step
    judged non-finite or exploding is dropped)."""
    if state.stash.get("pending") is not None:
        decay(state, factor)
    commit_update(state)


def update(state, f_rows, sample, factor):
    """Lines 4-5 at once (asynchronous mode): new alpha, own decay, save.

    Returns ``(mean pairwise loss of the step, status)``; a step with a
    status (``"non-finite"``, ``"exploding"``) leaves the model unchanged.
    """
    loss, status = prepare_update(state, f_rows, sample)
    if status is None:
        decay(state, factor)
        commit_update(state)
    return loss, status


def validation_scores(state):
    """Algorithm 2 at the held-out rows, from the kept features."""
    return local_scores(state, state.validation_rows)


def lead_validate(state, f_validation):
    """The lead's held-out ROC AUC and whether patience has run out."""
    y = state.y[state.validation_rows] > 0
    w = getattr(state, "w", None)
    w = None if w is None else w[state.validation_rows]
    with np.errstate(all="ignore"):
        auc = (float(roc_auc_score(y, f_validation, sample_weight=w))
               if np.all(np.isfinite(f_validation)) else np.nan)
    return auc, state.early.update(auc)


def monitor_state(state):
    """What the error message reports (:meth:`LossMonitor.state`)."""
    return state.monitor.state()


def snapshot(state):
    return state.store.copy()


def restore(state, store):
    """Back to a copy of this party's own coefficients kept at a check
    (``None``: the zero model every fit starts from)."""
    state.store = state.store.empty() if store is None else store.copy()


def final_store(state):
    return state.store


def set_store(state, store):
    state.store = store


def platt_scaling(f, positive, weight=None):
    """Platt's sigmoid ``P(y=1 | f) = expit(a (f - t))`` fitted to scores.

    Maximum likelihood with Platt's smoothed targets (``(N+ + 1) / (N+ +
    2)`` and ``1 / (N- + 2)``), which keeps ``a`` finite when the scores
    separate the classes. Returns ``(a, t)``; ``a`` is clipped at 0 (scores
    that do not rank positives higher give the base rate everywhere).
    """
    f = np.asarray(f, dtype=float)
    weight = np.ones(f.size) if weight is None else np.asarray(weight, float)
    n_pos = float(weight[positive].sum())  # weighted counts
    n_neg = float(weight[~positive].sum())
    target = np.where(positive, (n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n_neg + 2.0))
    center = float(np.average(f, weights=weight))
    spread = float(np.sqrt(np.average((f - center) ** 2, weights=weight))) or 1.0
    z = (f - center) / spread  # a well-scaled problem in two parameters

    def loss(ab):
        u = ab[0] * z + ab[1]
        p = expit(u)
        value = -(weight * (target * log_expit(u)
                            + (1 - target) * log_expit(-u))).sum()
        grad = weight * (p - target)
        return value, np.array([grad @ z, grad.sum()])

    prior = np.log((n_pos + 1.0) / (n_neg + 1.0))
    a, b = minimize(loss, np.array([0.0, prior]), jac=True, method="L-BFGS-B",
                    bounds=[(0.0, None), (None, None)]).x
    if a <= 1e-12:
        # No ranking signal: the base rate everywhere, the majority class
        # predicted (t beyond every training score, on its side).
        a = 0.0
        t = (f.max() + spread) if n_pos < n_neg else (f.min() - spread)
        return 0.0, float(t), float(expit(prior))
    return float(a / spread), float(center - b * spread / a), None


def training_calibration(state, f_all):
    """``(a, t, base)`` for ``predict_proba = expit(a (f - t))``; ``predict``
    thresholds at ``f = t``, where the calibrated probability is 1/2.

    The pairwise loss only sees differences of scores, so ``f`` has no
    natural zero or scale. The label holder fits Platt's sigmoid on the
    held-out rows of early stopping when it has both classes there (the
    training rows otherwise). ``f_all`` is ``f`` at the kept rows (every
    row, or with one active party the rows training can draw and the
    held-out ones). ``base`` is the constant probability when the scores
    carry no ranking (``a = 0``), else NaN.
    """
    kept = np.asarray(state.kept_rows)
    positions = np.arange(len(kept))
    held_out = getattr(state, "validation_rows", None)
    w = getattr(state, "w", None)
    if held_out is not None and len(np.unique(state.y[held_out])) == 2 and (
            w is None or (w[held_out][state.y[held_out] > 0].sum() > 0
                          and w[held_out][state.y[held_out] < 0].sum() > 0)):
        positions = state.slot[np.asarray(held_out)]  # held-out rows are kept
    rows = kept[positions]
    a, t, base = platt_scaling(f_all[positions], state.y[rows] > 0,
                               None if w is None else w[rows])
    return np.array([a, t, np.nan if base is None else base])


# --------------------------------------------------------------------------
# The active parties' training loops (Algorithm 1): one driver thread per
# active party, acting only through fed[...].call.


class TrainingPlan:
    """What the active parties' loops share: the coordinator's bookkeeping.

    The iteration budget (the paper's global counter ``t``), the checkpoints
    and the first failure are coordinator state, not party data: no party
    reads another's model through it. So are the guard's records: the mean
    pairwise loss the loops report between two checks (every
    ``check_every`` iterations), the iterate kept at the check with the
    lowest one (copies each active party made of its own coefficients), the
    first divergence an active party reported, and the held-out AUC the lead
    computed at each check (``validate``).
    """

    def __init__(self, fed, names, active, max_iter, decay_factor, delays,
                 checkpoint_every, verbose=0, check_every=None,
                 validate=False, batch_size=1, reference=1.0):
        self.fed = fed
        self.names = names
        self.active = active  # the parties that hold coefficients
        self.max_iter = max_iter
        self.decay_factor = decay_factor
        self.delays = delays or {}  # party name -> slowdown factor
        self.slept = dict.fromkeys(active, 0.0)  # seconds of straggling
        self.checkpoint_every = checkpoint_every
        self.verbose = verbose
        self.done = 0
        self.per_party = dict.fromkeys(active, 0)
        self.checkpoints = []  # (seconds, iterations, {party: future})
        self.losses = deque(maxlen=200)
        self.failure = None
        self.stop = threading.Event()
        self._lock = threading.Lock()
        self.start = None
        self.check_every = check_every or max_iter + 1
        self.validate = validate
        self.window = []  # losses reported since the last check
        self.curve = []  # mean loss of each window
        # Running loss weighted by pairs (about the last 256), as the
        # parties' own monitors: the iterate kept is the best one at a check.
        self.weight = batch_size / (batch_size + 256.0)
        self.running = self.reference = float(reference)
        self.best_loss = float("inf")
        self.kept = (0, None)  # (iteration, {party: future copy}); 0: f = 0
        self.divergence = None  # (party, status, iteration)
        self.validation = []  # the lead's held-out AUC at each check
        self.stopped_early = False
        self.next_check = self.check_every
        self.halt = False  # synchronous mode: decided once per round

    def report(self, party, n_iter, loss, status):
        """A loop reports its step's loss; a status stops every loop."""
        with self._lock:
            self.losses.append(loss)
            if status is None:
                self.window.append(loss)
                self.running += self.weight * (loss - self.running)
            elif self.divergence is None:
                self.divergence = (party, status, n_iter)
        if status is not None:
            self.stop.set()

    def maybe_check(self, n_iter):
        """At every ``check_every``-th iteration: keep the iterate if its
        recent loss is the best so far; validate (early stopping)."""
        with self._lock:
            if n_iter < self.next_check or self.stop.is_set():
                return
            self.next_check += self.check_every
            if self.window:
                self.curve.append(float(np.mean(self.window)))
            self.window = []
            keep = self.running < self.best_loss
            if keep:
                self.best_loss = self.running
        if keep:
            copies = {p: self.fed[p].call(snapshot, phase="checkpoint")
                      for p in self.active}
            with self._lock:
                self.kept = (n_iter, copies)
        if self.validate:
            auc, stop = validate(self)
            with self._lock:
                self.validation.append(auc)
                if stop and not self.stop.is_set():
                    self.stopped_early = True
                    self.stop.set()

    def rising(self):
        """The running loss ended at more than twice its best (unstable)."""
        return (np.isfinite(self.best_loss) and self.running > 2 * self.best_loss
                and self.running > 0.1 * self.reference)

    def restore_kept(self):
        """Every active party goes back to its copy of the kept iterate."""
        n_iter, copies = self.kept
        self.fed.gather(self.fed[p].call(restore, Local(None if copies is None
                                                        else copies[p].result()))
                        for p in self.active)
        return n_iter

    def claim(self, party):
        """The global number of ``party``'s next iteration, or 0 when done."""
        with self._lock:
            if self.done >= self.max_iter or self.stop.is_set():
                return 0
            self.done += 1
            self.per_party[party] += 1
            return self.done

    def maybe_checkpoint(self, n_iter):
        # Intermediate checkpoints only; the final model is recorded after
        # every loop has finished.
        if n_iter % self.checkpoint_every == 0 and n_iter < self.max_iter:
            self.take_checkpoint(n_iter)

    def take_checkpoint(self, n_iter):
        seconds = time.perf_counter() - self.start
        futures = {p: self.fed[p].call(snapshot, phase="checkpoint")
                   for p in self.active}
        with self._lock:
            self.checkpoints.append((seconds, n_iter, futures))
        if self.verbose:  # one line per checkpoint (at most ~20 of them)
            recent = np.mean(self.losses) if self.losses else float("nan")
            progress = Progress("AVFKAM", self.max_iter, self.verbose,
                                fed=self.fed, unit="iteration")
            progress.start = self.start
            progress.report(n_iter, f"recent pairwise loss {recent:.4f}",
                            last=True)

    def slowdown(self, party):
        """``party``'s delay factor ``s`` (1: no straggling)."""
        return max(1.0, float(self.delays.get(party, 1.0)))

    def straggle(self, party, work):
        """A straggler takes ``s`` times its own work: having spent ``work``
        seconds computing its step, it spends ``(s - 1) work`` more (in its
        driver, so that its thread still answers the others)."""
        extra = (self.slowdown(party) - 1.0) * work
        if extra > 0:
            time.sleep(extra)
            with self._lock:
                self.slept[party] += extra

    def fail(self, party, exc):
        with self._lock:
            if self.failure is None:
                self.failure = (party, exc)
        self.stop.set()


def aggregate_scores(plan, party, rows, own):
    """Algorithm 1, line 3: ``f(x)`` at ``rows`` as the tree sum of ``f^l``.

    The row ids go to the other coefficient holders (active parties, who hold
    the labels anyway); each answers with its ``f^l`` read from its current,
    possibly stale, coefficients, summed up a tree led by ``party`` (whose
    own ``f^l`` is ``own``).
    """
    fed = plan.fed
    if len(plan.active) == 1:
        return own
    contributions = {party: own}
    for other in plan.active:
        if other != party:
            contributions[other] = fed[other].call(
                local_scores, rows, sender=party, phase="train/scores")
    tree = balanced_tree([party] + [p for p in plan.active if p != party])
    total = tree_sum(fed, tree, contributions, phase="train/scores-sum")
    return total.result() if hasattr(total, "result") else total


def validate(plan):
    """The lead's held-out AUC: every active party's ``f^l`` at the held-out
    rows (which only active parties know), tree-summed to the lead."""
    fed, lead = plan.fed, plan.active[0]
    parts = {p: (fed[p].call(validation_scores) if p == lead else
                 fed[p].call(validation_scores, sender=lead,
                             phase="validation/request"))
             for p in plan.active}
    tree = balanced_tree([lead] + [p for p in plan.active if p != lead])
    total = tree_sum(fed, tree, parts, phase="validation/scores")
    total = total.result() if hasattr(total, "result") else total
    return fed[lead].call(lead_validate, Local(total)).result()


def _timed(future):
    """The result of a call to the driver's own party, and its seconds."""
    start = time.perf_counter()
    return future.result(), time.perf_counter() - start


def _asynchronous_loop(plan, party):
    fed = plan.fed
    pending_decays = deque()
    straggler = plan.slowdown(party) > 1
    while n_iter := plan.claim(party):
        set_round(n_iter)  # this driver thread's messages: round n_iter
        # 2: sample positive rows, negative rows and feature seeds.
        (sample, own), work = _timed(fed[party].call(
            sample_step, phase="train/sample"))
        # 3: f(x+), f(x-) from every holder's (possibly stale) f^l.
        f_rows = aggregate_scores(plan, party, sample[0], own)
        # 4-5: new coefficients and own decay, saved locally ...
        if straggler:  # ... after (s - 1) times the work of the step
            (loss, status), more = _timed(fed[party].call(
                prepare_update, Local(f_rows), Local(sample),
                phase="train/update"))
            plan.straggle(party, work + more)
            fed[party].call(apply_update, Local(plan.decay_factor),
                            phase="train/update").result()
        else:
            loss, status = fed[party].call(
                update, Local(f_rows), Local(sample),
                Local(plan.decay_factor), phase="train/update").result()
        plan.report(party, n_iter, loss, status)
        if status is not None:
            break  # the step was not applied; nobody needs to decay
        plan.maybe_check(n_iter)
        plan.maybe_checkpoint(n_iter)
        # ... and only *inform* the others: nobody waits for their decay.
        for other in plan.active:
            if other != party:
                pending_decays.append(fed[other].call(
                    decay, plan.decay_factor, sender=party,
                    phase="train/decay"))
        while pending_decays and pending_decays[0].done():
            pending_decays.popleft().result()  # surfaces a failed decay
    fed.gather(pending_decays)


def _synchronous_loop(plan, party, rank, barrier, round_end):
    # VFKAM, the paper's synchronous counterpart (Figure 2a): in round r all
    # active parties read the same model, then every update is applied, then
    # the next round starts. The decays of one round commute, so the result
    # does not depend on thread timing.
    fed = plan.fed
    m = len(plan.active)
    n_rounds = -(-plan.max_iter // m)
    for r in protocol_rounds(range(n_rounds)):
        works = r * m + rank < plan.max_iter
        if works:
            (sample, own), work = _timed(fed[party].call(
                sample_step, phase="train/sample"))
            f_rows = aggregate_scores(plan, party, sample[0], own)
            (loss, status), more = _timed(fed[party].call(
                prepare_update, Local(f_rows), Local(sample),
                phase="train/update"))
            plan.straggle(party, work + more)
            plan.report(party, r * m + rank + 1, loss, status)
        barrier.wait()  # every read of round r is done
        if works:
            futures = [fed[party].call(decay, Local(plan.decay_factor))]
            futures += [fed[other].call(decay, plan.decay_factor, sender=party,
                                        phase="train/decay")
                        for other in plan.active if other != party]
            fed.gather(futures)
        barrier.wait()  # every decay of round r is done
        if works:
            fed[party].call(commit_update, phase="train/update").result()
            with plan._lock:
                plan.per_party[party] += 1
                plan.done += 1
        round_end.wait()  # round r is complete
        if plan.halt:  # decided by the round's end action, for all at once
            break


def _run_drivers(plan, targets):
    plan.start = time.perf_counter()
    threads = []
    for party, target in targets.items():
        def body(party=party, target=target):
            try:
                target()
            except BaseException as exc:  # reported by the caller
                plan.fail(party, exc)
        threads.append(threading.Thread(target=body, name=f"skfed-avfkam-{party}",
                                        daemon=True))
    for t in threads:
        t.start()
    for t in threads:
        while t.is_alive():  # in slices, so that Ctrl-C is seen at once
            t.join(0.1)
    if plan.failure is not None:
        party, exc = plan.failure
        raise RuntimeError(
            f"The training loop of active party '{party}' failed: "
            f"{type(exc).__name__}: {exc}") from exc
    if plan.divergence is not None:
        plan.done = plan.restore_kept()
    plan.take_checkpoint(plan.done)  # the final model
    return time.perf_counter() - plan.start


def run_asynchronous(plan):
    """Algorithm 1: each active party loops on its own, without waiting."""
    return _run_drivers(plan, {p: (lambda p=p: _asynchronous_loop(plan, p))
                               for p in plan.active})


def run_synchronous(plan):
    """The synchronous counterpart: every round waits for every party."""
    m = len(plan.active)
    every = plan.checkpoint_every

    def after_round():  # run by one driver when all have finished a round
        if plan.divergence is None:
            plan.maybe_check(plan.done)
        if every <= plan.done < plan.max_iter and plan.done % every < m:
            plan.take_checkpoint(plan.done)
        plan.halt = plan.stop.is_set()

    barrier = threading.Barrier(m)
    round_end = threading.Barrier(m, action=after_round)
    original_fail = plan.fail

    def fail(party, exc):
        original_fail(party, exc)
        barrier.abort()  # release the other drivers
        round_end.abort()

    plan.fail = fail
    return _run_drivers(plan, {
        p: (lambda p=p, k=k: _synchronous_loop(plan, p, k, barrier,
                                                   round_end))
        for k, p in enumerate(plan.active)})
