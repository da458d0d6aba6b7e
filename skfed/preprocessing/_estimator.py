"""The transformers: scikit-learn's preprocessing, fitted by the parties.

Each class subclasses its scikit-learn namesake and replaces ``fit`` only:
the parties compute the fitted statistics by the protocols of
:mod:`._protocol`, on their own rows and columns, and the estimator keeps
scikit-learn's attributes, so ``transform``, ``inverse_transform``,
``get_feature_names_out`` and ``set_output`` are scikit-learn's own and run
locally (a party transforms its own rows with the statistics it received).
``partial_fit`` is not offered: a federated fit is one protocol run.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import warnings
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
import sklearn.impute as _sk_impute
import sklearn.preprocessing as _sk
from sklearn.base import _fit_context
from sklearn.impute import MissingIndicator
from sklearn.impute._base import _safe_min
from sklearn.preprocessing._data import _handle_zeros_in_scale, _is_constant_feature
from sklearn.utils._encode import _unique
from sklearn.utils._mask import _get_mask
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import (FLOAT_DTYPES, _check_sample_weight,
                                      validate_data)

from .._docstrings import fill_doc
from ..base import FederatedMixin
from .._privacy_core import Secret
from ..partition import (HorizontalPartition, HybridPartition,
                         VerticalPartition, resolve_partition)
from . import _attacks, _contract
from ._protocol import (Layout, decode_value, encode_value, fit_any,
                        fit_extremes, fit_given_counts, fit_moments,
                        fit_order_values, fit_value_counts,
                        fit_weighted_percentiles, lerp, percentile_ranks,
                        send_fitted, send_ragged, total_rows)

__all__ = ["StandardScaler", "MinMaxScaler", "MaxAbsScaler", "SimpleImputer",
           "OneHotEncoder", "KBinsDiscretizer"]

_FEDERATED_PARAMETERS = {
    "partition": "no_validation",  # resolved, with clear errors, in fit
    "min_row_holders": [Interval(Integral, 1, None, closed="left")],
}


def _kind_of(spec):
    """The split a partition spec describes (rows unless it names columns)."""
    if isinstance(spec, (VerticalPartition, list, tuple)):
        return "vertical"
    if isinstance(spec, HybridPartition):
        return "hybrid"
    return "horizontal"


class _Shape:
    """Stands for a table whose shape alone the partition needs."""

    def __init__(self, n_samples, n_features):
        self.shape = (n_samples, n_features)


def _as_codes(column):
    """A column as floats for the semantic checks (categories: their codes)."""
    column = np.asarray(column)
    if column.dtype.kind in "biuf":
        return column.astype(float)
    return np.unique([encode_value(v) for v in column.tolist()],
                     return_inverse=True)[1].astype(float)


class _FederatedPreprocessor(FederatedMixin):
    """What the federated transformers share: the partition of any kind,
    the guard on row holders, and the privacy hooks.

    ``partition`` may split rows or columns (or both); ``_partition_kind``
    follows it. After ``fit``: ``partition_`` and ``communication_`` (no
    message at all when every column has one holder).
    """

    @property
    def _partition_kind(self):
        return _kind_of(self.partition)

    @property
    def partial_fit(self):
        raise AttributeError(
            f"{type(self).__name__} has no partial_fit: a federated fit is one "
            "run of the parties' protocol over all their rows. Fit on the "
            "whole table instead.")

    def _layout(self, X, n_features, sample_party):
        """Resolve the partition, check the row holders, return the layout."""
        self.partition_ = resolve_partition(
            self.partition, X, kind=self._partition_kind,
            feature_names=getattr(self, "feature_names_in_", None),
            sample_party=sample_party)
        layout = Layout(self.partition_, n_features)
        holders = layout.row_holders
        if 1 < holders < self.min_row_holders:
            raise ValueError(
                f"The rows of a column are split over {holders} parties, fewer "
                f"than min_row_holders={self.min_row_holders}: each holder "
                "could subtract its own share from the fitted statistics and "
                "learn the sum over the others, which with "
                f"{holders} holders is too few to hide one. Split the rows over "
                f"at least {self.min_row_holders} parties or lower "
                "min_row_holders.")
        return layout

    def _keep_sizes(self, layout):
        # the public sizes of this fit's messages, for the contract's bounds
        self._sizes_ = dict(layout.sizes)

    def _privacy_sizes(self, X):
        return {**dict.fromkeys(_contract.SIZE_NAMES, 0),
                **getattr(self, "_sizes_", {})}

    def _privacy_contract(self):
        return _contract.contract_for(self)

    def _privacy_attacks(self):
        return _attacks.attacks_for(self)

    def _privacy_secrets(self, X, y=None, **fit_params):
        """Each party's private columns and rows (categories as codes, by
        column only)."""
        if hasattr(X, "iloc"):
            X = X.to_numpy()
        elif sp.issparse(X):
            X = X.toarray()
        X = np.asarray(X)
        numeric = X.dtype.kind in "biuf"
        if not numeric:
            X = np.column_stack([_as_codes(X[:, j]) for j in range(X.shape[1])])
        X = X.astype(float)
        layout = Layout(self.partition_, X.shape[1])
        out = []
        for name in layout.names:
            block = layout.block(X, name)
            # a missing value: 0 in a column (which is still compared), and
            # no match at all in a row (an empty row is not a zero vector)
            out.append(Secret(name, "columns", f"columns of {name}",
                              np.nan_to_num(block)))
            # rows of category codes (small integers) would match any short
            # integer vector; categories are compared by column only
            if layout.kind != "vertical" and numeric:
                out.append(Secret(name, "rows", f"rows of {name}", block))
        return out


# -- StandardScaler ---------------------------------------------------------------

@fill_doc
class StandardScaler(_FederatedPreprocessor, _sk.StandardScaler):
    """Standardize features, with the statistics computed by the parties.

    The mean and variance of every column are those of the pooled table,
    computed without pooling it: each holder of a column's rows adds its
    counts, sums and centred sums of squares through secure sums (the server
    decodes totals only); a column held whole by one party (a vertical split)
    is fitted by that party alone, and nothing crosses. ``transform`` is
    :class:`sklearn.preprocessing.StandardScaler`'s, run by each party on its
    own rows.

    Read more in the :ref:`User Guide <preprocessing>`.

    Parameters
    ----------
    %(partition_preprocessing)s

    copy : bool, default=True
        As in :class:`sklearn.preprocessing.StandardScaler`.

    with_mean : bool, default=True
        Center the data (not with sparse input).

    with_std : bool, default=True
        Scale to unit variance.

    %(min_row_holders)s

    Attributes
    ----------
    scale_ : ndarray of shape (n_features,) or None
        Per-column scale, ``sqrt(var_)`` with near-constant columns set to 1.

    mean_ : ndarray of shape (n_features,) or None
        Per-column mean.

    var_ : ndarray of shape (n_features,) or None
        Per-column variance.

    n_samples_seen_ : int or ndarray of shape (n_features,)
        Non-missing values (or their weight) per column; an int when equal.

    n_features_in_ : int

    feature_names_in_ : ndarray of shape (n_features_in_,)
        Only when ``X`` has string column names.

    partition_ : VerticalPartition, HorizontalPartition or HybridPartition

    communication_ : CommunicationSummary
        The messages of ``fit``, by phase: ``"moments: mean/*"`` and
        ``"moments: variance/*"`` (secure sums), ``"moments: fitted"`` (the
        statistics sent to the holders). Empty (no message) on a vertical split.

    See Also
    --------
    sklearn.preprocessing.StandardScaler : The same transformer, fitted on
        one table.
    MinMaxScaler, MaxAbsScaler : Other scalers, from the secure extremes.

    Notes
    -----
    **Protocol.** Two passes over the holders, as scikit-learn's two-pass
    algorithm over the pooled rows (Chan, Golub and LeVeque): the weights
    ``W = sum w`` and sums ``S = sum w x`` of each column's non-missing
    values give the mean ``S / W``, which the server sends back; the
    centred sums ``Q = sum w (x - mean)^2`` and ``C = sum w (x - mean)``
    give ``var = (Q - C^2 / W) / W``. Each sum travels masked in an exact
    multi-limb ring encoding
    (:class:`skfed.federation.secure_sum.ExactSumEncoder`): the total is
    the exact sum of the holders' float64 totals, rounded once, whatever
    the data's units, so the statistics match scikit-learn's on the pooled
    table to float64 rounding (1e-10 is asserted in the tests, far from the
    origin too).

    **What is revealed.** The server learns each column's weight, mean and
    variance (the fitted statistics) and nothing per holder: each upload is
    uniform in the ring (the attack ``local_mean_recovery`` decodes single
    uploads as the server would: relative error near ``1e18`` instead of 0).
    Every holder receives the statistics; with two row holders, each then
    knows the other's count, sum and centred sum of squares (the same attack,
    as a holder: error 0). ``min_row_holders=3`` refuses such a split.

    Examples
    --------
    >>> import numpy as np
    >>> from skfed.partition import HorizontalPartition
    >>> from skfed.preprocessing import StandardScaler
    >>> X = np.array([[0., 10.], [1., 11.], [2., 12.], [3., 13.], [4., 14.],
    ...               [5., 15.]])
    >>> scaler = StandardScaler(partition=HorizontalPartition(3)).fit(X)
    >>> scaler.mean_
    array([ 2.5, 12.5])
    >>> sorted(scaler.communication_.by_phase)[:2]
    ['moments: fitted', 'moments: mean/keys']
    """

    _parameter_constraints = {**_sk.StandardScaler._parameter_constraints,
                              **_FEDERATED_PARAMETERS}

    def __init__(self, *, partition=None, copy=True, with_mean=True,
                 with_std=True, min_row_holders=2):
        super().__init__(copy=copy, with_mean=with_mean, with_std=with_std)
        self.partition = partition
        self.min_row_holders = min_row_holders

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, sample_weight=None, sample_party=None):
        """Compute the mean and standard deviation, federated.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The whole table; each party only ever holds its own block.

        y : None
            Ignored.

        sample_weight : array-like of shape (n_samples,), default=None
            Row weights, held by the holders of each row.

        sample_party : array-like of shape (n_samples,), default=None
            The owner (row group) of every row, instead of the partition's
            rule.

        Returns
        -------
        self : StandardScaler
            Fitted scaler.
        """
        X = validate_data(self, X, accept_sparse=("csr", "csc"),
                          dtype=FLOAT_DTYPES, ensure_all_finite="allow-nan")
        if sp.issparse(X) and self.with_mean:
            raise ValueError(
                "Cannot center sparse matrices: pass `with_mean=False` "
                "instead. See docstring for motivation and alternatives.")
        if sample_weight is not None:
            sample_weight = _check_sample_weight(sample_weight, X, dtype=X.dtype)
        layout = self._layout(X, X.shape[1], sample_party)
        what = ("variance" if self.with_std else
                "mean" if self.with_mean else "count")
        # scikit-learn counts rows, not weights, when it neither centers nor
        # scales dense data
        weights = (None if what == "count" and not sp.issparse(X)
                   else sample_weight)
        with self._federation(layout.states(X, weights)) as fed:
            W, mean, var = fit_moments(fed, layout, X.shape[1], what=what,
                                       phase="moments")
        self._keep_sizes(layout)
        if sample_weight is None:
            seen = np.rint(W).astype(np.int64)
        else:
            seen = W.astype(X.dtype)
        if seen.max() == seen.min():
            seen = seen[0]
        self.n_samples_seen_ = seen
        self.mean_ = mean
        self.var_ = var
        if self.with_std:
            constant = _is_constant_feature(var, mean, seen)
            self.scale_ = _handle_zeros_in_scale(np.sqrt(var), copy=False,
                                                 constant_mask=constant)
        else:
            self.scale_ = None
        return self


# -- MinMaxScaler and MaxAbsScaler -------------------------------------------------

@fill_doc
class MinMaxScaler(_FederatedPreprocessor, _sk.MinMaxScaler):
    """Scale each feature to a range, from the parties' secure extremes.

    The minimum and maximum of every column are those of the pooled table,
    found without any party revealing its own: the server searches the
    maximum's bits four at a time through secure ORs (:mod:`._protocol`),
    learning each column's global minimum and maximum and nothing else.
    ``transform`` is :class:`sklearn.preprocessing.MinMaxScaler`'s.

    Read more in the :ref:`User Guide <preprocessing>`.

    Parameters
    ----------
    %(partition_preprocessing)s

    feature_range : tuple (min, max), default=(0, 1)
        Desired range of transformed data.

    copy : bool, default=True
        As in :class:`sklearn.preprocessing.MinMaxScaler`.

    clip : bool, default=False
        Clip transformed values of held-out data to ``feature_range``.

    %(min_row_holders)s

    Attributes
    ----------
    min_ : ndarray of shape (n_features,)
    scale_ : ndarray of shape (n_features,)
    data_min_ : ndarray of shape (n_features,)
        Per-column minimum over all holders (exact).
    data_max_ : ndarray of shape (n_features,)
        Per-column maximum over all holders (exact).
    data_range_ : ndarray of shape (n_features,)
    n_samples_seen_ : int
        Rows over all holders (a secure sum).
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
    partition_ : partition object
    communication_ : CommunicationSummary
        Phases ``"count/*"``, ``"extremes/*"`` (sixteen secure ORs) and
        ``"extremes: fitted"``.

    See Also
    --------
    sklearn.preprocessing.MinMaxScaler : The same, on one table.
    MaxAbsScaler : Scales by the largest absolute value.

    Notes
    -----
    **Protocol.** Values are mapped to 64-bit keys that sort as the floats
    do; the server finds the largest key (the largest complemented key, for
    the minimum) four bits per round: it sends the bits found so far, each
    holder answers, for the 16 thresholds that extend them, whether it holds
    a key at least that large, and the answers are OR-ed securely (a set
    flag adds a fresh uniform ring element, the total is zero only if no
    flag is set). Sixteen rounds; the extremes are exact (equal to
    scikit-learn's, not merely close).

    **What is revealed.** The server and every holder learn the global
    minimum and maximum of each column (the fitted statistics) and the
    total row count, nothing else: not which holder holds an extreme, nor
    any holder's own extremes. With two row holders, a holder whose own
    extreme is not the global one knows that the other holds it (the attack
    ``local_extreme_recovery`` measures what each party can tell of another's
    extremes: no better than the global ones, which is chance).

    Examples
    --------
    >>> import numpy as np
    >>> from skfed.preprocessing import MinMaxScaler
    >>> X = np.array([[-1., 2.], [-0.5, 6.], [0., 10.], [1., 18.]])
    >>> scaler = MinMaxScaler().fit(X)
    >>> scaler.data_min_, scaler.data_max_
    (array([-1.,  2.]), array([ 1., 18.]))
    >>> scaler.transform([[0., 10.]])
    array([[0.5, 0.5]])
    """

    _parameter_constraints = {**_sk.MinMaxScaler._parameter_constraints,
                              **_FEDERATED_PARAMETERS}

    def __init__(self, feature_range=(0, 1), *, partition=None, copy=True,
                 clip=False, min_row_holders=2):
        super().__init__(feature_range=feature_range, copy=copy, clip=clip)
        self.partition = partition
        self.min_row_holders = min_row_holders

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, sample_party=None):
        """Compute the minimum and maximum of each column, federated.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The whole table; each party only ever holds its own block.

        y : None
            Ignored.

        sample_party : array-like of shape (n_samples,), default=None
            The owner (row group) of every row.

        Returns
        -------
        self : MinMaxScaler
            Fitted scaler.
        """
        low, high = self.feature_range
        if low >= high:
            raise ValueError(
                "Minimum of desired feature range must be smaller than "
                f"maximum. Got {self.feature_range}.")
        if sp.issparse(X):
            raise TypeError("MinMaxScaler does not support sparse input. "
                            "Consider using MaxAbsScaler instead.")
        X = validate_data(self, X, dtype=FLOAT_DTYPES,
                          ensure_all_finite="allow-nan")
        layout = self._layout(X, X.shape[1], sample_party)
        with self._federation(layout.states(X)) as fed:
            n_rows = total_rows(fed, layout)
            data_min, data_max = fit_extremes(fed, layout, X.shape[1],
                                              mode="minmax")
        self._keep_sizes(layout)
        data_min, data_max = data_min.astype(X.dtype), data_max.astype(X.dtype)
        feature_range = np.asarray(self.feature_range, dtype=X.dtype)
        data_range = data_max - data_min
        self.scale_ = ((feature_range[1] - feature_range[0])
                       / _handle_zeros_in_scale(data_range, copy=True))
        self.min_ = feature_range[0] - data_min * self.scale_
        self.data_min_ = data_min
        self.data_max_ = data_max
        self.data_range_ = data_range
        self.n_samples_seen_ = n_rows
        return self


@fill_doc
class MaxAbsScaler(_FederatedPreprocessor, _sk.MaxAbsScaler):
    """Scale each feature by its maximum absolute value, found securely.

    The largest ``|x|`` of every column over all holders, by the secure-OR
    search of :class:`MinMaxScaler` (one search per column instead of two).
    Sparse input is accepted, as by scikit-learn. ``transform`` is
    :class:`sklearn.preprocessing.MaxAbsScaler`'s.

    Read more in the :ref:`User Guide <preprocessing>`.

    Parameters
    ----------
    %(partition_preprocessing)s

    copy : bool, default=True
        As in :class:`sklearn.preprocessing.MaxAbsScaler`.

    %(min_row_holders)s

    Attributes
    ----------
    scale_ : ndarray of shape (n_features,)
    max_abs_ : ndarray of shape (n_features,)
        Per-column maximum absolute value over all holders (exact).
    n_samples_seen_ : int
        Rows over all holders (a secure sum).
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
    partition_ : partition object
    communication_ : CommunicationSummary
        Phases ``"count/*"``, ``"extremes/*"`` and ``"extremes: fitted"``.

    See Also
    --------
    sklearn.preprocessing.MaxAbsScaler : The same, on one table.
    MinMaxScaler : Scales to a range.

    Notes
    -----
    **What is revealed.** Each column's largest absolute value and the
    total row count, to the server and every holder; nothing per holder
    (the attack ``local_extreme_recovery``).

    Examples
    --------
    >>> import numpy as np
    >>> from skfed.preprocessing import MaxAbsScaler
    >>> X = np.array([[1., -4.], [2., 0.], [-3., 2.], [0., 1.]])
    >>> MaxAbsScaler().fit(X).max_abs_
    array([3., 4.])
    """

    _parameter_constraints = {**_sk.MaxAbsScaler._parameter_constraints,
                              **_FEDERATED_PARAMETERS}

    def __init__(self, *, partition=None, copy=True, min_row_holders=2):
        super().__init__(copy=copy)
        self.partition = partition
        self.min_row_holders = min_row_holders

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, sample_party=None):
        """Compute the maximum absolute value of each column, federated.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The whole table; each party only ever holds its own block.

        y : None
            Ignored.

        sample_party : array-like of shape (n_samples,), default=None
            The owner (row group) of every row.

        Returns
        -------
        self : MaxAbsScaler
            Fitted scaler.
        """
        X = validate_data(self, X, accept_sparse=("csr", "csc"),
                          dtype=FLOAT_DTYPES, ensure_all_finite="allow-nan")
        layout = self._layout(X, X.shape[1], sample_party)
        with self._federation(layout.states(X)) as fed:
            n_rows = total_rows(fed, layout)
            _, max_abs = fit_extremes(fed, layout, X.shape[1], mode="maxabs")
        self._keep_sizes(layout)
        self.max_abs_ = max_abs.astype(X.dtype)
        self.scale_ = _handle_zeros_in_scale(self.max_abs_, copy=True)
        self.n_samples_seen_ = n_rows
        return self


# -- SimpleImputer ------------------------------------------------------------------

@fill_doc
class SimpleImputer(_FederatedPreprocessor, _sk_impute.SimpleImputer):
    """Impute missing values with statistics the parties compute together.

    ``strategy="mean"``: secure sums of the non-missing values and their
    counts; ``"median"``: the two middle order statistics, found exactly by
    secure histograms; ``"most_frequent"``: a secure count of the values by
    keyed hashing, which opens only the most frequent ones; ``"constant"``:
    a secure OR of "has a value" per column (to drop the empty ones, as
    scikit-learn does). ``add_indicator`` adds a secure OR of "has a missing
    value" per column. ``transform`` is
    :class:`sklearn.impute.SimpleImputer`'s.

    Read more in the :ref:`User Guide <preprocessing>`.

    Parameters
    ----------
    %(partition_preprocessing)s

    missing_values : int, float, str, np.nan, None or pandas.NA, default=np.nan
        The placeholder for missing values.

    strategy : {"mean", "median", "most_frequent", "constant"}, default="mean"
        The statistic (a callable is not accepted: it would need the
        pooled column).

    fill_value : str or numerical value, default=None
        With ``strategy="constant"``, the value (0 for numbers,
        ``"missing_value"`` for strings by default).

    copy : bool, default=True
        As in :class:`sklearn.impute.SimpleImputer`.

    add_indicator : bool, default=False
        Append a :class:`~sklearn.impute.MissingIndicator` of the columns
        that had missing values at fit (on any holder).

    keep_empty_features : bool, default=False
        Keep columns with no observed value (imputed with 0).

    %(min_row_holders)s

    Attributes
    ----------
    statistics_ : ndarray of shape (n_features,)
        The fill value of every column (NaN for a column without values).

    indicator_ : MissingIndicator or None
        With ``add_indicator``.

    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
    partition_ : partition object
    communication_ : CommunicationSummary
        Phases by strategy: ``"mean: mean/*"``, ``"median: count/*"`` and
        ``"median: search/*"``, ``"mode: *"``, ``"flags/*"``, and
        ``"indicator/*"`` with ``add_indicator``.

    See Also
    --------
    sklearn.impute.SimpleImputer : The same, on one table.

    Notes
    -----
    **What is revealed**, to the server and every holder of a column:
    ``"mean"``: the count and the mean of its values; ``"median"``: the
    count, the median, and the counts of the secure histograms that located
    it (how many values fall in each key sub-range around the middle: a
    histogram of the whole column over at most ``64 * 11`` ranges, never
    per holder); ``"most_frequent"``: the multiset of value counts (how many
    distinct values occur how often, under keyed pseudonyms the server
    cannot invert) and the values tied for the largest count, with their
    count; ``"constant"``: which columns have no value at all. Nothing is
    tied to one holder (the attacks ``local_mean_recovery`` and
    ``local_histogram_recovery``); with two row holders, a holder can
    subtract its own share from what is revealed (``min_row_holders``).

    ``"most_frequent"`` counts values in keyed slots as
    :class:`OneHotEncoder` does: the number of rounds and messages depends
    on the holders' CSPRNG key, the fitted ``statistics_`` never.

    Examples
    --------
    >>> import numpy as np
    >>> from skfed.preprocessing import SimpleImputer
    >>> X = np.array([[1., 7.], [np.nan, 8.], [3., np.nan], [5., 8.]])
    >>> SimpleImputer(strategy="mean").fit(X).statistics_
    array([3.        , 7.66666667])
    >>> SimpleImputer(strategy="most_frequent").fit(X).statistics_
    array([1., 8.])
    """

    _parameter_constraints = {
        **_sk_impute.SimpleImputer._parameter_constraints,
        "strategy": [StrOptions({"mean", "median", "most_frequent", "constant"})],
        **_FEDERATED_PARAMETERS,
    }

    def __init__(self, *, partition=None, missing_values=np.nan,
                 strategy="mean", fill_value=None, copy=True,
                 add_indicator=False, keep_empty_features=False,
                 min_row_holders=2):
        super().__init__(missing_values=missing_values, strategy=strategy,
                         fill_value=fill_value, copy=copy,
                         add_indicator=add_indicator,
                         keep_empty_features=keep_empty_features)
        self.partition = partition
        self.min_row_holders = min_row_holders

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = False
        return tags

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, sample_party=None):
        """Compute the fill value of every column, federated.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The whole table (dense); each party only holds its own block.

        y : None
            Ignored.

        sample_party : array-like of shape (n_samples,), default=None
            The owner (row group) of every row.

        Returns
        -------
        self : SimpleImputer
            Fitted imputer.
        """
        if sp.issparse(X):
            raise TypeError(
                "skfed's SimpleImputer takes dense input only: a sparse "
                "matrix's implicit zeros would be values every holder counts. "
                "Convert X with X.toarray().")
        X = self._validate_input(X, in_fit=True)
        if self.fill_value is None:
            fill_value = 0 if X.dtype.kind in "iuf" else "missing_value"
        else:
            fill_value = self.fill_value
        self._fill_dtype = X.dtype
        n_features = X.shape[1]
        layout = self._layout(X, n_features, sample_party)
        missing = _get_mask(X, self.missing_values)
        columns = [X[:, j] for j in range(n_features)]
        if self.strategy in ("mean", "median"):
            numeric = X.astype(np.float64, copy=True)
            numeric[missing] = np.nan  # each holder marks its own
            states = layout.states(numeric)
        else:
            states = layout.column_states(columns)
        empty = 0 if self.keep_empty_features else np.nan
        with self._federation(states) as fed:
            if self.strategy == "mean":
                W, mean, _ = fit_moments(fed, layout, n_features, what="mean",
                                         phase="mean")
                statistics = np.where(W > 0, mean, empty)
            elif self.strategy == "median":
                statistics = self._fit_median(fed, layout, n_features, empty)
            elif self.strategy == "most_frequent":
                statistics = self._fit_most_frequent(fed, layout, X, empty)
            else:
                statistics = np.full(n_features, fill_value, dtype=object)
                if not self.keep_empty_features:
                    present = fit_any(fed, layout, n_features, "present",
                                      self.missing_values, phase="flags")
                    send_fitted(fed, layout, "flags: fitted", present)
                    statistics[~present] = np.nan
            if self.add_indicator:
                has_missing = fit_any(fed, layout, n_features, "missing",
                                      self.missing_values, phase="indicator")
                send_fitted(fed, layout, "indicator: fitted", has_missing)
        self._keep_sizes(layout)
        self.statistics_ = statistics
        if self.add_indicator:
            # the indicator needs only which columns had a missing value
            self.indicator_ = MissingIndicator(
                missing_values=self.missing_values, error_on_new=False)
            self.indicator_._fit(has_missing[None, :], precomputed=True)
        else:
            self.indicator_ = None
        return self

    def _fit_median(self, fed, layout, n_features, empty):
        counts, _, _ = fit_moments(fed, layout, n_features, what="count",
                                   phase="median")
        n = np.rint(counts).astype(np.int64)
        # numpy.ma.median: the mean of the two middle values (one if odd)
        ranks = [np.array([(k - 1) // 2, k // 2]) if k else np.array([], int)
                 for k in n]
        values, _, _ = fit_order_values(fed, layout, ranks, n_bins=64,
                                        phase="median: search",
                                        sizes=layout.sizes)
        statistics = np.array([(v[0] + v[1]) / 2 if len(v) else empty
                               for v in values], dtype=np.float64)
        send_fitted(fed, layout, "median: fitted", statistics)
        return statistics

    def _fit_most_frequent(self, fed, layout, X, empty):
        out = np.empty(X.shape[1], dtype=object if X.dtype.kind == "O" else float)
        for cols, holders in layout.groups:
            modes, _, _ = fit_value_counts(
                fed, holders, len(cols), select="mode", skip_missing=True,
                missing_values=self.missing_values, phase="mode",
                sizes=layout.sizes)
            for j, found in zip(cols, modes):
                # scikit-learn breaks ties by the smallest value
                out[j] = (_safe_min([decode_value(v) for v in found])
                          if found else empty)
        return out


# -- OneHotEncoder ---------------------------------------------------------------------

def _categories_of(values, dtype):
    """The sorted categories of a column (scikit-learn's order, missing
    last) from the opened encoded values."""
    decoded = [decode_value(v) for v in values]
    if dtype.kind == "U":
        return _unique(np.array(decoded, dtype=object)).astype(dtype)
    return _unique(np.array(decoded, dtype=dtype))


def _check_category_types(columns):
    """scikit-learn's refusal of a column mixing strings and numbers (or
    other objects), before any party starts."""
    for column in columns:
        if column.dtype != object:
            continue
        kinds = {type(v) for v in column.tolist()
                 if v is not None and not (isinstance(v, float) and v != v)}
        if not (all(issubclass(k, str) for k in kinds) or all(
                issubclass(k, Real) and not issubclass(k, bool) for k in kinds)):
            raise TypeError(
                "Encoders require their input argument must be uniformly "
                f"strings or numbers. Got {sorted(k.__name__ for k in kinds)}")


def _check_given_categories(categories, columns):
    """scikit-learn's checks of user-given categories, column by column."""
    if len(categories) != len(columns):
        raise ValueError("Shape mismatch: if categories is an array,"
                         " it has to be of shape (n_features,).")
    out = []
    for i, (given, column) in enumerate(zip(categories, columns)):
        dtype = object if np.issubdtype(column.dtype, np.str_) else column.dtype
        cats = np.array(given, dtype=dtype)
        if (cats.dtype == object and len(cats) and isinstance(cats[0], bytes)
                and column.dtype.kind != "S"):
            raise ValueError(
                f"In column {i}, the predefined categories have type 'bytes'"
                f" which is incompatible with values of type "
                f"'{type(column[0]).__name__}'.")
        for category in cats[:-1]:
            if isinstance(category, float) and category != category:
                raise ValueError(
                    "Nan should be the last element in user provided "
                    f"categories, see categories {cats} in column #{i}")
        if cats.size != len(_unique(cats)):
            raise ValueError(f"In column {i}, the predefined categories "
                             "contain duplicate elements.")
        if column.dtype.kind not in "OUS":
            ordered = np.sort(cats)
            stop = -1 if ordered.size and np.isnan(ordered[-1]) else None
            if np.any(ordered[:stop] != cats[:stop]):
                raise ValueError("Unsorted categories are not supported for "
                                 "numerical categories")
        out.append(cats)
    return out


