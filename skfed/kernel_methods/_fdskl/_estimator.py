"""FDSKL's estimators: FDSKLClassifier, FDSKLRegressor and their shared base.

The public estimators validate the input and encode the targets;
:class:`_BaseFDSKL` resolves the ``"auto"`` settings, sets up one party per
column group and runs :mod:`._protocol` (Algorithm 1 of the paper, and
Algorithm 2 on new rows for prediction). The parameters both estimators
document, and the classifier's Notes, are written once below and filled in
once the classes are defined.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import textwrap
from numbers import Integral, Real
from typing import NamedTuple, Optional

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, _fit_context
from sklearn.preprocessing import LabelBinarizer
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.class_weight import compute_sample_weight
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import (
    _check_sample_weight,
    _num_samples,
    check_is_fitted,
    validate_data,
)
from threadpoolctl import threadpool_limits

from ... import _party_data_fit as party_data
from ..._docstrings import SHARED_NOTES, fill_doc
from ..._party_data_fit import validate_data_or_party_data
from ..._privacy_core import Secret
from ...base import (
    FederatedMixin,
    check_class_weight,
    check_labels_not_single_class,
    party_seeds,
)
from ...federation import PartyData
from ...losses import LogisticLoss, get_loss
from ...partition import VerticalPartition
from .._convergence import (
    AUTO_EPOCHS,
    AUTO_MIN_STEPS,
    MAX_VALIDATION_ROWS,
    auto_learning_rate,
    check_decay,
    check_every,
    divergence_error,
    resolve_early_stopping,
    split_seed,
    validation_split,
    warn_not_converged,
)
from .._attacks import KERNEL_ATTACKS, blocks_row_order, secrets_in_row_order
from .._export import KernelShareMixin
from .._vertical_features import (
    federated_decision,
    federated_gamma,
    make_party_states,
    party_name,
    resolve_party_keys,
)
from ._attacks import masked_sums, public_facts
from ._contract import fdskl_contract
from ._protocol import setup_party, train

__all__ = ["FDSKLClassifier", "FDSKLRegressor"]


#: rows above which the "auto" settings leave the paper's fresh features for
#: a pool of feature seeds (where ``early_stopping="auto"`` turns on too).
#: A step of fresh features costs about ``n m`` pairs once the rows come
#: back: 3.0 MB at 8,000 rows (1,488 MB a fit), 18.4 MB at 64,000 (three
#: parties), while a step on the pool costs ``B D`` pairs at any ``n``
AUTO_POOL_ROWS = 10_000

#: ``n_components="auto"`` above ``AUTO_POOL_ROWS``: the seeds of a pool
#: of this many features (a step then costs ``batch_size * 2,000`` pairs)
AUTO_POOL_SIZE = 2_000

#: ``batch_size="auto"``: with fresh features (the fixed default tuned on
#: tables of up to ~25,000 rows), and with a pool (a step costs ``B D``
#: pairs and an epoch ``n D`` for any ``B``: smaller batches are more steps
#: of the same traffic, 0.921 against 0.906 at 8,000 rows in 5 epochs)
AUTO_BATCH_FRESH = 256
AUTO_BATCH_POOL = 32

#: ``n_components_per_iter="auto"`` with fresh features (with a pool: the
#: whole pool, which a step evaluates at its rows anyway)
AUTO_FEATURES_FRESH = 32


class Schedule(NamedTuple):
    """The shape of a fit's steps, every ``"auto"`` resolved.

    ``pool``: the number of feature seeds (``None``: fresh features every
    step, the paper's loop); ``m``: features per step; ``batch_size``: rows
    per step; ``max_iter``: steps at most.
    """

    pool: Optional[int]
    m: int
    batch_size: int
    max_iter: int


class _BaseFDSKL(KernelShareMixin, FederatedMixin,
                 BaseEstimator):
    """What the FDSKL classifier and regressor share: the federated fit."""

    _partition_kind = "vertical"
    # its held-out rows depend on the number of rows only: PartyData works
    _accepts_party_data = True

    #: the fewest steps of ``max_iter="auto"``
    _auto_min_steps = AUTO_MIN_STEPS

    _parameter_constraints = {
        "partition": [None, Interval(Integral, 1, None, closed="left"), list,
                      tuple, VerticalPartition],
        "kernel": [StrOptions({"rbf", "laplacian"})],
        "gamma": [StrOptions({"scale"}), Interval(Real, 0, None, closed="neither")],
        "alpha": [Interval(Real, 0, None, closed="left")],
        "learning_rate": [StrOptions({"auto"}),
                          Interval(Real, 0, None, closed="neither")],
        "max_iter": [StrOptions({"auto"}), Interval(Integral, 1, None, closed="left")],
        "batch_size": [StrOptions({"auto"}),
                       Interval(Integral, 1, None, closed="left")],
        "n_components_per_iter": [StrOptions({"auto"}),
                                  Interval(Integral, 1, None, closed="left")],
        "n_components": [None, StrOptions({"auto"}),
                         Interval(Integral, 1, None, closed="left")],
        "early_stopping": [StrOptions({"auto"}), "boolean"],
        "validation_fraction": [Interval(Real, 0, 1, closed="neither")],
        "n_iter_no_change": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "cache_size": [Interval(Real, 0, None, closed="left")],
        "random_state": ["random_state"],
        "party_keys": [StrOptions({"auto", "random_state", "os"})],
        "verbose": ["verbose"],
    }

    def __init__(self, partition, *, loss, kernel, gamma, alpha, learning_rate,
                 max_iter, batch_size, n_components_per_iter, early_stopping,
                 validation_fraction, n_iter_no_change, tol, cache_size,
                 random_state, verbose, party_keys="auto",
                 n_components=None):
        self.partition = partition
        self.loss = loss
        self.kernel = kernel
        self.gamma = gamma
        self.alpha = alpha
        self.learning_rate = learning_rate
        self.max_iter = max_iter
        self.batch_size = batch_size
        self.n_components_per_iter = n_components_per_iter
        self.n_components = n_components
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.tol = tol
        self.cache_size = cache_size
        self.random_state = random_state
        self.party_keys = party_keys
        self.verbose = verbose

    def _resolve_max_iter(self, batch_size, n_train):
        """``max_iter``, or ``"auto"`` resolved: ``AUTO_EPOCHS`` passes over
        the training rows, at least ``_auto_min_steps`` steps (the fixed
        default)."""
        if self.max_iter != "auto":
            return int(self.max_iter)
        epochs = -(-AUTO_EPOCHS * int(n_train) // int(batch_size))
        return max(self._auto_min_steps, epochs)

    def _resolve_schedule(self, n_samples, n_train):
        """The steps of a fit on ``n_samples`` rows (``n_train`` of them not
        held out), every ``"auto"`` resolved: a :class:`Schedule`.

        Up to ``AUTO_POOL_ROWS`` rows, the paper's fresh features (32 a step,
        batches of 256, 500 steps for the classifier); above, a pool of
        ``AUTO_POOL_SIZE`` seeds, all of them updated at every step, batches
        of 32 and 5 epochs. An explicit value is kept; the ``"auto"`` ones
        follow the pool (given or chosen): ``n_components=None`` with the
        rest ``"auto"`` is the paper's loop at any size.
        """
        pool = self.n_components
        if pool == "auto":
            pool = None if n_samples <= AUTO_POOL_ROWS else AUTO_POOL_SIZE
        m = self.n_components_per_iter
        if m == "auto":
            m = AUTO_FEATURES_FRESH if pool is None else pool
        # a step's features are distinct: at most the pool
        m = int(m) if pool is None else min(int(m), int(pool))
        batch_size = self.batch_size
        if batch_size == "auto":
            batch_size = AUTO_BATCH_FRESH if pool is None else AUTO_BATCH_POOL
        batch_size = min(int(batch_size), n_train)
        return Schedule(pool=None if pool is None else int(pool), m=m,
                        batch_size=batch_size,
                        max_iter=self._resolve_max_iter(batch_size, n_train))

    def _learning_rate(self, batch_size, n_train, max_iter, m):
        """The step size: the given one, or ``"auto"`` resolved."""
        if self.learning_rate != "auto":
            return float(self.learning_rate)
        # Random features sqrt(2) cos(.) of a kernel with k(x, x) = 1:
        # phi^2 <= 2, and 1 on average; fresh features every step, so the
        # noise spreads over the training rows, for at most max_iter steps.
        return auto_learning_rate(
            get_loss(self._loss_name()), batch_size=batch_size,
            features_per_step=m, alpha=self.alpha,
            kappa=1.0, phi_sq_max=2.0, n_effective=n_train,
            n_steps=max_iter)

    def _fit_federated(self, X, Y, sample_weight=None):
        """Run FDSKL on ``X`` with the encoded targets ``Y`` (n x outputs).

        ``sample_weight`` (or ``None``) goes to the label holders only.
        """
        if sample_weight is not None and not sample_weight.sum() > 0:
            raise ValueError("sample_weight must have a positive sum.")
        val_rows = np.empty(0, dtype=np.int64)
        if resolve_early_stopping(self.early_stopping, X.shape[0]):
            # Held-out rows: public ids, a seeded choice that ignores labels.
            # At most MAX_VALIDATION_ROWS: each check costs a bounded sample.
            _, val_rows = validation_split(
                X.shape[0], self.validation_fraction, split_seed(self.random_state),
                max_rows=MAX_VALIDATION_ROWS)
        n_validation = len(val_rows)
        n_train = X.shape[0] - n_validation
        pool, m, batch_size, max_iter = self._resolve_schedule(X.shape[0],
                                                               n_train)
        learning_rate = self._learning_rate(batch_size, n_train, max_iter, m)
        # With early stopping, the patience window spans an epoch at least.
        every = (check_every(max_iter, n_train, batch_size,
                             self.n_iter_no_change)
                 if n_validation else check_every(max_iter))
        # Before any party starts: a decay factor <= 0 cannot converge.
        check_decay(learning_rate, self.alpha, auto=self.learning_rate == "auto")
        partition = self._resolve_partition(X)
        q = partition.n_parties
        names = [party_name(k) for k in range(q)]
        owners = [names[k] for k in partition.active_parties]
        n_samples, n_outputs = Y.shape
        # Seeds in a layout that does not depend on how many parties there are
        # beyond the offsets: the public seed of omega, then each active
        # party's sampling stream, then the private offset seeds.
        seeds = party_seeds(self.random_state, 2 + q)
        basis_seed, sampling_seed, offset_seeds = seeds[0], seeds[1], seeds[2:]
        # A saved row costs its owner n_outputs floats (its partial sum of
        # Algorithm 2) and every party one counter per owner (the public
        # bookkeeping of which features the row already has).
        row_bytes = 8 * (n_outputs + len(owners))
        n_cache_rows = int(min(n_samples, self.cache_size * 2**20 // row_bytes))
        if pool is not None:
            # A pool's coefficients change under every saved sum: each drawn
            # row gets all of its (at most n_components) features afresh.
            n_cache_rows = 0
        # Feature ids: step t's are t m, ..., t m + m - 1 (modulo the pool).
        self._n_feature_ids = (max_iter * m if pool is None
                               else min(pool, max_iter * m))
        config = dict(
            names=names, owners=owners, n_samples=n_samples,
            n_cache_rows=n_cache_rows, n_outputs=n_outputs,
            max_iter=max_iter, m=m, pool=pool, loss=self._loss_name(),
            sampling_seeds=[[sampling_seed, k] for k in range(len(owners))],
            validation_rows=val_rows, check_every=every,
            batch_size=batch_size, n_iter_no_change=self.n_iter_no_change,
            tol=self.tol,
        )
        # Each party's key fixes its block of omega and its phases.
        states = make_party_states(partition, X, Y, basis_seed,
                                   resolve_party_keys(self.party_keys, offset_seeds,
                                                      self.random_state),
                                   self.kernel, None)
        for k in partition.active_parties:
            # The weights, as the labels, stay with the label holders.
            states[names[k]]["sample_weight"] = sample_weight
        # Party threads call BLAS concurrently; a multi-threaded BLAS in each
        # of them oversubscribes the cores and can be 10x slower.
        with threadpool_limits(limits=1, user_api="blas"), \
                self._federation(states) as fed:
            fed.gather(fed[p].call(setup_party, config) for p in names)
            self.gamma_ = federated_gamma(fed, names, owners[0], self.gamma)
            result = train(
                fed, names, owners, max_iter=max_iter,
                batch_size=batch_size, m=m, pool=pool, learning_rate=learning_rate,
                alpha=self.alpha, check_every=every,
                verbose=self.verbose)
            # Each party keeps its own store; the estimator object is where
            # this simulation files them (it stands for all parties at once).
            stores = fed.gather(fed[p].call(_get_store) for p in names)
            self._keep_party_keys(fed, names, X.shape[0])
            # The public bookkeeping of the run (the same at every party),
            # for the attacks' replay of which pairs each masked sum carried.
            self._privacy_public = fed[names[-1]].call(public_facts).result()
        self.coef_stores_ = stores
        self.n_iter_ = result["n_iter"]
        self.n_components_ = sum(len(st) for st in stores if st is not None)
        self.learning_rate_ = learning_rate
        self.pool_size_ = pool
        self.n_components_per_iter_ = m
        self.batch_size_ = batch_size
        self.max_iter_ = max_iter
        self.loss_curve_ = result["curve"]
        self.validation_score_ = result["validation"]
        self._basis_seed = basis_seed
        self._report_convergence(result, learning_rate)
        return self

    def _report_convergence(self, result, learning_rate):
        """Raise on a divergence, warn when the fit merely did not converge."""
        if result["status"] is not None:
            raise divergence_error(
                self, result["status"], result["n_iter_seen"], self.max_iter_,
                result["state"], learning_rate, result["kept_step"],
                "Lower learning_rate (or leave it to 'auto'), or standardise "
                "the columns")
        if result["rising"]:
            warn_not_converged(
                self, f"the training loss rose to more than twice its best "
                f"after {self.n_iter_} steps (learning_rate={learning_rate:.4g}"
                "): the step is too large to settle. Lower learning_rate.")
        elif len(self.validation_score_) and not result["stopped_early"]:
            warn_not_converged(
                self, f"max_iter={self.max_iter_} steps ended before the "
                f"held-out loss stopped improving for {self.n_iter_no_change} "
                "checks. Increase max_iter (or learning_rate).")

    def _decision(self, X):
        """Scores of new rows by the federated evaluation (Algorithm 2)."""
        check_is_fitted(self)
        X = validate_data_or_party_data(self, X, reset=False, dtype=np.float64,
                                        accept_sparse=["csr", "csc"])
        partition = self.partition_
        names = [party_name(k) for k in range(partition.n_parties)]
        receiver = names[partition.active_parties[0]]
        states = make_party_states(partition, X, None, self._basis_seed,
                                   self._party_keys, self.kernel, self.gamma_,
                                   stores=self.coef_stores_)
        with threadpool_limits(limits=1, user_api="blas"), \
                self._federation(states, record=False) as fed:
            return federated_decision(fed, names, receiver, X.shape[0],
                                      self._n_outputs, self._basis_seed)

    def _effective_weight(self, y, sample_weight):
        """The label holder's row weights (``None``: all ones)."""
        if sample_weight is None:
            return None
        return _check_sample_weight(sample_weight, np.empty((len(y), 0)),
                                    ensure_non_negative=True)

    def _privacy_contract(self):
        return fdskl_contract(self)

    def _privacy_attacks(self):
        return list(KERNEL_ATTACKS)

    def _privacy_masked_sums(self, messages, n_rows):
        """The training sums of a recorded fit (see :mod:`._attacks`)."""
        return masked_sums(self, messages, n_rows)

    def _privacy_row_order(self, n_rows):
        return blocks_row_order(self, n_rows)

    def _privacy_secrets(self, X, y=None, sample_weight=None, **fit_params):
        secrets = super()._privacy_secrets(X, y, **fit_params)
        # The messages refer to rows in the parties' order: so do the secrets.
        order = self._privacy_row_order(_num_samples(X))
        secrets_in_row_order(secrets, order)
        if y is not None:
            sample_weight = self._effective_weight(y, sample_weight)
        if sample_weight is not None:
            names = [party_name(k) for k in range(self.partition_.n_parties)]
            for k in self.partition_.active_parties:
                secrets.append(Secret(
                    names[k], "weights", "sample_weight",
                    np.asarray(sample_weight, dtype=float)[order]))
        return secrets

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = False
        tags.input_tags.sparse = True
        return tags


