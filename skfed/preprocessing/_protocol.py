"""What the parties of federated preprocessing run, and the drivers.

A column's *holders* are the parties that hold some of its rows: every row
holder on a horizontal split (``user0, user1, ...``), the clients of one
column group on a hybrid split (``client{r * C + c}``), the column's one
owner on a vertical split (``party{k}``). A column with one holder is fitted
by that holder alone, on its own thread, and nothing crosses. A column with
several holders is fitted by four protocols between its holders and a
data-less ``server`` that coordinates and decodes totals only:

- **exact sums** (:func:`fit_moments`, :func:`total_rows`): each holder
  computes its local totals and they are added under pairwise ring masks
  (:func:`~skfed.federation.secure_sum.secure_sum`) in the exact multi-limb
  encoding of :class:`~skfed.federation.secure_sum.ExactSumEncoder`; the
  server decodes the sum over holders only.
  Moments take two passes, as scikit-learn's ``_incremental_mean_and_var``
  does on the pooled table: the weights and weighted sums give the mean,
  which the server sends back; then the centred sums of squares and the
  centred sums (the corrected two-pass algorithm of Chan, Golub and LeVeque)
  give the variance, accurate even far from the origin.
- **extremes** (:func:`fit_extremes`): each value is mapped to a 64-bit key
  that sorts as the floats do; the server finds the largest key of every
  column four bits at a time, asking "does anyone hold a key of at least t?"
  for the 16 thresholds ``t`` that extend the bits found so far. The answers
  travel through the secure OR of :class:`~skfed.federation.secure_sum.AnyEncoder`: the server
  learns the bits of the maximum (the fitted statistic) and nothing else,
  not how many holders have a key above ``t``, not which. The minimum is the
  maximum of the complemented keys. Sixteen rounds; exact.
- **order statistics** (:func:`fit_order_statistics`): the ``r``-th smallest
  value is found inside the key range ``[min, max]`` by secure histograms:
  each round the interval known to hold it is cut into ``histogram_bins``
  key sub-ranges, the holders' counts (or weights) per sub-range are summed
  securely, and the sub-range where the cumulative count crosses ``r`` is
  the next interval. Within one binade (same sign and exponent) the key
  sub-ranges are equal-width value bins. After ``ceil(64 / log2(bins))``
  rounds at most, an interval is a single float: the value is exact. With a
  cap on the rounds, the value is the midpoint of its last interval, off by
  at most half its width (the bound is reported).
- **value counts** (:func:`fit_value_counts`): categories (strings, numbers,
  ``None``) are counted by keyed hashing into slots. The holders share a key
  the server never sees; every holder hashes each of its distinct values to
  a slot and adds, per slot, ``(rows, h, h t, h t^2)`` where ``h`` counts its
  values there and ``t`` is a 20-bit keyed tag; the sums are masked. The
  server learns, per slot, the total row count of a pseudonymous value and
  whether the slot holds one value (``(sum h t)^2 = (sum h)(sum h t^2)``,
  Cauchy-Schwarz, fails for two values unless their tags agree: probability
  ``2**-20`` per colliding pair) or several (then they are hashed again in a
  new round). Only the slots it selects (every category with at least
  ``min_count`` rows for the encoder, the largest counts for the imputer)
  are opened: the holders add ``h`` times their value's length, then ``h``
  times its bytes, in 40-bit words, and the server divides by ``h``. Values
  that are not selected never leave their holders; no count is ever tied to
  a holder.

Every total the server decodes is broadcast back to the column's holders
(``"... : fitted"`` phases), who transform their own rows with it.

Each secure sum and each broadcast is a protocol round of its own
(:func:`next_round`), numbered from 0 over the fit, so a timeline
(:meth:`~skfed.federation.MessageRecorder.plot_timeline`) shows every step;
only the holders' set-up (the slot key) carries no round.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import functools
import hashlib
import secrets
import struct

import numpy as np
import scipy.sparse as sp
from sklearn.utils._encode import _check_unknown, _get_counts, _unique
from sklearn.utils._mask import _get_mask
from sklearn.utils.stats import _weighted_percentile

from ..federation import Local, protocol_round
from ..federation.secure_sum import (AnyEncoder, ExactSumEncoder, RingEncoder,
                                     secure_sum)

__all__ = [
    "SERVER",
    "Layout",
    "float_keys",
    "keys_to_float",
    "fit_moments",
    "fit_extremes",
    "fit_any",
    "fit_order_values",
    "fit_weighted_percentiles",
    "send_fitted",
    "send_ragged",
    "total_rows",
    "fit_given_counts",
    "note_size",
    "next_round",
    "percentile_ranks",
    "fit_value_counts",
    "encode_value",
    "decode_value",
    "slot_of",
    "SLOT_TAG_BITS",
    "WORD_BITS",
]

#: name of the coordinating party (rows split only)
SERVER = "server"

_SIGN = np.uint64(1 << 63)
_ALL = np.uint64((1 << 64) - 1)
#: bits of a maximum found per round of the secure-OR search
_BITS_PER_ROUND = 4
#: bits of the keyed tag of a value-count slot
SLOT_TAG_BITS = 20
#: payload bits of a word of a value's bytes (5 bytes)
WORD_BITS = 40
_WORD_BYTES = WORD_BITS // 8
#: slots per distinct value (an upper bound) in a value-count round
_SLOTS_PER_VALUE = 8
_COUNTS = RingEncoder(frac_bits=0)
_EXACT = ExactSumEncoder()
_ANY = AnyEncoder()


# -- who holds what -----------------------------------------------------------

class Layout:
    """The holders of each column group, from a resolved partition.

    Attributes
    ----------
    names : list of str
        The data parties, in partition order.
    groups : list of (ndarray, list of str)
        ``(columns, holders)`` per column group: the column indices and the
        parties holding rows of them (one for a vertical split).
    rows, columns : dict
        Per party: its row indices (``slice(None)``: every row) and its
        column indices.
    """

    def __init__(self, partition, n_features):
        self.kind = partition.kind
        self.rows, self.columns, self.groups = {}, {}, []
        #: the largest public sizes of this fit's messages (for the contract)
        self.sizes = {}
        if self.kind == "vertical":
            self.names = [f"party{k}" for k in range(partition.n_parties)]
            for k, name in enumerate(self.names):
                self.rows[name] = slice(None)
                self.columns[name] = partition.columns(k)
                self.groups.append((partition.columns(k), [name]))
        elif self.kind == "horizontal":
            self.names = [f"user{m}" for m in range(partition.n_parties)]
            every = np.arange(n_features)
            for m, name in enumerate(self.names):
                self.rows[name] = partition.rows(m)
                self.columns[name] = every
            self.groups.append((every, list(self.names)))
        else:
            self.names = [f"client{k}" for k in range(partition.n_clients)]
            for k, name in enumerate(self.names):
                self.rows[name] = partition.client_rows(k)
                self.columns[name] = partition.client_columns(k)
            for c in range(partition.n_column_groups):
                holders = [self.names[k]
                           for k in partition.clients_of_column_group(c)]
                self.groups.append((np.asarray(partition.columns_of_group[c],
                                               dtype=np.intp), holders))

    @property
    def needs_server(self):
        """Whether some column has several holders (then a server sums)."""
        return any(len(holders) > 1 for _, holders in self.groups)

    @property
    def row_holders(self):
        """The fewest holders of a column (1: nothing is summed)."""
        return min(len(holders) for _, holders in self.groups)

    def block(self, X, name):
        """Party ``name``'s block of ``X`` (rows, then its columns)."""
        rows, cols = self.rows[name], self.columns[name]
        if isinstance(rows, slice):
            return X[:, cols]
        return X[rows][:, cols]

    def states(self, X, weights=None, **extra):
        """The private state of every party (and the server's, empty)."""
        states = {}
        for name in self.names:
            rows = self.rows[name]
            states[name] = dict(
                X=self.block(X, name),
                weights=None if weights is None else np.asarray(weights)[rows],
                **extra)
        if self.needs_server:
            states[SERVER] = {}
        return states

    def column_states(self, columns, **extra):
        """Party states whose ``X`` is the list of the party's columns (its
        rows only), from one array per column of the whole table."""
        states = {}
        for name in self.names:
            rows = self.rows[name]
            states[name] = dict(X=[columns[j][rows] for j in self.columns[name]],
                                columns=self.columns[name], weights=None,
                                **extra)
        if self.needs_server:
            states[SERVER] = {}
        return states

    def assemble(self, per_group, n_features, fill=np.nan, dtype=float):
        """One array over all columns from one array per group."""
        out = np.full(n_features, fill, dtype=dtype)
        for (cols, _), values in zip(self.groups, per_group):
            out[cols] = values
        return out


