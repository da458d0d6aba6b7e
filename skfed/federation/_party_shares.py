"""Model shares that stay home: saved and loaded by each party on its host.

After a fit on a :class:`~skfed.federation.PartyData` with the Ray backend,
every value a party learned (a lookup table, coefficients, a party key) is
a :class:`~skfed.federation.RemoteValue` kept by that party's home;
the estimator in the driver holds the references. :func:`save_shares` has
each home write its values to a file on its own host (and, if asked, the
driver its part, with each reference replaced by a :class:`SavedShare`
placeholder); :func:`load_shares` has each home read its file back and keep
the values in its object store, and gives the driver new references: the
driver never holds a value of a share.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import copy
import os

from ._fingerprint import new_fingerprint, open_sealed, seal
from ._ray import RemoteValue, import_ray, leaves

__all__ = ["SavedShare", "save_shares", "load_shares"]


class SavedShare:
    """Stands, in the driver's part of a model, for a value a party saved.

    ``party`` names the party, ``index`` the value's position in the list
    the party saved; ``meta`` is what the driver knew of it (its size,
    shape, type), not the value.
    """

    __slots__ = ("party", "index", "meta")

    def __init__(self, party, index, meta):
        self.party = party
        self.index = index
        self.meta = meta

    def __reduce__(self):
        return (SavedShare, (self.party, self.index, self.meta))

    def __repr__(self):
        return f"SavedShare(party={self.party!r}, index={self.index})"


def _is_share(leaf):
    return isinstance(leaf, (RemoteValue, SavedShare))


def _shares(estimator):
    """``{party: [share, ...]}`` in the order of the estimator's attributes."""
    kept = {}
    for leaf in leaves(vars(estimator)):
        if _is_share(leaf):
            kept.setdefault(leaf.party, []).append(leaf)
    return kept


def _replaced(obj, new):
    """``obj`` rebuilt with each share leaf ``s`` replaced by ``new(s)``
    (dicts, lists and tuples walked as :func:`leaves` walks them)."""
    if _is_share(obj):
        return new(obj)
    if isinstance(obj, dict):
        out = {k: _replaced(v, new) for k, v in obj.items()}
        return out if type(obj) is dict else type(obj)(out)
    if isinstance(obj, (list, tuple)) and not type(obj).__name__ == "HomeList":
        items = [_replaced(v, new) for v in obj]
        if hasattr(obj, "_fields"):  # a named tuple
            return type(obj)(*items)
        return items if type(obj) is list else type(obj)(items)
    return obj


def _with_shares(estimator, new):
    """A shallow copy of ``estimator`` whose shares are ``new(share)``."""
    out = copy.copy(estimator)
    for name, value in vars(estimator).items():
        setattr(out, name, _replaced(value, new))
    return out


def _save(home, path, values, party, fingerprint):
    """Home: write what it keeps of a model to a path on its own host,
    sealed (see :mod:`._fingerprint`); returns the path and the digest."""
    import joblib

    record, digest = seal(values, party, fingerprint)
    joblib.dump(record, path)
    return path, digest


def _seal_of(share):
    """``(fingerprint, digest)`` the driver recorded for a share, or Nones."""
    meta = share.meta if isinstance(share, SavedShare) else share._meta
    return meta.get("seal", (None, None))


def _with_seal(share, sealed):
    meta = share.meta if isinstance(share, SavedShare) else share._meta
    meta = {**meta, "seal": sealed}
    if isinstance(share, SavedShare):
        share.meta = meta
    else:
        share._meta = meta
    return share


def _load(home, path, party, count, sealed):
    """Home: read its file back, check its seal, keep each value in its
    own object store.

    Returns the references (with the sizes it measured), never a value.
    """
    import joblib

    values = open_sealed(joblib.load(path), path, party, *sealed)
    if not isinstance(values, list) or len(values) != count:
        raise ValueError(
            f"{path} holds {len(values) if isinstance(values, list) else 'no'} "
            f"saved values; the model names {count} of party {party!r}. Load "
            "the files saved from this model.")
    ray = import_ray()
    return [RemoteValue.keep(value, party, ray.put) for value in values]


def _no_shares_error(estimator):
    return ValueError(
        f"{type(estimator).__name__} keeps no share at the parties' homes: "
        "only a fit on a PartyData with the Ray backend leaves each party's "
        "share with its party.")


def save_shares(data, estimator, directory, driver_file=None):
    """See :meth:`PartyData.save_shares`."""
    from ._party_data import _at_homes

    kept = _shares(estimator)
    if not kept:
        raise _no_shares_error(estimator)
    if any(isinstance(s, SavedShare) for shares in kept.values() for s in shares):
        raise ValueError("This model's shares are saved, not loaded: load them "
                         "with PartyData.load_shares before saving them again.")
    fingerprint = new_fingerprint()
    calls = {name: (os.path.join(os.fspath(directory), f"{name}.joblib"),
                    kept.get(name, []), name, fingerprint)
             for name in data.parties}
    written = _at_homes(calls, _save)
    paths = {name: path for name, (path, _) in written.items()}
    # The driver's part records each file's seal: a load checks it.
    for name, shares in kept.items():
        for share in shares:
            _with_seal(share, (fingerprint, written[name][1]))
    if driver_file is not None:
        import joblib

        index = {id(s): k for shares in kept.values() for k, s in enumerate(shares)}
        joblib.dump(_with_shares(estimator, lambda s: SavedShare(
            s.party, index[id(s)], s._meta)), driver_file)
    return paths


def load_shares(data, estimator, directory):
    """See :meth:`PartyData.load_shares`."""
    from ._party_data import _at_homes, _on_ray

    if isinstance(estimator, (str, os.PathLike)):
        import joblib

        estimator = joblib.load(estimator)
    kept = _shares(estimator)
    if not kept:
        raise _no_shares_error(estimator)
    if not _on_ray():
        raise ValueError("Shares saved at the parties' homes are loaded by "
                         "their homes: use skfed.config_context(backend='ray').")
    unknown = sorted(set(kept) - set(data.parties))
    if unknown:
        raise ValueError(f"The model has shares of {unknown}, which this "
                         f"PartyData does not name (it names {data.parties}).")
    calls = {name: (os.path.join(os.fspath(directory), f"{name}.joblib"), name,
                    len(shares), _seal_of(shares[0]))
             for name, shares in kept.items()}
    loaded = _at_homes(calls, _load)
    for name, shares in loaded.items():  # the same files seal the loaded model
        for share in shares:
            _with_seal(share, calls[name][3])
    index = {id(s): k for shares in kept.values() for k, s in enumerate(shares)}
    return _with_shares(estimator, lambda s: loaded[s.party][index[id(s)]])
