"""What a curious party can still learn of another's data in preprocessing.

Each attack plays an honest-but-curious party that keeps every message it
received (and sent) and its own data, and tries to recover a *victim*
holder's local statistic; the victim's data is read only to score it.
Attackers are the server (which receives every masked upload) and every
other holder of the victim's columns (which receives the fitted
statistics). ``chance`` is the score of the best guess from public output
alone: the fitted statistic itself.

- :func:`local_mean_recovery`: the victim's column means. The server decodes
  the victim's single masked upload as if it were the total; a holder
  subtracts its own sums from the fitted totals (with two holders, this is
  the victim's: the inherent leak ``min_row_holders`` guards against).
- :func:`local_extreme_recovery`: the victim's column extremes. The server
  replays the secure-OR search with the victim's single uploads; a holder
  can only name the fitted extremes.
- :func:`local_histogram_recovery`: the victim's histogram (its counts per
  key sub-range of the first search round, or per keyed slot of the first
  value-count round), from its single upload, as total variation distance.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

from types import SimpleNamespace

import numpy as np
import scipy.sparse as sp

from .._privacy_core import attack_row
from ..federation.secure_sum import ExactSumEncoder, RingEncoder
from ._protocol import (SERVER, Layout, holder_histogram,
                        holder_local_values, holder_slot_table,
                        holder_sorted_keys, holder_weighted_sums,
                        keys_to_float)

__all__ = ["attacks_for", "local_mean_recovery", "local_extreme_recovery",
           "local_histogram_recovery"]

_EXACT = ExactSumEncoder()
_COUNTS = RingEncoder(frac_bits=0)


def _numeric(est, X):
    """``X`` as floats with missing values as NaN (as the holders see it)."""
    if sp.issparse(X):
        X = X.toarray()
    X = np.asarray(X)
    missing = getattr(est, "missing_values", np.nan)
    if X.dtype.kind not in "biuf":
        return None
    X = X.astype(np.float64)
    if not (isinstance(missing, float) and np.isnan(missing)):
        X[X == missing] = np.nan
    return X


def _split_groups(est, n_features):
    """The column groups whose rows are split (the others send nothing)."""
    layout = Layout(est.partition_, n_features)
    return layout, [(cols, holders) for cols, holders in layout.groups
                    if len(holders) > 1]


def _state(layout, X, name, weights=None):
    rows = layout.rows[name]
    return SimpleNamespace(X=layout.block(X, name),
                           weights=None if weights is None
                           else np.asarray(weights)[rows])


def _first(messages, phase, sender=None, receiver=None):
    for m in messages:
        if (m.phase == phase and (sender is None or m.sender == sender)
                and (receiver is None or m.receiver == receiver)):
            return m
    return None


def _error(estimate, truth, chance):
    """Distance of ``estimate`` to ``truth`` relative to the public guess's."""
    scale = np.linalg.norm(np.nan_to_num(chance - truth))
    scale = max(scale, 1e-12 * max(1.0, np.linalg.norm(np.nan_to_num(truth))))
    with np.errstate(invalid="ignore", over="ignore"):
        gap = np.linalg.norm(np.nan_to_num(estimate - truth, nan=1e300))
    return float(min(gap / scale, 1e300))


def local_mean_recovery(est, messages, X, y=None, sample_weight=None,
                        **fit_params):
    """Recover each holder's column means (relative error; chance 1)."""
    X = _numeric(est, X)
    if X is None:
        return []
    layout, groups = _split_groups(est, X.shape[1])
    prefix = "mean" if type(est).__name__ == "SimpleImputer" else "moments"
    rows = []
    for cols, holders in groups:
        m = len(cols)
        local = {h: holder_weighted_sums(_state(layout, X, h, sample_weight))
                 for h in holders}
        truth = {h: local[h][m:] / local[h][:m] for h in holders}
        for victim in holders:
            # the fitted totals the victim's peers receive
            fitted = _first(messages, f"{prefix}: fitted", SERVER, victim)
            if fitted is None:
                continue
            W, mean = (np.asarray(v, float) for v in fitted.payload[:2])
            upload = _first(messages, f"{prefix}: mean/upload", victim, SERVER)
            if upload is not None:
                decoded = _EXACT.join(_EXACT.decode(upload.payload[0]))
                with np.errstate(all="ignore"):
                    guess = decoded[m:] / decoded[:m]
                rows.append(attack_row(
                    "local_mean_recovery", SERVER, victim,
                    f"column means of {victim}", "relative_error",
                    _error(guess, truth[victim], mean), 1.0))
            for attacker in holders:
                if attacker == victim:
                    continue
                own = local[attacker]
                with np.errstate(all="ignore"):
                    others = (W * mean - own[m:]) / (W - own[:m])
                rows.append(attack_row(
                    "local_mean_recovery", attacker, victim,
                    f"column means of {victim}", "relative_error",
                    _error(others, truth[victim], mean), 1.0))
    return rows


