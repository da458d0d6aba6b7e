"""AVFKAMRanker's helpers: parameters and fit input, convergence reports,
federated scores.

Kept apart from :mod:`._avfkam` (the estimator and its algorithm box) so that
each module stays short. Two helpers talk to the parties: the threshold's
tree sum at the end of ``fit`` and the federated decision (Algorithm 2) that
every prediction method runs.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import numbers

import numpy as np
from sklearn.model_selection import train_test_split
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import _check_sample_weight, validate_data

from .. import _party_data_fit as party_data
from .._party_data_fit import signed_codes
from ..base import check_labels_not_single_class
from ..federation import Local, PartyData, balanced_tree, tree_sum
from ..kernel_approximation import KERNELS
from ..losses import get_loss
from ..partition import VerticalPartition
from . import _avfkam_protocol as protocol
from ._convergence import (
    AVFKAM_MAX_VALIDATION_ROWS,
    auto_learning_rate,
    check_every,
    divergence_error,
    resolve_early_stopping,
    split_seed,
    warn_not_converged,
)
from ._vertical_features import federated_decision, make_party_states, party_name

__all__ = []


class _AVFKAMFitMixin:
    """Parameter and input checks, convergence reports and federated scores
    of :class:`AVFKAMRanker`."""

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

    def _timing_dependent(self):
        # Only several concurrent loops make the result depend on timing.
        active = getattr(self.partition, "active_parties", (0,))
        # (a malformed value is refused by the partition at fit time)
        n_active = len(active) if hasattr(active, "__len__") else 1
        return bool(self.asynchronous) and n_active > 1

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

    def _validation_split(self, y_signed):
        """``(training rows, held-out rows)`` or ``None`` (no early stopping).

        Stratified by label: only the active parties, who hold the labels,
        ever learn it (the preprocessing computes the features of every
        row, and training row ids never reach the passive parties).
        """
        if not resolve_early_stopping(self.early_stopping, len(y_signed)):
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
