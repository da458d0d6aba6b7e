"""Entity alignment: from one table per party to one aligned vertical table.

Vertical federated learning starts with each party holding a table keyed by a
customer id. :func:`align` finds the ids all of them hold with the private set
intersection of :mod:`skfed.alignment._protocol`, then lays the parties' rows of
those ids side by side, in one order every party can compute (sorted by id,
which every party knows once the intersection is known), with the partition
that says which columns are whose.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

from .._optional import import_optional
from ..partition import VerticalPartition
from ._groups import DEFAULT_GROUP
from ._protocol import check_id_lists, run_psi

__all__ = ["align"]


def _pandas():
    return import_optional("pandas", "skfed.alignment.align")


def _format(items, limit=8):
    items = list(items)
    text = ", ".join(repr(i) for i in items[:limit])
    return f"[{text}{', ...' if len(items) > limit else ''}]"


def _one_id_column(on):
    """``on`` as one column name: ``["id"]`` (pandas' merge idiom) is ``"id"``."""
    pd = _pandas()
    if isinstance(on, (list, tuple, pd.Index)):
        if len(on) != 1:
            raise ValueError(
                f"align joins on one id column; got on={list(on)!r}. Combine "
                "the key columns into one in every table first, e.g. "
                "df['id'] = df['a'].astype(str) + '|' + df['b'].astype(str).")
        on = on[0]
    return on


def _check_tables(tables, on, label):
    """Validate the tables; return (names, frames, label holder or None)."""
    pd = _pandas()
    if isinstance(tables, pd.DataFrame):
        raise TypeError(
            "align takes one DataFrame per party (a list or a dict of them), "
            "not a single DataFrame.")
    if isinstance(tables, dict):
        names, frames = [str(k) for k in tables], list(tables.values())
    else:
        frames = list(tables)
        names = [f"party{k}" for k in range(len(frames))]
    if len(frames) < 2:
        raise ValueError(
            f"align needs the tables of at least two parties; got {len(frames)}.")
    for k, df in enumerate(frames):
        if not isinstance(df, pd.DataFrame):
            raise TypeError(
                f"Table {k} ({names[k]}) is a {type(df).__name__}; give one "
                "pandas DataFrame per party.")
        if on not in df.columns:
            raise ValueError(
                f"Table {k} ({names[k]}) has no id column {on!r}; its columns are "
                f"{_format(df.columns)}. Pass on=<the id column's name>, or "
                "rename that party's id column to match.")
        if len(df) == 0:
            raise ValueError(f"Table {k} ({names[k]}) has no rows.")
        if df[on].isna().any():
            raise ValueError(
                f"Table {k} ({names[k]}) has {int(df[on].isna().sum())} missing "
                f"id(s) in column {on!r}; drop or fill those rows first.")
    holder = None
    if label is not None and label == on:
        raise ValueError(f"label and on both name the column {on!r}; the id "
                         "column is not a label. Pass the label column's name.")
    if label is not None:
        holders = [k for k, df in enumerate(frames) if label in df.columns]
        if not holders:
            raise ValueError(
                f"No table has the label column {label!r}; exactly one party "
                "(the label holder) must have it. Check the name, or pass "
                "label=None to align features only.")
        if len(holders) > 1:
            raise ValueError(
                f"The label column {label!r} is in several tables "
                f"({', '.join(names[k] for k in holders)}); exactly one party "
                "holds the labels. Drop it from the others or rename it there.")
        holder = holders[0]

    owner = {}
    for k, df in enumerate(frames):
        features = [c for c in df.columns if c != on and c != label]
        if not features:
            raise ValueError(
                f"Table {k} ({names[k]}) has no feature columns besides the id"
                f"{' and the label' if k == holder else ''}; every party of a "
                "vertical partition holds at least one feature. Leave it out "
                "of the alignment or give it features.")
        for c in features:
            owner.setdefault(c, []).append(k)
    shared = {c: ks for c, ks in owner.items() if len(ks) > 1}
    if shared:
        described = "; ".join(f"{c!r} in {', '.join(names[k] for k in ks)}"
                              for c, ks in list(shared.items())[:5])
        raise ValueError(
            f"Feature columns appear in more than one table ({described}); the "
            "aligned table needs distinct column names. Prefix each party's "
            "columns, e.g. df.rename(columns=lambda c: c if c == on else "
            "'bank_' + c).")
    for k, df in enumerate(frames):
        if df.columns.duplicated().any():
            raise ValueError(
                f"Table {k} ({names[k]}) has repeated column names "
                f"{_format(df.columns[df.columns.duplicated()].unique())}.")
    return names, frames, holder


def align(tables, on="id", label=None, *, group=DEFAULT_GROUP, exponent_bits=256,
          n_jobs=None, return_communication=False):
    """Align the parties' tables on their common ids, privately.

    The parties find the ids they all hold with a Diffie-Hellman private set
    intersection on Curve25519 (each learns the intersection and the set
    sizes, nothing else; see Notes), then each keeps its rows of those ids,
    in increasing id order. The result is one table ready for any vertical
    estimator.

    Parameters
    ----------
    tables : list of DataFrame or dict of str to DataFrame
        One table per party, in party order (a dict's keys name the parties
        in the message log). Each has the id column ``on``; one of them may
        have the label column ``label``.

    on : str or list of one str, default="id"
        The id column. Ids must be distinct within a table and of one type
        (integers or strings) across all tables.

    label : str or None, default=None
        The label column, present in exactly one table (the label holder).

    group : {"curve25519", "modp3072", "modp2048"}, DHGroup or \
            Curve25519Group, default="curve25519"
        The Diffie-Hellman group: Curve25519 through X25519 by default
        (128-bit security, 32 bytes per value; see Notes), or RFC 3526
        group 15 (``"modp3072"``, 3072 bits, 128-bit security, about 20
        times slower). Groups below 128-bit security, such as
        ``"modp2048"``, are refused unless
        ``skfed.set_config(allow_insecure_keys=True)`` (for tests); see
        :func:`private_set_intersection`.

    exponent_bits : int or None, default=256
        Bits of every party's secret exponent in a MODP group (None:
        full-length); see :func:`private_set_intersection`. An X25519 key
        always has 32 bytes, so with ``"curve25519"`` it stays 256.

    n_jobs : int or None, default=None
        Workers per party for the exponentiations (-1: all cores): forked
        processes for Curve25519 (None: one per party, so that two parties
        use two cores), threads in a MODP group.

    return_communication : bool, default=False
        Also return the :class:`~skfed.federation.CommunicationSummary` of
        the intersection protocol (what crossed between which parties).

    Returns
    -------
    X : DataFrame of shape (n_common, n_features)
        The common ids' features: each party's columns, in party order, rows
        sorted by id. The index holds the ids (named ``on``); the id and label
        columns are not among the features.

    y : Series of shape (n_common,) or None
        The label holder's labels in the same row order (None without
        ``label``).

    partition : VerticalPartition
        The column names of each party, with the label holder (party 0
        without ``label``) as the active party.

    communication : CommunicationSummary
        Only with ``return_communication=True``.

    See Also
    --------
    private_set_intersection : the protocol alone, on plain sets of ids.

    Notes
    -----
    The label holder acts as the hub of the protocol (party 0 if there is no
    label). Security is in the semi-honest model without collusion: every
    party learns the intersection and the sizes of the other parties' id
    sets; the hub also learns how many ids every subset of parties has in
    common (sizes only, never which ids). No message carries an id in plain
    text. The checks of ids (duplicates, types) are run by each party on its
    own table; only their types are compared across parties, which parties
    must agree on anyway.

    In the default group, a party's secret key is an X25519 private key and
    "raising to the key" is ``X25519(key, u)``: the u-coordinate of a
    scalar multiple of the point of u-coordinate ``u``, computed by the
    x-only Montgomery ladder, which works on the curve and on its twist
    alike and so commutes (``X25519(b, X25519(a, u)) = X25519(a, X25519(b,
    u))``). Clamping makes every scalar a multiple of 8, the cofactor, so
    the values sent lie in the subgroup of prime order about 2^252 (about
    128-bit security, RFC 7748). Ids are hashed onto the curve itself, not
    its twist (which side a point is on survives X25519 and would leak a
    bit of each id's hash), and every party checks every value it receives
    (32 bytes, canonical, on the curve, not of small order: the low-order
    points are those X25519 maps to the all-zero output), naming the
    sender of an invalid one. See :class:`Curve25519Group`.

    Examples
    --------
    >>> import pandas as pd
    >>> from skfed.alignment import align
    >>> bank = pd.DataFrame({"id": [3, 1, 2], "income": [30., 10., 20.],
    ...                      "default": [1, 0, 0]})
    >>> shop = pd.DataFrame({"id": [2, 3, 4], "visits": [5, 7, 9]})
    >>> X, y, partition = align([bank, shop], label="default")
    >>> X
        income  visits
    id
    2     20.0       5
    3     30.0       7
    >>> y.tolist(), partition
    ([0, 1], VerticalPartition(groups=[['income'], ['visits']], active_parties=(0,)))
    """
    pd = _pandas()
    on = _one_id_column(on)
    names, frames, holder = _check_tables(tables, on, label)
    id_lists = check_id_lists([df[on].tolist() for df in frames], names,
                              what=f"the id column {on!r}")
    hub = 0 if holder is None else holder
    rows, communication = run_psi(id_lists, hub=hub, group=group,
                                  exponent_bits=exponent_bits, n_jobs=n_jobs,
                                  party_names=names)
    if len(rows[0]) == 0:
        raise ValueError(
            f"The parties have no id in common in column {on!r}, so there is "
            "nothing to train on. Check that every table uses the same kind of "
            "id (e.g. the same customer number, formatted the same way: "
            "'00042' and '42' differ).")

    # Each party keeps its rows of the intersection, sorted by id: all parties
    # know the common ids, so they agree on this order without talking.
    blocks, y = [], None
    for k, df in enumerate(frames):
        block = df.iloc[rows[k]].sort_values(on, kind="stable").set_index(on)
        if k == holder:
            y = block.pop(label)
        blocks.append(block)
    if any(not b.index.equals(blocks[0].index) for b in blocks[1:]):  # pragma: no cover
        raise RuntimeError("The parties disagree on the intersection; this is a bug.")
    X = pd.concat(blocks, axis=1)
    partition = VerticalPartition([list(b.columns) for b in blocks],
                                  active_parties=(hub,))
    if return_communication:
        return X, y, partition, communication
    return X, y, partition
