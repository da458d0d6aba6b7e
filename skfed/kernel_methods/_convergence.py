"""Step sizes, the divergence guard and early stopping of FDSKL and AVFKAM.

Both papers take constant steps of functional stochastic gradient descent on
random Fourier features ``phi(x) = sqrt(2) cos(omega^T x + b)``. What this
module adds, shared by both estimators:

- :func:`auto_learning_rate`: the ``learning_rate="auto"`` default, from the
  loss's smoothness, the bounds of the random features and the batch size;
- :func:`check_decay`: refuses ``learning_rate * alpha >= 1`` before any party
  starts (the decay ``1 - learning_rate * alpha`` would flip or zero the old
  coefficients);
- :class:`LossMonitor`: the label holder's watch over the losses of its own
  minibatches (it computes them anyway: ``L'(f(x_i), y_i)`` is its step);
- :class:`EarlyStopping`: the label holder's patience counter over the
  scores of held-out rows;
- :func:`validation_split`: which rows are held out (a function of the
  public seed and the number of rows only, never of the labels).

The monitor and the early-stopping counter live in a party's state; the
drivers only read the verdicts they return.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import copy
import math
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from ..base import party_seeds
from ..exceptions import DivergenceError

__all__ = [
    "auto_learning_rate",
    "check_decay",
    "resolve_early_stopping",
    "validation_split",
    "MAX_VALIDATION_ROWS",
    "AVFKAM_MAX_VALIDATION_ROWS",
    "AUTO_EPOCHS",
    "AUTO_MIN_STEPS",
    "split_seed",
    "check_every",
    "LossMonitor",
    "EarlyStopping",
    "DivergenceError",
    "divergence_error",
    "warn_not_converged",
]

#: rows above which ``early_stopping="auto"`` turns early stopping on (the
#: threshold of sklearn's HistGradientBoosting)
AUTO_EARLY_STOPPING_ROWS = 10_000

#: at most this many checks (validation, snapshots, curves) per fit
MAX_CHECKS = 100

#: held-out rows of FDSKL's early stopping, at most: every check scores them
#: through the protocol, so their number bounds what a check costs (with
#: the validation fraction alone it grew with the table: 12,800 rows at
#: 128,000, scored at every check). The checks are spaced so that the
#: training rows between two of them are at least a tenth of the table, so
#: checks add at most ``10 * 1,000 / n_train`` to the traffic: 16% at
#: 64,000 rows, 2% at 512,000
MAX_VALIDATION_ROWS = 1_000

#: held-out rows of AVFKAM, at most (its checks send no pairs: the lead
#: scores them from the features kept since the preprocessing, so the bound
#: is on memory; an AUC needs a few hundred rows of the rare class)
AVFKAM_MAX_VALIDATION_ROWS = 2_000

#: ``max_iter="auto"`` of FDSKL: this many passes over the training rows
#: (epochs, as :class:`~sklearn.linear_model.SGDClassifier` counts them)...
AUTO_EPOCHS = 5

#: ... and at least this many steps (the fixed default below ~25,000 rows)
AUTO_MIN_STEPS = 500


def auto_learning_rate(loss, *, batch_size, features_per_step, alpha, kappa,
                       phi_sq_max, n_effective, n_steps=None):
    """The ``"auto"`` step: ``min(1 / (S c + alpha), noise bound)``.

    Two things bound a constant step of doubly stochastic functional
    gradient descent on random features ``phi`` (``S`` is the loss's
    smoothness, ``B`` the rows or pairs of a step, ``m`` its new features,
    ``alpha`` the regularisation ``lambda``):

    *Curvature.* A step changes the batch's scores by ``-learning_rate A
    L'`` with ``A = Phi Phi^T / (B m)``. The largest eigenvalue of ``A`` is
    at most its trace, the mean of ``phi^2``: at most ``phi_sq_max``, on
    average the kernel's diagonal ``kappa`` (a wide kernel, where all rows
    look alike, reaches it). As in the expected smoothness of minibatch SGD
    (Gower et al., 2019) the curvature is interpolated by the number of
    (row, feature) samples of a step, ``c = kappa + (phi_sq_max - kappa) /
    (B m)``, and the step is the classic ``1 / L`` with ``L = S c + alpha``
    (sklearn's SAG auto step adds ``alpha`` likewise). Hence
    ``learning_rate * alpha < 1`` always, and a step never moves the batch's
    scores by more than ``phi_sq_max / kappa`` times what the curvature
    allows (2 for FDSKL: the edge of stability of gradient descent).

    *Random-feature noise.* A step also moves ``f`` at every other row, by
    ``learning_rate L' phi(x_i) phi(x_k) / (B m)``: in expectation the kernel
    step, plus a fluctuation of variance about ``learning_rate^2 S^2 kappa
    e^2 / (B m)`` (``e`` the residual), while a row's own residual shrinks by
    about ``learning_rate S / n`` per step (it is drawn ``B / n`` of the
    time). The fluctuations feed back into the residuals, and the loop
    diverges unless ``learning_rate < ~2 B m / (S kappa n)``; measured, the
    paper's loop (``B = m = 1``) with the squared loss on 442 standardised
    rows diverges at 0.05 and drifts up at 0.02. The bound takes half of it,
    ``B m / (S kappa n)``, with ``n = n_effective`` the rows (or, for a
    finite pool of features, the smaller of rows and pool size).

    That bound is the worst case of a run long enough for every row's noise
    to settle. In the kernel's eigenbasis (eigenvalues ``lambda_k`` of the
    mean kernel operator, summing to ``kappa``) a step injects noise of
    variance about ``learning_rate^2 S^2 e^2 lambda_k / (B m)`` along ``k``
    and removes a share ``learning_rate S lambda_k`` of it, so each
    direction holds at most ``min(learning_rate S e^2 / (2 B m), T
    learning_rate^2 S^2 e^2 lambda_k / (B m))`` after ``T`` steps; summed,
    ``learning_rate S e^2 / (B m) min(n / 2, learning_rate S kappa T)``,
    below ``e^2`` when ``learning_rate < 2 B m / (S n)`` *or*
    ``learning_rate < sqrt(B m / (kappa T)) / S``. Given ``n_steps = T``,
    the noise bound is the larger of ``B m / (S kappa n)`` (half the first)
    and ``sqrt(B m / (kappa T)) / (8 S)`` (noise of at most an eighth of
    the residual's size: on the paper's loop, ``B = m = 1``, half of
    ``sqrt(B m / (kappa T)) / S`` left the objective further from its
    optimum than ``B m / (S n)`` in three of the four FDSKL rows of
    ``bench_convergence.py``; an eighth keeps that loop at the latter).
    With the defaults of FDSKL
    (``B m = 8192``, 500 steps) the second is 2.0 for the logistic loss at
    any ``n``, where ``B m / (S n)`` alone gave 0.73 at 45,000 rows and left
    the fit far from its optimum.

    Neither paper decays its step (both analyse a constant one), so neither
    does this; with the defaults (``B m`` in the thousands) the curvature
    term is the one that binds below ~10,000 rows.

    Parameters
    ----------
    loss : loss object of :mod:`skfed.losses` with a ``smoothness``.
    batch_size, features_per_step : int
    alpha : float
        The regularisation ``lambda``.
    kappa : float
        Mean of ``phi^2`` (of ``(phi(x+) - phi(x-))^2`` for pairs).
    phi_sq_max : float
        Bound of ``phi^2``.
    n_effective : int
        Rows the noise spreads over.
    n_steps : int or None, default=None
        Steps of the run (``max_iter``); ``None`` keeps ``B m / (S kappa
        n)`` alone.

    Returns
    -------
    float
    """
    if loss.smoothness is None:
        raise ValueError(
            f"learning_rate='auto' needs a smooth loss; {loss!r} has no "
            "smoothness constant. Give a numeric learning_rate.")
    samples = max(1, int(batch_size) * int(features_per_step))
    S = loss.smoothness
    curvature = kappa + (phi_sq_max - kappa) / samples
    noise = samples / (S * kappa * max(1, int(n_effective)))
    if n_steps is not None:
        noise = max(noise, math.sqrt(samples / (kappa * max(1, int(n_steps))))
                    / (8.0 * S))
    return min(1.0 / (S * curvature + alpha), noise)


def check_decay(learning_rate, alpha, auto=False):
    """Refuse ``learning_rate * alpha >= 1`` (negative or zero decay)."""
    product = learning_rate * alpha
    if product >= 1:
        given = (f"learning_rate='auto' gives {learning_rate:.4g}" if auto
                 else f"learning_rate={learning_rate:g}")
        raise ValueError(
            f"learning_rate * alpha = {product:g} must be below 1 ({given}, "
            f"alpha={alpha:g}): every step multiplies the earlier "
            "coefficients by 1 - learning_rate * alpha, which would flip "
            "their sign or erase them. Lower alpha or learning_rate.")


def resolve_early_stopping(early_stopping, n_samples, party_data=False):
    """``"auto"``: on when there are more than 10,000 rows (as sklearn's
    HistGradientBoosting), off with a PartyData where the held-out rows
    would be drawn in the driver (``party_data=True``)."""
    if early_stopping == "auto":
        return not party_data and n_samples > AUTO_EARLY_STOPPING_ROWS
    return bool(early_stopping)


def validation_split(n_samples, validation_fraction, seed, max_rows=None):
    """``(train_rows, validation_rows)``: a seeded split of ``range(n)``.

    ``ceil(validation_fraction * n_samples)`` rows are held out, at most
    ``max_rows`` of them (``None``: no bound).

    The split depends on the seed and ``n`` only, never on the labels, so
    that the held-out row ids may be public (FDSKL broadcasts the row ids
    of every step; a split stratified by label would tell the passive
    parties something about the labels).
    """
    n_val = int(math.ceil(validation_fraction * n_samples))
    if max_rows is not None:
        n_val = min(n_val, int(max_rows))
    if n_val < 1 or n_samples - n_val < 2:
        raise ValueError(
            f"validation_fraction={validation_fraction:g} of {n_samples} rows "
            "leaves no validation or no training rows; change "
            "validation_fraction or set early_stopping=False.")
    order = np.random.RandomState(seed).permutation(n_samples)
    return np.sort(order[n_val:]), np.sort(order[:n_val])


def split_seed(random_state):
    """A seed for :func:`validation_split`, from ``random_state``.

    The first of the estimator's seeds (the public seed of the run) with a
    stream id, drawn from a copy of a ``RandomState`` so that the seeds the
    fit draws next are the same with or without early stopping.
    """
    if random_state is None or isinstance(random_state, np.random.RandomState):
        from sklearn.utils import check_random_state

        random_state = copy.deepcopy(check_random_state(random_state))
    return [party_seeds(random_state, 1)[0], 1]


def check_every(max_iter, n_train=None, rows_per_step=None,
                n_iter_no_change=None):
    """Steps between two checks.

    At most :data:`MAX_CHECKS` checks per fit: every ``max_iter // 100``
    steps. With early stopping (``n_train`` given), also at least
    ``ceil(n_train / (rows_per_step * n_iter_no_change))`` steps, so that
    the patience window (``n_iter_no_change`` checks without improvement)
    spans at least one pass over the training rows: as sklearn's SGD and
    MLP count patience in epochs, a fit does not stop before every training
    row could have been drawn since the last improvement (a window of a few
    minibatches of a large table stops on noise).
    """
    every = max(1, int(max_iter) // MAX_CHECKS)
    if n_train is not None:
        window = int(rows_per_step) * int(n_iter_no_change)
        every = max(every, -(-int(n_train) // max(1, window)))
    return every


class LossMonitor:
    """The label holder's watch over the losses of its own minibatches.

    ``observe`` takes the mean loss of a step's minibatch and the largest
    ``|f|`` there (both known to the label holder: it computes the step
    from them) and answers ``None`` (fine), ``"non-finite"`` or
    ``"exploding"``. The running loss is an exponential average weighted by
    rows (about the last 256 rows count), so that batches of one row do not
    make it jump. Exploding means a running loss above ``explode`` times the
    zero model's loss (where every fit starts) or a score beyond
    ``f_limit`` (targets are ``+-1`` or standardised).

    ``check`` closes a window of steps: it records the window's mean loss
    (``curve``) and says whether the running loss is the best seen at a
    check (the iterate worth keeping).
    """

    def __init__(self, reference, batch_size, explode=10.0, f_limit=1e6):
        self.reference = float(reference)
        self.weight = batch_size / (batch_size + 256.0)
        self.explode = explode
        self.f_limit = f_limit
        self.running = self.reference
        self.window = []
        self.curve = []
        self.best = math.inf
        self.best_check = 0
        self.last = None
        self.f_max = 0.0

    def observe(self, loss, f_max):
        loss, f_max = float(loss), float(f_max)
        self.last, self.f_max = loss, f_max
        if not (math.isfinite(loss) and math.isfinite(f_max)):
            return "non-finite"
        self.running += self.weight * (loss - self.running)
        self.window.append(loss)
        if self.running > self.explode * self.reference or f_max > self.f_limit:
            return "exploding"
        return None

    def check(self, n_check):
        """Close the window; ``True`` when the running loss is a new best."""
        if self.window:
            self.curve.append(float(np.mean(self.window)))
            self.window = []
        if self.running < self.best:
            self.best, self.best_check = self.running, n_check
            return True
        return False

    def state(self):
        """``(last loss, running loss, zero model's loss, last max |f|)``."""
        return (self.last, self.running, self.reference, self.f_max)

    def rising(self):
        """The running loss ended at more than twice its best (unstable)."""
        return (math.isfinite(self.best) and self.running > 2.0 * self.best
                and self.running > 0.1 * self.reference)


class EarlyStopping:
    """The label holder's patience over held-out scores (higher is better).

    As sklearn's SGD: a score improves when it beats the best by more than
    ``tol``; ``stop`` says when ``n_iter_no_change`` checks in a row did
    not improve.
    """

    def __init__(self, n_iter_no_change, tol):
        self.n_iter_no_change = n_iter_no_change
        self.tol = tol
        self.scores = []
        self.best = -math.inf
        self.no_change = 0

    def update(self, score):
        score = float(score)
        self.scores.append(score)
        if not math.isfinite(score):
            return False  # the loss monitor reports non-finite scores
        if score > self.best + self.tol:
            self.no_change = 0
        else:
            self.no_change += 1
        self.best = max(self.best, score)
        return self.no_change >= self.n_iter_no_change


def divergence_error(estimator, kind, step, max_iter, monitor_state,
                     learning_rate, kept_step, hint):
    """The error a diverging fit raises, naming what to change.

    ``monitor_state`` is :meth:`LossMonitor.state` as the label holder
    reports it. The error carries a copy of ``estimator`` (fitted with the
    last good iterate).
    """
    last, running, reference, f_max = monitor_state
    name = type(estimator).__name__
    if kind == "non-finite":
        what = "a non-finite loss or score"
    elif running > 10 * reference:
        what = (f"a running training loss of {running:.3g} (the zero model's "
                f"is {reference:.3g})")
    else:
        what = f"a score of magnitude {f_max:.3g}"
    given = estimator.learning_rate
    lr = (f"learning_rate='auto' ({learning_rate:.4g})" if given == "auto"
          else f"learning_rate={given:g}")
    return DivergenceError(
        f"{name} diverged at step {step} of {max_iter}: the label holder saw "
        f"{what}. {hint} ({lr}, alpha={estimator.alpha:g}). The last good "
        f"iterate (step {kept_step}) is kept in this error's `estimator` "
        "attribute; it is finite but not converged.",
        estimator=copy.copy(estimator), step=step)


def warn_not_converged(estimator, message):
    # Reported at the user's call to fit.
    warnings.warn(f"{type(estimator).__name__}: {message}", ConvergenceWarning,
                  stacklevel=6)
