"""Who owns which column and which row: the pieces of a partition spec.

:mod:`skfed.partition` holds the three partition classes and
:func:`~skfed.partition.resolve_partition`; this module turns what a user
wrote into owners and says clearly what is wrong with it: column groups by
index or by name (disjoint, covering every column), row owners by a rule
(``"even"``, seeded ``"random"``) or from ``sample_party`` metadata, and the
check that every party ends up with data.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import numbers

import numpy as np
from sklearn.utils import check_random_state

__all__ = [
    "check_every_party_has_rows",
    "check_n_groups",
    "even_groups",
    "feature_names_of",
    "format_items",
    "owners_from_metadata",
    "resolve_column_groups",
    "row_owners",
]


def even_groups(n_items, n_groups):
    """Contiguous, nearly equal groups of ``range(n_items)``."""
    return [g.tolist() for g in np.array_split(np.arange(n_items), n_groups)]


def format_items(items, limit=10):
    """``[a, b, ...]`` for error messages: the first ``limit`` items."""
    items = [i.item() if isinstance(i, np.generic) else i for i in items]
    text = ", ".join(repr(i) for i in items[:limit])
    return f"[{text}{', ...' if len(items) > limit else ''}]"


def _encoded_columns(names, feature_names):
    """``{name: [column index, ...]}`` for each partition name that is not a
    column of X but the input feature of encoded columns of X.

    An encoder such as :class:`~sklearn.preprocessing.OneHotEncoder` names
    its outputs ``<feature>_<category>`` (``international_plan_no``,
    ``international_plan_yes``): each such column follows the partition name
    it starts with, the longest one when several do (``plan`` and
    ``plan_type``), so that a partition written on the original table keeps
    working after the encoding.
    """
    present = {str(n) for n in feature_names}
    inputs = sorted({str(c) for c in names if str(c) not in present},
                    key=len, reverse=True)
    out = {}
    if not inputs:
        return out
    for i, column in enumerate(feature_names):
        column = str(column)
        if column in names:  # named itself in the partition
            continue
        for name in inputs:  # longest first
            if column.startswith(name + "_") and len(column) > len(name) + 1:
                out.setdefault(name, []).append(i)
                break
    return out


def _prefix_hint(unknown, feature_names):
    """A hint when X's names are the partition's names with a prefix, as a
    ColumnTransformer writes them by default (``"num__age"``,
    ``"cat__plan_yes"``)."""
    prefixed = {}
    for name in feature_names:
        prefix, sep, rest = str(name).partition("__")
        if sep:
            prefixed.setdefault(rest, str(name))
    found = [prefixed[c] for c in unknown if c in prefixed]
    stripped = [str(n).partition("__")[2] for n in feature_names]
    encoded = _encoded_columns(unknown, stripped)
    found += [str(feature_names[i]) for c in unknown if c not in prefixed
              for i in encoded.get(c, [])]
    if not found:
        return ""
    return (
        f" X names them with a transformer prefix ({format_items(found)}), "
        "as a ColumnTransformer does by default: build it with "
        "verbose_feature_names_out=False to keep the original names (the "
        "columns a OneHotEncoder makes of a feature then follow it), or name "
        "the prefixed columns in the partition."
    )


def check_n_groups(k, what):
    """``k`` as an int, or a clear error if it is not a positive integer."""
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 1:
        raise ValueError(f"{what} must be a positive integer, got {k!r}.")
    return int(k)


def resolve_column_groups(groups, n_features, feature_names):
    """Turn user column groups (indices or names) into lists of int indices."""
    if isinstance(groups, (str, bytes)) or not hasattr(groups, "__iter__"):
        raise ValueError(
            "A partition must be None, a number of parties, a list of column "
            f"groups or a partition object; got {groups!r}."
        )
    groups = [list(g) if hasattr(g, "__iter__") and not isinstance(g, str) else g
              for g in groups]
    if len(groups) == 0:
        raise ValueError("The partition has no column groups; give at least one.")
    for k, group in enumerate(groups):
        if not isinstance(group, list):
            raise ValueError(
                f"Column group {k} must be a list of columns, got {group!r}. "
                "Write e.g. [[0, 1], [2, 3]] or [['age'], ['income']]."
            )
        if len(group) == 0:
            raise ValueError(
                f"Column group {k} is empty; every party must hold at least one "
                "column. Remove the group or give it columns."
            )
    flat = [c for g in groups for c in g]
    kinds = {isinstance(c, str) for c in flat}
    if kinds == {True, False}:
        raise ValueError(
            "The column groups mix names and integer indices; use one or the other."
        )
    if kinds == {True}:
        if feature_names is None:
            raise ValueError(
                "The partition names columns "
                f"{format_items(c for c in flat)}, but X has no column names. Pass X "
                "as a pandas DataFrame (inside a Pipeline, keep the names with "
                "pipeline.set_output(transform='pandas')), or give the groups as "
                "integer indices."
            )
        position = {name: i for i, name in enumerate(feature_names)}
        expanded = _encoded_columns(flat, feature_names)
        unknown = [c for c in flat if c not in position and c not in expanded]
        if unknown:
            raise ValueError(
                "Unknown column names in the partition: "
                f"{format_items(unknown)}. X has "
                f"the columns {format_items(feature_names)}."
                + _prefix_hint(unknown, feature_names)
            )
        groups = [[i for c in g for i in
                   ([position[c]] if c in position else expanded[c])]
                  for g in groups]
    else:
        bad = [c for c in flat if isinstance(c, bool)
               or not isinstance(c, numbers.Integral)]
        if bad:
            raise ValueError(
                f"Column groups must hold integer indices or column names; got "
                f"{format_items(bad)}."
            )
        out_of_range = [int(c) for c in flat if not 0 <= c < n_features]
        if out_of_range:
            raise ValueError(
                f"Column indices {format_items(out_of_range)} are out of range: X has "
                f"{n_features} columns (valid indices 0 to {n_features - 1})."
            )
        groups = [[int(c) for c in g] for g in groups]

    seen = {}
    repeated = []
    for k, group in enumerate(groups):
        for c in group:
            if c in seen:
                repeated.append(c)
            seen.setdefault(c, k)
    if repeated:
        shown = [feature_names[c] for c in repeated] if kinds == {True} else repeated
        raise ValueError(
            f"Columns {format_items(sorted(set(shown), key=str))} appear in more than "
            "one group (or twice in one); each column must belong to exactly "
            "one party."
        )
    missing = [c for c in range(n_features) if c not in seen]
    if missing:
        shown = [feature_names[c] for c in missing] if feature_names is not None \
            else missing
        raise ValueError(
            f"Columns {format_items(shown)} are in no group; every column of X must "
            "belong to exactly one party. Add them to a group."
        )
    return groups


def row_owners(rule, n_samples, n_parties, random_state):
    if rule == "even":
        owners = np.repeat(np.arange(n_parties),
                           [len(g) for g in np.array_split(np.arange(n_samples),
                                                           n_parties)])
    elif rule == "random":
        rng = check_random_state(random_state)
        owners = np.empty(n_samples, dtype=np.intp)
        chunks = np.array_split(rng.permutation(n_samples), n_parties)
        for k, rows in enumerate(chunks):
            owners[rows] = k
    else:
        raise ValueError(f"split must be 'even' or 'random', got {rule!r}.")
    return owners.astype(np.intp)


def _label_codes(labels):
    """Party ids of row labels: the labels sorted, numbered from 0.

    As scikit-learn's ``groups`` (and :func:`numpy.unique`): any labels that
    sort together (strings, floats, booleans, ...), party ``k`` is the
    ``k``-th smallest label.
    """
    if labels.dtype.kind == "f" and np.isnan(labels).any():
        raise ValueError("sample_party has missing values (NaN); every row "
                         "needs an owner.")
    if labels.dtype == object and any(v is None or v != v for v in labels):
        raise ValueError("sample_party has missing values (None or NaN); "
                         "every row needs an owner.")
    try:
        _, codes = np.unique(labels, return_inverse=True)
    except TypeError as exc:
        kinds = sorted({type(v).__name__ for v in labels})
        raise ValueError(
            "sample_party labels must sort together (all strings, or all "
            f"numbers) to be numbered; got {', '.join(kinds)}.") from exc
    return codes.reshape(-1)


def owners_from_metadata(sample_party, n_samples, n_parties):
    """Party ids of the rows from ``sample_party``.

    Integers are party ids (0, 1, ...); any other labels (``"north"``,
    ``"south"``) are numbered in sorted order, as scikit-learn's ``groups``.
    """
    owners = np.asarray(sample_party)
    if owners.ndim != 1 or owners.shape[0] != n_samples:
        raise ValueError(
            f"sample_party must hold one party per row of X ({n_samples} rows); "
            f"got an array of shape {owners.shape}."
        )
    if not np.issubdtype(owners.dtype, np.integer):
        owners = _label_codes(owners)
    if owners.size and owners.min() < 0:
        raise ValueError(
            "sample_party holds negative ids "
            f"{format_items(np.unique(owners[owners < 0]))}; party ids are 0, 1, ...")
    if n_parties is not None and owners.size and owners.max() >= n_parties:
        raise ValueError(
            f"sample_party holds ids outside 0..{n_parties - 1}: "
            f"{format_items(np.unique(owners[(owners < 0) | (owners >= n_parties)]))}."
        )
    return owners.astype(np.intp)


def check_every_party_has_rows(owners, n_parties, what="party"):
    counts = np.bincount(owners, minlength=n_parties)
    empty = np.flatnonzero(counts == 0).tolist()
    if empty:
        raise ValueError(
            f"{what.capitalize()} {format_items(empty)} hold(s) no rows of X "
            f"({len(owners)} rows over {n_parties} {what}s). Use fewer {what}s, "
            "more rows, or a sample_party array that gives each one rows."
        )


def feature_names_of(X):
    columns = getattr(X, "columns", None)
    if columns is None:
        return None
    names = np.asarray(columns, dtype=object)
    if not all(isinstance(n, str) for n in names):
        return None
    return names
