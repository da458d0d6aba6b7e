"""AVFKAM: asynchronous vertical federated kernelised AUC maximisation.

:class:`AVFKAMRanker` with its methods and Notes: parameter and input
checks, the fit that plays out the paper's preprocessing (appendix C) and
training loops (Algorithm 1, :mod:`._protocol`), the label holder's
calibration, and the federated scores (Algorithm 2) that every prediction
method runs.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import numbers

import numpy as np
from scipy.special import expit
from sklearn.base import BaseEstimator, ClassifierMixin, _fit_context
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import train_test_split
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import (
    _check_sample_weight,
    _num_samples,
    check_is_fitted,
    validate_data,
)

from ... import _party_data_fit as party_data
from ..._docstrings import fill_doc
from ...base import FederatedMixin, check_labels_not_single_class, party_seeds
from ...federation import Local, PartyData, balanced_tree, tree_sum
from ..._party_data_fit import signed_codes
from ...kernel_approximation import KERNELS
from ...losses import get_loss
from ...partition import VerticalPartition
from .._convergence import (
    AVFKAM_MAX_VALIDATION_ROWS,
    auto_learning_rate,
    check_decay,
    check_every,
    divergence_error,
    resolve_early_stopping,
    split_seed,
    warn_not_converged,
)
from .._attacks import KERNEL_ATTACKS, blocks_row_order, secrets_in_row_order
from .._export import KernelShareMixin
from .._vertical_features import (
    CoefficientStore,
    federated_decision,
    federated_gamma,
    make_party_states,
    masked_features,
    party_name,
    resolve_party_keys,
)
from . import _protocol as protocol
from ._attacks import masked_sums
from ._contract import avfkam_contract

__all__ = ["AVFKAMRanker"]


@fill_doc
class AVFKAMRanker(KernelShareMixin, FederatedMixin,
                   ClassifierMixin, BaseEstimator):
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
        :class:`~sklearn.ensemble.HistGradientBoostingClassifier`), off with a
        :class:`~skfed.federation.PartyData` (the held-out rows are drawn in
        the driver; ``True`` is then refused before any table is read). Only
        the active parties know which rows are held out.

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

    #: checkpoints recorded during training (for staged scores)
    _n_checkpoints = 20
    _accepts_party_data = True

    _parameter_constraints = {
        "partition": [None, numbers.Integral, list, tuple, VerticalPartition],
        "gamma": [StrOptions({"scale"}), Interval(numbers.Real, 0, None,
                                                  closed="neither")],
        "kernel": [StrOptions(set(KERNELS))],
        "alpha": [Interval(numbers.Real, 0, None, closed="left")],
        "learning_rate": [StrOptions({"auto"}),
                          Interval(numbers.Real, 0, None, closed="neither")],
        "max_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "n_random_features": [Interval(numbers.Integral, 1, None, closed="left")],
        "batch_size": [Interval(numbers.Integral, 1, None, closed="left")],
        "features_per_step": [Interval(numbers.Integral, 1, None, closed="left")],
        "loss": [StrOptions({"squared", "logistic"})],
        "asynchronous": ["boolean"],
        "early_stopping": [StrOptions({"auto"}), "boolean"],
        "validation_fraction": [Interval(numbers.Real, 0, 1, closed="neither")],
        "n_iter_no_change": [Interval(numbers.Integral, 1, None, closed="left")],
        "tol": [Interval(numbers.Real, 0, None, closed="left")],
        "party_delays": [None, "array-like", dict],
        "random_state": ["random_state"],
        "party_keys": [StrOptions({"auto", "random_state", "os"})],
        "verbose": ["verbose"],
    }

    def _held_out_in_driver(self):
        # the held-out rows are drawn stratified by label, in the driver;
        # asked of PartyData fits only, where "auto" is off
        return self.early_stopping is True

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

    def _timing_dependent(self):
        # Only several concurrent loops make the result depend on timing.
        active = getattr(self.partition, "active_parties", (0,))
        # (a malformed value is refused by the partition at fit time)
        n_active = len(active) if hasattr(active, "__len__") else 1
        return bool(self.asynchronous) and n_active > 1

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
        split = self._validation_split(y_signed, party_data=at_homes)
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
            plan = protocol.TrainingPlan(
                fed, names, active, self.max_iter,
                1.0 - learning_rate * self.alpha, delays,
                max(1, self.max_iter // self._n_checkpoints), self.verbose,
                check_every=self._check_every(split),
                validate=split is not None, batch_size=batch_size,
                reference=hyper["loss"](0.0))
            run = (protocol.run_asynchronous if self.asynchronous
                   else protocol.run_synchronous)
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
        self._n_feature_ids = D  # the pool seeds 0, ..., D - 1
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

    # ---------------------------------------------------------- fit helpers

    def _check_delays(self, n_parties):
        if self.party_delays is None:
            return None
        if isinstance(self.party_delays, dict):
            factors = np.ones(n_parties)
            for k, v in self.party_delays.items():
                if not (isinstance(k, numbers.Integral) and 0 <= k < n_parties):
                    raise ValueError(
                        f"party_delays names party {k!r}, but the partition has "
                        f"parties 0..{n_parties - 1}.")
                factors[k] = v
        else:
            factors = np.asarray(self.party_delays, dtype=float).ravel()
            if factors.shape != (n_parties,):
                raise ValueError(
                    f"party_delays has {factors.size} factor(s) but the "
                    f"partition has {n_parties} parties; give one per party "
                    "or a dict {party index: factor}.")
        if not np.all(np.isfinite(factors)) or np.any(factors < 1):
            raise ValueError(
                "party_delays must be slowdown factors >= 1 (1 = normal "
                f"speed, 4 = four times the party's own work per update), got "
                f"{factors.tolist()}.")
        return {party_name(k): float(f) for k, f in enumerate(factors)}

    def _binary_fit_input(self, X, y):
        """The training table, the labels as +1/-1 and whether the tables
        are loaded at home (``PartyData``); sets ``classes_`` and refuses
        anything but two classes."""
        y_signed = None
        at_homes = isinstance(X, PartyData)
        if at_homes:  # tables loaded at home
            X, codes = party_data.party_data_fit_input(self, X, y,
                                                       encode_labels=True)
            y_signed = signed_codes(codes)
        else:
            X, y = validate_data(self, X, y, dtype=np.float64,
                                 accept_sparse=["csr", "csc"])
            check_classification_targets(y)
            self.classes_ = np.unique(y)
        check_labels_not_single_class(self.classes_)
        if len(self.classes_) > 2:
            raise ValueError(
                "Only binary classification is supported. AVFKAMRanker ranks "
                f"two classes, but y has {len(self.classes_)} "
                f"({self.classes_.tolist()[:10]}). Use "
                "sklearn.multiclass.OneVsRestClassifier for one ranking per "
                "class, or binarise y.")
        if y_signed is None:
            y_signed = np.where(y == self.classes_[1], 1.0, -1.0)
        return X, y_signed, at_homes

    def _pair_weights(self, X, y_signed, sample_weight, at_homes=False):
        """Validated row weights, or None when they change nothing."""
        if sample_weight is None:
            return None
        if at_homes:
            raise ValueError(
                "sample_weight is not supported with PartyData: the weights "
                "would have to be loaded with the labels at the label holder.")
        w = _check_sample_weight(sample_weight, X, dtype=np.float64,
                                 ensure_non_negative=True)
        if np.all(w == w[0]) and w[0] > 0:
            return None  # pairs drawn uniformly: the unweighted model
        for side, rows in (("positive", y_signed > 0), ("negative", y_signed < 0)):
            if not w[rows].sum() > 0:
                raise ValueError(
                    f"sample_weight is 0 on every {side} row: no pair can be "
                    "drawn. Give some rows of each class a positive weight.")
        return w

    def _batch_size(self, n_train):
        """Pairs per update: ``batch_size``, at most the training rows.

        Pairs are drawn with replacement, so a batch larger than the rows
        only repeats them at a cost linear in ``batch_size`` (1e6 took
        minutes on 100 rows).
        """
        return int(min(self.batch_size, max(n_train, 1)))

    def _learning_rate(self, n_train):
        """The step size: the given one, or ``"auto"`` resolved."""
        if self.learning_rate != "auto":
            return float(self.learning_rate)
        # A pair's feature difference phi(x+) - phi(x-): its square is at
        # most 8 and on average 2 - 2 k(x+, x-) <= 2. The model lives on a
        # pool of n_random_features features: the noise spreads over at
        # most that many directions.
        return auto_learning_rate(
            get_loss(self.loss, pairwise=True),
            batch_size=self._batch_size(n_train),
            features_per_step=min(self.features_per_step,
                                  self.n_random_features),
            alpha=self.alpha, kappa=2.0, phi_sq_max=8.0,
            n_effective=min(n_train, self.n_random_features))

    def _validation_split(self, y_signed, party_data=False):
        """``(training rows, held-out rows)`` or ``None`` (no early stopping).

        Stratified by label: only the active parties, who hold the labels,
        ever learn it (the preprocessing computes the features of every
        row, and training row ids never reach the passive parties).
        """
        if not resolve_early_stopping(self.early_stopping, len(y_signed),
                                      party_data=party_data):
            return None
        rows = np.arange(len(y_signed))
        try:
            train, held_out = train_test_split(
                rows, test_size=min(int(np.ceil(self.validation_fraction
                                                * len(rows))),
                                    AVFKAM_MAX_VALIDATION_ROWS),
                stratify=y_signed,
                random_state=np.random.RandomState(split_seed(self.random_state)))
        except ValueError as exc:
            raise ValueError(
                f"validation_fraction={self.validation_fraction:g} cannot hold "
                "out rows of both classes and keep both for training "
                f"({exc}). Change validation_fraction or set "
                "early_stopping=False.") from None
        return np.sort(train), np.sort(held_out)

    def _check_every(self, split):
        """Updates between two checks: with early stopping, the patience
        window spans a pass over the training rows (a pair draws two)."""
        if split is None:
            return check_every(self.max_iter)
        return check_every(self.max_iter, len(split[0]),
                           2 * self._batch_size(len(split[0])),
                           self.n_iter_no_change)

    def _report_convergence(self, plan, learning_rate):
        """Raise on a divergence, warn when the fit merely did not converge."""
        if plan.divergence is not None:
            party, status, step = plan.divergence
            raise divergence_error(
                self, status, step, self.max_iter, plan.monitor_state,
                learning_rate, self.n_iter_,
                f"Lower learning_rate (or leave it to 'auto') or alpha; "
                f"reported by {party}")
        if plan.rising():
            warn_not_converged(
                self, "the training loss rose to more than twice its best "
                f"after {self.n_iter_} iterations (learning_rate="
                f"{learning_rate:.4g}): the step is too large to settle. "
                "Lower learning_rate.")
        elif plan.validate and not plan.stopped_early:
            warn_not_converged(
                self, f"max_iter={self.max_iter} iterations ended before the "
                f"held-out AUC stopped improving for {self.n_iter_no_change} "
                "checks. Increase max_iter (or learning_rate).")

    def _training_calibration(self, fed, active, lead):
        # The active parties tree-sum their f^l at every training row to the
        # lead, who holds the labels and fits the calibration (Platt).
        # (The kept rows: every row with several active parties, so that
        # the sums line up.)
        parts = {p: fed[p].call(protocol.local_scores, Local(None))
                 for p in active}
        total = tree_sum(fed, balanced_tree(active), parts, phase="threshold")
        total = total.result() if hasattr(total, "result") else total
        a, t, base = fed[lead].call(protocol.training_calibration,
                                    Local(total)).result()
        return float(a), float(t), float(base)

    # -------------------------------------------------------------- privacy

    def _privacy_contract(self):
        return avfkam_contract(self)

    def _privacy_attacks(self):
        return list(KERNEL_ATTACKS)

    def _privacy_masked_sums(self, messages, n_rows):
        """The preprocessing sums of a recorded fit (see :mod:`._attacks`)."""
        return masked_sums(self, messages, n_rows)

    def _privacy_row_order(self, n_rows):
        return blocks_row_order(self, n_rows)

    def _privacy_secrets(self, X, y=None, **fit_params):
        # The messages refer to rows in the parties' order: so do the secrets.
        secrets = super()._privacy_secrets(X, y, **fit_params)
        order = self._privacy_row_order(_num_samples(X))
        secrets_in_row_order(secrets, order)
        return secrets

    # -------------------------------------------------------------- predict

    def _query_rows(self, X):
        """The fitted model's query rows, validated (an array, or a
        PartyData whose tables stay at their homes)."""
        check_is_fitted(self)
        return party_data.validate_data_or_party_data(
            self, X, reset=False, dtype=np.float64, accept_sparse=["csr", "csc"])

    def _scores(self, X, stores_list):
        """``f(x)`` of each model in ``stores_list`` (per-party stores), by
        federated decision (Algorithm 2) in one federation."""
        partition = self.partition_
        names = [party_name(k) for k in range(partition.n_parties)]
        lead = party_name(partition.active_parties[0])
        states = make_party_states(partition, X, None, self._basis_seed,
                                   self._party_keys, self.kernel, self.gamma_,
                                   stores=stores_list[0])
        out = []
        with self._federation(states, record=False) as fed:
            for stores in stores_list:
                # Each party loads its own coefficients of this model.
                fed.gather(fed[p].call(protocol.set_store, Local(store))
                           for p, store in zip(names, stores))
                out.append(federated_decision(fed, names, lead, X.shape[0], 1,
                                              self._basis_seed)[:, 0])
        return out

    def decision_function(self, X):
        """Ranking scores: higher means more likely ``classes_[1]``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to score; each party evaluates its block of the random
            features on its own columns.

        Returns
        -------
        scores : ndarray of shape (n_samples,)
            ``f(x) - threshold_``.
        """
        X = self._query_rows(X)
        return self._scores(X, [self.coefficient_stores_])[0] - self.threshold_

    def staged_decision_function(self, X):
        """Scores of the model at every checkpoint of training.

        Useful to plot AUC against ``checkpoint_times_`` (wall time) or
        ``checkpoint_iters_``. The last stage is :meth:`decision_function`.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to score; each party evaluates its block of the random
            features on its own columns.

        Yields
        ------
        scores : ndarray of shape (n_samples,)
        """
        X = self._query_rows(X)
        for scores in self._scores(X, self._checkpoint_stores):
            yield scores - self.threshold_

    def predict_proba(self, X):
        """Probabilities of ``classes_``: Platt's sigmoid of the scores.

        The pairwise loss fixes only the order of the scores. The label
        holder fits ``P(classes_[1] | x) = expit(a (f(x) - threshold_))``
        (Platt scaling, by maximum likelihood with Platt's smoothed targets)
        on the rows early stopping held out when it has both classes there,
        on the training rows otherwise (optimistic, like any in-sample
        calibration). The ranking, and so ``score`` (ROC AUC), is unchanged.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to score; each party evaluates its block of the random
            features on its own columns.

        Returns
        -------
        proba : ndarray of shape (n_samples, 2)
        """
        check_is_fitted(self)
        scores = self.decision_function(X)
        if self.calibration_slope_ > 0:
            p = expit(self.calibration_slope_ * scores)
        else:
            p = np.full(scores.shape, self._base_rate)
        return np.column_stack([1.0 - p, p])

    def predict(self, X):
        """``classes_[1]`` where the score is positive, else ``classes_[0]``.

        The score is positive where the calibrated probability
        (:meth:`predict_proba`) exceeds 1/2: the fewest expected errors for
        calibrated scores. On imbalanced data it marks at most about as
        many rows positive as there are (held-out rows at a 6% and a 7.5%
        positive rate: 3.3% and 4.3% marked; the midpoint of the two
        classes' mean scores, used before, marked 8.7% and 12.2%, and more
        on harder data). For another operating point, threshold
        :meth:`decision_function` yourself (for example at its quantile
        matching the positive rate you want to flag).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to score; each party evaluates its block of the random
            features on its own columns.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
        """
        check_is_fitted(self)
        return self.classes_[(self.decision_function(X) > 0).astype(int)]

    def score(self, X, y, sample_weight=None):
        """ROC AUC of :meth:`decision_function` (what AVFKAM maximises).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to score; each party evaluates its block of the random
            features on its own columns.

        y : array-like of shape (n_samples,)
            True labels.

        sample_weight : array-like of shape (n_samples,), default=None
            Weights of the rows in the AUC.

        Returns
        -------
        auc : float
        """
        check_is_fitted(self)
        y = np.asarray(y)
        return roc_auc_score(y == self.classes_[1], self.decision_function(X),
                             sample_weight=sample_weight)
