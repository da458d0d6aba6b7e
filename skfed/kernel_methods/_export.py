"""A fitted FDSKL or AVFKAM model split into each party's share.

A fitted estimator is the whole simulation: it files every party's private
key and coefficients in one object (``_party_keys``, ``coef_stores_`` or
``coefficient_stores_``), so whoever holds it can rebuild every party's
block of the random directions and, with the messages of a fit, every
party's columns. Deployed, each party keeps only its own
:class:`KernelShare`:

- its key (its block of ``omega_j`` and its phases, which nobody else can
  compute), its column count, and the coefficients it created with their
  feature ids (model privacy: the coefficients never leave their creator);
- the public parameters of the run (kernel, ``gamma_``, the public seed
  that fixes ``l'_j``, the number of parties and the receiving party);
- for the receiving label holder only: how scores become predictions
  (classes, the regression target's scale, the ranking threshold).

Shares hold numpy arrays, bytes and Python numbers only, so each party
pickles its own. Every share of one fit carries the fit's ``model``
fingerprint and the ``digest`` of its own content at export (the mechanism
of SecureBoost's shares, :mod:`skfed.federation._fingerprint`): a share of
another fit, one edited since export, or one with a non-finite coefficient
is refused before any party computes, naming the share's party.

:func:`predict_with_shares` runs the federated prediction (FDSKL
Algorithm 2, masked sums of Algorithm 3) with one party per share, each
holding only its share and its own columns; the scores are the estimator's
bit for bit. :func:`consolidate_shares` joins every share into
one plaintext :class:`KernelConsolidated` (every key in one place), built
only by that explicit call or ``estimator.consolidate()``; it evaluates the
same ring arithmetic without masks (masks cancel exactly), so its scores
are the federated ones bit for bit too.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
import scipy.sparse as sp
from sklearn.utils import check_array

from ..federation import Federation, PartyState, balanced_tree
from ..federation._fingerprint import (
    check_intact,
    check_same_model,
    content_digest,
    new_fingerprint,
)
from ..losses import LogisticLoss
from ._vertical_features import (
    _BLOCK_ENTRIES,
    ANGLES,
    CoefficientStore,
    _local_projection,
    _single_party_features,
    _to_features,
    excluded_parties,
    federated_decision,
    local_decision,
    make_party_states,
    party_key,
    party_key_mode,
    party_name,
)

__all__ = ["KernelShare", "KernelConsolidated", "KernelShareMixin",
           "predict_with_shares", "consolidate_shares"]


class KernelShare:
    """One party's share of a fitted FDSKL or AVFKAM model.

    Parameters
    ----------
    party : int
        Index of the party that keeps this share.
    columns : ndarray of int
        Its columns of the full table (its own block, in its own order).
    key : bytes
        The party's private key: its block of the random directions and its
        phases.
    feature_ids : ndarray of int
        The features whose coefficients the party created (empty for a
        party without coefficients).
    coef : ndarray of shape (n_feature_ids, n_outputs)
        Those coefficients.
    public : dict
        Public parameters of the run: ``n_parties``, ``receiver`` (the
        index of the label holder that receives the scores), ``kernel``,
        ``gamma``, ``basis_seed``, ``n_outputs``.
    output : dict or None
        The receiver's post-processing (``kind``: ``"classifier"``,
        ``"regressor"`` or ``"ranker"``; ``classes``, ``loss``, ``y_mean``,
        ``y_scale`` or ``threshold``); ``None`` in other parties' shares.
    model : str, default=None
        The fingerprint of the fitted model, shared by every share of one
        fit (a fresh one if None).

    Attributes
    ----------
    digest : str
        BLAKE2b of the share's content at export:
        :func:`predict_with_shares` and :func:`consolidate_shares` refuse a
        share whose content changed since.
    """

    def __init__(self, party, columns, key, feature_ids, coef, public, output=None,
                 model=None):
        self.party = int(party)
        self.columns = np.asarray(columns, dtype=np.intp)
        self.key = bytes(key)
        self.feature_ids = np.asarray(feature_ids, dtype=np.int64)
        self.coef = np.asarray(coef, dtype=np.float64).reshape(
            len(self.feature_ids), int(public["n_outputs"]))
        self.public = dict(public)
        self.output = None if output is None else dict(output)
        self.model = str(model) if model is not None else new_fingerprint()
        self.digest = self._digest_now()

    def _digest_now(self):
        # Dicts as sorted (name, value) pairs: a value moved to another
        # name changes the digest too.
        return content_digest(
            self.party, self.columns, self.key, self.feature_ids, self.coef,
            sorted(self.public.items()),
            None if self.output is None else sorted(self.output.items()),
            self.model)

    def _store(self):
        if not len(self.feature_ids):
            return None
        store = CoefficientStore(self.coef.shape[1])
        store.add(self.feature_ids, self.coef)
        return store


class _Outputs:
    """Scores to predictions, from the receiver's ``output`` spec."""

    def _finish(self, raw, method):
        out = self.output
        if method == "raw":
            return raw
        if out["kind"] == "regressor":
            if method != "predict":
                raise AttributeError(f"A regressor has no {method}.")
            return raw[:, 0] * out["y_scale"] + out["y_mean"]
        classes = np.asarray(out["classes"])
        if out["kind"] == "ranker":
            scores = raw[:, 0] - out["threshold"]
            if method == "decision_function":
                return scores
            if method == "predict":
                return classes[(scores > 0).astype(int)]
            raise AttributeError(f"A ranker has no {method}.")
        scores = raw[:, 0] if raw.shape[1] == 1 else raw
        if method == "decision_function":
            return scores
        if method == "predict":
            return (classes[(scores > 0).astype(int)] if scores.ndim == 1
                    else classes[np.argmax(scores, axis=1)])
        if method == "predict_proba" and out.get("loss") == "logistic":
            p = LogisticLoss.probability(raw)
            return np.hstack([1 - p, p]) if p.shape[1] == 1 else \
                p / p.sum(axis=1, keepdims=True)
        raise AttributeError(f"This classifier has no {method} (loss "
                             f"{out.get('loss')!r}).")


