"""What SecureBoostClassifier and SecureBoostRegressor share: fit and predict.

``_BaseSecureBoost._fit`` lays out each party's private state (its columns;
for the active party also the labels, the sample weights and the loss) and
hands it to the driver :func:`~._protocol.run_secureboost`; the protocol
itself lives in the private modules next to this one.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.model_selection import train_test_split
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import (
    _check_sample_weight,
    check_is_fitted,
    validate_data,
)

from .._party_data_fit import party_data_predict_input
from ..base import FederatedMixin, check_class_weight, party_seeds
from ..federation import PartyData
from ..federation._fingerprint import new_fingerprint
from ..federation._remote import RemoteValue
from ._protocol import run_secureboost, weighted_row_bound
from ._contract import MIN_PASSIVE_ROWS
from ._loss import LOSSES
from ._packing import GradientLayout
from ._predictor import federated_raw_predict
from ._privacy import SecureBoostPrivacyMixin, is_recording
from ._scoring import Scorer
from ._small_nodes import warn_if_withheld

__all__ = ["_BaseSecureBoost", "party_name", "MIN_PASSIVE_ROWS"]


def party_name(k):
    """Name of party ``k`` in the simulated federation."""
    return f"party{k}"


class _BaseSecureBoost(SecureBoostPrivacyMixin, FederatedMixin, BaseEstimator):
    """Shared fit/predict machinery (the protocol lives in the private modules)."""

    _partition_kind = "vertical"

    _parameter_constraints = {
        "n_estimators": [Interval(Integral, 1, None, closed="left")],
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "max_depth": [Interval(Integral, 1, None, closed="left")],
        "max_bins": [Interval(Integral, 2, 255, closed="both")],
        "subsample": [Interval(Real, 0, 1, closed="right")],
        "goss_top_rate": [Interval(Real, 0, 1, closed="left"), None],
        "goss_other_rate": [Interval(Real, 0, 1, closed="right")],
        "colsample_bytree": [Interval(Real, 0, 1, closed="right")],
        "reg_lambda": [Interval(Real, 0, None, closed="left")],
        "gamma": [Interval(Real, 0, None, closed="left")],
        "min_child_weight": [Interval(Real, 0, None, closed="left")],
        "min_samples_leaf": [Interval(Integral, 1, None, closed="left")],
        "min_passive_rows": [Interval(Integral, 0, None, closed="left"), None],
        "active_only_rounds": [Interval(Integral, 0, None, closed="left")],
        "early_stopping": [StrOptions({"auto"}), "boolean"],
        "scoring": [str, callable, None],
        "validation_fraction": [Interval(Real, 0, 1, closed="neither"), None],
        "n_iter_no_change": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "partition": [None, Integral, list, object],
        "encryption": [StrOptions({"paillier", "ou"}), None],
        "key_size": [Interval(Integral, 128, None, closed="left")],
        "n_jobs": [Integral, None],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __init__(self, partition=None, *, n_estimators=100, learning_rate=0.3,
                 max_depth=3, max_bins=32, subsample=1.0, goss_top_rate=None,
                 goss_other_rate=0.1,
                 colsample_bytree=1.0, reg_lambda=1.0, gamma=0.0,
                 min_child_weight=1e-3, min_samples_leaf=1,
                 min_passive_rows=MIN_PASSIVE_ROWS, active_only_rounds=0,
                 early_stopping="auto", scoring="loss", validation_fraction=0.1,
                 n_iter_no_change=10, tol=1e-7, encryption="paillier", key_size=2048,
                 n_jobs=None, random_state=None, verbose=0):
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.max_depth = max_depth
        self.max_bins = max_bins
        self.subsample = subsample
        self.goss_top_rate = goss_top_rate
        self.goss_other_rate = goss_other_rate
        self.colsample_bytree = colsample_bytree
        self.reg_lambda = reg_lambda
        self.gamma = gamma
        self.min_child_weight = min_child_weight
        self.min_samples_leaf = min_samples_leaf
        self.min_passive_rows = min_passive_rows
        self.active_only_rounds = active_only_rounds
        self.early_stopping = early_stopping
        self.scoring = scoring
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.tol = tol
        self.partition = partition
        self.encryption = encryption
        self.key_size = key_size
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.input_tags.sparse = True  # each party bins its block column by column
        return tags

    _accepts_party_data = True

    def _early_stopping_on(self, n_rows):
        """``early_stopping`` resolved: ``"auto"`` is on above 10,000 rows."""
        if self.early_stopping == "auto":
            return n_rows > 10_000
        return bool(self.early_stopping)

    def _held_out_in_driver(self, n_rows):
        # the validation rows are cut from the table, stratified by label
        if self.validation_fraction is None:
            return False
        if n_rows is None:
            return self.early_stopping is True
        return self._early_stopping_on(n_rows)

    # -- weights (the label holder's) -------------------------------------------

    def _final_sample_weight(self, X, y, sample_weight):
        """Row weights as the active party applies them (None: unweighted).

        ``sample_weight`` times, for a classifier, the ``class_weight`` of
        each row's class (computed from the labels, so by the label holder).
        """
        if sample_weight is not None:
            sample_weight = _check_sample_weight(sample_weight, X, dtype=np.float64,
                                                 ensure_non_negative=True)
        class_weight = getattr(self, "class_weight", None)
        if class_weight is None:
            return sample_weight
        check_class_weight(class_weight)
        from sklearn.utils.class_weight import compute_sample_weight

        # ``y`` holds class codes here; a dict names the original labels.
        labels = self.classes_[np.asarray(y).astype(np.intp)]
        expanded = compute_sample_weight(class_weight, labels)
        return expanded if sample_weight is None else sample_weight * expanded

    def _goss(self):
        """``(top_rate, other_rate)`` of GOSS, or None for a uniform sample."""
        if self.goss_top_rate is None:
            return None
        if self.subsample < 1.0:
            raise ValueError("GOSS (goss_top_rate) replaces subsample: set "
                             "subsample=1.0 or goss_top_rate=None.")
        if self.goss_top_rate + self.goss_other_rate > 1.0:
            raise ValueError(
                "goss_top_rate + goss_other_rate must be at most 1; got "
                f"{self.goss_top_rate} + {self.goss_other_rate}.")
        return float(self.goss_top_rate), float(self.goss_other_rate)

    # -- scores (the label holder's) ------------------------------------------

    def _uses_scorer(self):
        return self.scoring != "loss"

    def _make_scorer(self, loss_name, seed):
        """The active party's :class:`~._scoring.Scorer` for ``scoring``.

        ``"loss"`` scores with the negative loss; ``None`` uses the
        estimator's default ``score`` (accuracy, R^2), any other value is
        resolved by :func:`sklearn.metrics.check_scoring`.
        """
        from sklearn.metrics import check_scoring, get_scorer

        if self.scoring == "loss":
            scorer = None
        elif self.scoring is None:
            scorer = get_scorer("accuracy" if hasattr(self, "classes_") else "r2")
        else:
            scorer = check_scoring(self, self.scoring)
        return Scorer(scorer, LOSSES[loss_name](), getattr(self, "classes_", None),
                      seed)

    # -- fit ----------------------------------------------------------------

    def _fit(self, X, y, loss_name, n_outputs, stratify, sample_weight=None):
        partition = self._resolve_partition(X)
        if len(partition.active_parties) != 1:
            raise ValueError(
                "SecureBoost has exactly one active party (the label holder); the "
                f"partition names {len(partition.active_parties)}: "
                f"{list(partition.active_parties)}. Use "
                "VerticalPartition(groups, active_parties=0)."
            )
        weights = self._final_sample_weight(X, y, sample_weight)
        multi_output = (n_outputs > 1
                        and getattr(self, "multi_mode", None) == "multi_output")
        early_stopping = self._early_stopping_on(X.shape[0])
        seeds = party_seeds(self.random_state, partition.n_parties + 1)
        # Model randomness only (row sampling, validation split, binning of
        # huge tables), kept so the privacy checks can replay it.
        self._model_seeds = seeds
        X_val = y_val = w_val = None
        if early_stopping and self.validation_fraction is not None:
            arrays = [X, y] + ([] if weights is None else [weights])
            parts = train_test_split(*arrays, test_size=self.validation_fraction,
                                     random_state=seeds[-1],
                                     stratify=y if stratify else None)
            X, X_val, y, y_val = parts[:4]
            if weights is not None:
                weights, w_val = parts[4:]
        if weights is not None and weights.sum() >= 2.0**30:
            raise ValueError(
                f"sample_weight (times class_weight) sums to {weights.sum():.3g}; "
                "exact fixed-point sums need a total below 2**30. Divide "
                "sample_weight by a constant (and reg_lambda and "
                "min_child_weight by the same constant to keep the same model).")
        # Fail before any party starts if the key cannot hold a row's slots.
        GradientLayout(weighted_row_bound(X.shape[0], weights), self.key_size,
                       self.min_samples_leaf > 1, scheme=self.encryption or "paillier")
        names = [party_name(k) for k in range(partition.n_parties)]
        active_index = partition.active_parties[0]
        # While messages are recorded (an audit), passive parties note their
        # secret candidate orders so that attacks can be scored.
        audited = is_recording()
        states = {}
        for k, name in enumerate(names):
            columns = partition.columns(k)
            state = {"name": name, "seed": seeds[k], "X": X[:, columns],
                     "columns": columns, "datasets": {},
                     "colsample": self.colsample_bytree,
                     "audit_log": [] if audited else None,
                     # A public hyper-parameter: the passive parties enforce it.
                     "min_passive_rows": int(self.min_passive_rows or 0)}
            if X_val is not None:
                state["datasets"]["val"] = X_val[:, columns]
            if k == active_index:
                # The labels and the weights stay on the active party: they
                # scale g and h there, and nothing else ever reads them.
                state.update(
                    y=y, y_val=y_val, w=weights, w_val=w_val,
                    loss=LOSSES[loss_name](), n_outputs=n_outputs,
                    goss=self._goss(), multi_output=multi_output,
                    scorer=self._make_scorer(loss_name, seeds[-1]),
                    key_size=self.key_size, n_jobs=self.n_jobs,
                    party_index={n: i for i, n in enumerate(names)})
            states[name] = state
        params = {
            "n_estimators": self.n_estimators, "learning_rate": self.learning_rate,
            "max_depth": self.max_depth, "max_bins": self.max_bins,
            "subsample": self.subsample, "reg_lambda": self.reg_lambda,
            "gamma": self.gamma, "min_child_weight": self.min_child_weight,
            "min_samples_leaf": self.min_samples_leaf,
            "active_only_rounds": self.active_only_rounds, "n_jobs": self.n_jobs,
            "key_size": self.key_size, "plaintext": self.encryption is None,
            "scheme": self.encryption or "paillier",
            "n_outputs": n_outputs, "n_iter_no_change": self.n_iter_no_change,
            "tol": self.tol, "validation": X_val is not None,
            "multi_output": multi_output,
            "score_name": ("score" if self._uses_scorer() else "-loss"),
        }
        with self._federation(states) as fed:
            result = run_secureboost(fed, names, names[active_index], params,
                                     early_stopping, self.verbose, type(self).__name__)
        self._trees = result["trees"]
        self._records = result["records"]
        # Names this fit in its exported shares (never shapes the model).
        self._model_fingerprint = new_fingerprint()
        if audited:
            self._audit_log = result["audit_logs"]
        elif hasattr(self, "_audit_log"):
            del self._audit_log
        self._baseline = result["baseline"]
        self.n_trees_per_iteration_ = n_outputs
        self.n_iter_ = len(self._trees) // n_outputs
        self.train_score_ = result["train_score"]
        self.validation_score_ = result["validation_score"]
        self.do_early_stopping_ = early_stopping
        self._set_importances(partition, active_index)
        warn_if_withheld(self, result["passive_coverage"])
        return self

    def _set_importances(self, partition, active_index):
        if any(isinstance(r, RemoteValue) for r in self._records):
            # Fitted on PartyData: the lookup tables stay with their parties.
            self.feature_importances_ = np.full(self.n_features_in_, np.nan)
            self.gain_importances_ = self.feature_importances_.copy()
            return
        counts = np.zeros(self.n_features_in_)
        for k, records in enumerate(self._records):
            columns = partition.columns(k)
            for feature, _, _ in records:
                counts[columns[feature]] += 1
        total = counts.sum()
        self.feature_importances_ = counts / total if total > 0 else counts
        gains = np.full(self.n_features_in_, np.nan)
        gains[partition.columns(active_index)] = 0.0
        for _, tree in self._trees:
            own = tree.feature >= 0
            np.add.at(gains, tree.feature[own], tree.gain[own])
        self.gain_importances_ = gains

    # -- shares ------------------------------------------------------------------

    def export_shares(self):
        """Each party's share of the fitted model, as an object of its own.

        Returns
        -------
        shares : list
            By party index: a :class:`~skfed.ensemble.SecureBoostActiveShare`
            for the label holder (trees, owners, record ids, leaf weights,
            its own lookup table), a
            :class:`~skfed.ensemble.SecureBoostPassiveShare` for every other
            party (its lookup table). Each holds numpy arrays only: pickle or
            joblib-dump it and hand it to its party.
        """
        check_is_fitted(self)
        from ._shares import export_shares

        return export_shares(self)

    def consolidate(self):
        """One plaintext model with every party's thresholds (explicit only).

        Every party gives up its lookup table to whoever holds the result,
        so this is never done implicitly. The result predicts exactly as the
        federated model, without any federation.

        Returns
        -------
        model : SecureBoostConsolidated
        """
        from ._shares import consolidate_shares

        return consolidate_shares(self.export_shares())

    # -- federated inference ---------------------------------------------------

    def _raw_predict(self, X, staged=False):
        check_is_fitted(self)
        if isinstance(X, PartyData):  # each party's table loaded at its home
            X = party_data_predict_input(self, X, allow_nan=True)
        else:
            X = validate_data(self, X, reset=False, ensure_all_finite="allow-nan",
                              accept_sparse=["csr", "csc"], dtype=np.float64)
        partition = self.partition_
        names = [party_name(k) for k in range(partition.n_parties)]
        active_index = partition.active_parties[0]
        states = {}
        for k, name in enumerate(names):
            state = {"name": name, "records": self._records[k],
                     "datasets": {"predict": X[:, partition.columns(k)]}}
            if k == active_index:
                state.update(trees=self._trees,
                             party_index={n: i for i, n in enumerate(names)})
            states[name] = state
        with self._federation(states, record=False) as fed:
            raw = federated_raw_predict(fed, names[active_index], names, "predict",
                                        list(range(len(self._trees))),
                                        self.n_trees_per_iteration_, per_tree=staged)
        if not staged:
            return raw + self._baseline
        return self._stages(raw)

    def _stages(self, leaves):
        """Raw predictions after each round, from the per-tree leaf weights."""
        outputs = np.array([k for k, _ in self._trees])
        raw = np.tile(self._baseline, (leaves.shape[0], 1))
        for it in range(self.n_iter_):
            for k in range(self.n_trees_per_iteration_):
                tree = it * self.n_trees_per_iteration_ + k
                raw[:, outputs[tree]] += leaves[:, tree]
            yield raw.copy()
