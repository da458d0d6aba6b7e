"""Federated doubly stochastic kernel learning (FDSKL) on vertically split data.

The public estimators: they validate the input and encode the targets; the
federated fit and prediction live in :mod:`._fdskl_base`, the protocol in
:mod:`._fdskl_protocol` (Algorithm 1 of the paper, and Algorithm 2 on new
rows for prediction).
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
from sklearn.base import ClassifierMixin, RegressorMixin, _fit_context
from sklearn.preprocessing import LabelBinarizer
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.metaestimators import available_if
from sklearn.utils.class_weight import compute_sample_weight
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import validate_data

from .._docstrings import fill_doc
from .. import _party_data_fit as party_data
from ..federation import PartyData
from ..base import check_class_weight, check_labels_not_single_class
from ..losses import LogisticLoss
from ._fdskl_base import _BaseFDSKL
from ._fdskl_docs import expand_shared_doc

__all__ = ["FDSKLClassifier", "FDSKLRegressor"]


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
