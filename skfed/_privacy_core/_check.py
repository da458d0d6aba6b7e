"""Holding recorded messages against a protocol's privacy contract."""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

from collections import defaultdict

from ..crypto._array import EncryptedArray
from ..crypto._plaintext import PlaintextArray
from ._contract import Ciphertext, Violation
from ._leaves import element_size, leaves, structural_problems
from ._party_data_checks import check_party_data_messages
from ._semantic import SemanticChecker, flat_values

__all__ = ["check_messages", "public_sizes"]


class _CiphertextLedger:
    """Which raw ciphertexts reached whom, and which keys are whose."""

    def __init__(self):
        self.received = defaultdict(set)
        self.sent = defaultdict(set)
        self.owner_of_key = {}
        self.rows_of_key = {}

    def check(self, message, spec, value):
        problems = []
        for leaf in leaves(value):
            if not isinstance(leaf, EncryptedArray):
                continue
            n = int(leaf.public_key.n)
            owner = self.owner_of_key.setdefault(n, spec.key_owner)
            if owner != spec.key_owner:
                problems.append(
                    f"a ciphertext under the key first declared as {owner}'s, "
                    f"here declared under {spec.key_owner}'s")
            if not spec.fresh:
                continue
            raw = leaf.ciphertexts.ravel().tolist()
            values = set(raw)
            if len(values) < len(raw):
                problems.append(f"{len(raw) - len(values)} ciphertext(s) "
                                "repeated inside one message")
            again = values & self.received[message.receiver]
            if again:
                problems.append(f"{len(again)} ciphertext(s) that "
                                f"{message.receiver} had already received")
            back = values & self.sent[message.receiver]
            if back:
                problems.append(
                    f"{len(back)} ciphertext(s) that {message.receiver} itself "
                    "sent before (not re-randomised)")
        return problems

    def bind(self, message, value, rows):
        """Keys bound to rows: the first party holding rows that sends or
        receives a ciphertext under a key binds the key to its rows; a
        party holding other rows using the key is reported. ``rows``:
        ``{party: frozenset, or None for every row}``; a party without data
        (absent) binds nothing."""
        problems = []
        for leaf in leaves(value):
            if not isinstance(leaf, (EncryptedArray, PlaintextArray)):
                continue
            key = _key_identity(leaf.public_key)
            if key is None:
                continue
            for party in (message.sender, message.receiver):
                if party not in rows:
                    continue
                first, held = self.rows_of_key.setdefault(
                    key, (party, rows[party]))
                if held != rows[party]:
                    problems.append(
                        f"a ciphertext under the key bound to {first}'s rows "
                        f"({_count(held)} rows), used by {party}, which "
                        f"holds other rows ({_count(rows[party])})")
        return problems

    def record(self, message, payload):
        for leaf in leaves(payload):
            if isinstance(leaf, EncryptedArray):
                raw = set(leaf.ciphertexts.ravel().tolist())
                self.received[message.receiver] |= raw
                self.sent[message.sender] |= raw


def _key_identity(public_key):
    """What tells keys apart: a real key's modulus, a plaintext stand-in's
    random identity (None for a stand-in made without one)."""
    n = getattr(public_key, "n", None)
    if n is not None:
        return ("modulus", int(n))
    identity = getattr(public_key, "identity", None)
    return None if identity is None else ("identity", identity)


def _count(rows):
    return "every" if rows is None else len(rows)


def _party_rows(estimator):
    hook = getattr(estimator, "_privacy_rows", None)
    return {} if hook is None else hook()


def _message_sizes(sizes, rows, message):
    """``sizes`` with the rows of this message's receiver and sender."""
    out = dict(sizes)
    for name, party in (("receiver_rows", message.receiver),
                        ("sender_rows", message.sender)):
        held = rows.get(party)
        if held is not None:
            out[name] = len(held)
    return out


def _stream_key(index, message, position, spec):
    """The stream a message's element belongs to: per receiver, phase and
    element position (one rule's element)."""
    return (message.receiver, message.phase, position, id(spec))


