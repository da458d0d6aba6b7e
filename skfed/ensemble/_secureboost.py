"""SecureBoostClassifier and SecureBoostRegressor (Cheng et al., 2021)."""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

from numbers import Integral, Real

import numpy as np
from scipy.special import expit, softmax
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, _fit_context
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import LabelEncoder
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from ..base import FederatedMixin, check_labels_not_single_class, party_seeds
from ._boosting import run_secureboost
from ._docs import _document
from ._loss import LOSSES
from ._packing import GradientLayout
from ._predictor import federated_raw_predict
from ._privacy import SecureBoostPrivacyMixin, is_recording

__all__ = ["SecureBoostClassifier", "SecureBoostRegressor"]


def _party_name(k):
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
        "reg_lambda": [Interval(Real, 0, None, closed="left")],
        "gamma": [Interval(Real, 0, None, closed="left")],
        "min_child_weight": [Interval(Real, 0, None, closed="left")],
        "min_samples_leaf": [Interval(Integral, 1, None, closed="left")],
        "active_only_rounds": [Interval(Integral, 0, None, closed="left")],
        "early_stopping": [StrOptions({"auto"}), "boolean"],
        "validation_fraction": [Interval(Real, 0, 1, closed="neither")],
        "n_iter_no_change": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "partition": [None, Integral, list, object],
        "encryption": [StrOptions({"paillier"}), None],
        "key_size": [Interval(Integral, 128, None, closed="left")],
        "n_jobs": [Integral, None],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __init__(self, *, n_estimators=100, learning_rate=0.3, max_depth=3,
                 max_bins=32, subsample=1.0, reg_lambda=1.0, gamma=0.0,
                 min_child_weight=1e-3, min_samples_leaf=1, active_only_rounds=0,
                 early_stopping="auto", validation_fraction=0.1, n_iter_no_change=10,
                 tol=1e-7, partition=None, encryption="paillier", key_size=2048,
                 n_jobs=None, random_state=None, verbose=0):
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.max_depth = max_depth
        self.max_bins = max_bins
        self.subsample = subsample
        self.reg_lambda = reg_lambda
        self.gamma = gamma
        self.min_child_weight = min_child_weight
        self.min_samples_leaf = min_samples_leaf
        self.active_only_rounds = active_only_rounds
        self.early_stopping = early_stopping
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
        return tags

    # -- fit ----------------------------------------------------------------

    def _fit(self, X, y, loss_name, n_outputs, stratify):
        partition = self._resolve_partition(X)
        if len(partition.active_parties) != 1:
            raise ValueError(
                "SecureBoost has exactly one active party (the label holder); the "
                f"partition names {len(partition.active_parties)}: "
                f"{list(partition.active_parties)}. Use "
                "VerticalPartition(groups, active_parties=0)."
            )
        early_stopping = (X.shape[0] > 10_000 if self.early_stopping == "auto"
                          else bool(self.early_stopping))
        seeds = party_seeds(self.random_state, partition.n_parties + 1)
        # Model randomness only (row sampling, validation split, binning of
        # huge tables), kept so the privacy checks can replay it.
        self._model_seeds = seeds
        X_val = y_val = None
        if early_stopping:
            X, X_val, y, y_val = train_test_split(
                X, y, test_size=self.validation_fraction, random_state=seeds[-1],
                stratify=y if stratify else None)
        # Fail before any party starts if the key cannot hold a row's slots.
        GradientLayout(X.shape[0], self.key_size, self.min_samples_leaf > 1)
        names = [_party_name(k) for k in range(partition.n_parties)]
        active_index = partition.active_parties[0]
        # While messages are recorded (an audit), passive parties note their
        # secret candidate orders so that attacks can be scored.
        audited = is_recording()
        states = {}
        for k, name in enumerate(names):
            columns = partition.columns(k)
            state = {"name": name, "seed": seeds[k], "X": X[:, columns],
                     "columns": columns, "datasets": {},
                     "audit_log": [] if audited and k != active_index else None}
            if X_val is not None:
                state["datasets"]["val"] = X_val[:, columns]
            if k == active_index:
                state.update(
                    y=y, y_val=y_val, loss=LOSSES[loss_name](), n_outputs=n_outputs,
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
            "n_outputs": n_outputs, "n_iter_no_change": self.n_iter_no_change,
            "tol": self.tol,
        }
        with self._federation(states) as fed:
            result = run_secureboost(fed, names, names[active_index], params,
                                     early_stopping, self.verbose, type(self).__name__)
        self._trees = result["trees"]
        self._records = result["records"]
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
        return self

    def _set_importances(self, partition, active_index):
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

    # -- federated inference ---------------------------------------------------

    def _raw_predict(self, X, staged=False):
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, ensure_all_finite="allow-nan",
                          dtype=np.float64)
        partition = self.partition_
        names = [_party_name(k) for k in range(partition.n_parties)]
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


