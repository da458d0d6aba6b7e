"""Data that stays home: each party's table loaded where the party runs.

:class:`PartyData` names, per party, where its table is (a CSV or Parquet
path on the party's own host, or a callable the party runs) and the id
column to align on. A vertical estimator takes it in place of ``X``: each
party's *home* (a long-lived Ray actor placed by the party's
``ray_actor_options``, see :func:`~skfed.federation._ray.home_actor`) reads
its own table, the parties align their rows by a private set intersection
(:func:`skfed.alignment.private_set_intersection`) run between the homes,
each home validates its block, and the estimator's parties run at the homes
on what they hold there. The driver gets counts and shapes, never a block.

With the threads backend the same object works in one process (the
"homes" are dictionaries of this process), which is how tests compare it
with the in-memory fit.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import os
import uuid
import weakref

import numpy as np

from .. import _config
from ._remote import HomeList, HomeRef

__all__ = ["PartyData", "party_data_fit_input", "party_data_predict_input"]

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
    from .party import PartyError

    out = {}
    if _on_ray():
        from ._ray import home_actor, import_ray

        ray = import_ray()
        refs = {name: home_actor(name).at_home.remote(fn, args)
                for name, args in calls.items()}
        for name, ref in refs.items():
            try:
                out[name] = ray.get(ref)
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


def _read(source):
    """The table of a source: a DataFrame (runs on the party's home)."""
    import pandas as pd

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


def _load(home, key, source, id_column, label):
    """Home: read the table, check its id column; say what it holds."""
    from ..alignment._psi import _kinds

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
    from sklearn.utils import check_array

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
            from sklearn.preprocessing import LabelEncoder
            from sklearn.utils.multiclass import check_classification_targets

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


def _drop(home, key):
    """Home: forget what it keeps of one load (``key``)."""
    for k in [k for k in home if isinstance(k, tuple) and k[:len(key)] == key]:
        del home[k]


def _release(names, key, on_ray):
    """Every home forgets one load: when its PartyData is reloaded or gone."""
    try:
        if on_ray:
            from ._ray import _homes

            for name in names:  # fire and forget: nothing to wait for
                entry = _homes.get(name)
                if entry is not None:
                    entry[1].at_home.remote(_drop, (key,))
        else:
            for name in names:
                _drop(_local_homes.get(name, {}), key)
    except Exception:  # pragma: no cover - Ray already shut down
        pass


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
        column, named by the ``y`` given to ``fit``.

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
        from ._ray import _homes

        return all(_homes.get(name, (None, None))[1] is self._loaded["actors"][name]
                   for name in self.parties)

    def _load(self, label, allow_nan, encode):
        """Load, align and validate on the homes once per label and backend.

        ``encode``: True (class codes) or False (numbers) for a fit's labels,
        None for a prediction (the label column, if any, is dropped).
        """
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
            hub, summary, shapes = self._align_at_homes(names, key, label,
                                                        allow_nan, encode)
        except BaseException:
            _release(names, key, _on_ray())  # what the homes read so far
            raise
        actors = {}
        if _on_ray():
            from ._ray import home_actor

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

    def _align_at_homes(self, names, key, label, allow_nan, encode):
        """Each home reads its table; the homes align the ids by PSI; each
        keeps and validates its aligned block. Returns (hub, PSI summary,
        (shape, classes) per party)."""
        from ..alignment._psi import run_psi

        info = list(_at_homes({name: (key, self.sources[name], self.id_column, label)
                               for name in names}, _load).values())
        kinds = {kind for *_, kind in info}
        if len(kinds) > 1:
            raise TypeError(
                f"The parties' ids in column {self.id_column!r} are of different "
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
                             f"{self.id_column!r}.")
        shapes = list(_at_homes({name: (key, rows[k], self.id_column, label,
                                        allow_nan, encode)
                                 for k, name in enumerate(names)}, _keep_rows).values())
        return hub, summary, shapes

    def _blocks(self, loaded):
        from ._party_inputs import _PartyBlocks

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
        from ._party_shares import save_shares

        return save_shares(self, estimator, directory, driver_file)

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
        from ._party_shares import load_shares

        return load_shares(self, estimator, directory)


def _resolve_local(ref):
    """A :class:`HomeRef` read from an in-process home (threads backend)."""
    if not isinstance(ref, HomeRef):
        return ref
    return ref.read(_local_homes[ref.home])


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
    from ._party_checks import check_supported

    check_supported(estimator, None)
    loaded = data._load(y, allow_nan, encode_labels)
    check_supported(estimator, loaded["n_rows"])
    blocks = data._blocks(loaded)
    estimator.n_features_in_ = blocks.shape[1]
    estimator._party_data_label = y
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
    loaded = data._load(getattr(estimator, "_party_data_label", None), allow_nan,
                        None)
    blocks = data._blocks(loaded)
    expected = [len(partition.columns(k)) for k in range(partition.n_parties)]
    if blocks.widths != expected:
        raise ValueError(
            f"The parties' tables have {blocks.widths} feature columns; the "
            f"model was fitted on {expected}.")
    blocks.active = partition.active_parties[0]
    return blocks
