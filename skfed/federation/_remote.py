"""Values that stay with the party that holds them, passed on by reference.

The Ray backend's *parties at home* (see :mod:`skfed.federation._ray`)
answer with :func:`_pack`: tuples, dicts and lists of tuples keep their
shape, scalars stay plain, and every other value is a :class:`RemoteValue`
in the sender's object store. A receiving actor reads what it is sent, and
what its home keeps (:class:`HomeRef`), with :func:`_resolve`.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np

from .._optional import import_optional

__all__ = ["RemoteValue", "HomeRef", "HomeList"]



def import_ray():
    return import_optional("ray", "The 'ray' backend")


def _writable(obj):
    """Writable copies of arrays that Ray deserialised read-only (zero-copy).

    With threads a party owns the arrays it receives and may update them in
    place; the Ray backend keeps that semantics.
    """
    if isinstance(obj, np.ndarray):
        return obj if obj.flags.writeable else obj.copy()
    if isinstance(obj, tuple) and type(obj) is tuple:
        return tuple(_writable(o) for o in obj)
    if isinstance(obj, list):
        return [_writable(o) for o in obj]
    if isinstance(obj, dict):
        return {k: _writable(v) for k, v in obj.items()}
    return obj


_SCALAR_TYPES = (bool, int, float, complex, str, np.bool_, np.number)


def _is_scalar(obj):
    return obj is None or isinstance(obj, _SCALAR_TYPES)


def _is_structure(obj):
    """A tuple that bundles at least one non-scalar (not a record of values)."""
    return type(obj) is tuple and not all(_is_scalar(o) for o in obj)


class RemoteValue:
    """A value kept in its sender's Ray object store, passed on by reference.

    The driver of a federation of parties at home holds these instead of the
    values: it hands them to the receiving party's actor, which fetches the
    value itself. ``party`` names the sender's home; the sender also
    records what the driver may know without the value: the message size
    ``(n_scalars, n_ciphertexts, n_bytes)`` (what
    :func:`~skfed.federation.measure` counts), the ``len``, and for an
    array its ``shape`` and ``dtype``.

    Driver code that reads the value (arithmetic, indexing, iteration,
    ``np.asarray``, an attribute of the value's type) fetches it with
    :meth:`fetch`; protocol code keeps that to what the orchestrator may
    know (final predictions, scores). Asking for an attribute the value
    does not have (``hasattr(value, "result")``) fetches nothing.
    """

    __slots__ = ("ref", "party", "_meta")

    def __init__(self, ref, party, meta):
        self.ref = ref
        self.party = party
        self._meta = meta

    @classmethod
    def keep(cls, value, party, put):
        """Keep ``value`` with ``put`` (``ray.put``), describing it."""
        from .network import measure

        try:
            size = measure(value)
        except TypeError:
            size = None
        try:
            length = len(value)
        except TypeError:
            length = None
        meta = {"size": size, "len": length, "type": type(value),
                "attrs": tuple(getattr(value, "__dict__", ()))}
        if isinstance(value, np.ndarray):
            meta.update(shape=value.shape, dtype=value.dtype, ndim=value.ndim)
        return cls(put(value), party, meta)

    def __reduce__(self):
        return (RemoteValue, (self.ref, self.party, self._meta))

    def __message_size__(self):
        if self._meta["size"] is None:
            raise TypeError(
                f"A value kept by {self.party!r} cannot be measured as a "
                "message; protocol messages must be numbers, numpy arrays, "
                "encrypted arrays or containers of these.")
        return self._meta["size"]

    def fetch(self):
        """The value itself (one ``ray.get`` by the caller)."""
        return _writable(import_ray().get(self.ref))

    def __repr__(self):
        return (f"RemoteValue(party={self.party!r}, "
                f"type={self._meta['type'].__name__})")

    def __len__(self):
        length = self._meta["len"]
        return len(self.fetch()) if length is None else length

    def __getattr__(self, name):
        if name.startswith("__") or name == "_meta":
            raise AttributeError(name)
        if name in ("shape", "dtype", "ndim") and name in self._meta:
            return self._meta[name]
        if hasattr(self._meta["type"], name) or name in self._meta["attrs"]:
            return getattr(self.fetch(), name)
        raise AttributeError(
            f"{self._meta['type'].__name__} kept by {self.party!r} has no "
            f"attribute {name!r}")

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self.fetch(), dtype=dtype)

    def __iter__(self):
        return iter(self.fetch())

    def __getitem__(self, key):
        return self.fetch()[key]

    def __bool__(self):
        return bool(self.fetch())


def _fetched(value):
    return value.fetch() if isinstance(value, RemoteValue) else value


for _name in ("add", "sub", "mul", "truediv", "matmul", "eq", "ne", "lt", "le",
              "gt", "ge"):
    def _binary(self, other, _op=f"__{_name}__"):
        return getattr(self.fetch(), _op)(_fetched(other))

    def _reflected(self, other, _op=f"__r{_name}__"):
        return getattr(self.fetch(), _op)(_fetched(other))

    setattr(RemoteValue, f"__{_name}__", _binary)
    if _name in ("add", "sub", "mul", "truediv", "matmul"):
        setattr(RemoteValue, f"__r{_name}__", _reflected)
RemoteValue.__hash__ = None


class HomeRef:
    """Names data a party's home actor keeps (see :class:`~skfed.federation.PartyData`).

    In a party's state it stands for ``home[key]`` (optionally its columns
    ``columns``, cast to ``dtype``, then passed through ``transform``, a
    ``(function, args)`` pair); the party's calls then run on that home
    actor, where the data already lives, and the driver never holds it.
    """

    __slots__ = ("home", "key", "columns", "dtype", "shape", "transform")

    def __init__(self, home, key, columns=None, dtype=None, shape=None,
                 transform=None):
        self.home = str(home)
        self.key = key
        self.columns = columns
        self.dtype = dtype
        self.shape = shape
        self.transform = transform

    def __reduce__(self):
        return (HomeRef, (self.home, self.key, self.columns, self.dtype,
                          self.shape, self.transform))

    def astype(self, dtype, copy=True):
        """The same data cast to ``dtype`` on its home."""
        return HomeRef(self.home, self.key, self.columns, dtype, self.shape,
                       self.transform)

    def read(self, home):
        """The value, read from ``home`` (a dict), as a fresh array."""
        value = home[self.key]
        if self.columns is not None:
            value = value[:, self.columns]
        if self.dtype is not None:
            value = value.astype(self.dtype)
        if self.transform is not None:
            fn, args = self.transform
            value = fn(value, *args)
        return np.array(value, copy=True) if isinstance(value, np.ndarray) else value

    def __len__(self):
        return self.shape[0]

    def __repr__(self):
        return f"HomeRef(home={self.home!r}, key={self.key!r})"


class HomeList(list):
    """An empty list standing for a list a home keeps (``ref``, a
    :class:`HomeRef`), for code that insists on lists (party ids)."""

    def __init__(self, ref):
        super().__init__()
        self.ref = ref

    def __reduce__(self):
        return (HomeList, (self.ref,))


def _wrapped_ref(obj):
    """The :class:`HomeRef` that ``np.asarray`` wrapped in an object array
    (``np.ascontiguousarray(X[:, columns])`` on a stand-in), or None."""
    if (isinstance(obj, np.ndarray) and obj.dtype == object and obj.size == 1
            and isinstance(obj.flat[0], HomeRef)):
        return obj.flat[0]
    return None


def leaves(obj):
    """Every leaf of ``obj``, walking dicts, lists and tuples; a
    :class:`HomeList` or a wrapped stand-in yields its :class:`HomeRef`."""
    if isinstance(obj, HomeList):
        yield obj.ref
    elif _wrapped_ref(obj) is not None:
        yield _wrapped_ref(obj)
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from leaves(v)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from leaves(v)
    else:
        yield obj


def _homes_named(obj, found):
    """The homes named by the :class:`HomeRef` in ``obj`` (walked)."""
    found.update(leaf.home for leaf in leaves(obj) if isinstance(leaf, HomeRef))
    return found


def _resolve(obj, home):
    """``obj`` with its :class:`HomeRef` read from ``home`` and its
    :class:`RemoteValue` fetched (one ``ray.get`` for all), on the actor."""
    remote = [leaf for leaf in leaves(obj) if isinstance(leaf, RemoteValue)]
    values = {}
    if remote:
        got = import_ray().get([r.ref for r in remote])
        values = {id(r): v for r, v in zip(remote, got)}

    def build(o):
        if isinstance(o, RemoteValue):
            return _writable(values[id(o)])
        if isinstance(o, HomeRef):
            return o.read(home)
        if _wrapped_ref(o) is not None:
            return np.ascontiguousarray(build(_wrapped_ref(o)))
        if isinstance(o, dict) and type(o) is dict:
            return {k: build(v) for k, v in o.items()}
        if type(o) is tuple:
            return tuple(build(v) for v in o)
        if type(o) is list:
            return [build(v) for v in o]
        if isinstance(o, HomeList):
            return build(o.ref)
        return _writable(o)

    return build(obj)


def _pack(obj, party, top=True):
    """A direct answer: structure and scalars plain, every other value kept
    in this actor's object store as a :class:`RemoteValue`."""
    if _is_scalar(obj):
        return obj
    if type(obj) is tuple and (top or _is_structure(obj)):
        return tuple(_pack(o, party, False) for o in obj)
    if type(obj) is dict and all(_is_scalar(k) for k in obj):
        return {k: _pack(v, party, False) for k, v in obj.items()}
    if type(obj) is list and (not obj or all(_is_structure(o) for o in obj)):
        return [_pack(o, party, False) for o in obj]
    return RemoteValue.keep(obj, party, import_ray().put)