local_mean_recovery.attack_name = "local_mean_recovery"


def _column_extremes(block, mode):
    out = []
    for j in range(block.shape[1]):
        column = block[:, j]
        column = column[~np.isnan(column)]
        if mode == "maxabs":
            column = np.abs(column)
        out.append((column.min(), column.max()) if column.size
                   else (np.nan, np.nan))
    return np.array(out)


def local_extreme_recovery(est, messages, X, y=None, **fit_params):
    """Recover each holder's column extremes (error over the column's range,
    as a fraction; chance: the fitted extremes' error)."""
    X = _numeric(est, X)
    if X is None:
        return []
    mode = "maxabs" if type(est).__name__ == "MaxAbsScaler" else "minmax"
    layout, groups = _split_groups(est, X.shape[1])
    rows = []
    for cols, holders in groups:
        m = len(cols)
        for victim in holders:
            fitted = _first(messages, "extremes: fitted", SERVER, victim)
            if fitted is None:
                continue
            low, high = (np.asarray(v, float) for v in fitted.payload)
            truth = _column_extremes(layout.block(X, victim), mode)
            width = np.where(high > low, high - low, 1.0)
            if mode == "maxabs":
                width = np.where(high > 0, high, 1.0)
            public = np.column_stack([low, high])
            columns = [0, 1] if mode == "minmax" else [1]

            def error(guess):
                gap = np.abs(np.nan_to_num(guess - truth, nan=np.inf))
                return float(np.nanmean((gap / width[:, None])[:, columns]))

            chance = error(public)
            # the server: the largest threshold each single upload flags
            requests = [msg for msg in messages if msg.phase == "extremes/request"
                        and msg.receiver == victim]
            uploads = [msg for msg in messages if msg.phase == "extremes/upload"
                       and msg.sender == victim]
            best = np.zeros(2 * m if mode == "minmax" else m, dtype=np.uint64)
            for request, upload in zip(requests, uploads):
                prefix, shift = request.payload
                flags = np.asarray(upload.payload[0]) != 0
                v = np.arange(16, dtype=np.uint64) << np.uint64(int(shift))
                thresholds = np.asarray(prefix, np.uint64)[:, None] | v[None, :]
                flagged = np.where(flags, thresholds, np.uint64(0)).max(axis=1)
                best = np.maximum(best, flagged)
            if len(uploads):
                top = keys_to_float(best[:m])
                bottom = (keys_to_float(~best[m:]) if mode == "minmax"
                          else np.zeros(m))
                rows.append(attack_row(
                    "local_extreme_recovery", SERVER, victim,
                    f"column extremes of {victim}", "range_error",
                    error(np.column_stack([bottom, top])), chance))
            for attacker in holders:
                if attacker != victim:  # the fitted extremes: nothing more
                    rows.append(attack_row(
                        "local_extreme_recovery", attacker, victim,
                        f"column extremes of {victim}", "range_error",
                        error(public), chance))
    return rows


local_extreme_recovery.attack_name = "local_extreme_recovery"


def _distribution(counts):
    p = np.clip(np.nan_to_num(np.asarray(counts, float).ravel()), 0, None)
    total = p.sum()
    return p / total if total > 0 else np.full(p.size, 1.0 / max(p.size, 1))


def _tv(p, q):
    return float(0.5 * np.abs(_distribution(p) - _distribution(q)).sum())