_SHARED_DOC = """
    loss : {loss_options}, default={loss_default!r}
        The loss ``L(f(x), y)`` of the paper's Table 1.{loss_note}

    kernel : {{"rbf", "laplacian"}}, default="rbf"
        The shift-invariant kernel whose random Fourier features are used.

    gamma : "scale" or float, default="scale"
        Kernel coefficient, as in :class:`~sklearn.svm.SVC`:
        ``exp(-gamma ||x - x'||^2)`` for ``"rbf"``, ``exp(-gamma ||x - x'||_1)``
        for ``"laplacian"``. ``"scale"`` is ``1 / (n_features * X.var())``;
        the variance comes from per-party sums aggregated over a tree.

    alpha : float, default=1e-4
        The regularization ``lambda`` of the paper: every step multiplies the
        earlier coefficients by ``1 - learning_rate * alpha``.

    learning_rate : "auto" or float, default="{lr}"
        The constant step size ``gamma`` of Algorithm 1 (the paper analyses a
        constant rate, and so it stays constant). ``"auto"`` derives it from
        the loss's smoothness ``S`` (1 for the squared and smooth hinge
        losses, 1/4 for the logistic), the bound of the random features
        (``phi^2 <= 2``, mean 1), the batch size ``B``, the features per step
        ``m`` and the training rows ``n``::

            min(1 / (S (1 + 1 / (B m)) + alpha),
                max(B m / (S n), sqrt(B m / max_iter) / (8 S)))

        (see Notes). ``learning_rate * alpha`` must be below 1; ``"auto"``
        always is. The resolved value is ``learning_rate_``.{lr_note}

    max_iter : int or "auto", default="auto"
        Maximum number of steps of Algorithm 1 (all of them without early
        stopping, as the paper's loop). ``"auto"``: 5 passes over the
        training rows (epochs, as :class:`~sklearn.linear_model.SGDClassifier`
        counts them), ``ceil(5 n_train / batch_size)`` steps, at least
        {min_steps}. With the other defaults that is {min_steps} steps up to
        10,000 rows (the former fixed default) and ``ceil(5 n_train / 32)``
        above, on the pool (see ``n_components``). With fresh features
        (``n_components=None``) a step's traffic grows with the steps
        before it, so ``"auto"`` on a large table is meant with a pool (see
        Notes, "Large tables"). The resolved value is ``max_iter_``.

    batch_size : int or "auto", default="auto"
        Rows per step (capped at the number of training rows). ``"auto"``:
        256 with fresh features, 32 with a pool (a pool's step costs
        ``batch_size * n_components`` pairs and its epoch ``n_train *
        n_components`` for any batch, so smaller batches are more steps for
        the same traffic). The paper's loop is ``batch_size=1``. The
        resolved value is ``batch_size_``.

    n_components_per_iter : int or "auto", default="auto"
        Fresh random features per step; the model ends with
        ``n_iter_ * n_components_per_iter`` of them. The paper's loop is 1.
        With a pool, the pool's features a step updates (capped at
        ``n_components``: all of them cost no more traffic). ``"auto"``: 32
        with fresh features, the whole pool with a pool. The resolved value
        is ``n_components_per_iter_``.

    n_components : int, None or "auto", default="auto"
        ``None``: every step draws fresh features (the paper's seeds ``i =
        1, 2, ...``): the model grows by ``n_components_per_iter`` features
        a step, and scoring a row costs every feature created since the
        row's last visit. An int ``D``: the feature seeds cycle over a pool
        of ``D`` (step ``t`` uses seeds ``t m, ..., t m + m - 1`` modulo
        ``D``), a coefficient whose seed comes back grows in place, and a
        step costs at most ``batch_size * D`` pairs whatever the number of
        rows or steps before it (the saved partial sums of ``cache_size``
        are then not used: every pool coefficient changes between two
        visits of a row). ``n_components_per_iter`` is capped at it.
        ``"auto"`` chooses by the number of rows given to ``fit``: fresh
        features up to 10,000 rows (the paper's loop: with the other
        ``"auto"`` values, 32 features a step, batches of 256, {min_steps}
        steps), a pool of 2,000 above (all 2,000 updated at every step,
        batches of 32, 5 epochs), where fresh features would cost a step
        traffic in proportion to the rows (see Notes, "Large tables").
        ``n_components=None, n_components_per_iter=32, batch_size=256,
        max_iter={min_steps}`` is the former default fit (the paper's fresh
        features) at any size. The resolved value is ``pool_size_``.

    early_stopping : "auto" or bool, default="auto"
        Hold out ``validation_fraction`` of the rows (at most 1,000: every
        check scores them through the protocol) and stop when their
        loss, computed by the label holder from the federated scores of
        those rows, has not improved by ``tol`` for ``n_iter_no_change``
        checks. ``"auto"``: on when there are more than 10,000 rows (as
        :class:`~sklearn.ensemble.HistGradientBoostingClassifier`). The
        held-out rows are a seeded random choice independent of the labels
        (their ids are public: every party sees which rows a step uses).

    validation_fraction : float, default=0.1
        Share of the rows held out for early stopping.

    n_iter_no_change : int, default=10
        Checks without improvement before stopping. A check happens every
        ``max(1, max_iter // 100)`` steps, from step 0; with early stopping,
        at least every ``ceil(n_train / (batch_size * n_iter_no_change))``
        steps (``n_train`` the rows not held out), so that the patience
        window spans at least one pass over the training rows (as
        :class:`~sklearn.linear_model.SGDClassifier` counts it in epochs).

    tol : float, default=1e-3
        Least decrease of the held-out loss that counts as an improvement
        (as :class:`~sklearn.linear_model.SGDClassifier`'s).

    cache_size : float, default=200
        Byte budget, in megabytes per party, of the locally saved values of
        Algorithm 2: for each saved training row, its coefficient holder
        keeps the partial sum ``sum_j alpha_j phi_j(x_i)`` over the features
        the row already received (``n_outputs`` floats) and every party one
        counter per holder (which features the row has): 16 bytes per row
        with one output and one holder, so the default covers 13 million
        rows. A saved row receives each feature once; rows past the budget
        are recomputed by the masked sums every time they are drawn (the
        paper's plain loop, ``cache_size=0``). The model is the same either
        way.
"""