@fill_doc
class OneHotEncoder(_FederatedPreprocessor, _sk.OneHotEncoder):
    """One-hot encode categories gathered from every row holder.

    With ``categories="auto"`` the categories are the union over the holders
    of a column's rows, found by a secure count over keyed slots: the server
    learns each category with its total row count, never which holder has
    it, and with ``min_category_rows=k`` only the categories held by at
    least ``k`` rows are ever opened. With given categories, the holders
    check their rows locally and nothing crosses (except the counts that
    ``min_frequency`` or ``max_categories`` need, summed securely).
    ``transform`` is :class:`sklearn.preprocessing.OneHotEncoder`'s.

    Read more in the :ref:`User Guide <preprocessing>`.

    Parameters
    ----------
    %(partition_preprocessing)s

    categories : "auto" or list of array-like, default="auto"
        As in :class:`sklearn.preprocessing.OneHotEncoder`.

    drop : {"first", "if_binary"} or array-like of shape (n_features,), default=None
        As in scikit-learn.

    sparse_output : bool, default=True
        As in scikit-learn.

    dtype : number type, default=np.float64
        As in scikit-learn.

    handle_unknown : {"error", "ignore", "infrequent_if_exist", "warn"}, \
default="error"
        As in scikit-learn. Categories hidden by ``min_category_rows`` are
        unknown to the encoder.

    min_frequency : int or float, default=None
        As in scikit-learn (from the securely summed counts).

    max_categories : int, default=None
        As in scikit-learn.

    feature_name_combiner : "concat" or callable, default="concat"
        As in scikit-learn.

    min_category_rows : int, default=1
        Categories held by fewer rows (over every holder) are never opened:
        their value stays with their holders and the encoder does not know
        them. Needs ``handle_unknown`` other than ``"error"`` when some
        category is hidden (the rows holding one could not be transformed).

    %(min_row_holders)s

    Attributes
    ----------
    categories_ : list of arrays
        The categories of each column, sorted as scikit-learn sorts them.

    drop_idx_ : array of shape (n_features,)
        As in scikit-learn.

    infrequent_categories_ : list of ndarray
        As in scikit-learn.

    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
    partition_ : partition object
    communication_ : CommunicationSummary
        Phases ``"categories: key"`` (between holders),
        ``"categories: sizes/*"``, ``"categories: slots/*"``,
        ``"categories: lengths/*"``, ``"categories: values/*"`` (secure
        sums) and ``"categories: fitted"``; ``"counts/*"`` with given
        categories and infrequent grouping.

    See Also
    --------
    sklearn.preprocessing.OneHotEncoder : The same, on one table.

    Notes
    -----
    **What is revealed**, to the server: every opened category with its
    total row count and how many holders hold it; the row counts of the
    hidden categories (under keyed pseudonyms it cannot invert); the total
    rows; the sum over holders of their numbers of distinct values. To every
    holder: the opened categories (the fitted ``categories_``). A category
    held by one party only is, once opened, known to all: with the default
    ``min_category_rows=1`` every category is opened, so a rare category
    (one customer's country) tells the others that some holder has it, and
    with two row holders which one. ``min_category_rows=k`` opens only
    categories of at least ``k`` rows in total. No count or category is ever
    tied to a holder (the attack ``local_histogram_recovery``).

    **Collisions.** Two values hashed to one slot are told apart by a keyed
    20-bit tag (Cauchy-Schwarz on ``(sum h, sum h t, sum h t^2)``) before any
    value is opened, and hashed again with a fresh round. A collision the
    tags miss (probability ``2**-20`` per colliding pair; with 8 slots per
    value ``n`` values form about ``n / 16`` colliding pairs, so one miss
    in about ``1.7e7`` values) would open a mix of two values' bytes: a holder of one
    of them sees that the opened value is not its own and the fit stops
    with an error (fitting again draws a new key).

    **Determinism.** The slots are keyed by a key the first holder draws
    from its CSPRNG in every fit, so which values collide, hence how many
    rounds the counts take and how many messages ``communication_`` shows
    (it varies between fits of one table), depends on that secret only;
    the fitted ``categories_`` (and the counts behind ``min_frequency``)
    do not: they are the same for a given input.

    Examples
    --------
    >>> import numpy as np
    >>> from skfed.preprocessing import OneHotEncoder
    >>> X = np.array([["red", "S"], ["blue", "M"], ["red", "M"], ["green", "L"]],
    ...              dtype=object)
    >>> enc = OneHotEncoder(sparse_output=False).fit(X)
    >>> [c.tolist() for c in enc.categories_]
    [['blue', 'green', 'red'], ['L', 'M', 'S']]
    >>> enc.transform([["green", "S"]])
    array([[0., 1., 0., 0., 0., 1.]])
    """

    _parameter_constraints = {
        **_sk.OneHotEncoder._parameter_constraints,
        "min_category_rows": [Interval(Integral, 1, None, closed="left")],
        **_FEDERATED_PARAMETERS,
    }

    def __init__(self, *, partition=None, categories="auto", drop=None,
                 sparse_output=True, dtype=np.float64, handle_unknown="error",
                 min_frequency=None, max_categories=None,
                 feature_name_combiner="concat", min_category_rows=1,
                 min_row_holders=2):
        super().__init__(categories=categories, drop=drop,
                         sparse_output=sparse_output, dtype=dtype,
                         handle_unknown=handle_unknown,
                         min_frequency=min_frequency,
                         max_categories=max_categories,
                         feature_name_combiner=feature_name_combiner)
        self.partition = partition
        self.min_category_rows = min_category_rows
        self.min_row_holders = min_row_holders

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, sample_party=None):
        """Gather the categories of every column from its holders.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The whole table; each party only ever holds its own block.

        y : None
            Ignored.

        sample_party : array-like of shape (n_samples,), default=None
            The owner (row group) of every row.

        Returns
        -------
        self : OneHotEncoder
            Fitted encoder.
        """
        self._check_infrequent_enabled()
        validate_data(self, X=X, reset=True, skip_check_array=True)
        columns, n_samples, n_features = self._check_X(
            X, ensure_all_finite="allow-nan")
        self.n_features_in_ = n_features
        _check_category_types(columns)
        layout = self._layout(_Shape(n_samples, n_features), n_features,
                              sample_party)
        given = (None if isinstance(self.categories, str) else
                 _check_given_categories(self.categories, columns))
        counts = [None] * n_features
        with self._federation(layout.column_states(columns)) as fed:
            if given is None:
                found = [None] * n_features
                for cols, holders in layout.groups:
                    values, _, hidden = fit_value_counts(
                        fed, holders, len(cols), select="all",
                        min_count=self.min_category_rows, phase="categories",
                        sizes=layout.sizes)
                    self._check_hidden(cols, hidden)
                    for j, v in zip(cols, values):
                        found[j] = v
                categories = []
                for j, values in enumerate(found):
                    categories.append(_categories_of(values, columns[j].dtype))
                    counts[j] = np.array(
                        [values[encode_value(c)] for c in
                         categories[j].tolist()], dtype=np.int64)
            else:
                categories = given
                counts = fit_given_counts(fed, layout, given,
                                          self.handle_unknown,
                                          self._infrequent_enabled)
        self._keep_sizes(layout)
        self.categories_ = categories
        if self._infrequent_enabled:
            self._fit_infrequent_category_mapping(n_samples, counts, {})
        self._set_drop_idx()
        self._n_features_outs = self._compute_n_features_outs()
        return self

    def _check_hidden(self, cols, hidden):
        if self.min_category_rows > 1 and self.handle_unknown == "error" and (
                np.any(hidden)):
            which = [int(cols[j]) for j in np.flatnonzero(hidden)]
            raise ValueError(
                f"min_category_rows={self.min_category_rows} keeps the "
                f"categories of fewer rows hidden in column(s) {which}; the "
                "training rows holding them would then be unknown to "
                "transform. Use handle_unknown='ignore' or "
                "'infrequent_if_exist' with min_category_rows > 1.")

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = False
        return tags