def _search_rows(est, messages, X, groups, layout, weights):
    rows = []
    phase = {"KBinsDiscretizer": "quantiles",
             "SimpleImputer": "median: search"}.get(type(est).__name__)
    for cols, holders in groups:
        uploads = {h: _first(messages, f"{phase}/upload", h, SERVER)
                   for h in holders}
        if any(u is None for u in uploads.values()):
            continue
        weighted = np.asarray(uploads[holders[0]].payload[0]).ndim == 3
        decode = ((lambda v: _EXACT.join(_EXACT.decode(v))) if weighted
                  else _COUNTS.decode)
        total = sum(np.asarray(u.payload[0]) for u in uploads.values())
        for victim in holders:
            request = _first(messages, f"{phase}/request", SERVER, victim)
            state = _state(layout, X, victim, weights)
            holder_sorted_keys(state)
            truth = holder_histogram(state, *request.payload)
            rows.append(attack_row(
                "local_histogram_recovery", SERVER, victim,
                f"histogram of {victim}", "total_variation",
                _tv(decode(uploads[victim].payload[0]), truth),
                _tv(decode(total), truth)))
    return rows


def _slot_rows(est, messages, X, groups, layout):
    rows = []
    phase = "categories" if type(est).__name__ == "OneHotEncoder" else "mode"
    skip = phase == "mode"
    missing = getattr(est, "missing_values", np.nan)
    for cols, holders in groups:
        uploads = {h: _first(messages, f"{phase}: slots/upload", h, SERVER)
                   for h in holders}
        key = _first(messages, f"{phase}: key", holders[0], holders[1])
        request = _first(messages, f"{phase}: slots/request", SERVER,
                         holders[0])
        if key is None or request is None or any(
                u is None for u in uploads.values()):
            continue
        total = _COUNTS.decode(sum(np.asarray(u.payload[0])
                                   for u in uploads.values()))[:, 0]
        for victim in holders:
            block = layout.block(np.asarray(X, dtype=object), victim)
            state = SimpleNamespace(X=[block[:, j] for j in range(block.shape[1])],
                                    slot_key=np.asarray(key.payload[0]).tobytes())
            holder_local_values(state, skip, missing)
            truth = holder_slot_table(state, *request.payload)[:, 0]
            single = _COUNTS.decode(uploads[victim].payload[0])[:, 0]
            rows.append(attack_row(
                "local_histogram_recovery", SERVER, victim,
                f"value counts of {victim}", "total_variation",
                _tv(single, truth), _tv(total, truth)))
    return rows


def local_histogram_recovery(est, messages, X, y=None, sample_weight=None,
                             **fit_params):
    """Recover each holder's histogram from its single upload (total
    variation distance to the truth; chance: the pooled histogram's)."""
    if hasattr(X, "iloc"):
        X = X.to_numpy()
    X = np.asarray(X.toarray() if sp.issparse(X) else X)
    layout, groups = _split_groups(est, X.shape[1])
    if type(est).__name__ in ("KBinsDiscretizer", "SimpleImputer") and (
            getattr(est, "strategy", None) in ("quantile", "median")):
        return _search_rows(est, messages, _numeric(est, X), groups, layout,
                            sample_weight)
    return _slot_rows(est, messages, X, groups, layout)


local_histogram_recovery.attack_name = "local_histogram_recovery"


def attacks_for(est):
    """The attacks that apply to a fitted transformer."""
    name = type(est).__name__
    strategy = getattr(est, "strategy", None)
    if name == "StandardScaler" or (name == "SimpleImputer"
                                    and strategy == "mean"):
        return [local_mean_recovery]
    if name in ("MinMaxScaler", "MaxAbsScaler"):
        return [local_extreme_recovery]
    if name == "KBinsDiscretizer":
        return [local_extreme_recovery] + (
            [local_histogram_recovery] if strategy == "quantile" else [])
    if name == "SimpleImputer" and strategy in ("median", "most_frequent"):
        return [local_histogram_recovery]
    if name == "OneHotEncoder" and isinstance(est.categories, str):
        return [local_histogram_recovery]
    return []
