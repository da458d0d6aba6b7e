"""Federated doubly stochastic kernel learning (FDSKL) on vertically split data.

The estimators validate the input, set up one party per column group and
run the protocol of :mod:`._fdskl_protocol` (Algorithm 1 of the paper);
prediction is the federated evaluation of Algorithm 2 on new rows
(:func:`._vertical_features.federated_decision`).
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, _fit_context
from sklearn.preprocessing import LabelBinarizer
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data
from threadpoolctl import threadpool_limits

from .._docstrings import fill_doc
from ..base import FederatedMixin, check_labels_not_single_class, party_seeds
from ..losses import LogisticLoss
from ..partition import VerticalPartition
from ._fdskl_protocol import (
    federated_gamma,
    federated_scores,
    owner_capacity,
    setup_party,
    train,
)
from ._vertical_features import make_party_states, party_name

__all__ = ["FDSKLClassifier", "FDSKLRegressor"]


class _BaseFDSKL(FederatedMixin, BaseEstimator):
    """What the FDSKL classifier and regressor share: the federated fit."""

    _partition_kind = "vertical"

    _parameter_constraints = {
        "partition": [None, Interval(Integral, 1, None, closed="left"), list,
                      tuple, VerticalPartition],
        "kernel": [StrOptions({"rbf", "laplacian"})],
        "gamma": [StrOptions({"scale"}), Interval(Real, 0, None, closed="neither")],
        "alpha": [Interval(Real, 0, None, closed="left")],
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        "n_components_per_iter": [Interval(Integral, 1, None, closed="left")],
        "cache_size": [Interval(Real, 0, None, closed="left")],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __init__(self, partition, *, loss, kernel, gamma, alpha, learning_rate,
                 max_iter, batch_size, n_components_per_iter, cache_size,
                 random_state, verbose):
        self.partition = partition
        self.loss = loss
        self.kernel = kernel
        self.gamma = gamma
        self.alpha = alpha
        self.learning_rate = learning_rate
        self.max_iter = max_iter
        self.batch_size = batch_size
        self.n_components_per_iter = n_components_per_iter
        self.cache_size = cache_size
        self.random_state = random_state
        self.verbose = verbose

    def _check_alpha(self):
        if self.learning_rate * self.alpha >= 1:
            raise ValueError(
                f"learning_rate * alpha = {self.learning_rate * self.alpha:g} must be "
                "below 1: every step multiplies the old coefficients by "
                "(1 - learning_rate * alpha). Lower alpha or learning_rate.")

    def _fit_federated(self, X, Y):
        """Run FDSKL on ``X`` with the encoded targets ``Y`` (n x outputs)."""
        self._check_alpha()
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
        m = self.n_components_per_iter
        capacity = max(owner_capacity(k, len(owners), self.max_iter, m)
                       for k in range(len(owners)))
        n_cache_rows = int(min(n_samples, self.cache_size * 2**20 // (8 * capacity)))
        config = dict(
            names=names, owners=owners, n_samples=n_samples,
            n_cache_rows=n_cache_rows, n_outputs=n_outputs,
            max_iter=self.max_iter, m=m, loss=self._loss_name(),
            sampling_seeds=[[sampling_seed, k] for k in range(len(owners))],
        )
        states = make_party_states(partition, X, Y, basis_seed, offset_seeds,
                                   self.kernel, None)
        # Party threads call BLAS concurrently; a multi-threaded BLAS in each
        # of them oversubscribes the cores and can be 10x slower.
        with threadpool_limits(limits=1, user_api="blas"), \
                self._federation(states) as fed:
            fed.gather(fed[p].call(setup_party, config) for p in names)
            self.gamma_ = federated_gamma(fed, names, owners[0], self.gamma)
            self.n_iter_ = train(
                fed, names, owners, max_iter=self.max_iter,
                batch_size=min(self.batch_size, n_samples), m=m,
                learning_rate=self.learning_rate, alpha=self.alpha,
                verbose=self.verbose)
            # Each party keeps its own store; the estimator object is where
            # this simulation files them (it stands for all parties at once).
            stores = fed.gather(fed[p].call(_get_store) for p in names)
        self.coef_stores_ = stores
        self.n_components_ = self.n_iter_ * m
        self._basis_seed = basis_seed
        self._offset_seeds = offset_seeds
        return self

    def _decision(self, X):
        """Scores of new rows by the federated evaluation (Algorithm 2)."""
        check_is_fitted(self)
        X = validate_data(self, X, reset=False)
        partition = self.partition_
        names = [party_name(k) for k in range(partition.n_parties)]
        receiver = names[partition.active_parties[0]]
        states = make_party_states(partition, X, None, self._basis_seed,
                                   self._offset_seeds, self.kernel, self.gamma_,
                                   stores=self.coef_stores_)
        with threadpool_limits(limits=1, user_api="blas"), \
                self._federation(states, record=False) as fed:
            return federated_scores(fed, names, receiver, X.shape[0],
                                      self._n_outputs, self._basis_seed)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = False
        return tags


def _get_store(state):
    return state.store


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

    learning_rate : float, default={lr}
        The constant step size ``gamma`` of Algorithm 1 (the paper uses a
        constant rate). A step moves ``f`` by
        ``-learning_rate * mean_i L'(f(x_i), y_i) k(x_i, .)`` with ``|k| <= 1``;
        the default suits standardized data.{lr_note}

    max_iter : int, default={max_iter}
        Number of steps of Algorithm 1 (there is no early stopping: the loop
        runs exactly ``max_iter`` steps, as the paper's).

    batch_size : int, default={batch}
        Rows per step (capped at the number of samples). The paper's loop is
        ``batch_size=1``.

    n_components_per_iter : int, default={m}
        Fresh random features per step; the model ends with
        ``max_iter * n_components_per_iter`` of them. The paper's loop is 1.

    cache_size : float, default=200
        Megabytes each coefficient holder may use to keep the random features
        of training rows it has received (the paper's "locally saved"
        values). Rows past the budget are recomputed by the masked sums every
        time they are drawn; the model is the same either way.
"""


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

    %(random_state)s

    %(verbose)s

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The class labels.

    n_iter_ : int
        Number of steps run.

    n_components_ : int
        Number of random features in the model.

    gamma_ : float
        The kernel coefficient used (``"scale"`` resolved).

    coef_stores_ : list of CoefficientStore or None
        Per party, the coefficients it created (``None`` for passive parties);
        one column per output (one output for two classes, one per class
        otherwise).

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
    Protocol of one step (Algorithm 1), with ``B = batch_size`` rows and
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

    Dependence on the split: the phase ``b_j`` of feature ``j`` is the
    private offset of the party ``l'_j`` whose offset is not removed
    (Lemma 1), so two fits that differ only in how the columns are grouped
    over the same number of parties give the same model up to floating
    point, while a different number of parties gives other (identically
    distributed) phases and so a slightly different model. Exact
    independence would need a phase known to some party outside ``l'_j``,
    which would let the receiver unmask ``omega_G^T x_G``.

    What each party learns: the passive parties receive the minibatch row
    indices, the feature ids, partial sums of masked projections and of
    offsets, never labels, raw columns or coefficients. Because a feature's
    offset is the same for every row, a party receiving masked values of
    several rows learns their differences ``omega_G^T (x_i - x_k)_G``; the
    paper's guarantee concerns single values, and it asks for normalized
    data (Section 3).

    Cost: with the locally saved features, each (row, feature) pair goes
    through Algorithm 3 once; the plain loop recomputes every earlier
    feature of each drawn row, ``O(t^2)`` work and traffic after ``t`` steps.

    References
    ----------
    .. [1] B. Gu, Z. Dang, X. Li and H. Huang, "Federated Doubly Stochastic
       Kernel Learning for Vertically Partitioned Data", KDD 2020.

    Examples
    --------
    >>> from sklearn.datasets import make_moons
    >>> from skfed.kernel_methods import FDSKLClassifier
    >>> X, y = make_moons(200, noise=0.1, random_state=0)
    >>> clf = FDSKLClassifier(partition=2, max_iter=40, random_state=0).fit(X, y)
    >>> bool(clf.score(X, y) > 0.9)
    True
    """

    _parameter_constraints = {
        **_BaseFDSKL._parameter_constraints,
        "loss": [StrOptions({"logistic", "smooth_hinge", "squared"})],
    }

    def __init__(self, partition=None, *, loss="logistic", kernel="rbf",
                 gamma="scale", alpha=1e-4, learning_rate=16.0, max_iter=500,
                 batch_size=256, n_components_per_iter=32, cache_size=200.0,
                 random_state=None, verbose=0):
        super().__init__(
            partition, loss=loss, kernel=kernel, gamma=gamma, alpha=alpha,
            learning_rate=learning_rate, max_iter=max_iter, batch_size=batch_size,
            n_components_per_iter=n_components_per_iter, cache_size=cache_size,
            random_state=random_state, verbose=verbose)

    def _loss_name(self):
        return self.loss

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Fit the model by running FDSKL between the parties.

        Parameters
        ----------
        X : {array-like, DataFrame} of shape (n_samples, n_features)
            The whole table; each party gets only its columns.

        y : array-like of shape (n_samples,)
            Labels, held by the active party (or parties).

        Returns
        -------
        self : object
        """
        X, y = validate_data(self, X, y, dtype=np.float64)
        check_classification_targets(y)
        self._binarizer = LabelBinarizer(neg_label=-1, pos_label=1).fit(y)
        self.classes_ = self._binarizer.classes_
        check_labels_not_single_class(self.classes_)
        Y = self._binarizer.transform(y).astype(float)
        self._n_outputs = Y.shape[1]
        return self._fit_federated(X, Y)

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

    %(verbose)s

    Attributes
    ----------
    n_iter_ : int
        Number of steps run.

    n_components_ : int
        Number of random features in the model.

    gamma_ : float
        The kernel coefficient used (``"scale"`` resolved).

    coef_stores_ : list of CoefficientStore or None
        Per party, the coefficients it created (``None`` for passive parties).

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
    >>> reg = FDSKLRegressor(partition=2, max_iter=40, random_state=0).fit(X, y)
    >>> bool(reg.score(X, y) > 0.9)
    True
    """

    _parameter_constraints = {
        **_BaseFDSKL._parameter_constraints,
        "loss": [StrOptions({"squared"})],
    }

    def __init__(self, partition=None, *, loss="squared", kernel="rbf",
                 gamma="scale", alpha=1e-4, learning_rate=2.0, max_iter=500,
                 batch_size=256, n_components_per_iter=32, cache_size=200.0,
                 random_state=None, verbose=0):
        super().__init__(
            partition, loss=loss, kernel=kernel, gamma=gamma, alpha=alpha,
            learning_rate=learning_rate, max_iter=max_iter, batch_size=batch_size,
            n_components_per_iter=n_components_per_iter, cache_size=cache_size,
            random_state=random_state, verbose=verbose)

    def _loss_name(self):
        return self.loss

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Fit the model by running FDSKL between the parties.

        Parameters
        ----------
        X : {array-like, DataFrame} of shape (n_samples, n_features)
            The whole table; each party gets only its columns.

        y : array-like of shape (n_samples,)
            Targets, held by the active party (or parties).

        Returns
        -------
        self : object
        """
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=True)
        y = y.astype(float)
        self._y_mean = float(y.mean())
        scale = float(y.std())
        self._y_scale = scale if scale > 0 else 1.0
        Y = ((y - self._y_mean) / self._y_scale)[:, None]
        self._n_outputs = 1
        return self._fit_federated(X, Y)

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


def _expand_shared_doc(cls, loss_options, loss_default, loss_note="", lr_note=""):
    defaults = cls().get_params()
    text = _SHARED_DOC.format(
        loss_options=loss_options, loss_default=loss_default, loss_note=loss_note,
        lr=defaults["learning_rate"], lr_note=lr_note,
        max_iter=defaults["max_iter"], batch=defaults["batch_size"],
        m=defaults["n_components_per_iter"]).strip("\n")
    cls.__doc__ = cls.__doc__.replace("__SHARED__", text)


_expand_shared_doc(
    FDSKLClassifier, '{"logistic", "smooth_hinge", "squared"}', "logistic",
    " Labels are coded ``-1``/``+1`` (one-vs-rest for more than two classes);"
    "\n        only ``\"logistic\"`` gives ``predict_proba``.")
_expand_shared_doc(
    FDSKLRegressor, '{"squared"}', "squared",
    lr_note="\n        The squared loss curves four times as much as the logistic loss,\n"
    "        hence a smaller default than the classifier's.")
