"""What every federated estimator shares.

The public ``fit`` of an estimator validates its input, then calls the helpers
here to resolve the partition and to run a federation; the algorithm module
only holds the protocol. After ``fit`` the estimator carries ``partition_``
and ``communication_`` (the message counts of ``fit``), and no thread, lock or
party state: it pickles like any sklearn estimator.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import functools
import numbers
import threading
from contextlib import contextmanager

import numpy as np
from sklearn.utils import check_random_state
from sklearn.utils.validation import _check_sample_weight
from threadpoolctl import threadpool_limits

from ._privacy_core import Secret
from .crypto import check_key_size
from .federation import Federation, PartyData
from .partition import resolve_partition

__all__ = ["FederatedMixin", "PrivacyMixin", "party_seeds",
           "check_labels_not_single_class"]


def party_seeds(random_state, n):
    """``n`` independent 32-bit seeds drawn in the caller's thread, in order."""
    rng = check_random_state(random_state)
    return [int(s) for s in rng.randint(0, 2**31 - 1, size=n)]


class PrivacyMixin:
    """Defaults of the privacy hooks read by :mod:`skfed.privacy`.

    An estimator adds ``_privacy_contract()`` (its protocol's
    :class:`~skfed.privacy.Contract`) and ``_privacy_attacks()``; the roles
    of its parties and the private data of each (for the semantic checks of
    :func:`~skfed.privacy.check_messages`) default to what the resolved
    partition says and may be extended.
    """

    _party_prefix = {"vertical": "party", "horizontal": "user",
                     "hybrid": "client"}

    def _privacy_party_names(self):
        """Party names in partition order."""
        prefix = self._party_prefix[self._partition_kind]
        partition = self.partition_
        n = (partition.n_clients if self._partition_kind == "hybrid"
             else partition.n_parties)
        return [f"{prefix}{k}" for k in range(n)]

    def _privacy_roles(self):
        """``{party name: set of roles}`` for the contract's rules."""
        names = self._privacy_party_names()
        if self._partition_kind == "vertical":
            active = set(self.partition_.active_parties)
            roles = {name: {"active" if k in active else "passive", "party"}
                     for k, name in enumerate(names)}
        else:
            role = "user" if self._partition_kind == "horizontal" else "client"
            roles = {name: {role, "party"} for name in names}
            roles["server"] = {"server"}
        return roles

    def _privacy_rows(self):
        """``{party name: frozenset of the row indices it holds}``, from the
        partition; a party holding every row (a vertical split) maps to
        None, and a party without data (a server) is absent.

        :func:`~skfed.privacy.check_messages` binds each encryption key to
        the rows of the first party that sends or receives a ciphertext
        under it and reads ``receiver_rows`` / ``sender_rows`` from here.
        """
        partition = getattr(self, "partition_", None)
        kind = getattr(self, "_partition_kind", None)
        if partition is None or kind is None:
            return {}
        rows = {}
        for k, name in enumerate(self._privacy_party_names()):
            if kind == "vertical":
                rows[name] = None
            elif kind == "horizontal":
                rows[name] = frozenset(np.asarray(partition.rows(k)).tolist())
            else:
                rows[name] = frozenset(
                    np.asarray(partition.client_rows(k)).tolist())
        return rows

    def _privacy_attacks(self):
        return []

    def _privacy_secrets(self, X, y=None, **fit_params):
        """Each party's private columns or rows, and the labels it holds."""
        from sklearn.preprocessing import LabelEncoder, OneHotEncoder

        # the semantic checks compare dense columns (sparse input included)
        X = np.asarray(X.toarray() if hasattr(X, "toarray") else X, dtype=float)
        partition = self.partition_
        names = self._privacy_party_names()
        labels = None
        if y is not None:
            y = np.asarray(y)
            if y.dtype.kind in "f" and not hasattr(self, "classes_"):
                labels = y.astype(float)
            else:
                codes = LabelEncoder().fit_transform(y.ravel())
                labels = (codes.astype(float) if codes.max(initial=0) < 2 else
                          OneHotEncoder().fit_transform(codes[:, None]).toarray())
        out = []
        kind = self._partition_kind
        for k, name in enumerate(names):
            if kind == "vertical":
                rows, cols = slice(None), partition.columns(k)
                holds_labels = k in partition.active_parties
            elif kind == "horizontal":
                rows, cols = partition.rows(k), slice(None)
                holds_labels = True
            else:
                rows, cols = partition.client_rows(k), partition.client_columns(k)
                holds_labels = True
            block = X[rows][:, cols]
            out.append(Secret(name, "columns", f"columns of {name}", block))
            if kind != "vertical":
                out.append(Secret(name, "rows", f"rows of {name}", block))
            if labels is not None and holds_labels:
                out.append(Secret(name, "labels", f"labels held by {name}",
                                  labels[rows]))
        return out


