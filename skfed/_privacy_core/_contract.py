"""Privacy contracts: what every message of a protocol may contain.

A :class:`Contract` is a whitelist of :class:`Rule` objects. A rule names a
protocol phase (an :mod:`fnmatch` pattern), the roles of sender and receiver,
and one element spec per payload element. The element specs say what kind of
value may travel: a ciphertext under a named key owner, a masked value, ids
from a CSPRNG, public parameters, an aggregate over at least ``k`` rows, the
receiver's own share, or a plaintext exposure the paper itself accepts.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import functools
from dataclasses import dataclass, field
from fnmatch import fnmatchcase

import numpy as np

__all__ = [
    "Element",
    "Ciphertext",
    "Masked",
    "RandomIds",
    "Public",
    "Aggregate",
    "OwnShare",
    "Inherent",
    "Rule",
    "Contract",
    "Secret",
    "Violation",
]


@functools.lru_cache(maxsize=None)
def _compiled(expression):
    # a contract's size expressions, compiled once (they are the contract
    # author's code, evaluated over public sizes only)
    return compile(expression, "<max_size>", "eval")


class Element:
    """What one payload element may be (base class of the element specs).

    Parameters
    ----------
    note : str, default=""
        What the element is, in words (shown in violations and docs).

    dtype : str or None, default=None
        Allowed numpy dtype kinds of plaintext leaves (e.g. ``"f"``,
        ``"iu"``); None allows any numeric or boolean kind.

    exempt : tuple of str, default=()
        Secret kinds (``"labels"``, ``"columns"``...) the semantic check does
        not flag in this element.

    validate : callable or None, default=None
        ``validate(leaf) -> str or None``: a protocol-specific check of each
        plaintext leaf (for example that an object array holds group
        elements, not raw ids); a returned string is reported as a problem.

    max_size : int, str, callable or None, default=None
        The most values the element may hold, all its leaves together (an
        array counts its entries, a ciphertext array its ciphertexts, a
        scalar or a string one, None nothing). An int; an expression over
        the public sizes (``"rows * est.n_components_"``: ``rows``, the rows
        of the fit or of the largest prediction query, ``features``, the
        columns, ``est``, the fitted estimator, and ``min``, ``max``,
        ``len``); or a callable of a dict of those names. None declares no
        bound, which the contract tests refuse (every shipped element has
        one).

    text : int, default=0
        The longest string a leaf may be (a party name, a table name);
        0 allows no string.

    query : bool, default=False
        The element carries the row ids of a prediction query: its size
        bounds the ``rows`` of the messages that answer it.
    """

    kind = "element"
    #: whether plaintext leaves are compared with other parties' secrets
    semantic = True
    #: whether the values travel hidden (masked, or random ids), which the
    #: message timeline colours apart from plain values
    hides_values = False

    def __init__(self, note="", *, dtype=None, exempt=(), validate=None,
                 max_size=None, text=0, query=False):
        self.note = note
        self.dtype = dtype
        self.exempt = tuple(exempt)
        self.validate = validate
        self.max_size = max_size
        self.text = int(text)
        self.query = bool(query)

    def describe(self):
        text = self.kind + (f" ({self.note})" if self.note else "")
        if self.dtype:
            text += f" of dtype kind {self.dtype!r}"
        return text + self._describe_size()

    def _describe_size(self):
        text = (f", strings of up to {self.text} characters" if self.text
                else "")
        if self.max_size is None:
            return text
        bound = (self.max_size if isinstance(self.max_size, (int, str))
                 else getattr(self.max_size, "__name__", "a callable"))
        return f"{text}, at most {bound} value(s)"

    def size_bound(self, sizes):
        """The evaluated ``max_size`` (an int), or None when it is not
        declared or needs a size the checker does not know."""
        bound = self.max_size
        if bound is None:
            return None
        try:
            if isinstance(bound, str):
                code = _compiled(bound)
                value = eval(code, {"__builtins__": {}},  # noqa: S307
                             {"min": min, "max": max, "len": len, **sizes})
            elif callable(bound):
                value = bound(sizes)
            else:
                value = bound
            return int(value)
        except (TypeError, AttributeError, ValueError):
            return None  # rows unknown (None), or an unfitted estimator

    def __repr__(self):
        return f"{type(self).__name__}({self.note!r})"


class Ciphertext(Element):
    """Encrypted arrays under the key of the party with role ``key_owner``.

    With ``fresh=True`` (default) the raw ciphertexts must never repeat (see
    :func:`~skfed.privacy.check_messages`); set ``fresh=False`` for a party
    that forwards ciphertexts it received.
    """

    kind = "ciphertext"
    semantic = False

    def __init__(self, key_owner, note="", *, fresh=True, max_size=None):
        super().__init__(note, max_size=max_size)
        self.key_owner = key_owner
        self.fresh = fresh

    def describe(self):
        text = f"ciphertext under {self.key_owner}'s key"
        return (text + (f" ({self.note})" if self.note else "")
                + self._describe_size())

    def __repr__(self):
        return f"Ciphertext({self.key_owner!r}, fresh={self.fresh})"


class Masked(Element):
    """Plaintext values hidden by a mask (say which in ``note``)."""

    kind = "masked value"
    hides_values = True


class RandomIds(Element):
    """Identifiers or seeds drawn from the sender's CSPRNG."""

    kind = "CSPRNG ids"
    hides_values = True