def next_round(fed):
    """The next protocol round of this fit (its messages carry the number).

    A round is one step of the server: a secure sum it asks for (its
    request and the holders' masked uploads), or the broadcast of what it
    decoded. Rounds count from 0 over the whole fit; only the set-up
    between holders (the slot key of the value counts) is outside any.
    """
    number = fed.__dict__.get("_preprocessing_round", -1) + 1
    fed.__dict__["_preprocessing_round"] = number
    return protocol_round(number)


def holder_limbs(local, state, *args):
    """``local``'s values, split into the exact encoding's limbs."""
    return _EXACT.split(local(state, *args))


def _secure(fed, holders, local, *args, phase, encoder):
    """One secure sum to the server, in its own round (the exact encoding's
    limbs split by the holders and joined by the server)."""
    exact = encoder is _EXACT
    with next_round(fed):
        total = secure_sum(fed, holders, SERVER,
                           functools.partial(holder_limbs, local) if exact
                           else local, *args, phase=phase, encoder=encoder,
                           sender=SERVER if args else None).result()
    return _EXACT.join(total) if exact else total


def _total(fed, holders, local, *args, phase, encoder):
    """``sum(local(state, *args))`` over ``holders``, held by the server.

    A single holder computes its own value, and nothing crosses.
    """
    if len(holders) == 1:
        return np.asarray(fed[holders[0]].call(
            local, *[Local(a) for a in args]).result())
    return _secure(fed, holders, local, *args, phase=phase, encoder=encoder)


def note_size(sizes, name, value):
    """Keep the largest ``value`` seen under ``name`` (``sizes`` may be None)."""
    if sizes is not None:
        sizes[name] = max(int(value), sizes.get(name, 0))


def _send_fitted(fed, holders, phase, *values):
    """The server sends a column group's fitted statistics to its holders."""
    if len(holders) > 1:
        with next_round(fed):
            fed.gather(fed[h].call(holder_store_fitted, *values,
                                   sender=SERVER, phase=phase)
                       for h in holders)


def holder_store_fitted(state, *values):
    """A holder keeps the fitted statistics of its columns (to transform)."""
    state.fitted = values


# -- exact sums: counts and moments --------------------------------------------

def _dense(X):
    return X.toarray() if sp.issparse(X) else X


def _columns_of(X):
    """A block as a list of its columns (a list of columns stays one)."""
    if isinstance(X, list):
        return X
    X = _dense(X)
    return [X[:, j] for j in range(X.shape[1])]


def holder_weighted_sums(state):
    """``[sum w, sum w x]`` per column over the holder's non-missing values."""
    X, w = state.X, state.weights
    if sp.issparse(X):
        X = sp.csc_array(X)
        w_all = np.ones(X.shape[0]) if w is None else np.asarray(w, float)
        W, S = np.empty(X.shape[1]), np.empty(X.shape[1])
        for j in range(X.shape[1]):
            start, stop = X.indptr[j], X.indptr[j + 1]
            data, rows = X.data[start:stop], X.indices[start:stop]
            nan = np.isnan(data)
            W[j] = w_all.sum() - w_all[rows[nan]].sum()
            S[j] = w_all[rows[~nan]] @ data[~nan]
        return np.concatenate([W, S])
    missing = np.isnan(X)
    values = np.where(missing, 0.0, X)
    if w is None:
        return np.concatenate([(~missing).sum(axis=0).astype(float),
                               values.sum(axis=0)])
    w = np.asarray(w, dtype=float)
    return np.concatenate([w @ (~missing), w @ values])


