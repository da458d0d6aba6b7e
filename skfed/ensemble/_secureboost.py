"""SecureBoostClassifier and SecureBoostRegressor (Cheng et al., 2021)."""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
from scipy.special import expit, softmax
from sklearn.base import ClassifierMixin, RegressorMixin, _fit_context
from sklearn.preprocessing import LabelEncoder
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from ..base import check_labels_not_single_class
from .._party_data_fit import party_data_fit_input
from ..federation import PartyData
from ._base import MIN_PASSIVE_ROWS, _BaseSecureBoost
from ._docs import _document

__all__ = ["SecureBoostClassifier", "SecureBoostRegressor"]


@_document
class SecureBoostClassifier(ClassifierMixin, _BaseSecureBoost):
    """Lossless vertical federated gradient boosting (SecureBoost), classifier.

    Columns are split over parties; party 0 (the active party) holds the
    labels. Trees are grown as in XGBoost, with the passive parties'
    gradient histograms computed on Paillier (or Okamoto-Uchiyama)
    ciphertexts. Binary targets use the log-loss, multiclass targets softmax with one tree per class and
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

    _parameter_constraints = {
        **_BaseSecureBoost._parameter_constraints,
        "class_weight": [dict, StrOptions({"balanced"}), None],
        "multi_mode": [StrOptions({"single_output", "multi_output"})],
    }

    def __init__(self, partition=None, *, n_estimators=100, learning_rate=0.3,
                 max_depth=3, max_bins=32, subsample=1.0, goss_top_rate=None,
                 goss_other_rate=0.1,
                 colsample_bytree=1.0, reg_lambda=1.0, gamma=0.0,
                 min_child_weight=1e-3, min_samples_leaf=1,
                 min_passive_rows=MIN_PASSIVE_ROWS, active_only_rounds=0,
                 early_stopping="auto", scoring="loss", validation_fraction=0.1,
                 n_iter_no_change=10, tol=1e-7, class_weight=None,
                 multi_mode="single_output", encryption="paillier",
                 key_size=2048, n_jobs=None, random_state=None, verbose=0):
        super().__init__(
            partition, n_estimators=n_estimators, learning_rate=learning_rate,
            max_depth=max_depth, max_bins=max_bins, subsample=subsample,
            goss_top_rate=goss_top_rate, goss_other_rate=goss_other_rate,
            colsample_bytree=colsample_bytree,
            reg_lambda=reg_lambda, gamma=gamma, min_child_weight=min_child_weight,
            min_samples_leaf=min_samples_leaf, min_passive_rows=min_passive_rows,
            active_only_rounds=active_only_rounds,
            early_stopping=early_stopping, scoring=scoring,
            validation_fraction=validation_fraction,
            n_iter_no_change=n_iter_no_change, tol=tol,
            encryption=encryption, key_size=key_size, n_jobs=n_jobs,
            random_state=random_state, verbose=verbose)
        self.class_weight = class_weight
        self.multi_mode = multi_mode

    def _loss_name(self):
        return "log_loss_binary" if self.classes_.size == 2 else "log_loss_multinomial"

    def _more_validation(self, y):
        check_classification_targets(y)
        encoder = LabelEncoder().fit(y)
        self.classes_ = encoder.classes_
        check_labels_not_single_class(self.classes_)
        return encoder.transform(y)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the boosted trees with the federated protocol.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            The whole table; each party only ever holds its own columns.
        y : array-like of shape (n_samples,)
            Labels (held by the active party).
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative row weights, held by the active party, which
            multiplies each row's gradient and hessian by its weight (times
            ``class_weight``); they never leave it.

        Returns
        -------
        self : SecureBoostClassifier
        """
        if isinstance(X, PartyData):  # each party's table loaded at its home
            X, y = party_data_fit_input(self, X, y, allow_nan=True,
                                        encode_labels=True)
            check_labels_not_single_class(self.classes_)
        else:
            X, y = validate_data(self, X, y, ensure_all_finite="allow-nan",
                                 accept_sparse=["csr", "csc"],
                                 dtype=np.float64)
            y = self._more_validation(y)
        n_classes = self.classes_.size
        if n_classes == 2:
            return self._fit(X, y.astype(np.float64), self._loss_name(), 1, True,
                             sample_weight)
        return self._fit(X, y, self._loss_name(), n_classes, True, sample_weight)

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
    histograms are computed on Paillier (or Okamoto-Uchiyama) ciphertexts.
    NaN is accepted.

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
    def fit(self, X, y, sample_weight=None):
        """Fit the boosted trees with the federated protocol.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            The whole table; each party only ever holds its own columns.
        y : array-like of shape (n_samples,)
            Target (held by the active party).
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative row weights, held by the active party, which
            multiplies each row's gradient and hessian by its weight; they
            never leave it.

        Returns
        -------
        self : SecureBoostRegressor
        """
        if isinstance(X, PartyData):  # each party's table loaded at its home
            X, y = party_data_fit_input(self, X, y, allow_nan=True)
        else:
            X, y = validate_data(self, X, y, ensure_all_finite="allow-nan",
                                 accept_sparse=["csr", "csc"],
                                 dtype=np.float64, y_numeric=True)
        return self._fit(X, y.astype(np.float64), self._loss_name(), 1, False,
                         sample_weight)

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