class Public(Element):
    """Public parameters: hyperparameters, shapes, public seeds, counters."""

    kind = "public"


class Aggregate(Element):
    """A plaintext aggregate over at least ``min_rows`` rows."""

    kind = "aggregate"

    def __init__(self, min_rows, note="", **kwargs):
        super().__init__(note, **kwargs)
        self.min_rows = int(min_rows)

    def describe(self):
        return (f"aggregate over >= {self.min_rows} rows"
                + (f" ({self.note})" if self.note else "")
                + self._describe_size())


class OwnShare(Element):
    """The receiver's own data or model share, coming back to it."""

    kind = "receiver's own share"
    semantic = False


class Inherent(Element):
    """A plaintext exposure the paper accepts (documented as such).

    ``exempt`` names the secret kinds it may legitimately correlate with.
    """

    kind = "inherent exposure"


@dataclass
class Rule:
    """One allowed kind of message.

    Parameters
    ----------
    phase : str
        :mod:`fnmatch` pattern matched against ``Message.phase``.
    sender, receiver : str
        Roles (see ``_privacy_roles``), or ``"*"`` for any party.
    elements : tuple of Element
        One spec per payload element, in order.
    note : str
        Why the message is safe (the guarantee it keeps).
    """

    phase: str
    sender: str
    receiver: str
    elements: tuple = ()
    note: str = ""

    def matches(self, phase, sender_roles, receiver_roles):
        return (fnmatchcase(str(phase), self.phase)
                and (self.sender == "*" or self.sender in sender_roles)
                and (self.receiver == "*" or self.receiver in receiver_roles))

    def describe(self):
        parts = ", ".join(e.describe() for e in self.elements) or "nothing"
        return (f"phase {self.phase!r} {self.sender} -> {self.receiver}: "
                f"({parts})")


@dataclass
class Contract:
    """The whitelist of a protocol's messages.

    Parameters
    ----------
    name : str
        The protocol.
    rules : list of Rule
    checks : list of callable
        Rules that span several messages (which the per-message element
        specs cannot state): ``check(messages, roles)`` returns
        ``(message index, what was found)`` pairs, and ``check.describe()``
        says what is allowed.
    """

    name: str
    rules: list = field(default_factory=list)
    checks: list = field(default_factory=list)

    def __add__(self, other):
        return Contract(f"{self.name}+{other.name}",
                        list(self.rules) + list(other.rules),
                        list(self.checks) + list(other.checks))

    def phases(self):
        return sorted({r.phase for r in self.rules})

    def rules_for(self, phase):
        return [r for r in self.rules if fnmatchcase(str(phase), r.phase)]

    def hides_values(self, phase):
        """Whether a rule of ``phase`` declares masked values or random ids
        (what :meth:`~skfed.federation.MessageRecorder.plot_timeline`
        colours as masked)."""
        return any(e.hides_values for r in self.rules_for(phase)
                   for e in r.elements)

    def table(self):
        """The contract as plain-text lines, one per rule (for docs)."""
        return "\n".join([r.describe() + (f"  -- {r.note}" if r.note else "")
                          for r in self.rules]
                         + [f"across messages: {c.describe()}" for c in self.checks])


@dataclass
class Secret:
    """A private value of one party, for the semantic checks.

    Parameters
    ----------
    owner : str
        The party holding it.
    kind : str
        ``"columns"``, ``"labels"``, ``"gradients"``, ``"bins"``, ``"rows"``...
    name : str
        Human-readable name (e.g. ``"column 3"``).
    values : ndarray of shape (n,) or (n, k)
        For kind ``"rows"``, one private row per line.
    """

    owner: str
    kind: str
    name: str
    values: np.ndarray


@dataclass
class Violation:
    """A message the contract does not allow."""

    index: int
    sender: str
    receiver: str
    phase: str
    found: str
    allowed: str

    def __str__(self):
        return (f"message {self.index} {self.sender} -> {self.receiver} "
                f"(phase {self.phase!r}): found {self.found}; the contract "
                f"allows {self.allowed}")
