"""What a vertical estimator calls when it is given a PartyData for ``X``.

The glue between the estimators and :class:`~skfed.federation.PartyData`:
:func:`party_data_fit_input` and :func:`party_data_predict_input` have
every party read its table at its home, align the rows with the private set
intersection of :mod:`skfed.alignment` run between the homes, and return
the stand-ins (:class:`~skfed.federation._party_data._PartyBlocks`) the
estimator uses in place of ``X`` and ``y``; :func:`check_supported` refuses,
before any party starts, what such a fit cannot do. The label holder encodes
its labels at its home (:func:`binarized_codes`, :func:`signed_codes`,
:func:`standardised_target`). Nothing here names an estimator: an estimator
says that it takes a PartyData (``_accepts_party_data``) and whether its
early stopping draws rows in the driver (``_held_out_in_driver``), see
:class:`skfed.base.FederatedMixin`.

It sits above :mod:`skfed.alignment` (the PSI a PartyData runs when it
loads) and :mod:`skfed.base`, below the algorithms; the PartyData object,
its homes, blocks and shares are the runtime's
(:mod:`skfed.federation._party_data`), which is handed the loading
(:meth:`~skfed.federation.PartyData._load` takes it as ``align``).
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import os

import numpy as np
from sklearn.preprocessing import LabelBinarizer, LabelEncoder
from sklearn.utils import check_array
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import validate_data

from ._optional import import_optional
from .alignment._contract import CONTRACT as PSI_CONTRACT
from .alignment._protocol import _kinds, run_psi
from .base import check_labels_not_single_class
from .federation import PartyData
from .federation._party_data import (
    _at_homes,
    _PartyBlocks,
    _local_homes,
    _on_ray,
    at_home_apply,
    at_home_value,
)
from .federation._ray import HomeList, HomeRef

__all__ = ["party_data_fit_input", "party_data_predict_input",
           "validate_data_or_party_data", "binarized_fit_input",
           "standardised_fit_input", "check_supported", "is_party_data", "load",
           "binarized_codes", "signed_codes", "standardised_target"]


def load(data, label, allow_nan, encode):
    """Load, align and validate ``data`` at the parties' homes (cached by
    the PartyData; see :meth:`~skfed.federation.PartyData._load`)."""
    return data._load(label, allow_nan, encode, _align_at_homes)


def _read(source):
    """The table of a source: a DataFrame (runs on the party's home)."""
    pd = import_optional("pandas", "Reading a PartyData table")
    if callable(source):
        table = source()
    else:
        path = os.fspath(source)
        if path.endswith((".parquet", ".pq")):
            table = pd.read_parquet(path)
        else:
            table = pd.read_csv(path)
    if not isinstance(table, pd.DataFrame):
        table = pd.DataFrame(table)
    return table


def _read_at_home(home, key, source, id_column, label):
    """Home: read the table, check its id column; say what it holds."""
    table = _read(source)
    if id_column not in table.columns:
        raise ValueError(f"The table has no id column {id_column!r}.")
    ids = table[id_column]
    if ids.isna().any() or ids.duplicated().any():
        raise ValueError(f"The id column {id_column!r} has missing or repeated "
                         "ids; each row needs its own id.")
    ids = ids.tolist()
    kinds = _kinds(ids)
    if len(kinds) != 1 or None in kinds:
        raise TypeError(f"The ids in column {id_column!r} must be all integers "
                        "or all strings.")
    has_label = label is not None and label in table.columns
    features = [c for c in table.columns if c not in (id_column, label)]
    if not features:
        raise ValueError("The table has no feature column besides the id "
                         "(and the label).")
    home[key + ("table",)] = table
    home[key + ("ids",)] = ids
    return len(table), len(features), has_label, kinds.pop()


def _keep_rows(home, key, rows, id_column, label, allow_nan, encode):
    """Home: keep the aligned rows, sorted by id; validate; split the label."""
    table = home.pop(key + ("table",))
    home.pop(key + ("ids",), None)
    block = table.iloc[np.asarray(rows, dtype=np.intp)]
    block = block.sort_values(id_column, kind="stable").set_index(id_column)
    classes = None
    if label is not None and label in block.columns:
        y = block.pop(label).to_numpy()
        if encode is None:  # prediction: the labels are not used
            y = None
        elif encode:
            check_classification_targets(y)
            encoder = LabelEncoder().fit(y)
            classes, y = encoder.classes_, encoder.transform(y)
        else:
            y = check_array(y, ensure_2d=False, dtype=np.float64)
        if y is not None:
            home[key + ("y",)] = y
    home[key + ("X",)] = check_array(
        block, dtype=np.float64, ensure_all_finite="allow-nan" if allow_nan else True)
    return home[key + ("X",)].shape, classes


def _align_at_homes(data, names, key, label, allow_nan, encode):
    """Each home reads its table; the homes align the ids by PSI; each
    keeps and validates its aligned block. Returns (hub, PSI summary,
    (shape, classes) per party)."""
    info = list(_at_homes({name: (key, data.sources[name], data.id_column, label)
                           for name in names}, _read_at_home).values())
    kinds = {kind for *_, kind in info}
    if len(kinds) > 1:
        raise TypeError(
            f"The parties' ids in column {data.id_column!r} are of different "
            f"types ({sorted(kinds)}); convert them to one type.")
    holders = [k for k, (_, _, has_label, _) in enumerate(info) if has_label]
    if encode is not None and label is not None and len(holders) != 1:
        raise ValueError(
            f"Exactly one party's table must have the label column {label!r}; "
            f"found it in {len(holders)}.")
    hub = holders[0] if holders else 0
    if _on_ray():
        ids = [HomeList(HomeRef(name, key + ("ids",))) for name in names]
    else:
        ids = [_local_homes[name][key + ("ids",)] for name in names]
    rows, summary = run_psi(ids, hub=hub, party_names=names)
    if len(rows[0]) == 0:
        raise ValueError(f"The parties have no id in common in column "
                         f"{data.id_column!r}.")
    shapes = list(_at_homes({name: (key, rows[k], data.id_column, label,
                                    allow_nan, encode)
                             for k, name in enumerate(names)}, _keep_rows).values())
    return hub, summary, shapes


def _binarize_codes(codes, binarizer):
    return binarizer.transform(binarizer.classes_[codes]).astype(float)


def binarized_codes(codes, binarizer):
    """The label holder's +-1 columns (``binarizer``, a LabelBinarizer fitted
    on the classes) of its class codes, computed at its home."""
    n_outputs = 1 if binarizer.classes_.size == 2 else binarizer.classes_.size
    return at_home_apply(codes, _binarize_codes, binarizer,
                         shape=(len(codes), n_outputs))


def _signed(codes):
    return np.where(codes == 1, 1.0, -1.0)


def signed_codes(codes):
    """+1 for the second class, -1 for the first, at the label holder."""
    return at_home_apply(codes, _signed, shape=(len(codes),))


def _moments(y, weight):
    # exactly FDSKLRegressor's in-memory standardisation
    w = np.ones(len(y)) if weight is None else weight
    mean = float(np.average(y, weights=w))
    scale = float(np.sqrt(np.average((y - mean) ** 2, weights=w)))
    return mean, scale if scale > 0 else 1.0


def _standardise(y, mean, scale):
    return ((y - mean) / scale)[:, None]


def standardised_target(y, weight=None):
    """``(mean, scale, Y)``: the label holder centres and scales its target
    (weighted by ``weight``, the row weights it is given) and tells the
    estimator the two numbers, which prediction needs; ``Y`` (n x 1) stays
    at its home."""
    mean, scale = at_home_value(y, _moments, weight)
    return mean, scale, at_home_apply(y, _standardise, mean, scale,
                                      shape=(len(y), 1))


def is_party_data(X):
    """Whether ``X`` stands for a :class:`PartyData`'s tables (what
    :func:`party_data_fit_input` returns): the estimators resolve
    ``early_stopping="auto"`` to off then (their held-out rows would be drawn
    in the driver)."""
    return isinstance(X, _PartyBlocks)


def check_supported(estimator):
    """Refuse, before any table is read, what a fit on PartyData cannot do.

    An estimator's ``_held_out_in_driver`` answers for a PartyData fit,
    where ``early_stopping="auto"`` means off, so only an explicit ``True``
    holds rows out: nothing needs the number of rows.
    """
    name = type(estimator).__name__
    if getattr(estimator, "class_weight", None) is not None:
        raise ValueError(
            f"{name}(class_weight=...) is not supported with PartyData: the "
            "class weights would be computed from the labels, which stay "
            "with the label holder. Set class_weight=None and pass "
            "sample_weight (one weight per common row, in the order of the "
            "sorted ids), or fit on the aligned table in memory "
            "(skfed.alignment.align).")
    if estimator._held_out_in_driver():
        raise ValueError(
            f"{name} with early stopping is not supported with PartyData: its "
            "held-out rows are drawn in the driver, stratified by label or "
            "cut from the table, and the driver holds neither. Set "
            "early_stopping=False or 'auto' (off with a PartyData), or fit "
            "on the aligned table in memory (skfed.alignment.align).")


def party_data_fit_input(estimator, data, y, *, allow_nan=False,
                         encode_labels=False):
    """Stand-ins for ``X`` and ``y`` when ``fit`` is given a :class:`PartyData`.

    Loads, aligns and validates every party's table on its home (``y`` names
    the label column, read by the label holder) and sets the estimator's
    ``n_features_in_`` (and ``classes_`` with ``encode_labels``, the labels
    then kept as class codes). Returns ``(X, y)``: ``X[:, columns]`` names a
    party's block and ``y`` the labels, both read by the parties' actors.
    """
    if y is not None and not isinstance(y, str):
        raise TypeError("With PartyData, y names the label column (a str), "
                        f"read by the party that holds it; got {type(y).__name__}.")
    check_supported(estimator)
    loaded = load(data, y, allow_nan, encode_labels)
    blocks = data._blocks(loaded)
    estimator.n_features_in_ = blocks.shape[1]
    estimator._party_data_label = y
    estimator._party_data_alignment_phases = tuple(PSI_CONTRACT.phases())
    if hasattr(estimator, "feature_names_in_"):
        del estimator.feature_names_in_
    if encode_labels:
        estimator.classes_ = np.asarray(loaded["classes"])
    return blocks, (None if y is None else blocks.labels())


def party_data_predict_input(estimator, data, *, allow_nan=False):
    """The stand-in for ``X`` when ``predict`` is given a :class:`PartyData`.

    Each party's table must have the columns it had in ``fit``.
    """
    partition = estimator.partition_
    loaded = load(data, getattr(estimator, "_party_data_label", None), allow_nan,
                  None)
    blocks = data._blocks(loaded)
    expected = [len(partition.columns(k)) for k in range(partition.n_parties)]
    if blocks.widths != expected:
        raise ValueError(
            f"The parties' tables have {blocks.widths} feature columns; the "
            f"model was fitted on {expected}.")
    blocks.active = partition.active_parties[0]
    return blocks


def validate_data_or_party_data(estimator, X, **kwargs):
    """``validate_data(estimator, X, **kwargs)``, or for a :class:`PartyData`
    the stand-in of :func:`party_data_predict_input` (prediction inputs)."""
    if isinstance(X, PartyData):
        allow_nan = kwargs.get("ensure_all_finite", True) == "allow-nan"
        return party_data_predict_input(estimator, X, allow_nan=allow_nan)
    return validate_data(estimator, X, **kwargs)


def binarized_fit_input(estimator, data, y, sample_weight=None):
    """``(X, Y, weight)`` for a +-1 classifier (FDSKL) fitted on ``data``.

    Sets ``classes_``, ``_binarizer`` (a LabelBinarizer fitted on the
    classes) and ``_n_outputs``; ``Y`` is computed by the label holder from
    its class codes, and ``weight`` is the estimator's ``_effective_weight``.
    """
    X, codes = party_data_fit_input(estimator, data, y, encode_labels=True)
    check_labels_not_single_class(estimator.classes_)
    estimator._binarizer = LabelBinarizer(neg_label=-1, pos_label=1).fit(
        estimator.classes_)
    Y = binarized_codes(codes, estimator._binarizer)
    estimator._n_outputs = Y.shape[1]
    return X, Y, estimator._effective_weight(codes, sample_weight)


def standardised_fit_input(estimator, data, y, sample_weight=None):
    """``(X, Y, weight)`` for a regressor that standardises its target
    (FDSKL) fitted on ``data``; sets ``_y_mean``, ``_y_scale`` and
    ``_n_outputs``."""
    X, y = party_data_fit_input(estimator, data, y)
    weight = estimator._effective_weight(y, sample_weight)
    estimator._y_mean, estimator._y_scale, Y = standardised_target(y, weight)
    estimator._n_outputs = 1
    return X, Y, weight