class _BlockPartition:
    """The parties' blocks laid side by side (what make_party_states reads)."""

    def __init__(self, widths, active):
        self.n_parties = len(widths)
        self.active_parties = tuple(active)
        self._starts = np.concatenate([[0], np.cumsum(widths)]).astype(int)

    def columns(self, k):
        return np.arange(self._starts[k], self._starts[k + 1])


def _checked(shares):
    by_party = {share.party: share for share in shares}
    n = shares[0].public["n_parties"] if shares else 0
    if not shares or sorted(by_party) != list(range(n)):
        raise ValueError("Pass one share per party (every party of the fit).")
    receivers = [s for s in shares if s.output is not None]
    if len(receivers) != 1:
        raise ValueError("Exactly one share (the receiving label holder's) "
                         "must carry the output.")
    receiver = receivers[0]
    ordered = [by_party[k] for k in range(n)]
    for share in ordered:
        bad = np.count_nonzero(~np.isfinite(share.coef))
        if bad:
            raise ValueError(
                f"The share of party {share.party} has {bad} non-finite "
                f"coefficient(s) (NaN or infinite) of {share.coef.size}: every "
                "score would be NaN. Use the share as export_shares made it.")
        check_intact(share, "its key, columns, coefficients or public parameters")
        check_same_model(share, receiver.model,
                         f"the receiver's share (party {receiver.party}) has")
    return ordered, receiver


def _party_states(shares, blocks, receiver):
    widths = [share.columns.size for share in shares]
    for share, block in zip(shares, blocks):
        if block.ndim != 2 or block.shape[1] != share.columns.size:
            raise ValueError(f"Party {share.party}'s block must have "
                             f"{share.columns.size} columns (its own), got "
                             f"shape {block.shape}.")
    X = sp.hstack(blocks, format="csr") if any(sp.issparse(b) for b in blocks) \
        else np.hstack(blocks)
    public = receiver.public
    return make_party_states(
        _BlockPartition(widths, [receiver.party]), X, None, public["basis_seed"],
        [share.key for share in shares], public["kernel"], public["gamma"],
        stores=[share._store() for share in shares])


def _blocks(blocks, n_parties):
    # As the estimators' predict validates X (sklearn's checks and wording,
    # e.g. "Input blocks[1] contains NaN."), before any party runs.
    blocks = [check_array(b, accept_sparse=["csr", "csc"], dtype=np.float64,
                          input_name=f"blocks[{k}]") for k, b in enumerate(blocks)]
    if len(blocks) != n_parties or len({b.shape[0] for b in blocks}) != 1:
        raise ValueError(f"Pass one block of rows per party ({n_parties}), "
                         "all with the same rows.")
    return blocks


