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
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import numbers

import numpy as np

from ._ownership import (
    check_every_party_has_rows,
    check_n_groups,
    even_groups,
    feature_names_of,
    format_items,
    owners_from_metadata,
    resolve_column_groups,
    row_owners,
)

__all__ = [
    "VerticalPartition",
    "HorizontalPartition",
    "HybridPartition",
    "resolve_partition",
]


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
