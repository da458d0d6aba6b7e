"""AVFKAM: asynchronous vertical federated kernelised AUC maximisation."""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, _fit_context

from .._docstrings import fill_doc
from ..base import FederatedMixin, party_seeds
from ..federation import Local
from ..losses import get_loss
from . import _avfkam_protocol as protocol
from . import _avfkam_training as training
from ._avfkam_fitting import _AVFKAMFitMixin
from ._avfkam_scores import AVFKAMScoresMixin
from ._convergence import check_decay, resolve_early_stopping
from ._export import KernelShareMixin
from ._privacy import KernelPrivacyMixin
from ._vertical_features import (
    CoefficientStore,
    federated_gamma,
    make_party_states,
    masked_features,
    party_name,
    resolve_party_keys,
)

__all__ = ["AVFKAMRanker"]


@fill_doc
class AVFKAMRanker(_AVFKAMFitMixin, KernelShareMixin, KernelPrivacyMixin,
                   FederatedMixin, ClassifierMixin, BaseEstimator):
    """Asynchronous vertical federated kernel AUC maximisation (AVFKAM).

    A kernel model ``f(x) = sum_i alpha_i phi_i(x)`` on random Fourier
    features, trained on columns split over parties to rank positive rows
    above negative rows (a pairwise surrogate of ROC AUC), for imbalanced
    binary problems. Every active party (label holder) runs its own loop of
    triply stochastic updates (a positive row, a negative row, a feature
    seed) without waiting for the others; the random features of the
    training rows are computed once, beforehand, by masked tree sums. See
    :ref:`the user guide <avfkam>`.

    Parameters
    ----------
    %(partition_vertical)s
        Give ``VerticalPartition(groups, active_parties=(0, 1))`` for several
        active parties; each runs its own training loop.

    gamma : "scale" or float, default="scale"
        Kernel bandwidth, as in :class:`~sklearn.svm.SVC`: ``"scale"`` is
        ``1 / (n_features * X.var())``, computed from per-party sums.

    kernel : {"rbf", "laplacian"}, default="rbf"
        Shift-invariant kernel approximated by the random features (the paper
        uses the Gaussian kernel).

    alpha : float, default=3e-3
        Regularisation ``lambda`` of ``lambda / 2 ||f||^2``: every update
        multiplies the earlier coefficients by ``1 - learning_rate * alpha``.
        The default suits thousands of rows (see Notes); a table of a few
        hundred rows may rank better with ``1e-2``.

    learning_rate : "auto" or float, default="auto"
        Constant step size ``gamma`` of Algorithm 1 (the paper's is
        constant). ``"auto"`` derives it from the pairwise loss's smoothness
        ``S`` (2 for ``(1 - d)^2``, 1/4 for the logistic), the bound of a
        pair's feature difference (``(phi(x+) - phi(x-))^2 <= 8``, mean at
        most 2), the pairs ``B`` and seeds ``m`` of a step and
        ``n = min(training rows, n_random_features)``::

            min(1 / (S (2 + 6 / (B m)) + alpha), B m / (2 S n))

        (see Notes). ``learning_rate * alpha`` must be below 1; ``"auto"``
        always is. The resolved value is ``learning_rate_``.

    max_iter : int, default=1000
        Total number of updates over all active parties (the paper's global
        counter ``t``). A fast party takes a larger share of them in the
        asynchronous mode.

    n_random_features : int, default=3000
        Size of the pool of feature seeds, split between the active parties
        (seed ``j`` belongs to the one of rank ``j mod m``); each step draws
        its seeds from its party's share, whose features of every row are
        precomputed for the seeds the training will draw (appendix C).

    batch_size : int, default=64
        (positive, negative) pairs per update, capped at the number of
        training rows (a larger batch only redraws the same rows). ``1``
        with ``features_per_step=1`` is the paper's loop exactly.

    features_per_step : int, default=128
        Feature seeds per update (capped at ``n_random_features``).

    loss : {"squared", "logistic"}, default="squared"
        Pairwise loss of ``d = f(x+) - f(x-)``: ``(1 - d)^2`` (smooth, the
        paper's choice and its convergence setting) or ``log(1 + exp(-d))``.

    asynchronous : bool, default=True
        ``True``: each active party updates as fast as it can, reading the
        others' possibly stale coefficients (AVFKAM). ``False``: rounds in
        which every active party updates once and waits for all others
        (VFKAM, the paper's comparison point); deterministic.

    early_stopping : "auto" or bool, default="auto"
        Hold out ``validation_fraction`` of the rows (stratified by label)
        and stop when their ROC AUC, computed by the lead active party, has
        not improved by ``tol`` for ``n_iter_no_change`` checks. ``"auto"``:
        on when there are more than 10,000 rows (as
        :class:`~sklearn.ensemble.HistGradientBoostingClassifier`). Only the
        active parties know which rows are held out.

    validation_fraction : float, default=0.1
        Share of the rows held out for early stopping.

    n_iter_no_change : int, default=10
        Checks without improvement before stopping. A check happens every
        ``max(1, max_iter // 100)`` updates, or rarer with early stopping so
        that the checks span a pass over the training rows (2 per pair).

    tol : float, default=1e-4
        Least gain of held-out AUC that counts as an improvement.

    party_delays : None, array-like of shape (n_parties,) or dict, default=None
        Straggler simulation (section 6.3): a factor ``s >= 1`` per party
        (a ``dict`` maps party indices to factors, others get 1). A party
        with factor ``s`` takes ``s`` times its own work per update: it
        waits ``s - 1`` times what computing its step took (the paper's
        delay fraction ``d`` is ``s = 1 + d``; passive parties never wait).

    %(random_state)s
    %(party_keys)s
    %(verbose)s

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        The labels; ``classes_[1]`` is the positive class (ranked first).

    n_iter_ : int
        Updates made over all active parties (``max_iter``, or where early
        stopping stopped).

    learning_rate_ : float
        The step size used (``"auto"`` resolved).

    loss_curve_ : ndarray of shape (n_checks,)
        Mean pairwise loss of the updates between two checks (see
        ``n_iter_no_change`` for their schedule).

    validation_score_ : ndarray of shape (n_checks,)
        Held-out ROC AUC at each check (empty without early stopping).

    n_iter_per_party_ : dict
        Updates made by each active party (party name -> count).

    coefficient_stores_ : list of CoefficientStore
        Each party's coefficients, in party order (empty for passive parties).
        In a deployment each stays with its party; here the estimator keeps
        them to predict.

    %(party_keys_)s

    gamma_ : float
        The kernel bandwidth used.

    threshold_ : float
        Score subtracted in :meth:`decision_function`: where Platt's sigmoid,
        fitted by the label holder, gives probability 1/2, so ``predict``
        thresholds at 0 (see :meth:`predict`).

    calibration_slope_ : float
        Slope ``a`` of :meth:`predict_proba` ``= expit(a *
        decision_function)`` (0 when the scores do not rank the positives
        higher: the probability is then the base rate everywhere).

    checkpoint_times_ : ndarray
        Seconds since the training loops started, at each checkpoint.

    checkpoint_iters_ : ndarray
        Updates made by each checkpoint; the last one is the final model.
        :meth:`staged_decision_function` gives the scores at checkpoints.

    training_time_ : float
        Wall time of the training loops (preprocessing excluded).

    partition_ : VerticalPartition
        The resolved partition.

    communication_ : CommunicationSummary
        Messages exchanged during ``fit``.

    n_features_in_ : int
        Number of columns of ``X`` seen in ``fit``.

    feature_names_in_ : ndarray of str
        Column names of ``X``, when it has them.

    See Also
    --------
    FDSKLClassifier : Synchronous vertical federated kernel classifier with
        a pointwise loss.
    sklearn.svm.SVC : Centralized kernel classifier.

    Notes
    -----
    The protocol (Algorithms 1-3 of the paper):

    1. Preprocessing (appendix C, Algorithm 3): each active party replays
       its sampling to learn the seeds training will draw from its share of
       the pool, and obtains ``phi(x) = sqrt(2) cos(omega^T x + b)`` of
       every row for them by masked two-tree sums (``T1``, ``T2``).
    2. Each active party, in its own thread, repeats: sample rows and
       seeds; tree-sum the active parties' ``f^l`` at the rows (Algorithm
       2); compute the new coefficients (eq. 5-6); decay its own and tell
       the others to decay theirs, without waiting.

    Traffic and memory: preprocessing sends ``2 q - 3`` ring elements of
    4 bytes per row and seed (36 kB per row for 3 parties and 3,000
    seeds), by chunks of rows; a training step sends nothing with one
    active party (``4 B + 1`` numbers to each other active party
    otherwise), whatever ``n``. Features are kept in float32, and with one
    active party only for the rows its replay will draw and the held-out
    rows (at most 2,000), so memory follows ``max_iter * 2 B``, not ``n``;
    ``threshold_`` is then over those rows (see the user guide).

    Choices where the paper is silent are listed in the user guide (only
    active parties hold coefficients; blocks of pairs and seeds, ``1``/``1``
    being the paper's loop; one coefficient per pool seed; a shared
    ``max_iter``; the threshold of ``predict``).

    Step size and convergence: ``learning_rate="auto"`` is ``min(1 / (S c
    + lambda), B m / (2 S n))`` with ``c = 2 + 6 / (B m)`` (the user guide
    derives it). A non-finite or exploding update is not applied, the
    parties go back to the iterate kept at the check with the lowest
    running loss, and ``fit`` raises a ``FloatingPointError`` naming
    ``learning_rate`` (its ``estimator`` attribute is a fitted copy with
    that iterate); a loss that ends above twice its best, or early stopping
    that runs out of ``max_iter``, warns (``ConvergenceWarning``).

    Defaults ``alpha=3e-3`` and ``n_random_features=3000`` (formerly
    ``1e-2`` and 2,000): ``alpha`` acts like SVC's ``1 / (C n)`` (the paper
    tunes ``lambda`` in ``[1e-6, 1]``) and ``1e-2`` over-regularised
    thousands of rows; the rest of the gap was the kernel approximation of
    a 2,000-seed pool. On 10,000 rows with 5% positives the former defaults
    trailed a balanced SVC by 0.017 AUC, these by 0.007
    (``benchmarks/_avfkam_quality.py``).

    Determinism: the synchronous mode, and the asynchronous mode with one
    active party, give the same model for the same ``random_state``; with
    several active parties the asynchronous mode depends on thread timing
    (the estimator is then tagged non-deterministic).

    What each party learns: passive parties get uniformly masked partial
    sums and ``gamma``, never labels, training row ids, scores or
    coefficients; active parties get the features of their own seeds and
    the other active parties' ``f^l`` at the rows they sample (see the user
    guide and :func:`skfed.privacy.audit`).

    %(whole_simulation)s

    References
    ----------
    .. [1] K. Zhang, G. Wang, H. Li, Y. Wang, H. Chen, B. Gu, "Asynchronous
       Vertical Federated Learning for Kernelized AUC Maximization", KDD 2024.
    .. [2] Z. Dang, X. Li, B. Gu, C. Deng, H. Huang, "Large-Scale Nonlinear
       AUC Maximization via Triply Stochastic Gradients", IEEE TPAMI 2020.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from skfed.kernel_methods import AVFKAMRanker
    >>> X, y = make_classification(n_samples=200, weights=[0.9], random_state=0)
    >>> ranker = AVFKAMRanker(partition=2, max_iter=300, random_state=0)
    >>> ranker.fit(X, y).score(X, y) > 0.9
    True
    """

    _privacy_protocol = "avfkam"


    #: checkpoints recorded during training (for staged scores)
    _n_checkpoints = 20
    _accepts_party_data = True

    def _held_out_in_driver(self, n_rows):
        # the held-out rows are drawn stratified by label, in the driver
        if n_rows is None:
            return self.early_stopping is True
        return resolve_early_stopping(self.early_stopping, n_rows)

    def __init__(self, partition=None, *, gamma="scale", kernel="rbf",
                 alpha=3e-3, learning_rate="auto", max_iter=1000,
                 n_random_features=3000, batch_size=64, features_per_step=128,
                 loss="squared", asynchronous=True, early_stopping="auto",
                 validation_fraction=0.1, n_iter_no_change=10, tol=1e-4,
                 party_delays=None, random_state=None,
                 party_keys="auto", verbose=0):
        self.partition = partition
        self.gamma = gamma
        self.kernel = kernel
        self.alpha = alpha
        self.learning_rate = learning_rate
        self.max_iter = max_iter
        self.n_random_features = n_random_features
        self.batch_size = batch_size
        self.features_per_step = features_per_step
        self.loss = loss
        self.asynchronous = asynchronous
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.tol = tol
        self.party_delays = party_delays
        self.random_state = random_state
        self.party_keys = party_keys
        self.verbose = verbose

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        tags.input_tags.sparse = True
        tags.non_deterministic = self._timing_dependent()
        return tags

    # ------------------------------------------------------------------ fit

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Run the AVFKAM protocol on the parties' column blocks.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            The whole table; each party only ever sees its own columns.

        y : array-like of shape (n_samples,)
            Binary labels, held by the active parties.

        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative row weights, held by the active parties with the
            labels. The objective becomes the weighted pairwise loss
            ``sum w_i w_j l(f(x_i) - f(x_j)) / (sum w_i sum w_j)`` over
            (positive ``i``, negative ``j``) pairs, minimised by drawing each
            side of a pair with probability proportional to its weight (an
            unbiased step of that objective); the held-out AUC of early
            stopping and the calibration of :meth:`predict_proba` are
            weighted too. Equal weights give the unweighted model.

        Returns
        -------
        self : AVFKAMRanker
        """
        X, y_signed, at_homes = self._binary_fit_input(X, y)
        weight = self._pair_weights(X, y_signed, sample_weight, at_homes)
        split = self._validation_split(y_signed)
        n_train = len(y_signed) if split is None else len(split[0])
        batch_size = self._batch_size(n_train)
        learning_rate = self._learning_rate(n_train)
        # Before any party starts: a decay factor <= 0 cannot converge.
        check_decay(learning_rate, self.alpha, auto=self.learning_rate == "auto")
        partition = self._resolve_partition(X)
        q = partition.n_parties
        names = [party_name(k) for k in range(q)]
        active = [party_name(k) for k in partition.active_parties]
        delays = self._check_delays(q)

        seeds = party_seeds(self.random_state, 2 + 2 * q)
        basis_seed, key_seeds = seeds[0], seeds[2:2 + q]
        loop_seeds = seeds[2 + q:]
        D = self.n_random_features
        if D < len(active):
            raise ValueError(
                f"n_random_features={D} is below the number of active parties "
                f"({len(active)}), which split the pool of seeds between them. "
                "Increase n_random_features.")
        # Each party's key fixes its block of omega and its phases.
        states = make_party_states(partition, X, y_signed, basis_seed,
                                   resolve_party_keys(self.party_keys, key_seeds,
                                                      self.random_state),
                                   self.kernel, None,
                                   stores=[CoefficientStore() for _ in names])
        for p in active:  # the weights stay with the labels
            states[p]["w"] = weight
        hyper = {"loss": get_loss(self.loss, pairwise=True),
                 "learning_rate": learning_rate,
                 "n_iter_no_change": self.n_iter_no_change, "tol": self.tol}
        lead = active[0]

        with self._federation(states) as fed:
            # gamma (and 'scale' from tree-summed moments), shared with FDSKL.
            self.gamma_ = federated_gamma(fed, names, lead, self.gamma)
            # Preprocessing (appendix C, Algorithm 3): each active party
            # replays its sampling, then obtains phi of every row for the
            # seeds of its share of the pool that training will draw, masked.
            for rank, p in enumerate(active):
                steps = (self.max_iter if self.asynchronous else
                         len(range(rank, self.max_iter, len(active))))
                # One active party keeps the rows its replay draws; several
                # read f^l at each other's rows, so they keep every row.
                ids = fed[p].call(
                    protocol.plan_steps, Local(loop_seeds[names.index(p)]),
                    Local(batch_size), Local(self.features_per_step),
                    Local(protocol.sub_pool(D, rank, len(active))),
                    Local(steps), Local(split), Local(len(active) > 1)).result()
                fed[p].call(protocol.start_features, Local(len(ids))).result()
                # The masked sums span every row, in chunks of rows (public
                # ranges) so that no party holds n x pool values at once.
                chunk = protocol.preprocess_chunk(len(ids))
                for start in range(0, X.shape[0], chunk):
                    rows = np.arange(start, min(start + chunk, X.shape[0]))
                    phi = masked_features(fed, names, p, rows, ids, basis_seed,
                                          phase="preprocess").result()
                    fed[p].call(protocol.keep_chunk, Local(phi),
                                Local(rows)).result()
                fed[p].call(protocol.keep_features, Local(ids),
                            Local(hyper)).result()
            # Training (Algorithm 1 in every active party's own thread).
            plan = training.TrainingPlan(
                fed, names, active, self.max_iter,
                1.0 - learning_rate * self.alpha, delays,
                max(1, self.max_iter // self._n_checkpoints), self.verbose,
                check_every=self._check_every(split),
                validate=split is not None, batch_size=batch_size,
                reference=hyper["loss"](0.0))
            run = (training.run_asynchronous if self.asynchronous
                   else training.run_synchronous)
            self.training_time_ = run(plan)
            # What the watching party reports for the messages below.
            watcher = plan.divergence[0] if plan.divergence else lead
            plan.monitor_state = fed[watcher].call(protocol.monitor_state).result()
            (self.calibration_slope_, self.threshold_,
             self._base_rate) = self._training_calibration(fed, active, lead)
            checkpoints = [(s, n, dict(zip(f, fed.gather(f.values()))))
                           for s, n, f in plan.checkpoints]
            self.coefficient_stores_ = fed.gather(
                fed[p].call(protocol.final_store) for p in names)
            self._keep_party_keys(fed, names, X.shape[0])

        self._basis_seed = basis_seed
        self.n_iter_ = int(plan.done)
        self.n_iter_per_party_ = dict(plan.per_party)
        self.checkpoint_times_ = np.array([c[0] for c in checkpoints])
        self.checkpoint_iters_ = np.array([c[1] for c in checkpoints])
        self._checkpoint_stores = [
            [c[2].get(n, CoefficientStore()) for n in names] for c in checkpoints]
        self.learning_rate_ = learning_rate
        self.loss_curve_ = np.array(plan.curve)
        self.validation_score_ = np.array(plan.validation)
        self._report_convergence(plan, learning_rate)
        return self

    # -------------------------------------------------------------- predict

    # Written in _avfkam_scores.py (this module's length); the class's own
    # methods, so that its API page documents them.
    _query_rows = AVFKAMScoresMixin._query_rows
    decision_function = AVFKAMScoresMixin.decision_function
    staged_decision_function = AVFKAMScoresMixin.staged_decision_function
    predict_proba = AVFKAMScoresMixin.predict_proba
    predict = AVFKAMScoresMixin.predict
    score = AVFKAMScoresMixin.score
