"""Holding recorded messages against a protocol's privacy contract."""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

from collections import defaultdict

from ..crypto._array import EncryptedArray
from ._contract import Ciphertext, Violation
from ._leaves import element_size, leaves, structural_problems
from ._party_data_checks import check_party_data_messages
from ._semantic import SemanticChecker

__all__ = ["check_messages", "public_sizes"]


class _CiphertextLedger:
    """Which raw ciphertexts reached whom, and which keys are whose."""

    def __init__(self):
        self.received = defaultdict(set)
        self.sent = defaultdict(set)
        self.owner_of_key = {}

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

    def record(self, message, payload):
        for leaf in leaves(payload):
            if isinstance(leaf, EncryptedArray):
                raw = set(leaf.ciphertexts.ravel().tolist())
                self.received[message.receiver] |= raw
                self.sent[message.sender] |= raw


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
    ``messages`` (elements declared ``query=True``); ``features``: the
    columns (``n_features_in_``); ``est``: the estimator. An estimator may
    override these with ``_privacy_sizes(X)`` (PSI: the largest id set).
    """
    rows = _rows_of(X)
    if rows is None:
        rows = getattr(estimator, "_privacy_n_rows", None)
    features = getattr(estimator, "n_features_in_", None)
    if features is None and X is not None and getattr(X, "ndim", 0) == 2:
        features = int(X.shape[1])
    sizes = {"rows": rows, "features": features, "est": estimator}
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
        correlation above ``RANK_THRESHOLD``) or a permutation (equal sorted
        values), along any axis of a leaf or in any contiguous window of the
        element flattened (``skfed._privacy_core._semantic`` says which
        windows are searched). ``X`` also gives the row count the size
        bounds use.

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
    sums one element).
    """
    check_party_data_messages(estimator, messages, X)  # PartyData: what cannot be checked
    contract = _contract_of(estimator)
    roles = estimator._privacy_roles()
    plaintext_mode = getattr(estimator, "encryption", "paillier") is None
    secrets = ([] if X is None else
               list(estimator._privacy_secrets(X, y, **fit_params)))
    semantic = SemanticChecker(secrets)
    sizes = public_sizes(estimator, X, messages, contract)
    ledger = _CiphertextLedger()
    violations = []
    for index, message in enumerate(messages):
        def report(found, allowed):
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
        for candidate in candidates:
            found = structural_problems(candidate, payload, plaintext_mode,
                                        sizes)
            if not found:
                rule, problems = candidate, []
                break
            if problems is None:
                problems = found
        for problem in problems:
            report(problem, rule.describe())
        if len(payload) == len(rule.elements):
            # what a leaf or size violation carries is still named
            for spec, value in zip(rule.elements, payload):
                if isinstance(spec, Ciphertext):
                    if not problems:
                        for problem in ledger.check(message, spec, value):
                            report(problem, spec.describe())
                elif secrets and spec.semantic:
                    for problem in semantic.problems(
                            spec, value, message.receiver):
                        report(problem, spec.describe())
        ledger.record(message, payload)
    for check in contract.checks:  # rules spanning several messages
        for index, found in check(messages, roles):
            message = messages[index]
            violations.append(Violation(index, message.sender, message.receiver,
                                        message.phase, found, check.describe()))
    return violations