_fitting = threading.local()  # depth of nested fit wrappers in this thread


def _check_key_policy(estimator, stacklevel):
    """The key policy of a Paillier or OU ``key_size``, in the caller's thread.

    Keys are made later, often in a party's thread, where a warning can
    only point into skfed; the check runs here instead, before any party
    starts, so an :class:`~skfed.crypto.InsecureKeyWarning` points at the
    line that called ``fit`` and a refused size stops the fit at once. The
    parties then make their keys with ``warn=False``.
    """
    params = estimator.get_params(deep=False)
    key_size = params.get("key_size")
    scheme = params.get("encryption", "paillier")
    if (isinstance(key_size, numbers.Integral) and not isinstance(key_size, bool)
            and scheme in ("paillier", "ou")):
        check_key_size(key_size, stacklevel=stacklevel, scheme=scheme)


#: Root of the published documentation, or None while none is published:
#: then the HTML repr shows no link (a link to a site that does not exist
#: is worse than none). Set, every skfed estimator links to its API page
#: ``generated/<module>.<Class>.html`` under it (``doc/build.sh`` builds it).
DOC_BASE_URL = None


class FederatedMixin(PrivacyMixin):
    """Mixin for estimators that run a protocol between simulated parties.

    Subclasses set ``_partition_kind`` to ``"vertical"``, ``"horizontal"`` or
    ``"hybrid"``.

    A ``fit`` that raises (a party failed, timed out, sent an answer of the
    wrong shape, or the caller pressed Ctrl-C) leaves no fitted attribute
    behind: every subclass's ``fit`` is wrapped so, and the estimator looks
    unfitted (``check_is_fitted`` raises) rather than half fitted.
    """

    _partition_kind = "vertical"

    #: Whether ``fit`` and ``predict`` take a :class:`~skfed.federation.PartyData`
    #: in place of ``X`` (through :mod:`skfed._party_data_fit`).
    _accepts_party_data = False

    def _held_out_in_driver(self):
        """Whether early stopping would draw its held-out rows in the driver
        from the labels or the blocks, which a PartyData fit cannot do
        (with a PartyData ``early_stopping="auto"`` means off, so only an
        explicit ``True`` says so)."""
        return False

    def _refuse_party_data(self, X):
        """A clear error when an estimator that does not take a PartyData is
        given one (called by every federated ``fit`` before it starts)."""
        if isinstance(X, PartyData) and not self._accepts_party_data:
            raise TypeError(
                f"{type(self).__name__} does not take a PartyData; "
                "SecureBoostClassifier, SecureBoostRegressor, FDSKLClassifier, "
                "FDSKLRegressor and AVFKAMRanker do. Align "
                "the tables in memory (X, y, partition = skfed.alignment.align("
                "tables, label=...)) and fit on X.")

    # scikit-learn's HTML repr (Jupyter) shows a "?" linking to this page;
    # the module is the public one (private submodules are dropped).
    _doc_link_module = "skfed"

    @property
    def _doc_link_template(self):
        if not DOC_BASE_URL:
            return ""
        return DOC_BASE_URL + "generated/{estimator_module}.{estimator_name}.html"

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        fit = cls.__dict__.get("fit")
        if fit is not None and not getattr(fit, "_forgets_on_failure", False):
            @functools.wraps(fit)
            def fit_or_forget(self, *args, **fit_kwargs):
                outermost = not getattr(_fitting, "depth", 0)
                _fitting.depth = getattr(_fitting, "depth", 0) + 1
                try:
                    if outermost:  # once, pointing at the caller's line
                        _check_key_policy(self, stacklevel=4)
                    if args:  # a PartyData only where it is supported
                        self._refuse_party_data(args[0])
                    return fit(self, *args, **fit_kwargs)
                except BaseException:
                    self._forget_fit()
                    raise
                finally:
                    _fitting.depth -= 1

            fit_or_forget._forgets_on_failure = True
            cls.fit = fit_or_forget

    def _resolve_partition(self, X, sample_party=None):
        """Resolve ``self.partition`` against ``X`` and store ``partition_``."""
        if hasattr(X, "partition_for"):  # PartyData: one table per party
            self.partition_ = X.partition_for(self.partition, self._partition_kind)
            return self.partition_
        self.partition_ = resolve_partition(
            self.partition, X, kind=self._partition_kind,
            feature_names=getattr(self, "feature_names_in_", None),
            sample_party=sample_party,
        )
        return self.partition_

    @contextmanager
    def _federation(self, states, record=True):
        """Run a federation of ``states``; on exit store ``communication_``.

        With ``record=False`` (prediction) the counts are not stored, since
        ``predict`` must not change the estimator; a
        :func:`~skfed.federation.record_messages` recorder still sees them.
        Each call waits at most ``skfed.get_config()["party_timeout"]``; on
        a failure, timeout or interrupt inside, every party is told to stop.
        """
        fed = Federation(states)
        # Every party thread runs its own numpy work at once: a multithreaded
        # BLAS in each would oversubscribe the cores (measured ~10x slower for
        # FDSKL on 2 cores), so BLAS gets one thread while parties run.
        with threadpool_limits(limits=1, user_api="blas"), fed:
            yield fed
        if record:
            self.communication_ = fed.summary()

    def _forget_fit(self):
        """Remove every fitted attribute (a failed ``fit`` leaves none)."""
        for name in [k for k in vars(self)
                     if k.endswith("_") and not k.startswith("__")]:
            delattr(self, name)