def _rows_of(X):
    if X is None:
        return None
    shape = getattr(X, "shape", None)
    if shape is not None and len(shape) >= 1:
        return int(shape[0])
    return len(X)


def public_sizes(estimator, X=None, messages=(), contract=None):
    """The names a contract's ``max_size`` expressions may use.

    ``rows``: the rows of the fit (from ``X``, else the estimator's
    ``_privacy_n_rows``), raised to the largest prediction query among
    ``messages`` (elements declared ``query=True``); ``receiver_rows`` and
    ``sender_rows``: the rows the message's receiver and sender hold
    (``_privacy_rows``; here ``rows``, which
    :func:`~skfed.privacy.check_messages` narrows per message for parties
    holding part of the rows); ``features``: the columns
    (``n_features_in_``); ``est``: the estimator. An estimator may
    override these with ``_privacy_sizes(X)`` (PSI: the largest id set).
    """
    rows = _rows_of(X)
    if rows is None:
        rows = getattr(estimator, "_privacy_n_rows", None)
    features = getattr(estimator, "n_features_in_", None)
    if features is None and X is not None and getattr(X, "ndim", 0) == 2:
        features = int(X.shape[1])
    sizes = {"rows": rows, "features": features, "est": estimator,
             "receiver_rows": rows, "sender_rows": rows}
    hook = getattr(estimator, "_privacy_sizes", None)
    if hook is not None:
        sizes.update(hook(X))
    if contract is not None and sizes["rows"] is not None:
        for message in messages:
            for rule in contract.rules_for(message.phase):
                payload = tuple(message.payload or ())
                for spec, value in zip(rule.elements, payload):
                    if spec.query:
                        sizes["rows"] = max(sizes["rows"], element_size(value))
    return sizes


def _contract_of(estimator):
    contract = getattr(estimator, "_privacy_contract", None)
    if contract is None:
        raise TypeError(
            f"{type(estimator).__name__} declares no privacy contract "
            "(no _privacy_contract method).")
    return contract()


