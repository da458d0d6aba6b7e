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

import uuid
import weakref

from .. import _config
from ._ray import HomeRef

__all__ = ["PartyData"]

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
        from ._ray import home_actor
        from ._ray import import_ray

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
        from ._ray import _homes

        return all(_homes.get(name, (None, None))[1] is self._loaded["actors"][name]
                   for name in self.parties)

    def _load(self, label, allow_nan, encode, align):
        """Load, align and validate on the homes once per label and backend.

        ``encode``: True (class codes) or False (numbers) for a fit's labels,
        None for a prediction (the label column, if any, is dropped).
        ``align(data, names, key, label, allow_nan, encode)`` reads, aligns
        and validates the tables at the homes and returns ``(hub, summary,
        (shape, classes) per party)``; the estimators' input glue
        (:mod:`skfed._party_data_fit`) passes the private set intersection.
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
            hub, summary, shapes = align(self, names, key, label, allow_nan,
                                         encode)
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
