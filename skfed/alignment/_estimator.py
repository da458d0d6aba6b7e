"""The estimator-like object of entity alignment: :class:`PSIAudit`.

:func:`~skfed.alignment.align` is a function, not an estimator, so the hooks
that estimators carry (``_privacy_contract``, ``_privacy_roles``,
``_privacy_attacks``) live on :class:`PSIAudit`: a small estimator-like object
whose ``fit`` runs the same protocol on one id set per party, which
:func:`~skfed.privacy.audit` clones and fits while recording; unfitted, it
holds the party names and the hub of a run whose messages were recorded
elsewhere (for instance around :func:`~skfed.alignment.align`).
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

from .._config import config_context
from ._attacks import id_linking, set_sizes
from ._contract import _hub_index, psi_contract, psi_roles
from ._groups import DEFAULT_GROUP
from ._protocol import check_id_lists, run_psi

__all__ = ["PSIAudit"]


class PSIAudit:
    """The alignment protocol as something :mod:`skfed.privacy` can audit.

    Fitted on one id set per party, it runs the Diffie-Hellman private set
    intersection of :func:`~skfed.alignment.align` (the same party steps and
    messages, in the same group). It carries the protocol's privacy
    contract, the parties' roles and the attacks that measure what each
    party learns, so that::

        audit(PSIAudit(), sets)                   # fit, check, attack
        check_messages(PSIAudit(party_names=names, hub=label_holder),
                       recorded_messages)         # messages of an align call

    both work.

    Parameters
    ----------
    hub : int or str, default=0
        The party that compares the fully exponentiated ids (in
        :func:`~skfed.alignment.align`, the label holder; party 0 without
        labels), by index or name.

    group : str, DHGroup or Curve25519Group, default="curve25519"
        As in :func:`~skfed.alignment.private_set_intersection`. The
        contract declares this group's encoding of its elements (see
        ``skfed.alignment._contract.psi_contract``): check messages
        with the group they were sent in.

    exponent_bits : int or None, default=256
        As in :func:`~skfed.alignment.private_set_intersection`.

    party_names : sequence of str, optional
        Names of the parties in the message log (default ``party0``, ...;
        :func:`~skfed.alignment.align` uses the keys of a dict of tables).

    universe : sequence of ids, optional
        The ids an attacker may try (every customer of the region, say):
        the ``id_linking`` attack hashes each of them. Default: every id
        some party holds plus as many that none holds (negative integers,
        or strings ``"skfed-outsider-<i>"``), so that knowing the universe
        does not by itself give a set away.

    Attributes
    ----------
    party_names_ : list of str
        The parties.

    hub_ : int
        Index of the hub.

    intersection_ : list
        The common ids, sorted.

    communication_ : CommunicationSummary
        The messages of the run.

    keys_ : dict of str to int or bytes
        Each party's secret key (an exponent in a MODP group, a 32-byte
        X25519 private key for Curve25519), by party name, kept for the audit's
        attacks, each of which plays one party with that party's own key
        only. A deployment keeps each key inside its party. (To hand the
        keys back, ``fit`` always simulates the parties with threads.)

    See Also
    --------
    skfed.alignment.align : the alignment that uses this protocol.
    skfed.privacy.audit : fits this object while recording and attacks.

    Notes
    -----
    The contract (``skfed.alignment._contract.psi_contract`` of the
    group) has one rule per phase: ``"exponentiate ids"`` carries group
    elements that lack at least one party's key for everyone who can map
    them to ids (a masked value, whose length is the size of the owner's
    set; for Curve25519 a ``V32`` array, every item checked to be a valid
    point); ``"reveal positions"``
    carries each party's output (positions of its own values in the
    intersection), declared inherent. What the contract cannot see, because
    a group element is a group element whether or not it was blinded, the
    ``id_linking`` attack measures: a party that sends its hashed ids
    unblinded, or draws its key from a seed another party knows, is caught
    there.

    Examples
    --------
    >>> from skfed.privacy import audit
    >>> from skfed.alignment import PSIAudit
    >>> sets = [["ann", "bob", "eve", "joe"], ["bob", "eve", "kim"]]
    >>> report = audit(PSIAudit(), sets)
    >>> report.violations
    []
    >>> report.estimator.intersection_
    ['bob', 'eve']
    >>> linking = report.attacks.query("attack == 'id_linking'")
    >>> gap = (linking["value"] - linking["chance"]).abs()
    >>> bool((gap < 1e-12).all())  # nothing linked: a guess, scored as one
    True
    """

    def __init__(self, hub=0, group=DEFAULT_GROUP, exponent_bits=256,
                 party_names=None, universe=None):
        self.hub = hub
        self.group = group
        self.exponent_bits = exponent_bits
        self.party_names = party_names
        self.universe = universe

    def get_params(self, deep=True):
        """The constructor's parameters, as a dict (sklearn's convention).

        Parameters
        ----------
        deep : bool, default=True
            Ignored (no parameter is an estimator).

        Returns
        -------
        params : dict
        """
        return {name: getattr(self, name) for name in
                ("hub", "group", "exponent_bits", "party_names", "universe")}

    def __sklearn_clone__(self):
        # Not an estimator (it is not fitted on a table; sklearn's checks do
        # not apply), but clone() works on it, as audit() needs.
        return type(self)(**self.get_params())

    def __repr__(self):
        changed = {k: v for k, v in self.get_params().items()
                   if v is not None and (k, v) not in (
                       ("hub", 0), ("group", DEFAULT_GROUP), ("exponent_bits", 256))}
        return f"PSIAudit({', '.join(f'{k}={v!r}' for k, v in changed.items())})"

    def fit(self, X, y=None):
        """Run the protocol on one id set per party.

        Parameters
        ----------
        X : sequence of sequences of int or str
            One collection of distinct ids per party (for tables,
            ``[df[on] for df in tables]``).

        y : None
            Ignored.

        Returns
        -------
        self : PSIAudit
        """
        names = self._names(len(X))
        id_lists = check_id_lists(X, names)
        self.party_names_ = names
        self.hub_ = _hub_index(self.hub, names)
        keys = {}
        # On threads whatever the configured backend: the parties hand their
        # keys back through this dict, which a Ray actor's copy would not.
        with config_context(backend="threads"):
            rows, self.communication_ = run_psi(
                id_lists, hub=self.hub_, group=self.group,
                exponent_bits=self.exponent_bits, party_names=names,
                key_log=keys)
        self.keys_ = keys
        self._set_sizes = [len(ids) for ids in id_lists]
        self.intersection_ = sorted(id_lists[0][i] for i in rows[0])
        return self

    def _names(self, n_parties):
        if self.party_names is None:
            return [f"party{k}" for k in range(n_parties)]
        names = [str(name) for name in self.party_names]
        if len(names) != n_parties:
            raise ValueError(f"party_names has {len(names)} names for "
                             f"{n_parties} parties.")
        return names

    def _fitted_or_declared(self):
        if hasattr(self, "party_names_"):
            return self.party_names_, self.hub_
        if self.party_names is None:
            raise ValueError(
                "An unfitted PSIAudit needs party_names (and hub) to check "
                "messages: PSIAudit(party_names=[...], hub=<label holder>).")
        names = [str(name) for name in self.party_names]
        return names, _hub_index(self.hub, names)

    def _privacy_contract(self):
        return psi_contract(self.group)

    def _privacy_roles(self):
        names, hub = self._fitted_or_declared()
        return psi_roles(names, hub)

    def _privacy_sizes(self, X=None):
        """``rows``: the largest id set (what a message may be as long as)."""
        sets = X if X is not None else getattr(self, "_set_sizes", None)
        if sets is None:
            return {"rows": None}
        return {"rows": max((s if isinstance(s, int) else len(s)
                             for s in sets), default=0)}

    def _privacy_secrets(self, X, y=None, **fit_params):
        # The ids are not numbers the semantic checks could compare (group
        # elements are 32-byte points or 3072-bit integers); the id_linking
        # attack covers them.
        return []

    def _privacy_attacks(self):
        return [set_sizes, id_linking]
