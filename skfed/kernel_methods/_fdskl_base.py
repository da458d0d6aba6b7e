"""What the FDSKL classifier and regressor share: parameters and the fit.

:class:`_BaseFDSKL` validates nothing itself (the public ``fit`` methods do),
sets up one party per column group and runs :mod:`._fdskl_protocol`;
prediction is the federated evaluation of Algorithm 2 on new rows.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

from numbers import Integral, Real
from typing import NamedTuple, Optional

import numpy as np
from sklearn.utils.validation import _num_samples
from sklearn.base import BaseEstimator
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import _check_sample_weight, check_is_fitted
from threadpoolctl import threadpool_limits

from ..base import FederatedMixin, party_seeds
from .._party_data_fit import validate_data_or_party_data
from ..losses import get_loss
from ..partition import VerticalPartition
from ._convergence import (
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
from ._export import KernelShareMixin
from ._fdskl_protocol import setup_party, train
from ._privacy import KernelPrivacyMixin
from ._vertical_features import (
    federated_decision,
    federated_gamma,
    make_party_states,
    party_name,
    resolve_party_keys,
)

__all__ = ["_BaseFDSKL", "Schedule"]

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


class _BaseFDSKL(KernelShareMixin, KernelPrivacyMixin, FederatedMixin,
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

    def _privacy_secrets(self, X, y=None, sample_weight=None, **fit_params):
        from .._privacy_core import Secret

        secrets = super()._privacy_secrets(X, y, **fit_params)
        if y is not None:
            sample_weight = self._effective_weight(y, sample_weight)
        if sample_weight is not None:
            order = self._privacy_row_order(_num_samples(X))
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


def _get_store(state):
    return state.store