_NOTES = """    Protocol of one step (Algorithm 1), with ``B = batch_size`` rows and
    ``m = n_components_per_iter`` features: the active party draws the rows
    and the feature ids and sends them down a reverse-order tree; every
    party draws its rows of ``omega_j`` from the public seed; the
    coefficient holders obtain ``omega_j^T x_i + b_j`` by the masked two-tree
    sum (Algorithm 3); each party computes its ``f^l(x_i)`` (Algorithm 2)
    and the ``f^l`` are tree-summed to the active party, which computes
    ``alpha_j = -gamma / (B m) sum_i L'(f(x_i), y_i) phi_j(x_i)``; every
    holder multiplies its older coefficients by ``1 - gamma lambda``.

    Choices where the paper is silent: the minibatch average above (so
    ``B = m = 1`` is the paper's update); rows drawn without replacement
    within an epoch; several active parties take turns in a fixed
    round-robin order (deterministic, each creating and keeping the
    coefficients of its own steps); multiclass targets are one-vs-rest on
    ``{-1, +1}`` codes sharing the random features, with one coefficient per
    class per feature; ``predict_proba`` (logistic loss) is the sigmoid of
    the score, normalized over classes for more than two.

    Step size and convergence: the default ``learning_rate="auto"`` is
    ``min(1 / (S c + lambda), max(B m / (S n), sqrt(B m / T) / (8 S)))``
    with ``c = 1 + 1 / (B m)`` and ``T = max_iter``.
    The first term is ``1 / L`` for the curvature of a step: it moves the
    batch's scores by ``gamma A L'`` with ``A = Phi Phi^T / (B m)``, whose
    largest eigenvalue is at most ``max phi^2 = 2`` and ``k(x, x) = 1`` on
    average (reached by a wide kernel, where all rows look alike), ``c``
    interpolating between the two by the number of samples of a step as in
    the expected smoothness of minibatch SGD. The second bounds the
    random-feature noise: a step moves ``f`` at every row by a fluctuation
    of variance about ``gamma^2 S^2 e^2 / (B m)`` while a row's residual
    ``e`` shrinks by ``gamma S / n`` per step, and the loop diverges past
    ``~2 B m / (S n)`` (measured: the paper's loop ``B = m = 1`` on 442
    standardised rows with the squared loss diverges at ``gamma = 0.05``).
    That is the worst case of a run long enough for the noise of every row
    to settle; in ``T`` steps the noise builds up along at most ``gamma S
    T`` of the kernel's eigendirections, hence the second bound
    ``sqrt(B m / T) / (8 S)`` (a noise of at most an eighth of the
    residual). With the defaults it is 2.0 for the logistic loss at any
    ``n`` (before, ``B m / (S n)`` alone gave 0.73 at 50,000 rows and the
    fit stayed far from its optimum: 0.85 accuracy against ``SVC``'s
    0.95). The step
    stays constant, as in the paper (its Theorem 4 takes a small constant
    ``gamma``; the decaying ``theta / t`` of the original doubly stochastic
    method is what the paper replaces).

    Divergence guard: the label holder (the first active party) watches the
    mean loss of each minibatch, which it computes anyway. A non-finite
    value, a running loss above ten times the zero model's (every fit starts
    at ``f = 0``) or a score beyond ``1e6`` stops the loop; every coefficient
    holder goes back to the coefficients it kept at the check with the
    lowest running loss, and ``fit`` raises a ``FloatingPointError`` naming
    ``learning_rate`` whose ``estimator`` attribute is a fitted copy with
    that iterate (the estimator itself stays unfitted). A fit that ends
    with its running loss above twice its best warns
    (:class:`~sklearn.exceptions.ConvergenceWarning`), as does early
    stopping that runs out of ``max_iter``.

    Early stopping: the held-out rows keep their public row ids and are
    never drawn; at each check step every party adds them to the step's
    rows, so their features and ``f`` travel in the step's own messages (the
    locally saved features of Algorithm 2, each (row, feature) pair sent
    once), and the label holder computes their loss. Nothing else is sent,
    except with several active parties: the others report each step's
    losses to the first (a few numbers) and it tells them which iterate to
    keep. The checks are spaced so that ``n_iter_no_change`` of them span
    at least one pass over the training rows (a window of a few minibatches
    of a large table judges noise: with ``max_iter=100`` on 100,000 rows, a
    check every step stopped a fit near step 10). A short ``max_iter`` may
    thus end before patience runs out, with a ConvergenceWarning, as
    sklearn's SGD does when it runs out of epochs.

    Private directions: each party draws its block of ``omega_j`` and its
    phases from a key of its own (``party_keys``), not from a seed every
    party knows as in the paper, so the receiver of ``omega_j^T x + b_j``
    cannot solve for another party's columns. The phase ``b_j`` is the
    phase of the party ``l'_j`` whose value is not masked (Lemma 1). The
    model therefore depends on the split (another grouping of the columns
    gives another, identically distributed, model) and, with OS keys
    (``party_keys="os"``, or ``"auto"`` without a ``random_state``), on the
    keys drawn. With a seeded ``random_state`` and ``"auto"`` the keys
    derive from the seed: reproducible, but whoever knows the seed rebuilds
    the columns (the audit reports both settings).

    Masks of Algorithm 3: angles are added in the ring ``Z_{2^32}`` (a full
    turn is ``2^32``), and every party but ``l'_j`` masks each entry with a
    uniform ring element drawn fresh from its own CSPRNG (a one-time pad;
    the paper's offsets were one per feature for every row). The trees of
    :func:`~skfed.federation.totally_different_trees` make the receiver's
    only ``T1`` child the subtree of all other parties, led by ``l'_j``,
    and are checked node by node: no party can cancel its ``T1`` inputs
    with its ``T2`` inputs. The masks cancel exactly: they do not change
    the model.

    What each party learns: the passive parties receive the minibatch row
    indices, the feature ids, and uniformly masked partial sums, never
    labels, raw columns or coefficients. The coefficient holder learns
    ``omega_j^T x_i + b_j`` of the rows it uses, from which it can still
    estimate the kernel, hence the pairwise distances, of the other
    parties' columns, and recover them from a few known rows: inherent to
    learning a kernel on shared rows. See the user guide for what
    :func:`skfed.privacy.audit` measures.

    Cost: with the locally saved partial sums, each (row, feature) pair of
    the rows that fit in ``cache_size`` goes through Algorithm 3 once; the
    plain loop (and rows past the budget) recomputes every earlier feature
    of each drawn row, ``O(t^2)`` work and traffic after ``t`` steps (the
    user guide tabulates the bytes per step against the paper's). Either
    way a step after ``t`` others costs up to ``B m t`` pairs (the paper's
    ``O(q t)`` per iteration, appendix C): with a fixed ``max_iter`` that
    does not grow with the table, but a table of ``n`` rows needs steps in
    proportion to ``n`` to be seen, and a row comes back after about ``n /
    B`` steps, so a step costs about ``n m`` pairs.

    Large tables: the defaults (``"auto"``) choose by the rows given to
    ``fit``. Up to 10,000 rows they are the paper's fresh features (32 a
    step, batches of 256, 500 steps for the classifier and 800 for the
    regressor): the former defaults, the reading the paper's guarantees are
    about. Above, a step of fresh features costs about ``n m`` pairs, and
    the same protocol runs on a pool of ``D = 2,000`` seeds
    (``n_components_per_iter=D``, ``batch_size=32``, ``max_iter`` 5
    epochs): ``B D`` pairs a step at any ``n``, training length in epochs,
    and checks on at most 1,000 held-out rows (spaced so that they add at
    most ``10,000 / n_train`` to the traffic). On 64,000 rows of
    ``make_classification`` (three parties) the former defaults sent 18.4
    MB a step, 6.2 times their step at 8,000 rows, and scored 0.917; the
    pool sends 0.9 MB a step and scores 0.951, beside 0.952 for random
    features + SGD with 2,000 features (the user guide's "Large tables").
    ``n_components=None`` keeps the paper's fresh features at any size;
    with ``n_components_per_iter=32, batch_size=256, max_iter=500`` it is
    the former default fit exactly.

""" + textwrap.indent(SHARED_NOTES["whole_simulation"].strip("\n"), "    ")