def holder_centred_sums(state, mean):
    """``[sum w (x - mean)^2, sum w (x - mean)]`` per column (second pass)."""
    X, w = state.X, state.weights
    mean = np.asarray(mean, dtype=float)
    if sp.issparse(X):
        X = sp.csc_array(X)
        w_all = np.ones(X.shape[0]) if w is None else np.asarray(w, float)
        Q, C = np.empty(X.shape[1]), np.empty(X.shape[1])
        for j in range(X.shape[1]):
            start, stop = X.indptr[j], X.indptr[j + 1]
            data, rows = X.data[start:stop], X.indices[start:stop]
            keep = ~np.isnan(data)
            wk = w_all[rows[keep]]
            d = data[keep] - mean[j]
            # the implicit zeros: weight of the rows without an entry
            w_zero = w_all.sum() - w_all[rows].sum()
            Q[j] = wk @ (d * d) + w_zero * mean[j] ** 2
            C[j] = wk @ d - w_zero * mean[j]
        return np.concatenate([Q, C])
    missing = np.isnan(X)
    centred = np.where(missing, 0.0, X - mean)
    if w is None:
        return np.concatenate([(centred ** 2).sum(axis=0), centred.sum(axis=0)])
    w = np.asarray(w, dtype=float)
    return np.concatenate([w @ centred ** 2, w @ centred])


def holder_n_rows(state):
    """The holder's number of rows."""
    return np.array([float(state.X.shape[0])])


def total_rows(fed, layout, phase="count"):
    """The number of rows over all parties (summed over the holders of the
    first column group: every group holds every row once)."""
    _, holders = layout.groups[0]
    return int(round(float(_total(fed, holders, holder_n_rows, phase=phase,
                                  encoder=_EXACT)[0])))


def holder_present_weights(state):
    """``sum w`` per column over the holder's non-missing values."""
    return holder_weighted_sums(state)[:state.X.shape[1]]


def fit_moments(fed, layout, n_features, *, what="variance", phase="moments"):
    """Weights, means and variances per column, as on the pooled table.

    ``what``: ``"count"`` (the weights of the non-missing values only),
    ``"mean"`` or ``"variance"``. Phases: ``"<phase>: mean/*"`` (the first
    secure sum; ``"<phase>: count/*"`` for counts only), ``"<phase>:
    variance/*"`` (the second, whose request carries the means) and
    ``"<phase>: fitted"`` (the server's broadcast of the result).
    """
    weights, means, variances = [], [], []
    for cols, holders in layout.groups:
        m = len(cols)
        mean = var = None
        if what == "count":
            W = _total(fed, holders, holder_present_weights,
                       phase=f"{phase}: count", encoder=_EXACT)
        else:
            first = _total(fed, holders, holder_weighted_sums,
                           phase=f"{phase}: mean", encoder=_EXACT)
            W, S = first[:m], first[m:]
            with np.errstate(divide="ignore", invalid="ignore"):
                mean = S / W
        if what == "variance":
            # the corrected two-pass algorithm: centred on the global mean,
            # with the sum of the centred values as the correction term
            second = _total(fed, holders, holder_centred_sums, mean,
                            phase=f"{phase}: variance", encoder=_EXACT)
            Q, C = second[:m], second[m:]
            with np.errstate(divide="ignore", invalid="ignore"):
                var = (Q - C ** 2 / W) / W
        _send_fitted(fed, holders, f"{phase}: fitted",
                     *[v for v in (W, mean, var) if v is not None])
        weights.append(W)
        means.append(mean)
        variances.append(var)
    return (layout.assemble(weights, n_features),
            None if what == "count" else layout.assemble(means, n_features),
            layout.assemble(variances, n_features) if what == "variance"
            else None)


def holder_given_counts(state, categories, handle_unknown):
    """A holder checks its rows against given categories (scikit-learn's
    error, raised by the holder) and counts each category's rows."""
    counts = []
    for i, (column, cats) in enumerate(zip(state.X, categories)):
        if handle_unknown == "error":
            diff = _check_unknown(column, cats)
            if diff:
                raise ValueError(f"Found unknown categories {diff} in column "
                                 f"{state.columns[i]} during fit")
        counts.append(_get_counts(column, cats))
    return np.concatenate(counts).astype(float) if counts else np.zeros(0)


def fit_given_counts(fed, layout, categories, handle_unknown, count):
    """Every holder checks its rows against the given categories; with
    ``count``, their row counts are summed securely (phase ``"counts/*"``).
    Returns per column the counts (zeros without ``count``)."""
    out = [None] * len(categories)
    for cols, holders in layout.groups:
        cats = [categories[j] for j in cols]
        note_size(layout.sizes, "given", sum(len(c) for c in cats))
        if count:
            # the categories are the user's parameter: known to every party
            total = _total(fed, holders, functools.partial(
                holder_given_counts, categories=cats,
                handle_unknown=handle_unknown), phase="counts", encoder=_COUNTS)
        else:
            fed.gather(fed[h].call(holder_given_counts, Local(cats),
                                   Local(handle_unknown)) for h in holders)
            total = np.zeros(sum(len(c) for c in cats))
        ends = np.cumsum([0] + [len(c) for c in cats])
        for k, j in enumerate(cols):
            out[j] = np.rint(total[ends[k]:ends[k + 1]]).astype(np.int64)
    return out


def send_ragged(fed, layout, phase, per_column):
    """The server sends each column group's arrays (one per column, of any
    lengths) to its holders: the values end to end, and the lengths."""
    for cols, holders in layout.groups:
        arrays = [np.asarray(per_column[j], dtype=np.float64) for j in cols]
        note_size(layout.sizes, "edges", sum(len(a) for a in arrays))
        _send_fitted(fed, holders, phase, np.concatenate(arrays),
                     np.array([len(a) for a in arrays], dtype=np.int64))


# -- keys that sort as floats do -------------------------------------------------

