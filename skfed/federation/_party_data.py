"""PartyData: each party's table loaded, kept and saved at the party's home.

:class:`PartyData` names, per party, where its table is (a CSV or Parquet
path on the party's own host, or a callable the party runs) and the id
column to align on. A vertical estimator takes it in place of ``X``: each
party's *home* (a long-lived Ray actor placed by the party's
``ray_actor_options``, see :func:`~skfed.federation._ray.home_actor`) reads
its own table, the parties align their rows by a private set intersection
(:func:`skfed.alignment.private_set_intersection`) run between the homes,
each home validates its block, and the estimator's parties run at the homes
on what they hold there. The driver gets counts and shapes, never a block.
The reading and the alignment are passed in by the estimators' input glue
(:mod:`skfed._party_data_fit`, which sits above the alignment protocol):
the runtime knows no estimator and no alignment.

What the driver holds in place of ``X`` is a :class:`_PartyBlocks`: where
the estimator slices a party's columns (``X[:, columns]``) it gets a
reference to that party's block at its home. :func:`at_home_apply` and
:func:`at_home_value` compute where a value lives (the label holder's
encodings).

Model shares stay home too. After a fit on a PartyData with the Ray backend,
every value a party learned (a lookup table, coefficients, a party key) is a
:class:`~skfed.federation.RemoteValue` kept by that party's home; the
estimator in the driver holds the references. :meth:`PartyData.save_shares`
has each home write its values to a file on its own host, sealed (see
:mod:`skfed.federation._fingerprint`), and, if asked, the driver its part,
with each reference replaced by a :class:`SavedShare` placeholder;
:meth:`PartyData.load_shares` has each home read its file back and keep the
values in its object store, and gives the driver new references: the driver
never holds a value of a share.

With the threads backend the same object works in one process (the
"homes" are dictionaries of this process), which is how tests compare it
with the in-memory fit.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import copy
import os
import threading
import uuid
import weakref

import joblib
import numpy as np

from .. import _config
from ..partition import VerticalPartition
from ._fingerprint import new_fingerprint, open_sealed, seal
from ._ray import (
    HomeRef,
    RemoteValue,
    _homes,
    _session,
    check_homes_free,
    home_actor,
    import_ray,
    leaves,
    wait_home,
)
from .party import PartyError

__all__ = ["PartyData", "SavedShare", "at_home_apply", "at_home_value"]

#: The homes of the threads backend: ``{party name: dict}`` in this process.
_local_homes = {}


def _on_ray():
    return _config.get_config()["backend"] == "ray"


def _at_home(name, fn, *args):
    """``fn(home, *args)`` run by party ``name``'s home (its actor on Ray)."""
    return _at_homes({name: args}, fn)[name]


def _at_homes(calls, fn):
    """``fn(home, *args)`` at every home of ``calls`` ({name: args}) at once.

    A failure is raised as :class:`~skfed.federation.PartyError` naming the
    party (phase ``"data"``).
    """
    out = {}
    if _on_ray():
        ray = import_ray()
        refs = {name: home_actor(name).at_home.remote(fn, args)
                for name, args in calls.items()}
        for name, ref in refs.items():
            try:  # a dead or unplaceable home: a PartyError naming it
                out[name] = wait_home(ref, name, fn.__name__)
            except ray.exceptions.RayTaskError as exc:
                cause = getattr(exc, "cause", None) or exc
                raise PartyError(name, "data", fn.__name__, cause) from exc
        return out
    for name, args in calls.items():
        try:
            out[name] = fn(_local_homes.setdefault(str(name), {}), *args)
        except Exception as exc:
            raise PartyError(name, "data", fn.__name__, exc) from exc
    return out


def _drop(home, key):
    """Home: forget what it keeps of one load (``key``)."""
    for k in [k for k in home if isinstance(k, tuple) and k[:len(key)] == key]:
        del home[k]


def _release(names, key, on_ray):
    """Every home forgets one load: when its PartyData is reloaded or gone."""
    try:
        if on_ray:
            ray = import_ray()
            # after ray.shutdown() (or at exit) the homes are gone, and a
            # call would start a new default Ray instance (Ray's auto-init)
            if not ray.is_initialized():
                return
            job = _session(ray)
            for name in names:  # fire and forget: nothing to wait for
                entry = _homes.get(name)
                if entry is not None and entry[0] == job:
                    entry[1].at_home.remote(_drop, (key,))
        else:
            for name in names:
                _drop(_local_homes.get(name, {}), key)
    except Exception:  # pragma: no cover - Ray already shut down
        pass