# -- KBinsDiscretizer ---------------------------------------------------------------------

@fill_doc
class KBinsDiscretizer(_FederatedPreprocessor, _sk.KBinsDiscretizer):
    """Bin continuous data into intervals, from secure histograms.

    ``strategy="uniform"``: the bins split each column's range, from the
    exact secure extremes of :class:`MinMaxScaler`. ``strategy="quantile"``:
    the edges are the pooled column's percentiles (any of numpy's methods,
    or scikit-learn's weighted inverted CDF), found from the extremes by
    secure histograms in key space: exact when ``histogram_rounds=None``,
    within a reported bound otherwise. ``transform`` is
    :class:`sklearn.preprocessing.KBinsDiscretizer`'s.

    Read more in the :ref:`User Guide <preprocessing>`.

    Parameters
    ----------
    n_bins : int or array-like of shape (n_features,), default=5
        The number of bins (at least 2).

    %(partition_preprocessing)s

    encode : {"onehot", "onehot-dense", "ordinal"}, default="onehot"
        As in :class:`sklearn.preprocessing.KBinsDiscretizer`.

    strategy : {"uniform", "quantile"}, default="quantile"
        ``"kmeans"`` is not offered (its Lloyd iterations would need a
        protocol of their own).

    quantile_method : str, default="averaged_inverted_cdf"
        numpy's percentile method, as in scikit-learn (with sample weights:
        ``"inverted_cdf"`` or ``"averaged_inverted_cdf"``).

    dtype : {np.float32, np.float64}, default=None
        As in scikit-learn.

    subsample : int or None, default=200_000
        Accepted for scikit-learn's API; never used: every row counts (the
        histograms cost the same for any number of rows), so the edges equal
        scikit-learn's whenever it does not subsample (``n_samples <=
        subsample``).

    random_state : int, RandomState instance or None, default=None
        Accepted for scikit-learn's API (it seeds the subsampling there).

    histogram_bins : int, default=64
        Key sub-ranges per secure histogram (a power of two, at least 2).
        More bins, fewer rounds (``ceil(64 / log2(histogram_bins))`` at
        most) and larger uploads.

    histogram_rounds : int or None, default=None
        Cap on the histogram rounds. ``None``: until every edge is exact.
        A cap leaves an edge at the midpoint of its last sub-range, within
        ``bin_edges_bound_`` of the exact one, and reveals fewer, coarser
        counts.

    %(min_row_holders)s

    Attributes
    ----------
    bin_edges_ : ndarray of ndarray of shape (n_features,)
        The edges of each column's bins.

    n_bins_ : ndarray of shape (n_features,), dtype=np.int64
        Bins per column (fewer where bins narrower than 1e-8 were removed).

    bin_edges_bound_ : ndarray of ndarray of shape (n_features,)
        The largest distance of each edge from the exact one (0 when exact).

    n_histogram_rounds_ : int
        Histogram rounds run (the largest over column groups).

    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
    partition_ : partition object
    communication_ : CommunicationSummary
        Phases ``"count/*"`` (``"total weight: count/*"`` and ``"total
        weight: fitted"`` with sample weights), ``"extremes/*"``,
        ``"extremes: fitted"``, ``"quantiles/*"`` and ``"bins: fitted"``.

    See Also
    --------
    sklearn.preprocessing.KBinsDiscretizer : The same, on one table.

    Notes
    -----
    **Protocol.** Every order statistic a percentile needs is searched in
    the key range ``[min, max]``: each round cuts the interval known to hold
    it into ``histogram_bins`` key sub-ranges (equal-width bins within one
    binade), the holders' counts per sub-range are summed securely, and the
    sub-range where the cumulative count reaches the rank is the next
    interval. The edge is numpy's interpolation between the two order
    statistics around the percentile (``lerp`` at the position numpy
    computes), or with weights the smallest value whose cumulative weight
    reaches the level (averaged with the next one on an exact tie).

    **Approximation bound.** After ``r`` rounds an order statistic lies in a
    key interval ``[a, b]``; the edge reported is its midpoint, off by at
    most ``(b - a) / 2``, reported per edge in ``bin_edges_bound_``. Within
    one binade (all values of the interval with one sign and exponent) the
    sub-ranges are equal-width value bins, so the bound shrinks by a factor
    ``histogram_bins`` per round; it is 0 once the interval is one float.
    ``benchmarks/bench_preprocessing.py`` prints the error against
    scikit-learn's edges round by round.

    **What is revealed**, to the server and the holders: each column's
    minimum and maximum, the total rows (or weight), and the histogram counts
    of the sub-ranges searched (a fine histogram of the pooled column near
    each edge); nothing per holder (the attack ``local_histogram_recovery``).

    Examples
    --------
    >>> import numpy as np
    >>> from skfed.preprocessing import KBinsDiscretizer
    >>> X = np.arange(12, dtype=float).reshape(-1, 1)
    >>> est = KBinsDiscretizer(n_bins=3, encode="ordinal").fit(X)
    >>> est.bin_edges_[0]
    array([ 0. ,  3.5,  7.5, 11. ])
    """

    _parameter_constraints = {
        **_sk.KBinsDiscretizer._parameter_constraints,
        "strategy": [StrOptions({"uniform", "quantile"})],
        "histogram_bins": [Interval(Integral, 2, None, closed="left")],
        "histogram_rounds": [Interval(Integral, 1, None, closed="left"), None],
        **_FEDERATED_PARAMETERS,
    }

    def __init__(self, n_bins=5, *, partition=None, encode="onehot",
                 strategy="quantile", quantile_method="averaged_inverted_cdf",
                 dtype=None, subsample=200_000, random_state=None,
                 histogram_bins=64, histogram_rounds=None, min_row_holders=2):
        super().__init__(n_bins=n_bins, encode=encode, strategy=strategy,
                         quantile_method=quantile_method, dtype=dtype,
                         subsample=subsample, random_state=random_state)
        self.partition = partition
        self.histogram_bins = histogram_bins
        self.histogram_rounds = histogram_rounds
        self.min_row_holders = min_row_holders

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, sample_weight=None, sample_party=None):
        """Find the bin edges of every column, federated.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The whole table; each party only ever holds its own block.

        y : None
            Ignored.

        sample_weight : array-like of shape (n_samples,), default=None
            Row weights, held by the holders of each row.

        sample_party : array-like of shape (n_samples,), default=None
            The owner (row group) of every row.

        Returns
        -------
        self : KBinsDiscretizer
            Fitted discretizer.
        """
        if self.histogram_bins & (self.histogram_bins - 1):
            raise ValueError(f"histogram_bins={self.histogram_bins} must be a "
                             "power of two (2, 4, ..., 64, ...).")
        X = validate_data(self, X, dtype="numeric")
        output_dtype = self.dtype if self.dtype in (np.float64, np.float32) \
            else X.dtype
        n_features = X.shape[1]
        if sample_weight is not None:
            sample_weight = _check_sample_weight(sample_weight, X, dtype=X.dtype)
        n_bins = self._validate_n_bins(n_features)
        if (self.strategy == "quantile" and sample_weight is not None and
                self.quantile_method not in ("inverted_cdf",
                                             "averaged_inverted_cdf")):
            raise ValueError(
                "When fitting with strategy='quantile' and sample weights, "
                "quantile_method should either be set to "
                "'averaged_inverted_cdf' or 'inverted_cdf', got "
                f"quantile_method='{self.quantile_method}' instead.")
        layout = self._layout(X, n_features, sample_party)
        X = X.astype(np.float64)
        with self._federation(layout.states(X, sample_weight)) as fed:
            edges, bounds, rounds = self._fit_edges(fed, layout, X, n_bins,
                                                    sample_weight)
            send_ragged(fed, layout, "bins: fitted", edges)
        self._keep_sizes(layout)
        self._finish(edges, bounds, n_bins, output_dtype)
        self.n_histogram_rounds_ = rounds
        return self

    def _fit_edges(self, fed, layout, X, n_bins, weights):
        n_features = X.shape[1]
        # the extremes of every row (quantile) or of the rows of positive
        # weight (uniform), as scikit-learn takes them
        low, high = fit_extremes(
            fed, layout, n_features, mode="minmax",
            skip_zero_weight=weights is not None and self.strategy == "uniform")
        constant = low == high
        edges = [None] * n_features
        bounds = [None] * n_features
        if self.strategy == "uniform":
            for j in range(n_features):
                edges[j] = np.linspace(low[j], high[j], n_bins[j] + 1)
                bounds[j] = np.zeros(n_bins[j] + 1)
            return edges, bounds, 0
        levels = [np.linspace(0, 100, n_bins[j] + 1) if not constant[j]
                  else np.array([]) for j in range(n_features)]
        common = dict(starts=(low, high), n_bins=self.histogram_bins,
                      max_rounds=self.histogram_rounds, phase="quantiles",
                      sizes=layout.sizes)
        if weights is None:
            n = total_rows(fed, layout)
            lo, hi, gamma = [], [], []
            for lv in levels:
                a, b, g = (percentile_ranks(n, lv, self.quantile_method)
                           if lv.size else (np.zeros(0, int),) * 2 + (np.zeros(0),))
                lo.append(a)
                hi.append(b)
                gamma.append(g)
            ranks = [np.concatenate([a, b]) for a, b in zip(lo, hi)]
            values, errors, rounds = fit_order_values(fed, layout, ranks,
                                                      **common)
            for j in range(n_features):
                k = len(lo[j])
                edges[j] = lerp(values[j][:k], values[j][k:], gamma[j])
                bounds[j] = np.maximum(errors[j][:k], errors[j][k:])
        else:
            totals = fit_moments(fed, layout, n_features, what="count",
                                 phase="total weight")[0]
            values, bounds, rounds = fit_weighted_percentiles(
                fed, layout, levels, totals,
                average=self.quantile_method == "averaged_inverted_cdf",
                **common)
            edges = [np.asarray(v, dtype=np.float64) for v in values]
        for j in np.flatnonzero(constant):
            edges[j], bounds[j] = np.array([low[j]]), np.zeros(1)
        return edges, bounds, rounds

    def _finish(self, edges, bounds, n_bins, output_dtype):
        """scikit-learn's handling of constant columns and narrow bins."""
        bin_edges = np.zeros(len(edges), dtype=object)
        bin_bounds = np.zeros(len(edges), dtype=object)
        for j, (e, b) in enumerate(zip(edges, bounds)):
            if len(e) == 1:
                warnings.warn(f"Feature {j} is constant and will be replaced "
                              "with 0.")
                n_bins[j] = 1
                bin_edges[j] = np.array([-np.inf, np.inf])
                bin_bounds[j] = np.zeros(2)
                continue
            if self.strategy == "quantile":
                keep = np.ediff1d(e, to_begin=np.inf) > 1e-8
                e, b = e[keep], b[keep]
                if len(e) - 1 != n_bins[j]:
                    warnings.warn(
                        "Bins whose width are too small (i.e., <= 1e-8) in "
                        f"feature {j} are removed. Consider decreasing the "
                        "number of bins.")
                    n_bins[j] = len(e) - 1
            bin_edges[j], bin_bounds[j] = e, b
        self.bin_edges_ = bin_edges
        self.bin_edges_bound_ = bin_bounds
        self.n_bins_ = n_bins
        if "onehot" in self.encode:
            self._encoder = _sk.OneHotEncoder(
                categories=[np.arange(i) for i in self.n_bins_],
                sparse_output=self.encode == "onehot", dtype=output_dtype)
            # fitted on a toy row, as scikit-learn does: the categories are given
            self._encoder.fit(np.zeros((1, len(self.n_bins_))))
