"""A fitted SecureBoost model split into each party's share, and consolidated.

A fitted estimator stands for every party together. Deployed, each party
keeps only its own share (section 4 of the paper):

- :class:`SecureBoostActiveShare`, the label holder's: every tree's shape,
  the owner (party index) and record id of each internal node, the leaf
  weights, the baseline, the classes, and its own lookup table;
- :class:`SecureBoostPassiveShare`, each passive party's: its lookup table
  ``record id -> (feature, threshold, missing side)``.

Shares hold numpy arrays and Python numbers only, so each party pickles or
joblib-dumps its own and loads it wherever it runs. Prediction from shares
is the federated inference of section 5: the active share walks the rows
through its own nodes and asks an ``ask(party, record_ids, rows)`` callable
which way rows go at other parties' nodes; the transport (a function call,
a pipe to another process, a network) is the caller's.

:func:`consolidate_shares` joins every share into one plaintext model,
:class:`SecureBoostConsolidated`: each party gives up its thresholds to
whoever runs it, so it is built only by that explicit call (or
``estimator.consolidate()``), never as a side effect of fitting.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
from scipy.special import expit, softmax

from ..federation._fingerprint import (
    check_intact,
    check_same_model,
    content_digest,
    new_fingerprint,
)

from ._predictor import Tree, advance, finish_walk, start_walk, walk
from ._split import apply_lookup

__all__ = ["SecureBoostActiveShare", "SecureBoostPassiveShare",
           "SecureBoostConsolidated", "consolidate_shares"]

_TREE_ARRAYS = ("children_left", "children_right", "owner", "record", "value")


def _check_share(share):
    """Refuse a share whose content changed since export (its digest)."""
    check_intact(share, "a threshold, a tree, the baseline")


def _table(records):
    """A lookup table as one ``(n_records, 3)`` float array."""
    return np.asarray([(f, t, m) for f, t, m in records],
                      dtype=np.float64).reshape(-1, 3)


def _records(table):
    return [(int(f), float(t), bool(m)) for f, t, m in table]


def _to_proba(raw):
    if raw.shape[1] == 1:
        p = expit(raw[:, 0])
        return np.column_stack([1 - p, p])
    return softmax(raw, axis=1)


class SecureBoostPassiveShare:
    """A passive party's share of a fitted SecureBoost model.

    Parameters
    ----------
    party : int
        The party's index in the partition.
    columns : ndarray of int
        Which columns of the full table the party holds.
    table : ndarray of shape (n_records, 3)
        Its lookup table: ``(own feature, threshold, missing goes left)``.
    model : str, default=None
        The fingerprint of the fitted model (shared by every share of one
        fit; a fresh one if None).

    Attributes
    ----------
    digest : str
        BLAKE2b of the share's content at export: :meth:`answer` and
        :func:`consolidate_shares` refuse a share whose content changed.
    """

    def __init__(self, party, columns, table, model=None):
        self.party = int(party)
        self.columns = np.asarray(columns, dtype=np.intp)
        self.table = np.asarray(table, dtype=np.float64)
        self.model = str(model) if model is not None else new_fingerprint()
        self.digest = self._digest_now()

    def _digest_now(self):
        return content_digest(self.party, self.columns, self.table, self.model)

    def answer(self, X_own, record_ids, rows, model=None):
        """Which way each queried row goes at each queried record.

        Parameters
        ----------
        X_own : ndarray of shape (n_samples, n_own_columns)
            The party's own columns of the rows being predicted.
        record_ids, rows : ndarray of int
            One query per element (from the active share).
        model : str, default=None
            The asking active share's ``model``: a query from another fit's
            model is refused.

        Returns
        -------
        go_left : ndarray of bool
        """
        _check_share(self)
        check_same_model(self, model)
        return apply_lookup(_records(self.table), np.asarray(X_own, dtype=np.float64),
                            record_ids, rows)


class SecureBoostActiveShare:
    """The label holder's share of a fitted SecureBoost model.

    Parameters
    ----------
    party : int
        The active party's index.
    columns : ndarray of int
        Which columns of the full table it holds.
    table : ndarray of shape (n_records, 3)
        Its own lookup table.
    trees : list of dict
        Per tree: ``output`` and the arrays ``children_left``,
        ``children_right``, ``owner``, ``record`` and ``value``.
    baseline : ndarray of shape (n_outputs,)
    classes : ndarray or None
        Class labels (classifier) or None (regressor).
    n_parties : int
    model : str, default=None
        The fingerprint of the fitted model (a fresh one if None).

    Attributes
    ----------
    digest : str
        BLAKE2b of the share's content at export, checked before every use.
    """

    def __init__(self, party, columns, table, trees, baseline, classes, n_parties,
                 model=None):
        self.party = int(party)
        self.columns = np.asarray(columns, dtype=np.intp)
        self.table = np.asarray(table, dtype=np.float64)
        self.trees = trees
        self.baseline = np.asarray(baseline, dtype=np.float64)
        self.classes = classes
        self.n_parties = int(n_parties)
        self.model = str(model) if model is not None else new_fingerprint()
        self.digest = self._digest_now()

    def _digest_now(self):
        return content_digest(self.party, self.columns, self.table, self.trees,
                               self.baseline, self.classes, self.n_parties,
                               self.model)

    def _state(self, X_own):
        class _State:  # what the inference functions of _predictor read
            pass

        state = _State()
        state.name, state.stash = f"party{self.party}", {}
        state.party_index = {f"party{k}": k for k in range(self.n_parties)}
        state.records = _records(self.table)
        state.datasets = {"predict": np.asarray(X_own, dtype=np.float64)}
        state.trees = []
        for spec in self.trees:
            tree = Tree()
            for name in _TREE_ARRAYS:
                setattr(tree, name, np.asarray(spec[name]))
            state.trees.append((int(spec["output"]), tree))
        return state

    def decision_function(self, X_own, ask):
        """Raw scores, by federated inference (at most depth rounds of ``ask``).

        Parameters
        ----------
        X_own : ndarray of shape (n_samples, n_own_columns)
            The active party's own columns of the rows.
        ask : callable
            ``ask(party, record_ids, rows) -> go_left``: delivers a query to
            passive party ``party`` (e.g. its share's :meth:`answer`, passing
            ``model=active_share.model`` so that a share of another fit
            refuses) and returns its answer.

        Returns
        -------
        raw : ndarray of shape (n_samples, n_outputs)
        """
        _check_share(self)
        state = self._state(X_own)
        n_outputs = self.baseline.size
        start_walk(state, "predict", list(range(len(state.trees))))
        while True:
            queries = walk(state)
            if not queries:
                break
            for party, (record_ids, rows) in queries.items():
                advance(state, party, np.asarray(ask(party, record_ids, rows),
                                                 dtype=bool))
        return finish_walk(state, n_outputs) + self.baseline

    def predict_proba(self, X_own, ask):
        """Class probabilities (classifier shares); see :meth:`decision_function`."""
        return _to_proba(self.decision_function(X_own, ask))

    def predict(self, X_own, ask):
        """Predicted classes or targets; see :meth:`decision_function`."""
        raw = self.decision_function(X_own, ask)
        if self.classes is None:
            return raw[:, 0]
        return self.classes[np.argmax(_to_proba(raw), axis=1)]


class SecureBoostConsolidated:
    """A SecureBoost model in plaintext, usable without any federation.

    Built by :func:`consolidate_shares` (or ``estimator.consolidate()``):
    every party's thresholds in one object. Predictions equal the federated
    model's, bit for bit.

    Attributes
    ----------
    trees : list of dict
        Per tree: ``output``, ``children_left``, ``children_right``,
        ``feature`` (column of the full table), ``threshold``,
        ``missing_left`` and ``value``.
    baseline : ndarray of shape (n_outputs,)
    classes_ : ndarray or None
        Class labels (classifier), None for a regressor.
    n_features_in_ : int
    """

    def __init__(self, trees, baseline, classes, n_features):
        self.trees = trees
        self.baseline = np.asarray(baseline, dtype=np.float64)
        self.classes_ = classes
        self.n_features_in_ = int(n_features)

    def _leaves(self, X):
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != self.n_features_in_:
            raise ValueError(f"X must have {self.n_features_in_} columns.")
        leaves = np.zeros((X.shape[0], len(self.trees)))
        for t, tree in enumerate(self.trees):
            node = np.zeros(X.shape[0], dtype=np.intp)
            while True:
                inner = tree["children_left"][node] >= 0
                if not inner.any():
                    break
                rows, at = np.flatnonzero(inner), node[inner]
                values = X[rows, tree["feature"][at]]
                with np.errstate(invalid="ignore"):
                    left = np.where(np.isnan(values), tree["missing_left"][at],
                                    values <= tree["threshold"][at])
                node[rows] = np.where(left, tree["children_left"][at],
                                      tree["children_right"][at])
            leaves[:, t] = tree["value"][node]
        return leaves

    def decision_function(self, X):
        """Raw scores, shape (n_samples, n_outputs) (1 column: binary/regression)."""
        leaves = self._leaves(X)
        outputs = np.array([tree["output"] for tree in self.trees], dtype=np.intp)
        out = np.zeros((leaves.shape[0], self.baseline.size))
        for k in range(self.baseline.size):
            out[:, k] = leaves[:, outputs == k].sum(axis=1)
        return out + self.baseline

    def predict_proba(self, X):
        """Class probabilities (classifier)."""
        if self.classes_ is None:
            raise AttributeError("A regressor has no predict_proba.")
        return _to_proba(self.decision_function(X))

    def predict(self, X):
        """Predicted classes (classifier) or targets (regressor)."""
        raw = self.decision_function(X)
        if self.classes_ is None:
            return raw[:, 0]
        return self.classes_[np.argmax(_to_proba(raw), axis=1)]


def export_shares(estimator):
    """Every party's share of a fitted estimator, by party index."""
    partition = estimator.partition_
    active = partition.active_parties[0]
    trees = [dict(output=int(k), **{name: np.asarray(getattr(tree, name))
                                    for name in _TREE_ARRAYS})
             for k, tree in estimator._trees]
    # One fingerprint for every share of this fit (drawn at fit, from
    # secrets; a model fitted by an older skfed gets one here).
    model = getattr(estimator, "_model_fingerprint", None) or new_fingerprint()
    shares = []
    for k in range(partition.n_parties):
        table = _table(estimator._records[k])
        if k == active:
            shares.append(SecureBoostActiveShare(
                k, partition.columns(k), table, trees, estimator._baseline,
                getattr(estimator, "classes_", None), partition.n_parties,
                model=model))
        else:
            shares.append(SecureBoostPassiveShare(k, partition.columns(k), table,
                                                  model=model))
    return shares