def expand_shared_doc(cls, loss_options, loss_default, loss_note="", lr_note=""):
    defaults = cls().get_params()
    text = _SHARED_DOC.format(
        loss_options=loss_options, loss_default=loss_default, loss_note=loss_note,
        lr=defaults["learning_rate"], lr_note=lr_note,
        min_steps=cls._auto_min_steps).strip("\n")
    cls.__doc__ = cls.__doc__.replace("__SHARED__", text).replace(
        "__NOTES__", _NOTES)


@fill_doc
class FDSKLClassifier(ClassifierMixin, _BaseFDSKL):
    """Federated doubly stochastic kernel classifier (vertical split).

    Each party holds a block of columns; the active party also holds the
    labels. The model ``f(x) = sum_j alpha_j sqrt(2) cos(omega_j^T x + b_j)``
    is learned by doubly stochastic functional gradient descent (random
    rows and random features at every step) without any party seeing
    another's columns, and the coefficients stay with the active party that
    created them (Gu et al., 2020).

    Parameters
    ----------
    %(partition_vertical)s

__SHARED__

    class_weight : dict, "balanced" or None, default=None
        Weights of the classes, as in :class:`~sklearn.svm.SVC`: a row's
        weight is its class's weight times its ``sample_weight``.
        ``"balanced"`` gives class ``c`` the weight
        ``n_samples / (n_classes * n_c)``. Applied by the label holder, which
        alone knows the labels (see ``fit``).

    %(random_state)s

    %(party_keys)s

    %(verbose)s

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The class labels.

    n_iter_ : int
        Number of steps applied: ``max_iter`` (``"auto"`` resolved), or
        where early stopping stopped.

    learning_rate_ : float
        The step size used (``"auto"`` resolved).

    pool_size_ : int or None
        The pool of feature seeds used (``n_components`` with ``"auto"``
        resolved; ``None``: fresh features every step, the paper's loop).

    n_components_per_iter_ : int
        Random features per step (``"auto"`` resolved, capped at the pool).

    batch_size_ : int
        Rows per step (``"auto"`` resolved, capped at the training rows).

    max_iter_ : int
        The most steps the fit could run (``"auto"`` resolved).

    loss_curve_ : ndarray of shape (n_checks,)
        The label holder's mean minibatch loss between two checks (see
        ``n_iter_no_change`` for their schedule).

    validation_score_ : ndarray of shape (n_checks,)
        Minus the mean loss of the held-out rows at each check, the first
        before any step (empty without early stopping).

    n_components_ : int
        Number of distinct random features in the model (at most
        ``n_components`` when it is set).

    gamma_ : float
        The kernel coefficient used (``"scale"`` resolved).

    coef_stores_ : list of CoefficientStore or None
        Per party, the coefficients it created (``None`` for passive parties);
        one column per output (one output for two classes, one per class
        otherwise).

    %(party_keys_)s

    partition_ : VerticalPartition
        The resolved partition.

    communication_ : CommunicationSummary
        The messages sent during ``fit``, by phase, link and party.

    n_features_in_ : int
        Number of features seen during ``fit``.

    feature_names_in_ : ndarray of shape (n_features_in_,)
        Names of the features seen during ``fit`` (DataFrame input only).

    See Also
    --------
    FDSKLRegressor : The same protocol for regression.
    sklearn.svm.SVC : Centralized kernel classifier.
    sklearn.kernel_approximation.RBFSampler : Centralized random features.

    Notes
    -----
__NOTES__

    References
    ----------
    .. [1] B. Gu, Z. Dang, X. Li and H. Huang, "Federated Doubly Stochastic
       Kernel Learning for Vertically Partitioned Data", KDD 2020.

    Examples
    --------
    >>> from sklearn.datasets import make_moons
    >>> from skfed.kernel_methods import FDSKLClassifier
    >>> X, y = make_moons(200, noise=0.1, random_state=0)
    >>> clf = FDSKLClassifier(partition=2, max_iter=20, batch_size=64,
    ...                       random_state=0).fit(X, y)
    >>> bool(clf.score(X, y) > 0.9)
    True
    """

    _parameter_constraints = {
        **_BaseFDSKL._parameter_constraints,
        "loss": [StrOptions({"logistic", "smooth_hinge", "squared"})],
        "class_weight": [None, dict, StrOptions({"balanced"})],
    }

    def __init__(self, partition=None, *, loss="logistic", kernel="rbf",
                 gamma="scale", alpha=1e-4, learning_rate="auto", max_iter="auto",
                 batch_size="auto", n_components_per_iter="auto",
                 n_components="auto",
                 early_stopping="auto", validation_fraction=0.1,
                 n_iter_no_change=10, tol=1e-3, cache_size=200.0,
                 class_weight=None, random_state=None,
                 party_keys="auto", verbose=0):
        super().__init__(
            partition, loss=loss, kernel=kernel, gamma=gamma, alpha=alpha,
            learning_rate=learning_rate, max_iter=max_iter, batch_size=batch_size,
            n_components_per_iter=n_components_per_iter,
            early_stopping=early_stopping, validation_fraction=validation_fraction,
            n_iter_no_change=n_iter_no_change, tol=tol, cache_size=cache_size,
            random_state=random_state, party_keys=party_keys,
            verbose=verbose, n_components=n_components)
        self.class_weight = class_weight

    def _loss_name(self):
        return self.loss

    def _effective_weight(self, y, sample_weight):
        """``sample_weight`` times the weight of each row's class."""
        weight = super()._effective_weight(y, sample_weight)
        if self.class_weight is None:
            return weight
        check_class_weight(self.class_weight)
        per_class = compute_sample_weight(self.class_weight, np.asarray(y))
        return per_class if weight is None else per_class * weight

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the model by running FDSKL between the parties.

        Parameters
        ----------
        X : {array-like, DataFrame} of shape (n_samples, n_features)
            The whole table; each party gets only its columns.

        y : array-like of shape (n_samples,)
            Labels, held by the active party (or parties).

        sample_weight : array-like of shape (n_samples,), default=None
            Row weights, held by the label holders with the labels (they
            never leave them): each row's loss derivative in a step, and its
            loss in the training and held-out monitors, is multiplied by its
            weight (times its class's ``class_weight``). The weights are
            scaled to mean 1 over the training rows, so integer weights
            behave as repeated rows and ``learning_rate="auto"`` keeps its
            meaning. ``None``: all ones.

        Returns
        -------
        self : object
        """
        if isinstance(X, PartyData):  # tables loaded at home
            return self._fit_federated(*party_data.binarized_fit_input(
                self, X, y, sample_weight))
        X, y = validate_data(self, X, y, dtype=np.float64,
                             accept_sparse=["csr", "csc"])
        check_classification_targets(y)
        self._binarizer = LabelBinarizer(neg_label=-1, pos_label=1).fit(y)
        self.classes_ = self._binarizer.classes_
        check_labels_not_single_class(self.classes_)
        Y = self._binarizer.transform(y).astype(float)
        self._n_outputs = Y.shape[1]
        return self._fit_federated(X, Y, self._effective_weight(y, sample_weight))

    def decision_function(self, X):
        """Scores ``f(x)`` computed by the parties together.

        Parameters
        ----------
        X : {array-like, DataFrame} of shape (n_samples, n_features)

        Returns
        -------
        scores : ndarray of shape (n_samples,) or (n_samples, n_classes)
            For two classes, positive scores mean ``classes_[1]``.
        """
        scores = self._decision(X)
        return scores[:, 0] if scores.shape[1] == 1 else scores

    def predict(self, X):
        """Class labels of ``X``.

        Parameters
        ----------
        X : {array-like, DataFrame} of shape (n_samples, n_features)

        Returns
        -------
        y : ndarray of shape (n_samples,)
        """
        scores = self.decision_function(X)
        if scores.ndim == 1:
            return self.classes_[(scores > 0).astype(int)]
        return self.classes_[np.argmax(scores, axis=1)]

    @available_if(lambda self: self.loss == "logistic")
    def predict_proba(self, X):
        """Class probabilities (logistic loss only).

        Parameters
        ----------
        X : {array-like, DataFrame} of shape (n_samples, n_features)

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
        """
        p = LogisticLoss.probability(self._decision(X))
        if p.shape[1] == 1:
            return np.hstack([1 - p, p])
        return p / p.sum(axis=1, keepdims=True)

    @available_if(lambda self: self.loss == "logistic")
    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`."""
        return np.log(self.predict_proba(X))


@fill_doc
class FDSKLRegressor(RegressorMixin, _BaseFDSKL):
    """Federated doubly stochastic kernel regression (vertical split).

    The regression counterpart of :class:`FDSKLClassifier` with the squared
    loss of the paper's Table 1: each party holds a block of columns, the
    active party holds the targets, and the kernel model is learned by the
    same federated doubly stochastic steps (Gu et al., 2020).

    Parameters
    ----------
    %(partition_vertical)s

__SHARED__

    %(random_state)s

    %(party_keys)s

    %(verbose)s

    Attributes
    ----------
    n_iter_ : int
        Number of steps applied: ``max_iter`` (``"auto"`` resolved), or
        where early stopping stopped.

    learning_rate_ : float
        The step size used (``"auto"`` resolved).

    pool_size_ : int or None
        The pool of feature seeds used (``n_components`` with ``"auto"``
        resolved; ``None``: fresh features every step, the paper's loop).

    n_components_per_iter_ : int
        Random features per step (``"auto"`` resolved, capped at the pool).

    batch_size_ : int
        Rows per step (``"auto"`` resolved, capped at the training rows).

    max_iter_ : int
        The most steps the fit could run (``"auto"`` resolved).

    loss_curve_ : ndarray of shape (n_checks,)
        The label holder's mean minibatch loss between two checks (see
        ``n_iter_no_change`` for their schedule).

    validation_score_ : ndarray of shape (n_checks,)
        Minus the mean loss of the held-out rows at each check, the first
        before any step (empty without early stopping).

    n_components_ : int
        Number of distinct random features in the model (at most
        ``n_components`` when it is set).

    gamma_ : float
        The kernel coefficient used (``"scale"`` resolved).

    coef_stores_ : list of CoefficientStore or None
        Per party, the coefficients it created (``None`` for passive parties).

    %(party_keys_)s

    partition_ : VerticalPartition
        The resolved partition.

    communication_ : CommunicationSummary
        The messages sent during ``fit``.

    n_features_in_ : int
        Number of features seen during ``fit``.

    feature_names_in_ : ndarray of shape (n_features_in_,)
        Names of the features seen during ``fit`` (DataFrame input only).

    See Also
    --------
    FDSKLClassifier : The same protocol for classification.
    sklearn.kernel_ridge.KernelRidge : Centralized kernel ridge regression.
    sklearn.svm.SVR : Centralized support vector regression.

    Notes
    -----
    The protocol, the choices where the paper is silent, the dependence on
    the split and what each party learns are those of
    :class:`FDSKLClassifier`. One more choice: the active party centres and
    scales the targets (it alone holds them), so that one constant learning
    rate suits targets of any scale; predictions are scaled back. The
    paper's squared loss ``(f - y)^2`` is used as ``(f - y)^2 / 2`` (the
    factor 2 is absorbed in the learning rate).

    %(whole_simulation)s

    References
    ----------
    .. [1] B. Gu, Z. Dang, X. Li and H. Huang, "Federated Doubly Stochastic
       Kernel Learning for Vertically Partitioned Data", KDD 2020.

    Examples
    --------
    >>> import numpy as np
    >>> from skfed.kernel_methods import FDSKLRegressor
    >>> rng = np.random.RandomState(0)
    >>> X = rng.uniform(-2, 2, size=(200, 2))
    >>> y = np.sin(X[:, 0]) + 0.5 * X[:, 1] ** 2
    >>> reg = FDSKLRegressor(partition=2, max_iter=20, batch_size=64,
    ...                      random_state=0).fit(X, y)
    >>> bool(reg.score(X, y) > 0.8)
    True
    """

    _parameter_constraints = {
        **_BaseFDSKL._parameter_constraints,
        "loss": [StrOptions({"squared"})],
    }

    _auto_min_steps = 800

    def __init__(self, partition=None, *, loss="squared", kernel="rbf",
                 gamma="scale", alpha=1e-4, learning_rate="auto", max_iter="auto",
                 batch_size="auto", n_components_per_iter="auto",
                 n_components="auto",
                 early_stopping="auto", validation_fraction=0.1,
                 n_iter_no_change=10, tol=1e-3, cache_size=200.0,
                 random_state=None, party_keys="auto", verbose=0):
        super().__init__(
            partition, loss=loss, kernel=kernel, gamma=gamma, alpha=alpha,
            learning_rate=learning_rate, max_iter=max_iter, batch_size=batch_size,
            n_components_per_iter=n_components_per_iter,
            early_stopping=early_stopping, validation_fraction=validation_fraction,
            n_iter_no_change=n_iter_no_change, tol=tol, cache_size=cache_size,
            random_state=random_state, party_keys=party_keys,
            verbose=verbose, n_components=n_components)

    def _loss_name(self):
        return self.loss

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the model by running FDSKL between the parties.

        Parameters
        ----------
        X : {array-like, DataFrame} of shape (n_samples, n_features)
            The whole table; each party gets only its columns.

        y : array-like of shape (n_samples,)
            Targets, held by the active party (or parties).

        sample_weight : array-like of shape (n_samples,), default=None
            Row weights, held by the label holders with the targets (they
            never leave them): each row's loss derivative in a step, and its
            loss in the training and held-out monitors, is multiplied by its
            weight; the targets are centred and scaled with the weighted
            mean and standard deviation. The weights are scaled to mean 1
            over the training rows, so integer weights behave as repeated
            rows. ``None``: all ones.

        Returns
        -------
        self : object
        """
        if isinstance(X, PartyData):  # tables loaded at home
            return self._fit_federated(*party_data.standardised_fit_input(
                self, X, y, sample_weight))
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=True,
                             accept_sparse=["csr", "csc"])
        y = y.astype(float)
        weight = self._effective_weight(y, sample_weight)
        w = np.ones(len(y)) if weight is None else weight
        self._y_mean = float(np.average(y, weights=w))
        scale = float(np.sqrt(np.average((y - self._y_mean) ** 2, weights=w)))
        self._y_scale = scale if scale > 0 else 1.0
        Y = ((y - self._y_mean) / self._y_scale)[:, None]
        self._n_outputs = 1
        return self._fit_federated(X, Y, weight)

    def predict(self, X):
        """Predicted targets, computed by the parties together.

        Parameters
        ----------
        X : {array-like, DataFrame} of shape (n_samples, n_features)

        Returns
        -------
        y : ndarray of shape (n_samples,)
        """
        return self._decision(X)[:, 0] * self._y_scale + self._y_mean


expand_shared_doc(
    FDSKLClassifier, '{"logistic", "smooth_hinge", "squared"}', "logistic",
    " Labels are coded ``-1``/``+1`` (one-vs-rest for more than two classes);"
    "\n        only ``\"logistic\"`` gives ``predict_proba``.")
expand_shared_doc(
    FDSKLRegressor, '{"squared"}', "squared",
    lr_note=("\n        The squared loss curves four times as much as the logistic"
             "\n        loss, hence a quarter of the classifier's step, and more"
             "\n        steps by default (regression converges more slowly)."))


def _get_store(state):
    return state.store