def check_labels_not_single_class(classes):
    """Clear error for a classification target with one class."""
    if len(classes) < 2:
        raise ValueError(
            "The target has only one class "
            f"({np.asarray(classes).tolist()}); a classifier needs at least "
            "two. Check the labels, or the split that produced this fold."
        )



def check_row_weights(sample_weight, X):
    """Validated ``sample_weight`` (None stays None) for an estimator whose
    objective averages over the total weight: finite, non-negative, with a
    positive sum (sklearn's own check, plus the sum for the versions that
    accept all-zero weights)."""
    if sample_weight is None:
        return None
    w = _check_sample_weight(sample_weight, X, dtype=np.float64,
                             ensure_non_negative=True)
    if not w.sum() > 0:
        raise ValueError("sample_weight sums to 0; it must have a positive "
                         "sum (the fit averages over the total weight): give "
                         "some rows a positive weight.")
    return w


def check_class_weight(class_weight):
    """Clear error for a ``class_weight`` dict with a negative or non-finite value.

    sklearn's ``compute_sample_weight`` accepts any number, and a negative
    weight turns the loss upside down (the model then learns the opposite
    of the labels) while NaN fails deep inside the fit.
    """
    if not isinstance(class_weight, dict):
        return
    for label, weight in class_weight.items():
        try:
            value = float(weight)
        except (TypeError, ValueError):
            value = float("nan")
        if not np.isfinite(value) or value < 0:
            raise ValueError(
                f"class_weight[{label!r}] is {weight!r}; every class weight "
                "must be a finite number >= 0. Fix the dict, or use "
                "class_weight='balanced'.")