def consolidate_shares(shares):
    """Join every party's share into one plaintext :class:`SecureBoostConsolidated`.

    Parameters
    ----------
    shares : list of SecureBoostActiveShare and SecureBoostPassiveShare
        One per party (any order); every party must hand its share over,
        thresholds included: this is the explicit, all-party decision.

    Returns
    -------
    model : SecureBoostConsolidated
    """
    by_party = {share.party: share for share in shares}
    active = [s for s in shares if isinstance(s, SecureBoostActiveShare)]
    if len(active) != 1 or len(by_party) != active[0].n_parties:
        raise ValueError("consolidate_shares needs exactly one active share and "
                         "one share per party.")
    active = active[0]
    for share in shares:
        _check_share(share)
        check_same_model(share, active.model)
    n_features = sum(share.columns.size for share in shares)
    trees = []
    for spec in active.trees:
        left = np.asarray(spec["children_left"])
        feature = np.full(left.size, -1, dtype=np.intp)
        threshold = np.full(left.size, np.nan)
        missing_left = np.zeros(left.size, dtype=bool)
        for node in np.flatnonzero(left >= 0):
            owner = by_party[int(spec["owner"][node])]
            f, t, m = owner.table[int(spec["record"][node])]
            feature[node] = owner.columns[int(f)]
            threshold[node], missing_left[node] = t, bool(m)
        trees.append(dict(output=int(spec["output"]), children_left=left,
                          children_right=np.asarray(spec["children_right"]),
                          feature=feature, threshold=threshold,
                          missing_left=missing_left,
                          value=np.asarray(spec["value"], dtype=np.float64)))
    return SecureBoostConsolidated(trees, active.baseline, active.classes, n_features)