def float_keys(x):
    """``uint64`` keys ordered as the float64 values (``-0.0`` as ``0.0``)."""
    bits = (np.asarray(x, dtype=np.float64) + 0.0).view(np.uint64)
    return np.where(bits >> np.uint64(63), ~bits, bits | _SIGN)


def keys_to_float(keys):
    """Inverse of :func:`float_keys`."""
    keys = np.asarray(keys, dtype=np.uint64)
    bits = np.where(keys >> np.uint64(63), keys & ~_SIGN, ~keys)
    return bits.view(np.float64)


# -- extremes: the secure-OR search ---------------------------------------------

def _column_values(X, j, weights=None):
    """Column ``j``'s non-missing values (implicit zeros of a sparse block
    included), without the rows of zero weight when ``weights`` is given."""
    if sp.issparse(X):
        X = sp.csc_array(X)
        start, stop = X.indptr[j], X.indptr[j + 1]
        data, rows = X.data[start:stop], X.indices[start:stop]
        keep = ~np.isnan(data)
        if weights is not None:
            keep &= weights[rows] != 0
            has_zero = np.any(np.delete(weights, rows) != 0)
        else:
            has_zero = stop - start < X.shape[0]
        data = data[keep]
        return np.concatenate([data, [0.0]]) if has_zero else data
    column = np.asarray(X[:, j], dtype=np.float64)
    keep = ~np.isnan(column)
    if weights is not None:
        keep &= np.asarray(weights) != 0
    return column[keep]


def holder_top_keys(state, mode, skip_zero_weight=False):
    """The holder's largest key of each searched quantity, and presence.

    ``mode="minmax"``: the keys of the values, then their complements (the
    largest complement is the smallest value); ``"maxabs"``: the keys of
    ``|x|``. Kept in the state for the search rounds.
    """
    X = state.X
    w = (np.asarray(state.weights) if skip_zero_weight
         and state.weights is not None else None)
    tops, present = [], []
    for j in range(X.shape[1]):
        values = _column_values(X, j, w)
        if mode == "maxabs":
            values = np.abs(values)
        keys = float_keys(values)
        present.append(keys.size > 0)
        tops.append(keys.max() if keys.size else np.uint64(0))
    top = np.asarray(tops, dtype=np.uint64)
    present = np.asarray(present, dtype=bool)
    if mode == "minmax":
        bottoms = [float_keys(_column_values(X, j, w)) for j in range(X.shape[1])]
        low = np.asarray([(~k).max() if k.size else np.uint64(0)
                          for k in bottoms], dtype=np.uint64)
        top = np.concatenate([top, low])
        present = np.concatenate([present, present])
    state.top, state.present = top, present
    return top, present


def holder_exceeds(state, prefixes, shift):
    """Flags ``top >= prefix | v << shift`` for ``v = 0..15``, per quantity."""
    v = np.arange(1 << _BITS_PER_ROUND, dtype=np.uint64)
    thresholds = (np.asarray(prefixes, dtype=np.uint64)[:, None]
                  | (v[None, :] << np.uint64(shift)))
    flags = state.present[:, None] & (state.top[:, None] >= thresholds)
    return flags.astype(float)


def _max_keys(fed, holders, mode, n, phase, skip_zero_weight):
    """The largest key of each of ``n`` quantities over ``holders``, and
    whether any holder has a value of it."""
    if len(holders) == 1:
        return fed[holders[0]].call(holder_top_keys, Local(mode),
                                    Local(skip_zero_weight)).result()
    fed.gather(fed[h].call(holder_top_keys, Local(mode),
                           Local(skip_zero_weight)) for h in holders)
    prefix, present = np.zeros(n, dtype=np.uint64), None
    for shift in range(64 - _BITS_PER_ROUND, -1, -_BITS_PER_ROUND):
        flags = _secure(fed, holders, holder_exceeds, prefix, shift,
                        phase=phase, encoder=_ANY)
        if present is None:  # the threshold 0 of the first round: any value
            present = flags[:, 0].copy()
        # the flags fall with v (a larger threshold): count the set ones
        nibble = np.maximum(flags.sum(axis=1) - 1, 0).astype(np.uint64)
        prefix = prefix | (nibble << np.uint64(shift))
    return prefix, present


def fit_extremes(fed, layout, n_features, mode="minmax", phase="extremes",
                 skip_zero_weight=False):
    """Exact column minima and maxima (``mode="minmax"``) or maxima of
    ``|x|`` (``"maxabs"``), NaN for a column without values.

    Phases: ``"<phase>/*"`` (sixteen secure ORs, their requests carrying
    the bits found so far) and ``"<phase>: fitted"``.
    """
    lows, highs = [], []
    for cols, holders in layout.groups:
        m = len(cols)
        n = m * (2 if mode == "minmax" else 1)
        top, present = _max_keys(fed, holders, mode, n, phase,
                                 skip_zero_weight)
        top = np.asarray(top, dtype=np.uint64)
        present = np.asarray(present, dtype=bool)
        high = np.where(present[:m], keys_to_float(top[:m]), np.nan)
        if mode == "minmax":
            low = np.where(present[m:], keys_to_float(~top[m:]), np.nan)
        else:
            low = np.zeros(m)
        _send_fitted(fed, holders, f"{phase}: fitted", low, high)
        lows.append(low)
        highs.append(high)
    return layout.assemble(lows, n_features), layout.assemble(highs, n_features)


# -- a secure OR per column -----------------------------------------------------

def holder_flags(state, what, missing_values=np.nan):
    """Per column: whether the holder has a missing value (``"missing"``) or
    a non-missing one (``"present"``)."""
    flags = []
    for column in _columns_of(state.X):
        mask = _get_mask(column, missing_values)
        flags.append(mask.any() if what == "missing" else (~mask).any())
    return np.asarray(flags, dtype=float)


def fit_any(fed, layout, n_features, what, missing_values=np.nan,
            phase="flags"):
    """Per column: does any holder have a missing (or a present) value?"""
    out = []
    for cols, holders in layout.groups:
        # what is asked is public: part of the function, not a message
        flags = _total(fed, holders, functools.partial(
            holder_flags, what=what, missing_values=missing_values),
            phase=phase, encoder=_ANY)
        out.append(np.asarray(flags) != 0)
    return layout.assemble(out, n_features, fill=False, dtype=bool)