#: A lock per PartyData (kept outside it, so that it stays picklable):
#: concurrent fits load it one at a time.
_load_locks = weakref.WeakKeyDictionary()
_load_locks_guard = threading.Lock()


def _lock_of(data):
    with _load_locks_guard:
        lock = _load_locks.get(data)
        if lock is None:
            lock = _load_locks[data] = threading.Lock()
        return lock


class PartyData:
    """Each party's table, loaded by the party where it lives.

    Pass it to a vertical estimator's ``fit``, ``predict`` (and the like) in
    place of ``X``. Every party reads its own table on its own *home* (with
    ``skfed.set_config(backend="ray")``: a long-lived Ray actor placed by the
    party's ``ray_actor_options``, for example a custom resource of the host
    that holds the file); the parties then align their rows on the id column
    by a private set intersection run between the homes (each keeps the ids
    every party holds, sorted), and each validates its block. The driver
    (the process that calls ``fit``) learns the number of common rows, each
    party's number of columns and, for a classifier, the classes; it never
    holds a party's block, and a message from party A to party B travels as
    a Ray object reference that only B's actor fetches.

    Parameters
    ----------
    sources : dict of str to path or callable
        By party name, in party order: a path (on the party's host) to a CSV
        file or a Parquet file (``.parquet``/``.pq``, needs pyarrow), or a
        callable with no arguments, run by the party, returning a DataFrame.
        Each table has the id column; the label holder's also has the label
        column, named by the ``y`` given to ``fit``. The parties read their
        tables with pandas, which skfed does not require (``pip install
        pandas`` where the parties run).

    id_column : str, default="id"
        The column the parties align on (integers or strings, distinct
        within a table).

    Attributes
    ----------
    parties : list of str
        The party names, in order.

    n_rows_ : int
        The number of common rows, once loaded (by a ``fit`` or ``predict``).

    alignment_communication_ : CommunicationSummary
        The messages of the private set intersection, once loaded.

    Notes
    -----
    The estimator's partition is the parties' tables: party ``k`` holds the
    columns of ``sources``'s ``k``-th table (the ``partition`` parameter is
    not used) and the label holder is the active party. With the threads
    backend the homes are in this process (for tests and teaching).

    Examples
    --------
    >>> import pandas as pd
    >>> from skfed.ensemble import SecureBoostClassifier
    >>> from skfed.federation import PartyData
    >>> bank = pd.DataFrame({"id": [1, 2, 3, 4, 5, 6], "income": [1., 5, 2, 6, 3, 7],
    ...                      "default": [0, 1, 0, 1, 0, 1]})
    >>> shop = pd.DataFrame({"id": [6, 5, 4, 3, 2, 1, 9], "visits": [1., 2, 3, 4, 5, 6, 7]})
    >>> data = PartyData({"bank": lambda: bank, "shop": lambda: shop})
    >>> clf = SecureBoostClassifier(n_estimators=2, encryption=None, random_state=0)
    >>> clf.fit(data, "default").predict(data).tolist()
    [0, 1, 0, 1, 0, 1]
    """

    def __init__(self, sources, id_column="id"):
        if not isinstance(sources, dict) or len(sources) < 2:
            raise ValueError("PartyData needs a dict {party name: source} of at "
                             "least two parties.")
        self.sources = {str(k): v for k, v in sources.items()}
        self.id_column = id_column
        self._key = None
        self._loaded = None

    @property
    def parties(self):
        return list(self.sources)

    def __repr__(self):
        return f"PartyData(parties={self.parties}, id_column={self.id_column!r})"

    # -- loading --------------------------------------------------------------

    def _homes_alive(self):
        if not _on_ray():
            return all(name in _local_homes for name in self.parties)
        ray = import_ray()
        if not ray.is_initialized():
            return False
        session = _session(ray)
        entries = [_homes.get(name, (None, None)) for name in self.parties]
        return all(entry[0] == session and entry[1] is self._loaded["actors"][name]
                   for name, entry in zip(self.parties, entries))

    def _load(self, label, allow_nan, encode, align):
        """Load, align and validate on the homes once per label and backend.

        ``encode``: True (class codes) or False (numbers) for a fit's labels,
        None for a prediction (the label column, if any, is dropped).
        ``align(data, names, key, label, allow_nan, encode)`` reads, aligns
        and validates the tables at the homes and returns ``(hub, summary,
        (shape, classes) per party)``; the estimators' input glue
        (:mod:`skfed._party_data_fit`) passes the private set intersection.
        """
        if _on_ray():  # a home runs one federation at a time
            check_homes_free(self.parties)
        with _lock_of(self):  # one load at a time, the next one reuses it
            return self._load_locked(label, allow_nan, encode, align)

    def _load_locked(self, label, allow_nan, encode, align):
        settings = (label, _on_ray())
        old = self._loaded
        if (old is not None and old["settings"] == settings
                # blocks checked finite also serve where NaN is allowed
                and (allow_nan or not old["allow_nan"])
                and (encode is None or old["encode"] == encode)
                and self._homes_alive()):
            return old
        names = self.parties
        key = ("party_data", uuid.uuid4().hex)
        try:
            hub, summary, shapes = align(self, names, key, label, allow_nan,
                                         encode)
        except BaseException:
            _release(names, key, _on_ray())  # what the homes read so far
            raise
        actors = {}
        if _on_ray():
            actors = {name: home_actor(name) for name in names}
        if self._key is not None:  # the previous load's data
            self._finalizer()
        self._key = key
        self._finalizer = weakref.finalize(self, _release, list(names), key,
                                           _on_ray())
        self._loaded = {"settings": settings, "allow_nan": allow_nan,
                        "encode": encode, "key": key,
                        "hub": hub,
                        "widths": [shape[1] for shape, _ in shapes],
                        "n_rows": shapes[0][0][0], "classes": shapes[hub][1],
                        "actors": actors, "label": label}
        self.n_rows_ = shapes[0][0][0]
        self.alignment_communication_ = summary
        return self._loaded

    def _blocks(self, loaded):
        blocks = _PartyBlocks(self.parties, loaded["key"], loaded["widths"],
                              loaded["n_rows"], loaded["hub"])
        blocks.data = self  # the homes keep the blocks while this lives
        return blocks

    def save_shares(self, estimator, directory, driver_file=None):
        """Each party writes its share of a fitted estimator on its own host.

        After a fit on this data with the Ray backend, what each party
        learned (its trees' thresholds, its coefficients, its key, ...) is
        kept by its home; the estimator holds references. Each home writes
        the values it keeps for ``estimator`` to
        ``directory/<party>.joblib`` on its own host (a list, in the order of
        the estimator's attributes), sealed with a fingerprint of this save
        and a digest the estimator (and ``driver_file``) records, so that
        :meth:`load_shares` refuses a file of another save or one changed
        since. :meth:`load_shares` reads them back.

        Parameters
        ----------
        estimator : fitted estimator
        directory : str
            A directory that exists on every party's host.
        driver_file : str, default=None
            If given, the driver writes its own part of the model there (on
            its host): the estimator with each party's value replaced by a
            placeholder naming the party and the value's position.

        Returns
        -------
        paths : dict of str to str
            By party: the file it wrote.
        """
        return _save_shares(self, estimator, directory, driver_file)

    def load_shares(self, estimator, directory):
        """Each party reads its saved share back, on its own host.

        The inverse of :meth:`save_shares`, with the Ray backend: each home
        of this PartyData's parties (started anew if need be, placed by the
        parties' ``ray_actor_options``) reads ``directory/<party>.joblib``
        and keeps the values in its own object store; the driver receives
        references only, never a value of a share.

        Parameters
        ----------
        estimator : estimator or str
            The driver's part of the model: the estimator that was saved
            (its references may be stale, for example after
            :func:`~skfed.federation._ray.shutdown_homes` or in a new Ray
            session), or the ``driver_file`` :meth:`save_shares` wrote.
        directory : str
            The directory the parties saved their shares to.

        Returns
        -------
        estimator : estimator
            A copy of the model whose shares are the loaded ones: it
            predicts on a PartyData of these parties as the saved model did.

        Raises
        ------
        PartyError
            Naming the party whose file is not of this model's latest save
            (another fit or save: its fingerprint differs) or was changed
            after it was written (its integrity check fails).
        """
        return _load_shares(self, estimator, directory)


def _resolve_local(ref):
    """A :class:`HomeRef` read from an in-process home (threads backend)."""
    if not isinstance(ref, HomeRef):
        return ref
    return ref.read(_local_homes[ref.home])


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


def _save_shares(data, estimator, directory, driver_file=None):
    """See :meth:`PartyData.save_shares`."""
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
        index = {id(s): k for shares in kept.values() for k, s in enumerate(shares)}
        joblib.dump(_with_shares(estimator, lambda s: SavedShare(
            s.party, index[id(s)], s._meta)), driver_file)
    return paths


def _load_shares(data, estimator, directory):
    """See :meth:`PartyData.load_shares`."""
    if isinstance(estimator, (str, os.PathLike)):
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
