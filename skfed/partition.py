"""Who holds what: vertical, horizontal and hybrid partitions of a data table.

An estimator receives the whole table ``X`` plus a *partition spec*; at ``fit``
time the spec is resolved against the data into one of the three classes
below, with integer column indices and one owner per row. The resolved object
is stored as the estimator's ``partition_`` attribute.

Column groups may be given by index or, for a pandas DataFrame, by name. Row
ownership cannot be a list of row indices fixed in the constructor, since
cross-validation hands ``fit`` a different subset of rows every time: rows are
given to parties either by a rule (``"even"`` or seeded ``"random"``) or by a
per-row array passed to ``fit`` as metadata (``sample_party``).

The functions before the classes turn what a user wrote into owners and say
clearly what is wrong with it: column groups by index or by name (disjoint,
covering every column), row owners by a rule or from ``sample_party``
metadata, and the check that every party ends up with data.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import numbers

import numpy as np
from sklearn.utils import check_random_state

__all__ = [
    "VerticalPartition",
    "HorizontalPartition",
    "HybridPartition",
    "resolve_partition",
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


class VerticalPartition:
    """Columns split over parties; every party holds every row.

    Parameters
    ----------
    groups : int or list of lists, default=2
        Either a number of parties (columns split into that many contiguous,
        nearly equal groups) or one list of columns per party, by integer
        index or by DataFrame column name.

    active_parties : int or tuple of int, default=(0,)
        The parties that hold the labels ("active" parties in the papers).

    Attributes
    ----------
    column_groups : list of list of int
        Only on a resolved partition: the columns of each party.

    feature_names : ndarray of str or None
        Only on a resolved partition: the column names of X, if it had any.

    Examples
    --------
    >>> import numpy as np
    >>> from skfed.partition import VerticalPartition
    >>> p = VerticalPartition([[0, 1], [2]]).resolve(np.zeros((4, 3)))
    >>> p.n_parties, p.columns(1).tolist()
    (2, [2])
    """

    kind = "vertical"

    def __init__(self, groups=2, active_parties=(0,)):
        self.groups = groups
        self.active_parties = active_parties
        self.column_groups = None
        self.feature_names = None

    def __repr__(self):
        return (f"VerticalPartition(groups={self.groups!r}, "
                f"active_parties={self.active_parties!r})")

    @property
    def is_resolved(self):
        return self.column_groups is not None

    def resolve(self, X, feature_names=None, sample_party=None):
        """Resolve against ``X`` and return a new partition with integer groups."""
        if sample_party is not None:
            raise ValueError(
                "sample_party was given, but a vertical partition gives every "
                "party every row; row ownership applies to horizontal and "
                "hybrid partitions only."
            )
        n_features = X.shape[1]
        if feature_names is None:
            feature_names = feature_names_of(X)
        if isinstance(self.groups, numbers.Integral) and not isinstance(
                self.groups, bool):
            k = check_n_groups(self.groups, "The number of parties")
            if k > n_features:
                raise ValueError(
                    f"Cannot split {n_features} feature(s) over {k} parties: "
                    "every party needs at least one column. Use at most "
                    f"{n_features} parties."
                )
            groups = even_groups(n_features, k)
        else:
            groups = resolve_column_groups(self.groups, n_features, feature_names)
        active = _check_active_parties(self.active_parties, len(groups))
        out = VerticalPartition(self.groups, self.active_parties)
        out.column_groups = groups
        out.active_parties = active
        out.feature_names = (None if feature_names is None
                             else np.asarray(feature_names, dtype=object))
        return out

    @property
    def n_parties(self):
        self._check_resolved()
        return len(self.column_groups)

    def columns(self, party):
        """Integer indices of the columns held by ``party``."""
        self._check_resolved()
        return np.asarray(self.column_groups[party], dtype=np.intp)

    def split(self, X):
        """The column block of each party, in party order."""
        return [X[:, self.columns(k)] for k in range(self.n_parties)]

    @property
    def passive_parties(self):
        return tuple(k for k in range(self.n_parties) if k not in self.active_parties)

    def _check_resolved(self):
        if self.column_groups is None:
            raise ValueError("This partition is not resolved; call resolve(X) first.")


class HorizontalPartition:
    """Rows split over parties; every party holds every column.

    Parameters
    ----------
    n_parties : int, default=2
        Number of parties (users). With ``sample_party`` metadata it may be
        left at its default and is then read from the largest id.

    split : {"even", "random"}, default="even"
        The rule that gives rows to parties when ``fit`` receives no
        ``sample_party`` array: contiguous nearly equal blocks, or a seeded
        random split into nearly equal parts.

    random_state : int, RandomState instance or None, default=None
        Seed of the ``"random"`` rule.

    Examples
    --------
    >>> import numpy as np
    >>> from skfed.partition import HorizontalPartition
    >>> p = HorizontalPartition(3).resolve(np.zeros((7, 2)))
    >>> p.owners.tolist()
    [0, 0, 0, 1, 1, 2, 2]
    """

    kind = "horizontal"

    def __init__(self, n_parties=2, split="even", random_state=None):
        self.n_parties = n_parties
        self.split = split
        self.random_state = random_state
        self.owners = None

    def __repr__(self):
        return (f"HorizontalPartition(n_parties={self.n_parties!r}, "
                f"split={self.split!r})")

    def resolve(self, X, feature_names=None, sample_party=None):
        n_samples = X.shape[0]
        if sample_party is not None:
            owners = owners_from_metadata(sample_party, n_samples, None)
            k = int(owners.max()) + 1 if owners.size else 0
            k = max(k, check_n_groups(self.n_parties, "n_parties"))
        else:
            k = check_n_groups(self.n_parties, "n_parties")
            if k > n_samples:
                raise ValueError(
                    f"Cannot split {n_samples} sample(s) over {k} parties: every "
                    f"party needs at least one row. Use at most {n_samples} parties."
                )
            owners = row_owners(self.split, n_samples, k, self.random_state)
        check_every_party_has_rows(owners, k)
        out = HorizontalPartition(k, self.split, self.random_state)
        out.owners = owners
        return out

    def rows(self, party):
        """Integer indices of the rows held by ``party``."""
        return np.flatnonzero(self.owners == party)

    def split_rows(self, X):
        """The row block of each party, in party order."""
        return [X[self.rows(k)] for k in range(self.n_parties)]


class HybridPartition:
    """A grid of row groups times column groups; each cell is one client.

    Client ``k = r * n_column_groups + c`` holds the rows of row group ``r``
    restricted to the columns of column group ``c``, and the labels of its
    rows (as in HyFDCA). With one column group this is a horizontal split,
    with one row group a vertical split.

    Parameters
    ----------
    n_row_groups : int, default=2
        Number of row groups; rows are given to groups by ``split`` or by a
        ``sample_party`` array (row-group ids) passed to ``fit``.

    column_groups : int or list of lists, default=2
        Number of column groups, or the columns of each group (indices or
        names), as for :class:`VerticalPartition`.

    split : {"even", "random"}, default="even"
        Rule that gives rows to row groups.

    random_state : int, RandomState instance or None, default=None
        Seed of the ``"random"`` rule.

    Examples
    --------
    >>> import numpy as np
    >>> from skfed.partition import HybridPartition
    >>> p = HybridPartition(2, [[0], [1, 2]]).resolve(np.zeros((4, 3)))
    >>> p.n_clients, p.client_rows(3).tolist(), p.client_columns(3).tolist()
    (4, [2, 3], [1, 2])
    """

    kind = "hybrid"

    def __init__(self, n_row_groups=2, column_groups=2, split="even",
                 random_state=None):
        self.n_row_groups = n_row_groups
        self.column_groups = column_groups
        self.split = split
        self.random_state = random_state
        self.owners = None
        self.columns_of_group = None
        self.feature_names = None

    def __repr__(self):
        return (f"HybridPartition(n_row_groups={self.n_row_groups!r}, "
                f"column_groups={self.column_groups!r}, split={self.split!r})")

    def resolve(self, X, feature_names=None, sample_party=None):
        rows = HorizontalPartition(self.n_row_groups, self.split,
                                   self.random_state)
        try:
            rows = rows.resolve(X, sample_party=sample_party)
        except ValueError as exc:
            raise ValueError(f"Row groups of the hybrid partition: {exc}") from exc
        cols = VerticalPartition(self.column_groups).resolve(
            X, feature_names=feature_names)
        out = HybridPartition(rows.n_parties, self.column_groups, self.split,
                              self.random_state)
        out.owners = rows.owners
        out.columns_of_group = cols.column_groups
        out.feature_names = cols.feature_names
        return out

    @property
    def n_column_groups(self):
        return len(self.columns_of_group)

    @property
    def n_clients(self):
        return int(self.n_row_groups) * self.n_column_groups

    def client_cell(self, client):
        """``(row_group, column_group)`` of a client."""
        return divmod(int(client), self.n_column_groups)

    def client_rows(self, client):
        r, _ = self.client_cell(client)
        return np.flatnonzero(self.owners == r)

    def client_columns(self, client):
        _, c = self.client_cell(client)
        return np.asarray(self.columns_of_group[c], dtype=np.intp)

    def clients_of_row_group(self, r):
        return list(range(r * self.n_column_groups, (r + 1) * self.n_column_groups))

    def clients_of_column_group(self, c):
        return list(range(c, self.n_clients, self.n_column_groups))


_KINDS = {
    "vertical": VerticalPartition,
    "horizontal": HorizontalPartition,
    "hybrid": HybridPartition,
}


def _check_active_parties(active_parties, n_parties):
    """Validate ``active_parties`` against ``n_parties``; return a tuple of int.

    Accepts one integer or a non-empty sequence of distinct integers in
    ``0 .. n_parties - 1``; booleans, floats (even ``1.0``), strings and
    out-of-range or repeated values are refused with a message saying why.
    """
    def is_index(a):
        return isinstance(a, numbers.Integral) and not isinstance(a, bool)

    valid = f"integers among 0..{n_parties - 1}"
    if is_index(active_parties):
        active = (active_parties,)
    elif isinstance(active_parties, (numbers.Number, np.bool_)):
        active = (active_parties,)  # refused below with the reason
    elif isinstance(active_parties, (list, tuple, np.ndarray, range)):
        active = tuple(active_parties)
    else:
        raise ValueError(
            f"active_parties={active_parties!r} must be a party index or a "
            f"tuple of party indices ({valid}), got a "
            f"{type(active_parties).__name__}.")
    wrong_type = [a for a in active if not is_index(a)]
    if wrong_type:
        raise ValueError(
            f"active_parties={active_parties!r} must hold party indices "
            f"({valid}); {', '.join(repr(a) for a in wrong_type)} "
            f"{'is' if len(wrong_type) == 1 else 'are'} not "
            "(booleans and floats are refused, even 1.0).")
    active = tuple(int(a) for a in active)
    if not active:
        raise ValueError(
            f"active_parties={active_parties!r} is empty: at least one party "
            f"must hold the labels ({valid}).")
    out_of_range = [a for a in active if not 0 <= a < n_parties]
    if out_of_range:
        raise ValueError(
            f"active_parties={active_parties!r} names "
            f"{format_items(out_of_range)}, out of range: the partition has "
            f"{n_parties} parties (indices 0..{n_parties - 1}).")
    if len(set(active)) != len(active):
        raise ValueError(
            f"active_parties={active_parties!r} names a party twice; give "
            "distinct indices.")
    return active


def resolve_partition(spec, X, *, kind, feature_names=None, sample_party=None):
    """Turn a user's partition spec into a resolved partition object.

    Parameters
    ----------
    spec : None, int, list of column groups, or a partition object
        ``None`` means two parties (fewer if ``X`` has a single column or row,
        so that any ``X`` can be fitted); an ``int`` k means k parties split
        evenly; a list of column groups (vertical and hybrid only) gives the
        columns of each party by index or name.

    X : array-like of shape (n_samples, n_features)
        The data, used for its shape and, for a DataFrame, its column names.

    kind : {"vertical", "horizontal", "hybrid"}
        The split the estimator's protocol works on.

    feature_names : array-like of str, default=None
        Column names of ``X`` when ``X`` itself is already a numpy array
        (estimators pass their ``feature_names_in_``).

    sample_party : array-like of shape (n_samples,), default=None
        Per-row owner ids (horizontal) or row-group ids (hybrid): integers,
        or any labels that sort together, numbered in sorted order (as
        scikit-learn's ``groups``).

    Returns
    -------
    partition : VerticalPartition, HorizontalPartition or HybridPartition
        A resolved partition.
    """
    if kind not in _KINDS:
        raise ValueError(f"kind must be one of {sorted(_KINDS)}, got {kind!r}.")
    if feature_names is None:
        feature_names = feature_names_of(X)
    n_samples, n_features = X.shape
    if spec is None:
        if kind == "vertical":
            spec = VerticalPartition(min(2, max(n_features, 1)))
        elif kind == "horizontal":
            spec = HorizontalPartition(min(2, max(n_samples, 1)))
        else:
            spec = HybridPartition(min(2, max(n_samples, 1)),
                                   min(2, max(n_features, 1)))
    elif isinstance(spec, numbers.Integral) and not isinstance(spec, bool):
        if kind == "vertical":
            spec = VerticalPartition(int(spec))
        elif kind == "horizontal":
            spec = HorizontalPartition(int(spec))
        else:
            raise ValueError(
                "A hybrid estimator needs row groups and column groups; pass "
                "HybridPartition(n_row_groups, column_groups) instead of an int."
            )
    elif isinstance(spec, (list, tuple)):
        if kind == "horizontal":
            raise ValueError(
                "Column groups were given, but this estimator splits rows over "
                "parties; pass an int or a HorizontalPartition, and give row "
                "owners with fit(..., sample_party=...)."
            )
        spec = VerticalPartition(list(spec))
    if not isinstance(spec, tuple(_KINDS.values())):
        raise ValueError(
            "partition must be None, an int, a list of column groups or a "
            f"partition object; got {type(spec).__name__}."
        )
    if kind == "hybrid" and spec.kind == "vertical":
        if sample_party is not None:
            raise ValueError(
                "sample_party gives rows to row groups, but the partition is "
                "vertical (one row group). Pass a HybridPartition to split rows "
                "too, or drop sample_party.")
        # Every client of a hybrid protocol holds its rows' labels, so the
        # active parties play no role; still refuse values that are wrong.
        _check_active_parties(spec.active_parties,
                             spec.resolve(X, feature_names=feature_names).n_parties)
        spec = HybridPartition(1, spec.groups)
    elif kind == "hybrid" and spec.kind == "horizontal":
        spec = HybridPartition(spec.n_parties, 1, spec.split, spec.random_state)
    elif spec.kind != kind:
        raise ValueError(
            f"This estimator needs a {kind} partition, got a {spec.kind} one "
            f"({spec!r})."
        )
    return spec.resolve(X, feature_names=feature_names, sample_party=sample_party)