# -- order statistics: secure histograms in key space ---------------------------

def _cut(lo, hi, n_bins):
    """The first key of each of ``n_bins`` near-equal sub-ranges of the key
    range ``[lo, hi]`` (Python integers; a sub-range may be empty)."""
    size = hi - lo + 1
    return [lo + (i * size) // n_bins for i in range(n_bins)]


def holder_sorted_keys(state, skip_missing=True):
    """Sort the holder's keys (and weights) per column, once."""
    X, w = state.X, state.weights
    state.sorted_keys = []
    for j in range(X.shape[1]):
        column = np.asarray(_dense(X)[:, j], dtype=np.float64)
        keep = ~np.isnan(column) if skip_missing else np.ones(column.size, bool)
        keys = float_keys(column[keep])
        order = np.argsort(keys, kind="stable")
        weights = None if w is None else np.asarray(w, float)[keep][order]
        state.sorted_keys.append((keys[order], weights))


def holder_histogram(state, columns, lows, highs, n_bins):
    """Counts (or weights) of the holder's keys in the sub-ranges of each
    requested interval ``[lows[q], highs[q]]`` of column ``columns[q]``."""
    out = np.zeros((len(columns), int(n_bins)))
    for q, (j, lo, hi) in enumerate(zip(columns.tolist(), lows.tolist(),
                                        highs.tolist())):
        keys, weights = state.sorted_keys[j]
        starts = np.asarray(_cut(lo, hi, int(n_bins)), dtype=np.uint64)
        first = np.searchsorted(keys, starts, side="left")
        stop = np.searchsorted(keys, np.uint64(hi), side="right")
        bounds = np.append(first, stop)
        if weights is None:
            out[q] = np.diff(bounds)
        else:
            # one sum per sub-range (not differences of a running sum)
            out[q] = [weights[a:b].sum() for a, b in zip(bounds[:-1], bounds[1:])]
    return out


class _Target:
    """The smallest key whose cumulative count reaches ``threshold``
    (or exceeds it, ``strict``), searched within ``[lo, hi]``."""

    def __init__(self, column, threshold, strict, lo, hi):
        self.column, self.threshold, self.strict = column, threshold, strict
        self.lo, self.hi, self.below = int(lo), int(hi), 0.0
        self.cumulative = None  # count up to and including the key, once exact
        self.stuck = False  # no sub-range reaches the threshold

    @property
    def resolved(self):
        return self.lo == self.hi

    def narrow(self, counts, n_bins):
        starts = _cut(self.lo, self.hi, n_bins) + [self.hi + 1]
        running = self.below
        for i, count in enumerate(counts):
            after = running + count
            if count > 0 and (after > self.threshold if self.strict
                              else after >= self.threshold):
                self.lo, self.hi, self.below = starts[i], starts[i + 1] - 1, running
                if self.resolved:
                    self.cumulative = after
                return
            running = after
        if not self.strict and any(c > 0 for c in counts):
            # a weighted total summed in another order than the holders'
            # bins may sit an ulp above their running sum: the largest
            # value then, as scikit-learn clips its search to the last index
            i = max(i for i, c in enumerate(counts) if c > 0)
            self.lo, self.hi = starts[i], starts[i + 1] - 1
            self.below = running - counts[i]
            if self.resolved:
                self.cumulative = running
            return
        # nothing above (a strict search past the largest value)
        self.stuck = True

    def value(self):
        """The value (exact once resolved) and its error bound."""
        low, high = keys_to_float(np.array([self.lo, self.hi], dtype=np.uint64))
        if self.resolved:
            return float(low), 0.0
        return float(low + (high - low) / 2), float((high - low) / 2)


def _search(fed, holders, targets, *, n_bins, max_rounds, weighted, phase,
            sizes=None):
    """Narrow every :class:`_Target` of one column group by secure
    histograms, one refinement of each open interval per round; returns
    the rounds run. The requests carry the intervals (their columns and
    key bounds), the uploads the masked counts (or weights) per sub-range.
    """
    encoder = _EXACT if weighted else _COUNTS
    rounds = 0
    while max_rounds is None or rounds < max_rounds:
        open_ = [t for t in targets if not t.resolved and not t.stuck]
        if not open_:
            break
        intervals = sorted({(t.column, t.lo, t.hi) for t in open_})
        index = {iv: q for q, iv in enumerate(intervals)}
        columns = np.array([iv[0] for iv in intervals], dtype=np.int64)
        lows = np.array([iv[1] for iv in intervals], dtype=np.uint64)
        highs = np.array([iv[2] for iv in intervals], dtype=np.uint64)
        note_size(sizes, "intervals", len(intervals))
        note_size(sizes, "histogram", len(intervals) * int(n_bins)
                  * (_EXACT.n_limbs if weighted else 1))
        hist = _secure(fed, holders, holder_histogram, columns, lows, highs,
                       n_bins, phase=phase, encoder=encoder)
        for t in open_:
            t.narrow(hist[index[(t.column, t.lo, t.hi)]], n_bins)
        rounds += 1
    return rounds


def _start_interval(starts, j):
    """The key interval to search column ``j`` in: its known extremes, or
    every float from -inf to +inf."""
    if starts is None or not np.isfinite(starts[0][j]):
        low, high = float_keys(np.array([-np.inf, np.inf]))
    else:
        low, high = float_keys(np.array([starts[0][j], starts[1][j]]))
    return int(low), int(high)


def holder_order_values(state, ranks):
    """A lone holder's order statistics: ``ranks[j]`` of its column ``j``."""
    out = []
    for j, r in enumerate(ranks):
        column = _column_values(state.X, j)
        out.append(np.sort(column)[np.asarray(r, dtype=np.int64)]
                   if len(r) else np.array([]))
    return out


def fit_order_values(fed, layout, ranks, *, starts=None, n_bins=64,
                     max_rounds=None, phase="quantiles", sizes=None):
    """The order statistics ``ranks[j]`` (0-based) of every column ``j``.

    A lone holder sorts its column; several holders are searched by secure
    histograms within ``starts = (lows, highs)`` (known column extremes) or
    within every key. Returns ``(values, bounds, rounds)``: per column the
    values and their error bounds (0 once exact), and the most rounds a
    column group took.
    """
    values = [None] * len(ranks)
    bounds = [None] * len(ranks)
    most = 0
    for cols, holders in layout.groups:
        local = [np.asarray(ranks[j], dtype=np.int64) for j in cols]
        if len(holders) == 1:
            found = fed[holders[0]].call(holder_order_values,
                                         Local(local)).result()
            for j, v in zip(cols, found):
                values[j], bounds[j] = np.asarray(v, float), np.zeros(len(v))
            continue
        fed.gather(fed[h].call(holder_sorted_keys) for h in holders)
        targets = {}
        for q, (j, r) in enumerate(zip(cols, local)):
            lo, hi = _start_interval(starts, j)
            for rank in np.unique(r).tolist():
                targets[q, rank] = _Target(q, rank + 1, False, lo, hi)
        most = max(most, _search(fed, holders, list(targets.values()),
                                 n_bins=n_bins, max_rounds=max_rounds,
                                 weighted=False, phase=phase, sizes=sizes))
        for q, (j, r) in enumerate(zip(cols, local)):
            found = [targets[q, rank].value() for rank in r.tolist()]
            values[j] = np.array([v for v, _ in found], dtype=float)
            bounds[j] = np.array([b for _, b in found], dtype=float)
    return values, bounds, most


def holder_weighted_percentiles(state, levels, average):
    """A lone holder's weighted percentiles, as scikit-learn computes them."""
    out = []
    for j, lv in enumerate(levels):
        column = np.asarray(_dense(state.X)[:, j], dtype=np.float64)
        out.append(np.asarray(_weighted_percentile(
            column, np.asarray(state.weights, float), np.asarray(lv, float),
            average=average), dtype=float))
    return out


def fit_weighted_percentiles(fed, layout, levels, totals, *, average,
                             starts=None, n_bins=64, max_rounds=None,
                             phase="quantiles", sizes=None):
    """Weighted percentiles ``levels[j]`` of every column ``j`` (the
    inverted CDF, averaged on a tie when ``average``: scikit-learn's
    ``_weighted_percentile``), given each column's total weight.

    The percentile at level ``p`` is the smallest value whose cumulative
    weight reaches ``p / 100`` of the total; averaged, when it reaches it
    exactly (to float64's epsilon), the mean of it and the next value of
    positive weight, found by a second search. Returns ``(values, bounds,
    rounds)`` as :func:`fit_order_values`.
    """
    values = [None] * len(levels)
    bounds = [None] * len(levels)
    most = 0
    eps = np.finfo(np.float64).eps
    for cols, holders in layout.groups:
        local = [np.asarray(levels[j], dtype=float) for j in cols]
        if len(holders) == 1:
            found = fed[holders[0]].call(holder_weighted_percentiles,
                                         Local(local), Local(average)).result()
            for j, v in zip(cols, found):
                values[j], bounds[j] = np.asarray(v, float), np.zeros(len(v))
            continue
        fed.gather(fed[h].call(holder_sorted_keys) for h in holders)
        first = []
        for q, (j, lv) in enumerate(zip(cols, local)):
            lo, hi = _start_interval(starts, j)
            for p in lv.tolist():
                t = p / 100 * totals[j]
                t = np.nextafter(0.0, 1.0) if t == 0 else t
                first.append(_Target(q, t, False, lo, hi))
        rounds = _search(fed, holders, first, n_bins=n_bins,
                         max_rounds=max_rounds, weighted=True, phase=phase,
                         sizes=sizes)
        second = {}
        if average:
            for k, t in enumerate(first):
                if t.resolved and t.cumulative - t.threshold <= eps:
                    j = cols[t.column]
                    _, hi = _start_interval(starts, j)
                    nxt = _Target(t.column, t.cumulative, True, t.lo, hi)
                    nxt.below = t.below
                    second[k] = nxt
            rounds += _search(fed, holders, list(second.values()),
                              n_bins=n_bins, max_rounds=max_rounds,
                              weighted=True, phase=phase, sizes=sizes)
        most = max(most, rounds)
        k = 0
        for q, (j, lv) in enumerate(zip(cols, local)):
            out, bound = [], []
            for _ in lv:
                v, b = first[k].value()
                if k in second:
                    nxt = second[k]
                    # none above (the largest value): scikit-learn keeps v
                    v2, b2 = (v, b) if nxt.stuck else nxt.value()
                    v, b = (v + v2) / 2, max(b, b2)
                out.append(v)
                bound.append(b)
                k += 1
            values[j], bounds[j] = np.array(out), np.array(bound)
    return values, bounds, most


def send_fitted(fed, layout, phase, *arrays):
    """The server sends each column group's slice of the fitted statistics
    (arrays over all columns) to the group's holders."""
    for cols, holders in layout.groups:
        _send_fitted(fed, holders, phase,
                     *[np.asarray(a)[cols] for a in arrays])


def percentile_ranks(n, levels, method):
    """Order-statistic ranks and weights that give numpy's percentiles.

    ``np.percentile(x, levels, method=method)`` of ``n`` values is
    ``lerp(x_(lo), x_(lo + 1), gamma)``; the positions are read off
    ``np.percentile(arange(n), ...)``, which is ``lo + gamma`` exactly for
    the discontinuous methods and to ``n * 2**-53`` for the others.
    """
    position = np.percentile(np.arange(n, dtype=np.float64), levels,
                             method=method)
    lo = np.floor(position).astype(np.int64)
    gamma = position - lo
    hi = np.minimum(lo + 1, n - 1)
    return lo, hi, gamma


def lerp(a, b, t):
    """numpy's interpolation of its quantiles (exact at ``t`` = 0 and 1)."""
    a, b, t = (np.asarray(v, dtype=np.float64) for v in (a, b, t))
    diff = b - a
    return np.where(t >= 0.5, b - diff * (1 - t), a + diff * t)


# -- value counts: keyed slots ----------------------------------------------------

def encode_value(value):
    """A category as bytes (type tag, then payload), the inverse of
    :func:`decode_value`; NaN is one value, as scikit-learn's encoders have it."""
    if value is None:
        return b"n"
    if isinstance(value, (bool, np.bool_)):
        return b"b1" if value else b"b0"
    if isinstance(value, (int, np.integer)):
        return b"i" + str(int(value)).encode()
    if isinstance(value, (float, np.floating)):
        value = float(value)
        return b"f" + struct.pack(">d", np.nan if value != value else value + 0.0)
    if isinstance(value, (str, np.str_)):
        return b"s" + str(value).encode("utf-8")
    if isinstance(value, (bytes, np.bytes_)):
        return b"y" + bytes(value)
    raise TypeError(
        f"A category of type {type(value).__name__} ({value!r}) cannot be "
        "counted across parties; use strings, numbers or None.")


def decode_value(data):
    """The value behind :func:`encode_value`'s bytes."""
    tag, body = data[:1], data[1:]
    if tag == b"n":
        return None
    if tag == b"b":
        return body == b"1"
    if tag == b"i":
        return int(body.decode())
    if tag == b"f":
        return struct.unpack(">d", body)[0]
    if tag == b"s":
        return body.decode("utf-8")
    if tag == b"y":
        return body
    raise ValueError(f"Not an encoded category: {data!r}.")


def _words(data, n_words):
    """``data`` as ``n_words`` integers of :data:`WORD_BITS` bits."""
    padded = data.ljust(n_words * _WORD_BYTES, b"\0")
    return [int.from_bytes(padded[i:i + _WORD_BYTES], "big")
            for i in range(0, n_words * _WORD_BYTES, _WORD_BYTES)]


def _from_words(words, length):
    """The first ``length`` bytes of :func:`_words`' integers."""
    data = b"".join(int(w).to_bytes(_WORD_BYTES, "big") for w in words)
    return data[:int(length)]


def slot_of(key, round_no, column, data, n_slots):
    """The keyed slot and tag of a value (BLAKE2b keyed with the holders'
    key; the server, without the key, cannot compute them)."""
    digest = hashlib.blake2b(
        struct.pack(">II", round_no, column) + data, key=key, digest_size=16,
        person=b"skfed-slots").digest()
    slot = int.from_bytes(digest[:8], "big") % n_slots
    tag = int.from_bytes(digest[8:12], "big") & ((1 << SLOT_TAG_BITS) - 1)
    return slot, tag


def _distinct(column, skip_missing, missing_values):
    """``{encoded value: rows}`` of one column."""
    if skip_missing:
        column = column[~_get_mask(column, missing_values)]
    if not column.size:
        return {}
    uniques, counts = _unique(column, return_counts=True)
    return {encode_value(v): int(c) for v, c in zip(uniques.tolist(), counts)}


def holder_value_counts(state, skip_missing, missing_values=np.nan):
    """A lone holder's encoded values and row counts, per column."""
    state.values = [_distinct(c, skip_missing, missing_values)
                    for c in state.X]
    return state.values


def holder_local_values(state, skip_missing, missing_values=np.nan):
    """Count the holder's distinct values per column; all start pending."""
    state.values = [_distinct(c, skip_missing, missing_values)
                    for c in state.X]
    state.pending = [set(values) for values in state.values]


def holder_distinct_sizes(state):
    """How many distinct values the holder has, per column."""
    return np.array([len(values) for values in state.values], dtype=float)


def holder_draw_key(state):
    """The first holder's key for the slots, from its CSPRNG."""
    state.slot_key = secrets.token_bytes(16)
    return np.frombuffer(state.slot_key, dtype=np.uint8).copy()


def holder_store_key(state, key):
    key = np.asarray(key)
    if key.shape != (16,) or key.dtype != np.uint8:
        raise ValueError("The holders' slot key must be 16 bytes.")
    state.slot_key = key.tobytes()


def holder_slot_table(state, round_no, n_slots):
    """Per column, the slot table of the holder's pending values:
    ``(rows, h, h t, h t^2)`` per slot, the columns one after the other."""
    tables, state.slots = [], []
    for j, size in enumerate(np.asarray(n_slots).tolist()):
        table = np.zeros((int(size), 4))
        where = {}
        for data in (state.pending[j] if size else ()):
            slot, tag = slot_of(state.slot_key, int(round_no), j, data, int(size))
            table[slot] += (state.values[j][data], 1, tag, tag * tag)
            where[slot] = data
        state.slots.append(where)
        tables.append(table)
    return np.concatenate(tables) if tables else np.zeros((0, 4))


def holder_slot_lengths(state, columns, slots):
    """``h`` times the byte length of the holder's value in each opened slot."""
    return np.array([
        len(state.slots[j][s]) if s in state.slots[j] else 0
        for j, s in zip(columns.tolist(), slots.tolist())], dtype=float)


def holder_slot_words(state, columns, slots, n_words):
    """``h`` times the words of the holder's value in each opened slot."""
    out = np.zeros((len(slots), int(n_words)))
    for q, (j, s) in enumerate(zip(columns.tolist(), slots.tolist())):
        if s in state.slots[j]:
            out[q] = _words(state.slots[j][s], int(n_words))
    return out


def holder_take_opened(state, columns, slots, lengths, words):
    """The opened values (the server's broadcast) are no longer pending.

    A holder with a value in an opened slot checks that the opened value is
    its own: if not, the tags missed a collision (two values, their tags
    equal) and the opened bytes are a mix of two values, which no fit may
    keep as a category.
    """
    for j, s, length, row in zip(columns.tolist(), slots.tolist(),
                                 lengths.tolist(), np.asarray(words).tolist()):
        value = _from_words(row, length)
        mine = state.slots[j].get(s)
        if mine is not None and mine != value:
            raise RuntimeError(
                f"Two categories of column {j} fell in one slot with equal "
                f"keyed tags (probability 2**-{SLOT_TAG_BITS} per colliding "
                "pair), so the opened value is a mix of both. Fit again: "
                "each fit draws a new slot key.")
        state.pending[j].discard(value)


def _slots_for(bound):
    """Slots of a round: a power of two, at least 8 per pending value."""
    need = max(int(bound), 1) * _SLOTS_PER_VALUE
    return max(16, 1 << (need - 1).bit_length())


def _modes(counts):
    """Only the values with the largest count."""
    if not counts:
        return {}
    best = max(counts.values())
    return {v: c for v, c in counts.items() if c == best}


def _choose(rows, h, single, select, min_count):
    """The slots to open, and whether another round is needed.

    ``"all"``: every one-value slot of at least ``min_count`` rows; again
    while a slot of several values has ``min_count`` rows (its values may
    be opened once apart; one below it holds only values below it).
    ``"mode"``: the one-value slots of the largest count, once no slot of
    several values reaches that count (one of its values might tie or win).
    """
    several = [hh > 0 and not ok for hh, ok in zip(h, single)]
    if select == "mode":
        best = max([r for r, ok in zip(rows, single) if ok], default=0)
        again = any(r >= best for r, many in zip(rows, several) if many)
        chosen = [] if again else [
            s for s, (r, ok) in enumerate(zip(rows, single))
            if ok and r == best and r > 0]
        return chosen, again
    chosen = [s for s, (r, ok) in enumerate(zip(rows, single))
              if ok and r >= min_count]
    again = any(r >= min_count for r, many in zip(rows, several) if many)
    return chosen, again


def fit_value_counts(fed, holders, n_columns, *, select="all", min_count=1,
                     skip_missing=False, missing_values=np.nan,
                     phase="categories", sizes=None):
    """The opened values of each column and their row counts over holders.

    ``select="all"``: every value with at least ``min_count`` rows;
    ``select="mode"``: the values with the largest count. Returns
    ``(counts, n_rows, hidden)``: a list of ``{encoded value: rows}`` per
    column (:func:`decode_value` gives the value back),
    the total rows per column, and per column whether values with fewer
    than ``min_count`` rows exist (they stay with their holders).

    Phases: ``"<phase>: key"`` (holder to holder), ``"<phase>: sizes/*"``,
    ``"<phase>: slots/*"``, ``"<phase>: lengths/*"``, ``"<phase>:
    values/*"`` (secure sums) and ``"<phase>: fitted"`` (the opened values,
    to the holders).
    """
    if len(holders) == 1:
        counts = fed[holders[0]].call(holder_value_counts, Local(skip_missing),
                                      Local(missing_values)).result()
        n_rows = np.array([sum(c.values()) for c in counts], dtype=float)
        hidden = np.array([any(0 < r < min_count for r in c.values())
                           for c in counts], dtype=bool)
        if select == "mode":
            counts = [_modes(c) for c in counts]
        else:
            counts = [{v: r for v, r in c.items() if r >= min_count}
                      for c in counts]
        return counts, n_rows, hidden
    fed.gather(fed[h].call(holder_local_values, Local(skip_missing),
                           Local(missing_values)) for h in holders)
    key = fed[holders[0]].call(holder_draw_key).result()
    fed.gather(fed[h].call(holder_store_key, key, sender=holders[0],
                           phase=f"{phase}: key") for h in holders[1:])
    bound = _secure(fed, holders, holder_distinct_sizes,
                    phase=f"{phase}: sizes", encoder=_COUNTS)
    found = [dict() for _ in range(n_columns)]
    n_rows = np.zeros(n_columns)
    hidden = np.zeros(n_columns, dtype=bool)
    active = np.ones(n_columns, dtype=bool)
    round_no = 0
    while active.any():
        n_slots = np.array([_slots_for(b) if a else 0
                            for a, b in zip(active, bound)], dtype=np.int64)
        note_size(sizes, "slots", n_slots.sum())
        table = _secure(fed, holders, holder_slot_table, round_no, n_slots,
                        phase=f"{phase}: slots", encoder=_COUNTS)
        table = np.asarray(table).astype(np.int64)
        opened = []  # (column, slot, rows, holders of the value)
        offset = 0
        for j, size in enumerate(n_slots.tolist()):
            part = table[offset:offset + size]
            offset += size
            if not size:
                continue
            rows, h, s1, s2 = (part[:, i].tolist() for i in range(4))
            # one value in a slot iff (sum h t)^2 = (sum h)(sum h t^2)
            single = [hh > 0 and s * s == hh * q for hh, s, q in zip(h, s1, s2)]
            if round_no == 0:
                n_rows[j] = float(sum(rows))
            hidden[j] |= any(0 < r < min_count for r in rows)
            chosen, again = _choose(rows, h, single, select, min_count)
            opened += [(j, s, rows[s], h[s]) for s in chosen]
            active[j] = again
            # the next round hashes afresh what was not opened
            bound[j] = sum(hh for s, hh in enumerate(h) if s not in set(chosen))
        if opened:
            columns = np.array([o[0] for o in opened], dtype=np.int64)
            slots = np.array([o[1] for o in opened], dtype=np.int64)
            owners = np.array([o[3] for o in opened], dtype=np.int64)
            lengths = _secure(fed, holders, holder_slot_lengths, columns,
                              slots, phase=f"{phase}: lengths", encoder=_COUNTS)
            lengths = np.asarray(lengths).astype(np.int64) // owners
            n_words = int(-(-lengths.max() // _WORD_BYTES))
            note_size(sizes, "opened", len(opened))
            note_size(sizes, "words", n_words)
            words = _secure(fed, holders, holder_slot_words, columns, slots,
                            n_words, phase=f"{phase}: values", encoder=_COUNTS)
            words = (np.asarray(words).astype(np.int64)
                     // owners[:, None]).astype(np.uint64)
            for (j, _, rows, _), length, row in zip(opened, lengths.tolist(),
                                                    words.tolist()):
                found[j][_from_words(row, length)] = rows
            with next_round(fed):
                fed.gather(fed[h].call(holder_take_opened, columns, slots,
                                       lengths, words, sender=SERVER,
                                       phase=f"{phase}: fitted")
                           for h in holders)
        round_no += 1
    if select == "mode":
        found = [_modes(c) for c in found]
    return found, n_rows, hidden
