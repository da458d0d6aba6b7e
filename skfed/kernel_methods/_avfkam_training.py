"""AVFKAM's training loops: one driver per active party (Algorithm 1).

The loops (:func:`run_asynchronous`, :func:`run_synchronous`) run in one
*driver* thread per active party and act only through ``fed[...].call``, so
every party's own thread stays free to answer the other parties while its
loop is busy (a party thread that waited on another party could deadlock).
The party functions they call live in :mod:`._avfkam_protocol`.

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

from .._progress import Progress
from ..federation import (Local, balanced_tree, protocol_rounds, set_round,
                          tree_sum)
from . import _avfkam_protocol as protocol

__all__ = ["TrainingPlan", "run_asynchronous", "run_synchronous"]

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
            copies = {p: self.fed[p].call(protocol.snapshot, phase="checkpoint")
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
        self.fed.gather(self.fed[p].call(protocol.restore, Local(None if copies is None
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
        futures = {p: self.fed[p].call(protocol.snapshot, phase="checkpoint")
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
                protocol.local_scores, rows, sender=party, phase="train/scores")
    tree = balanced_tree([party] + [p for p in plan.active if p != party])
    total = tree_sum(fed, tree, contributions, phase="train/scores-sum")
    return total.result() if hasattr(total, "result") else total


def validate(plan):
    """The lead's held-out AUC: every active party's ``f^l`` at the held-out
    rows (which only active parties know), tree-summed to the lead."""
    fed, lead = plan.fed, plan.active[0]
    parts = {p: (fed[p].call(protocol.validation_scores) if p == lead else
                 fed[p].call(protocol.validation_scores, sender=lead,
                             phase="validation/request"))
             for p in plan.active}
    tree = balanced_tree([lead] + [p for p in plan.active if p != lead])
    total = tree_sum(fed, tree, parts, phase="validation/scores")
    total = total.result() if hasattr(total, "result") else total
    return fed[lead].call(protocol.lead_validate, Local(total)).result()


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
            protocol.sample_step, phase="train/sample"))
        # 3: f(x+), f(x-) from every holder's (possibly stale) f^l.
        f_rows = aggregate_scores(plan, party, sample[0], own)
        # 4-5: new coefficients and own decay, saved locally ...
        if straggler:  # ... after (s - 1) times the work of the step
            (loss, status), more = _timed(fed[party].call(
                protocol.prepare_update, Local(f_rows), Local(sample),
                phase="train/update"))
            plan.straggle(party, work + more)
            fed[party].call(protocol.apply_update, Local(plan.decay_factor),
                            phase="train/update").result()
        else:
            loss, status = fed[party].call(
                protocol.update, Local(f_rows), Local(sample),
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
                    protocol.decay, plan.decay_factor, sender=party,
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
                protocol.sample_step, phase="train/sample"))
            f_rows = aggregate_scores(plan, party, sample[0], own)
            (loss, status), more = _timed(fed[party].call(
                protocol.prepare_update, Local(f_rows), Local(sample),
                phase="train/update"))
            plan.straggle(party, work + more)
            plan.report(party, r * m + rank + 1, loss, status)
        barrier.wait()  # every read of round r is done
        if works:
            futures = [fed[party].call(protocol.decay, Local(plan.decay_factor))]
            futures += [fed[other].call(protocol.decay, plan.decay_factor, sender=party,
                                        phase="train/decay")
                        for other in plan.active if other != party]
            fed.gather(futures)
        barrier.wait()  # every decay of round r is done
        if works:
            fed[party].call(protocol.commit_update, phase="train/update").result()
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