def predict_with_shares(shares, blocks, method="predict"):
    """Federated prediction from the parties' shares.

    Runs FDSKL's Algorithm 2 with one party per share (threads in this
    process here; each holds only its share and its own columns, and the
    receiver learns only the scores).

    Parameters
    ----------
    shares : list of KernelShare
        One per party (any order).
    blocks : list of array-like
        ``blocks[k]``: party ``k``'s own columns of the rows to predict.
    method : {"predict", "decision_function", "predict_proba", "raw"}
        What the receiver returns (``"raw"``: the scores ``f(x)``).

    Returns
    -------
    ndarray

    Raises
    ------
    ValueError
        Naming the share's party, for a share of another fit (its model
        fingerprint differs from the receiver's), one whose content changed
        after ``export_shares`` made it, or one with a non-finite
        coefficient.
    """
    shares, receiver = _checked(shares)
    blocks = _blocks(blocks, len(shares))
    states = _party_states(shares, blocks, receiver)
    names = [party_name(k) for k in range(len(shares))]
    with Federation(states) as fed:
        raw = federated_decision(fed, names, party_name(receiver.party),
                                 blocks[0].shape[0], receiver.public["n_outputs"],
                                 receiver.public["basis_seed"])
    out = _Outputs()
    out.output = receiver.output
    return out._finish(raw, method)


class KernelConsolidated(_Outputs):
    """An FDSKL or AVFKAM model in plaintext, usable without any federation.

    Built by :func:`consolidate_shares` (or ``estimator.consolidate()``):
    every party's key and coefficients in one object, which can therefore
    compute every party's block of the random directions. Its scores are
    the federated ones bit for bit: it adds the parties' ring angles without
    the masks (which cancel exactly in the federated sum) and adds the
    parties' partial decisions in the protocol's tree order.

    Attributes
    ----------
    shares : list of KernelShare
        Every party's share, by party index.
    output : dict
        The receiver's post-processing.
    """

    def __init__(self, shares):
        self.shares, receiver = _checked(shares)
        self.output = receiver.output
        self.public = receiver.public

    def _raw(self, blocks):
        blocks = _blocks(blocks, len(self.shares))
        receiver = party_name(self.public["receiver"])
        states = {name: PartyState(**state) for name, state in _party_states(
            self.shares, blocks, self.shares[self.public["receiver"]]).items()}
        names = list(states)
        n_rows = blocks[0].shape[0]
        owners = [p for p in names if states[p].store is not None]
        out = np.zeros((n_rows, self.public["n_outputs"]))
        if not owners:
            return out
        step = max(1, _BLOCK_ENTRIES // max(len(states[p].store.feature_ids)
                                            for p in owners))
        tree = balanced_tree([receiver] + [p for p in names if p != receiver])
        for start in range(0, n_rows, step):
            rows = np.arange(start, min(start + step, n_rows))
            local = {p: (local_decision(states[p], self._features(states, p, rows))
                         if p in owners else np.zeros((len(rows), out.shape[1])))
                     for p in names}
            out[start:start + len(rows)] = _tree_total(tree, local)
        return out

    def _features(self, states, owner, rows):
        ids = states[owner].store.feature_ids
        names = list(states)
        if len(names) == 1:
            return _single_party_features(states[owner], rows, ids)
        excluded = excluded_parties(self.public["basis_seed"], ids, owner, names)
        parts, positions = [], []
        for ex in dict.fromkeys(excluded):
            pos = np.flatnonzero(excluded == ex)
            total = np.zeros((len(rows), len(pos)), dtype=ANGLES.dtype)
            with np.errstate(over="ignore"):
                for p in names:
                    total += _local_projection(states[p], rows, ids[pos], holder=ex)[0]
            parts.append(ANGLES.decode(total))
            positions.append(pos)
        return _to_features(states[owner], parts, positions, len(ids))

    def _columns(self, X):
        X = check_array(X, accept_sparse=["csr", "csc"], dtype=np.float64,
                        input_name="X")
        n = sum(share.columns.size for share in self.shares)
        if X.shape[1] != n:
            raise ValueError(f"X must have {n} columns (the full table).")
        return [X[:, share.columns] for share in self.shares]

    def decision_function(self, X):
        """Scores of the rows of the full table ``X`` (as the estimator's)."""
        return self._finish(self._raw(self._columns(X)), "decision_function")

    def predict(self, X):
        """Predicted classes or targets."""
        return self._finish(self._raw(self._columns(X)), "predict")

    def predict_proba(self, X):
        """Class probabilities (FDSKL classifier with the logistic loss)."""
        return self._finish(self._raw(self._columns(X)), "predict_proba")