def check_messages(estimator, messages, X=None, y=None, **fit_params):
    """Hold recorded messages against the estimator's privacy contract.

    Parameters
    ----------
    estimator : fitted estimator
        Its contract (``_privacy_contract()``) and the roles of its parties
        (``_privacy_roles()``) are read from it.

    messages : list of Message
        As :func:`~skfed.federation.record_messages` collects them, or a list
        the caller edited.

    X, y : array-like, optional
        The data of the fit. When given, the semantic checks run too: no
        plaintext element may carry a private column, the labels or other
        secrets of a party other than the receiver (``_privacy_secrets``),
        unless the contract exempts it: not as an affine image (R^2 above
        ``R2_THRESHOLD``, which a copy with noise of 0.12 standard
        deviations crosses), a monotone image (absolute Spearman
        correlation above ``RANK_THRESHOLD``), a permutation (equal sorted
        values, to a rounding) or a step function (a quantised copy), along
        any axis of a leaf or in any contiguous window of a stream: the
        element flattened in every message of one phase to one receiver,
        in order, also after a cumulative sum and after first differences
        (``skfed._privacy_core._semantic`` says which windows are
        searched). ``X`` also gives the row count the size bounds use.

    **fit_params
        Passed to ``_privacy_secrets`` (e.g. ``sample_party``).

    Returns
    -------
    list of Violation
        Empty when every message is allowed.

    Notes
    -----
    Structural checks: every message must match a rule by phase and roles,
    with exactly the declared payload elements; a ciphertext where plaintext
    is declared, or plaintext where a ciphertext is declared, a wrong dtype
    kind, one key declared under two owners, are violations. Only whitelisted
    leaves travel (arrays and numbers of a declared dtype kind, None,
    ciphertexts, public keys where public values are declared, strings no
    longer than the element's ``text``): bytes, a dict, a Python list of
    floats or any other object is a violation. An element holding more
    values than its ``max_size`` is one too (bounds that need the row count
    are checked when ``X`` is given or the estimator knows it). Raw ciphertexts
    of elements declared ``fresh`` never repeat: not inside one message, not
    twice to one receiver, and never back to a party that sent them (a
    homomorphic result that was not re-randomised equals its input when it
    sums one element). Every key is bound to the rows of the first party
    holding rows (``_privacy_rows``) that sends or receives a ciphertext
    under it: a party holding other rows using it is a violation. Size
    bounds may use ``receiver_rows`` and ``sender_rows``, the rows of the
    message's receiver and sender (:func:`public_sizes`).
    """
    check_party_data_messages(estimator, messages, X)  # PartyData: what cannot be checked
    contract = _contract_of(estimator)
    roles = estimator._privacy_roles()
    plaintext_mode = getattr(estimator, "encryption", "paillier") is None
    secrets = ([] if X is None else
               list(estimator._privacy_secrets(X, y, **fit_params)))
    semantic = SemanticChecker(secrets)
    sizes = public_sizes(estimator, X, messages, contract)
    rows = _party_rows(estimator)
    ledger = _CiphertextLedger()
    violations = []
    streams = {}  # stream -> (spec, [message index], [flat values])
    named = defaultdict(set)  # message index -> secrets reported there
    for index, message in enumerate(messages):
        def report(found, allowed, index=index, message=message):
            violations.append(Violation(index, message.sender, message.receiver,
                                        message.phase, found, allowed))

        s_roles = roles.get(message.sender, {message.sender})
        r_roles = roles.get(message.receiver, {message.receiver})
        payload = tuple(message.payload or ())
        by_phase = contract.rules_for(message.phase)
        candidates = [r for r in by_phase
                      if r.matches(message.phase, s_roles, r_roles)]
        if not by_phase:
            report(f"an undeclared phase {message.phase!r}",
                   f"the phases of contract {contract.name!r}: "
                   f"{contract.phases()}")
            ledger.record(message, payload)
            continue
        if not candidates:
            report(f"a message from {sorted(s_roles)} to {sorted(r_roles)}",
                   "; ".join(r.describe() for r in by_phase))
            ledger.record(message, payload)
            continue
        rule, problems = candidates[0], None
        message_sizes = _message_sizes(sizes, rows, message)
        for candidate in candidates:
            found = structural_problems(candidate, payload, plaintext_mode,
                                        message_sizes)
            if not found:
                rule, problems = candidate, []
                break
            if problems is None:
                problems = found
        for problem in problems:
            report(problem, rule.describe())
        if len(payload) == len(rule.elements):
            # what a leaf or size violation carries is still named
            for position, (spec, value) in enumerate(
                    zip(rule.elements, payload)):
                if isinstance(spec, Ciphertext):
                    if not problems:
                        for problem in ledger.check(message, spec, value):
                            report(problem, spec.describe())
                    for problem in ledger.bind(message, value, rows):
                        report(problem, spec.describe())
                elif secrets and spec.semantic:
                    arrays, flat = flat_values(value)
                    for key, problem in semantic.message_problems(
                            spec, arrays, message.receiver):
                        named[index].add(key)
                        report(problem, spec.describe())
                    stream = streams.setdefault(
                        _stream_key(index, message, position, spec),
                        (spec, [], []))
                    stream[1].append(index)
                    stream[2].append(flat)
        ledger.record(message, payload)
    # the windows of each stream: a secret split over several messages of a
    # phase, or inside one, reported at the message where its window starts
    for spec, indices, parts in streams.values():
        receiver = messages[indices[0]].receiver
        for part, key, problem in semantic.stream_problems(spec, parts,
                                                           receiver):
            index = indices[part]
            if key not in named[index]:
                named[index].add(key)
                report(problem, spec.describe(), index, messages[index])
    violations.sort(key=lambda v: v.index)
    for check in contract.checks:  # rules spanning several messages
        for index, found in check(messages, roles):
            message = messages[index]
            violations.append(Violation(index, message.sender, message.receiver,
                                        message.phase, found, check.describe()))
    return violations
