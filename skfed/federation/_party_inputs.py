"""A PartyData's blocks as the driver holds them, and work done at their homes.

The estimators' input glue (:mod:`skfed._party_data_fit`) returns a
:class:`_PartyBlocks` in place of ``X``: where the estimator slices a
party's columns (``X[:, columns]``) it gets a reference to that party's
block at its home. The label holder's encodings (class codes to +-1
columns, standardised targets) are computed at its home with
:func:`at_home_apply`.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np

from ..partition import VerticalPartition
from ._party_data import _at_home, _on_ray, _resolve_local
from ._ray import HomeRef

__all__ = ["at_home_apply", "at_home_value", "binarized_codes", "signed_codes",
           "standardised_target"]


class _PartyBlocks:
    """What the driver holds in place of ``X``: shapes and references.

    ``blocks[:, columns]`` (the columns of one party, as the partition gives
    them) is a :class:`HomeRef` to that party's block on its home, which the
    party's actor reads when a federation starts; with the threads backend,
    the block itself.
    """

    ndim = 2
    dtype = np.dtype(np.float64)

    def __init__(self, homes, key, widths, n_rows, active):
        self.homes = list(homes)
        self.key = key
        self.widths = list(widths)
        self.offsets = np.concatenate([[0], np.cumsum(widths)]).astype(int)
        self.shape = (int(n_rows), int(self.offsets[-1]))
        self.active = active

    def __len__(self):
        return self.shape[0]

    def partition_for(self, spec, kind):
        """The partition: party ``k`` holds its table's columns."""
        if kind != "vertical":
            raise ValueError("PartyData holds one table per party of a vertical "
                             f"partition; this estimator's partition is {kind}.")
        groups = [list(range(self.offsets[k], self.offsets[k + 1]))
                  for k in range(len(self.homes))]
        return VerticalPartition(groups, active_parties=(self.active,)).resolve(
            np.empty((0, self.shape[1])))

    def __getitem__(self, index):
        if not (isinstance(index, tuple) and len(index) == 2
                and isinstance(index[0], slice) and index[0] == slice(None)):
            raise TypeError("The parties' blocks stay home: only whole columns "
                            "of one party, blocks[:, columns], can be named.")
        columns = np.asarray(index[1], dtype=np.intp).ravel()
        k = int(np.searchsorted(self.offsets, columns.min(), side="right") - 1) \
            if columns.size else 0
        lo, hi = self.offsets[k], self.offsets[k + 1]
        if columns.size and (columns.min() < lo or columns.max() >= hi):
            raise ValueError("A party's block is named by its own columns only.")
        local = (None if np.array_equal(columns, np.arange(lo, hi))
                 else (columns - lo).tolist())
        ref = HomeRef(self.homes[k], self.key + ("X",), local,
                      shape=(self.shape[0], columns.size))
        return ref if _on_ray() else _resolve_local(ref)

    def labels(self, dtype=None):
        ref = HomeRef(self.homes[self.active], self.key + ("y",), dtype=dtype,
                      shape=(self.shape[0],))
        return ref if _on_ray() else _resolve_local(ref)


def at_home_apply(value, fn, *args, shape=None):
    """``fn(value, *args)``, computed where ``value`` lives.

    For a :class:`HomeRef` (a party's data at its home, Ray backend) the
    result is another reference, computed by that party when its state is
    built (``shape``: the result's shape, for the driver); for an array, the
    result itself. Estimators use it to encode the labels on the label
    holder (``fn`` must be a module-level function).
    """
    if isinstance(value, HomeRef):
        if value.transform is not None:
            raise ValueError("at_home_apply takes a reference without a transform.")
        return HomeRef(value.home, value.key, value.columns, value.dtype,
                       value.shape if shape is None else shape, (fn, args))
    return fn(value, *args)


def _apply_to_ref(home, value, fn, args):
    return fn(value, *args)  # the home read the reference already


def at_home_value(value, fn, *args):
    """``fn(value, *args)`` computed where ``value`` lives, returned to the
    caller (for what the orchestrator may know: a few public numbers)."""
    if isinstance(value, HomeRef):
        return _at_home(value.home, _apply_to_ref, value, fn, args)
    return fn(value, *args)


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
