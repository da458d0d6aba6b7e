"""AVFKAM's protocol: what each party runs, and the active parties' loops.

Zhang et al. (KDD 2024), Algorithms 1-3. Party functions are plain functions
of the party's private state and the message it received; the training loops
(:func:`run_asynchronous`, :func:`run_synchronous`) run in one *driver*
thread per active party and act only through ``fed[...].call``, so every
party's own thread stays free to answer the other parties while its loop is
busy (a party thread that waited on another party could deadlock).

Model. Only an active party creates coefficients (Algorithm 1 runs on active
workers; the dominator saves the new ``alpha_i``), so a passive party's
``f^l`` is zero: it takes part in the preprocessing (Algorithm 3) and in
prediction, never in a training step.

Guard and early stopping. Each active party watches the pairwise losses of
its own steps (:class:`~._convergence.LossMonitor`) and refuses to apply a
step whose loss or scores are non-finite or exploding; its loop then stops
every loop, and the active parties go back to the iterate kept at the check
with the lowest recent loss. Held-out rows (early stopping) are known to the
active parties only: the preprocessing computed the features of every row,
so the lead scores them from the kept features and the other active
parties' ``f^l`` there (Algorithm 2 on locally saved values), and passive
parties learn nothing of the split.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import threading
import time
from collections import deque

import numpy as np
from sklearn.metrics import roc_auc_score

from .._progress import Progress
from ..federation import Local, balanced_tree, protocol_rounds, tree_sum
from ..federation.network import _set_round
from ._convergence import EarlyStopping, LossMonitor
from ._vertical_features import CoefficientStore

__all__ = [
    "PooledCoefficientStore",
    "TrainingPlan",
    "run_asynchronous",
    "run_synchronous",
]


class PooledCoefficientStore(CoefficientStore):
    """A party's coefficients over a finite pool of random features.

    AVFKAM draws every feature seed from a pool of ``n_random_features``
    seeds (the features of the training rows are precomputed for this pool,
    appendix C), so the coefficients a party creates for one seed over many
    iterations add up. Keeping one running sum per seed makes ``f^l(x)`` a
    single dot product and bounds the store by the pool size; the lazy
    ``(1 - gamma lambda)`` decay of :class:`CoefficientStore` is kept.
    ``feature_ids`` and ``coef`` list only the seeds used so far, so the
    store works with :func:`~._vertical_features.federated_decision`.
    """

    def __init__(self, n_pool):
        # Not CoefficientStore.__init__: feature_ids is derived here.
        self.n_outputs = 1
        self._dense = np.zeros(int(n_pool))
        self._used = np.zeros(int(n_pool), dtype=bool)
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
        return np.flatnonzero(self._used).astype(np.int64)

    @property
    def coef(self):
        return self.dense_coef[self._used].reshape(-1, 1)

    def copy(self):
        out = PooledCoefficientStore(len(self._dense))
        out._dense, out._used = self.dense_coef, self._used.copy()
        out.n_created = self.n_created
        return out


# --------------------------------------------------------------------------
# Party functions (run on the party's own thread).

def keep_features(state, features, rng_seed, batch_size, features_per_step,
                  hyper, split=None):
    """Appendix C: an active party keeps phi of every training row, locally.

    ``split`` is ``(training rows, held-out rows)`` when early stopping is on
    (the active parties' own choice; passive parties never see it). The
    party also sets up the watch over its steps' losses, and the lead its
    patience counter.
    """
    state.Z = features
    state.rng = np.random.RandomState(rng_seed)
    train = np.arange(len(state.y)) if split is None else split[0]
    state.validation_rows = None if split is None else split[1]
    state.positives = train[state.y[train] > 0]
    state.negatives = train[state.y[train] < 0]
    state.batch_size = batch_size
    state.features_per_step = min(features_per_step, features.shape[1])
    state.hyper = hyper  # public hyper-parameters: loss, learning rate
    # Every fit starts at f = 0, where each pair's loss is l(0).
    state.monitor = LossMonitor(float(hyper["loss"](0.0)), batch_size)
    state.early = EarlyStopping(hyper["n_iter_no_change"], hyper["tol"])


def sample_step(state):
    """Algorithm 1, line 2: positive rows, negative rows, feature seeds; and
    this party's own ``f^l`` at those rows (its share of line 3)."""
    rng, B = state.rng, state.batch_size
    pos = state.positives[rng.randint(len(state.positives), size=B)]
    neg = state.negatives[rng.randint(len(state.negatives), size=B)]
    seeds = rng.choice(state.Z.shape[1], size=state.features_per_step,
                       replace=False)
    return (pos, neg, seeds), local_scores(state, np.concatenate([pos, neg]))


def local_scores(state, rows):
    """Algorithm 2: ``f^l`` at training rows, from the kept features."""
    return state.Z[rows] @ state.store.dense_coef


def prepare_update(state, f_rows, sample):
    """Algorithm 1, line 4 (eq. 5-6): the new coefficients, kept aside.

    With ``d = f(x+) - f(x-)``, ``l'_1 = dl/dd`` and ``l'_2 = -dl/dd``, so
    ``alpha_j = -gamma dl/dd (phi_j(x+) - phi_j(x-))``, averaged over the
    pairs of the step and divided by the number of seeds (an average of
    ``features_per_step`` unbiased estimates of the kernel gradient).
    """
    pos, neg, seeds = sample
    B = len(pos)
    with np.errstate(all="ignore"):  # a diverging f is reported, not warned
        d = f_rows[:B] - f_rows[B:]
        slope = state.hyper["loss"].derivative(d)
        diff = state.Z[np.ix_(pos, seeds)] - state.Z[np.ix_(neg, seeds)]
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
    with np.errstate(all="ignore"):
        auc = (float(roc_auc_score(y, f_validation))
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
    state.store = (PooledCoefficientStore(len(state.store.dense_coef))
                   if store is None else store.copy())


def final_store(state):
    return state.store


def set_store(state, store):
    state.store = store


def training_threshold(state, f_all):
    """Midpoint of the class means of the training scores (for ``predict``).

    The pairwise loss only sees differences of scores, so ``f`` has no
    natural zero; this threshold balances the two classes' means.
    """
    return 0.5 * (f_all[state.y > 0].mean() + f_all[state.y < 0].mean())


# --------------------------------------------------------------------------
# Driver side.

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
                 delay_unit, checkpoint_every, verbose=0, check_every=None,
                 validate=False, batch_size=1, reference=1.0):
        self.fed = fed
        self.names = names
        self.active = active  # the parties that hold coefficients
        self.max_iter = max_iter
        self.decay_factor = decay_factor
        self.delays = delays  # party name -> slowdown factor (or None)
        self.delay_unit = delay_unit
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

    def simulate_work(self, party):
        # party_delays: the party's own iteration costs factor x unit seconds
        # (a sleep in its driver, so its thread still answers the others).
        factor = self.delays.get(party) if self.delays else None
        if factor:
            time.sleep(factor * self.delay_unit)

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


def _asynchronous_loop(plan, party):
    fed = plan.fed
    pending_decays = deque()
    while n_iter := plan.claim(party):
        _set_round(n_iter)  # this driver thread's messages: round n_iter
        # 2: sample a positive row, a negative row and a feature seed.
        sample, own = fed[party].call(sample_step,
                                      phase="train/sample").result()
        # 3: f(x+), f(x-) from every holder's (possibly stale) f^l.
        f_rows = aggregate_scores(plan, party, np.concatenate(sample[:2]), own)
        plan.simulate_work(party)
        # 4-5: new coefficient and own decay, saved locally ...
        loss, status = fed[party].call(update, Local(f_rows), Local(sample),
                                       Local(plan.decay_factor),
                                       phase="train/update").result()
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
            sample, own = fed[party].call(sample_step,
                                          phase="train/sample").result()
            f_rows = aggregate_scores(plan, party, np.concatenate(sample[:2]),
                                      own)
            plan.simulate_work(party)
            loss, status = fed[party].call(prepare_update, Local(f_rows),
                                           Local(sample),
                                           phase="train/update").result()
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