def _tree_total(tree, values):
    # The order of tree_sum: each node adds its right child's total to its left's.
    if isinstance(tree, tuple):
        return _tree_total(tree[0], values) + _tree_total(tree[1], values)
    return values[tree]


def consolidate_shares(shares):
    """Join every party's share into one plaintext :class:`KernelConsolidated`.

    Every party hands over its key and coefficients: this is the explicit,
    all-party decision to give up what the shares keep apart. The shares
    are checked as :func:`predict_with_shares` checks them: one of another
    fit, edited since export or with a non-finite coefficient is refused.
    """
    return KernelConsolidated(shares)


class KernelShareMixin:
    """``export_shares`` and ``consolidate`` for the kernel estimators, and
    the filing of every party's key at fit that they read."""

    def _keep_party_keys(self, fed, names, n_rows, row_order=None):
        """File each party's key with the fitted model (prediction needs
        them), with the row facts the privacy checks need and the fit's
        fingerprint (which its exported shares carry).

        The simulation keeps every party's share in the estimator, as it
        does the coefficient stores; fetching them is not a message. The
        estimator thus holds every party's key: it is the whole simulation,
        never a thing to hand to one party (``export_shares()`` splits it).
        """
        self.party_keys_ = party_key_mode(self.party_keys, self.random_state)
        self._party_keys = fed.gather(fed[p].call(party_key) for p in names)
        self._privacy_n_rows = int(n_rows)
        self._row_order = None if row_order is None else np.asarray(row_order)
        # Names this fit in every share export_shares() makes of it, so that
        # shares of two fits refuse to be used together (never shapes the
        # model: drawn from secrets, after training).
        self._model_fingerprint = new_fingerprint()

    def _share_output(self):
        if hasattr(self, "threshold_"):
            return dict(kind="ranker", classes=np.asarray(self.classes_),
                        threshold=float(self.threshold_))
        if hasattr(self, "_y_scale"):
            return dict(kind="regressor", y_mean=float(self._y_mean),
                        y_scale=float(self._y_scale))
        return dict(kind="classifier", classes=np.asarray(self.classes_),
                    loss=str(self.loss))

    def export_shares(self):
        """Every party's share of the fitted model, by party index.

        The fitted estimator is the whole simulation (every party's key and
        coefficients); a deployment gives each party only its own
        :class:`~skfed.kernel_methods.KernelShare`: its key, the
        coefficients it created and the public parameters (the receiving
        label holder's share also says how scores become predictions).
        :func:`~skfed.kernel_methods.predict_with_shares` predicts from
        them, bit for bit as the estimator.

        Returns
        -------
        list of KernelShare
        """
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self)
        partition = self.partition_
        stores = getattr(self, "coef_stores_", None)
        if stores is None:
            stores = self.coefficient_stores_
        receiver = partition.active_parties[0]
        n_outputs = getattr(self, "_n_outputs", 1)
        public = dict(n_parties=partition.n_parties, receiver=receiver,
                      kernel=self.kernel, gamma=float(self.gamma_),
                      basis_seed=int(self._basis_seed), n_outputs=int(n_outputs))
        # One fingerprint for every share of this fit (drawn at fit; a
        # model fitted by an older skfed gets one here).
        model = getattr(self, "_model_fingerprint", None) or new_fingerprint()
        shares = []
        for k in range(partition.n_parties):
            store = stores[k]
            empty = store is None or not len(store)
            ids = np.empty(0, dtype=np.int64) if empty else store.feature_ids
            coef = np.empty((0, n_outputs)) if empty else store.coef
            shares.append(KernelShare(
                k, partition.columns(k), self._party_keys[k], ids, coef, public,
                self._share_output() if k == receiver else None, model=model))
        return shares

    def consolidate(self):
        """One plaintext model from every party's share (see
        :func:`~skfed.kernel_methods.consolidate_shares`)."""
        return consolidate_shares(self.export_shares())