@_document
class SecureBoostClassifier(ClassifierMixin, _BaseSecureBoost):
    """Lossless vertical federated gradient boosting (SecureBoost), classifier.

    Columns are split over parties; party 0 (the active party) holds the
    labels. Trees are grown as in XGBoost, with the passive parties'
    gradient histograms computed on Paillier ciphertexts. Binary targets use
    the log-loss, multiclass targets softmax with one tree per class and
    round. NaN is accepted (own bin, learned default direction).

    Parameters
    ----------
    %(secureboost_parameters)s

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.

    %(secureboost_attributes)s

    See Also
    --------
    SecureBoostRegressor : The same protocol with the squared error.
    sklearn.ensemble.HistGradientBoostingClassifier : Centralized counterpart.

    Notes
    -----
    %(secureboost_notes)s

    References
    ----------
    %(secureboost_references)s

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from skfed.ensemble import SecureBoostClassifier
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> clf = SecureBoostClassifier(n_estimators=5, key_size=512, random_state=0)
    >>> clf.fit(X[:150], y[:150]).score(X[150:300], y[150:300]) > 0.85
    True
    """

    def _loss_name(self):
        return "log_loss_binary" if self.classes_.size == 2 else "log_loss_multinomial"

    def _more_validation(self, y):
        check_classification_targets(y)
        encoder = LabelEncoder().fit(y)
        self.classes_ = encoder.classes_
        check_labels_not_single_class(self.classes_)
        return encoder.transform(y)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Fit the boosted trees with the federated protocol.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            The whole table; each party only ever holds its own columns.
        y : array-like of shape (n_samples,)
            Labels (held by the active party).

        Returns
        -------
        self : SecureBoostClassifier
        """
        X, y = validate_data(self, X, y, ensure_all_finite="allow-nan",
                             dtype=np.float64)
        y = self._more_validation(y)
        n_classes = self.classes_.size
        if n_classes == 2:
            return self._fit(X, y.astype(np.float64), self._loss_name(), 1, True)
        return self._fit(X, y, self._loss_name(), n_classes, True)

    def decision_function(self, X):
        """Raw scores: log-odds (binary) or per-class logits.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            New rows; every party evaluates the nodes it owns on its own
            columns (missing values allowed).

        Returns
        -------
        scores : ndarray of shape (n_samples,) or (n_samples, n_classes)
        """
        raw = self._raw_predict(X)
        return raw[:, 0] if raw.shape[1] == 1 else raw

    def predict_proba(self, X):
        """Class probabilities.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            New rows; every party evaluates the nodes it owns on its own
            columns (missing values allowed).

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
        """
        raw = self._raw_predict(X)
        if raw.shape[1] == 1:
            p = expit(raw[:, 0])
            return np.column_stack([1 - p, p])
        return softmax(raw, axis=1)

    def predict(self, X):
        """Most probable class of each row.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            New rows; every party evaluates the nodes it owns on its own
            columns (missing values allowed).

        Returns
        -------
        y : ndarray of shape (n_samples,)
        """
        check_is_fitted(self)
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]

    def staged_decision_function(self, X):
        """Raw scores after each round (one federated inference for all rounds).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            New rows; every party evaluates the nodes it owns on its own
            columns (missing values allowed).

        Yields
        ------
        scores : ndarray of shape (n_samples,) or (n_samples, n_classes)
        """
        for raw in self._raw_predict(X, staged=True):
            yield raw[:, 0] if raw.shape[1] == 1 else raw

    def staged_predict_proba(self, X):
        """Class probabilities after each round.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            New rows; every party evaluates the nodes it owns on its own
            columns (missing values allowed).

        Yields
        ------
        proba : ndarray of shape (n_samples, n_classes)
        """
        for raw in self._raw_predict(X, staged=True):
            if raw.shape[1] == 1:
                p = expit(raw[:, 0])
                yield np.column_stack([1 - p, p])
            else:
                yield softmax(raw, axis=1)

    def staged_predict(self, X):
        """Predicted classes after each round.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            New rows; every party evaluates the nodes it owns on its own
            columns (missing values allowed).

        Yields
        ------
        y : ndarray of shape (n_samples,)
        """
        for proba in self.staged_predict_proba(X):
            yield self.classes_[np.argmax(proba, axis=1)]


@_document
class SecureBoostRegressor(RegressorMixin, _BaseSecureBoost):
    """Lossless vertical federated gradient boosting (SecureBoost), regressor.

    Columns are split over parties; party 0 (the active party) holds the
    target. Trees minimise the squared error; the passive parties' gradient
    histograms are computed on Paillier ciphertexts. NaN is accepted.

    Parameters
    ----------
    %(secureboost_parameters)s

    Attributes
    ----------
    %(secureboost_attributes)s

    See Also
    --------
    SecureBoostClassifier : The same protocol for classification.
    sklearn.ensemble.HistGradientBoostingRegressor : Centralized counterpart.

    Notes
    -----
    %(secureboost_notes)s

    With the squared error every hessian is 1, so hessian sums are row
    counts: the active party learns how many of a node's rows fall left of
    each (anonymous) candidate, as in the paper.

    References
    ----------
    %(secureboost_references)s

    Examples
    --------
    >>> from sklearn.datasets import load_diabetes
    >>> from skfed.ensemble import SecureBoostRegressor
    >>> X, y = load_diabetes(return_X_y=True)
    >>> reg = SecureBoostRegressor(n_estimators=5, key_size=512, random_state=0)
    >>> reg.fit(X[:150], y[:150]).score(X[300:], y[300:]) > 0.2
    True
    """

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Fit the boosted trees with the federated protocol.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            The whole table; each party only ever holds its own columns.
        y : array-like of shape (n_samples,)
            Target (held by the active party).

        Returns
        -------
        self : SecureBoostRegressor
        """
        X, y = validate_data(self, X, y, ensure_all_finite="allow-nan",
                             dtype=np.float64, y_numeric=True)
        return self._fit(X, y.astype(np.float64), self._loss_name(), 1, False)

    def _loss_name(self):
        return "squared_error"

    def predict(self, X):
        """Predicted target of each row.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            New rows; every party evaluates the nodes it owns on its own
            columns (missing values allowed).

        Returns
        -------
        y : ndarray of shape (n_samples,)
        """
        return self._raw_predict(X)[:, 0]

    def staged_predict(self, X):
        """Predicted target after each round (one federated inference).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            New rows; every party evaluates the nodes it owns on its own
            columns (missing values allowed).

        Yields
        ------
        y : ndarray of shape (n_samples,)
        """
        for raw in self._raw_predict(X, staged=True):
            yield raw[:, 0]
