"""Holding recorded messages against a protocol's privacy contract."""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import numbers
from collections import defaultdict

import numpy as np

from ..crypto import PaillierPublicKey, PlaintextPublicKey
from ..crypto._array import EncryptedArray
from ..crypto._plaintext import PlaintextArray
from ._contract import Ciphertext, Public, Violation
from ._party_data_checks import check_party_data_messages

__all__ = ["check_messages", "R2_THRESHOLD", "ROW_TOLERANCE"]

#: a plaintext column whose affine fit to a secret column has R^2 above this
#: is reported as that secret
R2_THRESHOLD = 0.99
#: a plaintext vector within this relative distance of a private row is it
ROW_TOLERANCE = 1e-6
# Bounds on the work of one semantic comparison (columns of one payload).
_MAX_COLUMNS = 4096


def _leaves(value):
    """Every leaf of a payload element (containers are walked)."""
    if isinstance(value, (list, tuple)):
        for item in value:
            yield from _leaves(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _leaves(item)
    else:
        yield value


def _is_encrypted(leaf):
    return isinstance(leaf, (EncryptedArray, PlaintextArray))


def _describe_leaf(leaf):
    if isinstance(leaf, EncryptedArray):
        return f"a ciphertext array of shape {leaf.shape}"
    if isinstance(leaf, PlaintextArray):
        return f"an unencrypted PlaintextArray of shape {leaf.shape}"
    if isinstance(leaf, np.ndarray):
        return f"a plaintext {leaf.dtype} array of shape {leaf.shape}"
    return f"a plaintext {type(leaf).__name__}"


def _dtype_kind(leaf):
    if isinstance(leaf, np.ndarray):
        return leaf.dtype.kind
    if isinstance(leaf, (bool, np.bool_)):
        return "b"
    if isinstance(leaf, numbers.Integral):
        return "i"
    if isinstance(leaf, numbers.Real):
        return "f"
    if isinstance(leaf, numbers.Complex):
        return "c"
    return None


def _structural_problems(rule, payload, plaintext_mode):
    if len(payload) != len(rule.elements):
        return [f"{len(payload)} payload element(s) where the rule declares "
                f"{len(rule.elements)}"]
    problems = []
    for position, (spec, value) in enumerate(zip(rule.elements, payload)):
        for leaf in _leaves(value):
            where = f"element {position}: {_describe_leaf(leaf)}"
            if isinstance(spec, Ciphertext):
                ok = isinstance(leaf, EncryptedArray) or (
                    plaintext_mode and isinstance(leaf, PlaintextArray))
                if not ok:
                    problems.append(f"{where} where a ciphertext is declared")
                continue
            if _is_encrypted(leaf):
                problems.append(f"{where} where {spec.kind} is declared")
                continue
            if isinstance(leaf, (PaillierPublicKey, PlaintextPublicKey)):
                # A public key is public: allowed where Public is declared.
                if not isinstance(spec, Public):
                    problems.append(f"{where} where {spec.kind} is declared")
                continue
            if leaf is None or isinstance(leaf, (str, bytes, slice, range)):
                continue
            kind = _dtype_kind(leaf)
            if kind is None:
                problems.append(f"{where}, not a number or array")
            elif spec.dtype is not None and kind not in spec.dtype:
                problems.append(f"{where}: dtype kind {kind!r} where "
                                f"{spec.dtype!r} is declared")
            elif spec.dtype is None and kind not in "biuf":
                problems.append(f"{where}: dtype kind {kind!r} is not numeric")
            elif spec.validate is not None:
                problem = spec.validate(leaf)
                if problem:
                    problems.append(f"{where}: {problem}")
    return problems


class _CiphertextLedger:
    """Which raw ciphertexts reached whom, and which keys are whose."""

    def __init__(self):
        self.received = defaultdict(set)
        self.sent = defaultdict(set)
        self.owner_of_key = {}

    def check(self, message, spec, value):
        problems = []
        for leaf in _leaves(value):
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
        for leaf in _leaves(payload):
            if isinstance(leaf, EncryptedArray):
                raw = set(leaf.ciphertexts.ravel().tolist())
                self.received[message.receiver] |= raw
                self.sent[message.sender] |= raw


def _standardised_columns(matrix):
    matrix = np.asarray(matrix, dtype=float)
    if matrix.ndim == 1:
        matrix = matrix[:, None]
    keep = np.all(np.isfinite(matrix), axis=0)
    matrix = matrix[:, keep]
    centred = matrix - matrix.mean(axis=0)
    norms = np.linalg.norm(centred, axis=0)
    ok = norms > 1e-12 * max(1.0, float(np.max(np.abs(matrix), initial=0.0)))
    return centred[:, ok] / norms[ok], np.flatnonzero(keep)[ok]


def _numeric_array(leaf):
    if isinstance(leaf, np.ndarray) and leaf.dtype.kind in "biuf" and leaf.size:
        if leaf.dtype.kind == "u" and leaf.dtype.itemsize in (4, 8):
            # ring values (Z_2^64, or angles in Z_2^32): read in two's
            # complement, as a decoder would, so that small negative values
            # (an unmasked angle just below 0) stay next to small positive ones
            signed = np.int64 if leaf.dtype.itemsize == 8 else np.int32
            return leaf.astype(signed).astype(float)
        return leaf.astype(float)
    return None


def _affine_match(array, secret):
    """The best R^2 of an affine fit of a secret column on a payload column."""
    n = secret.values.shape[0]
    target, target_cols = _standardised_columns(secret.values)
    if target.shape[1] == 0:
        return None
    best = None
    for axis in range(array.ndim):
        if array.shape[axis] != n or n < 3:
            continue
        columns = np.moveaxis(array, axis, 0).reshape(n, -1)[:, :_MAX_COLUMNS]
        payload, _ = _standardised_columns(columns)
        if payload.shape[1] == 0:
            continue
        r2 = np.square(payload.T @ target)
        j = int(np.argmax(np.max(r2, axis=0)))
        score = float(np.max(r2[:, j]))
        if best is None or score > best[0]:
            best = (score, int(target_cols[j]))
    return best


def _row_match(array, secret):
    """The smallest relative distance of a payload vector to a private row."""
    rows = np.asarray(secret.values, dtype=float)
    d = rows.shape[1]
    if d < 2:
        return None
    best = None
    for axis in range(array.ndim):
        if array.shape[axis] != d:
            continue
        vectors = np.moveaxis(array, axis, -1).reshape(-1, d)[:_MAX_COLUMNS]
        dist = np.sqrt(np.maximum(
            np.square(vectors).sum(1)[:, None] - 2 * vectors @ rows.T
            + np.square(rows).sum(1)[None, :], 0.0))
        rel = dist / np.maximum(np.linalg.norm(rows, axis=1)[None, :], 1e-12)
        i = int(np.argmin(np.min(rel, axis=0)))
        score = float(np.min(rel[:, i]))
        if best is None or score < best[0]:
            best = (score, i)
    return best


def _semantic_problems(spec, value, receiver, secrets):
    problems = []
    for leaf in _leaves(value):
        array = _numeric_array(leaf)
        if array is None:
            continue
        for secret in secrets:
            if secret.owner == receiver or secret.kind in spec.exempt:
                continue
            if secret.kind == "rows":
                match = _row_match(array, secret)
                if match is not None and match[0] < ROW_TOLERANCE:
                    problems.append(
                        f"a vector equal to private row {match[1]} of "
                        f"{secret.owner} ({secret.name})")
            else:
                match = _affine_match(array, secret)
                if match is not None and match[0] > R2_THRESHOLD:
                    problems.append(
                        f"an affine image (R^2 = {match[0]:.4f}) of "
                        f"{secret.owner}'s {secret.kind} ({secret.name}, "
                        f"column {match[1]})")
    return problems


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
        plaintext payload may equal, or be an affine image (R^2 above
        ``R2_THRESHOLD``) of, a private column, the labels or other secrets
        of a party other than the receiver (``_privacy_secrets``), unless the
        contract exempts it.

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
    kind, one key declared under two owners, are violations. Raw ciphertexts
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
            found = _structural_problems(candidate, payload, plaintext_mode)
            if not found:
                rule, problems = candidate, []
                break
            if problems is None:
                problems = found
        for problem in problems:
            report(problem, rule.describe())
        if not problems:
            for spec, value in zip(rule.elements, payload):
                if isinstance(spec, Ciphertext):
                    for problem in ledger.check(message, spec, value):
                        report(problem, spec.describe())
                elif secrets and spec.semantic:
                    for problem in _semantic_problems(
                            spec, value, message.receiver, secrets):
                        report(problem, spec.describe())
        ledger.record(message, payload)
    for check in contract.checks:  # rules spanning several messages
        for index, found in check(messages, roles):
            message = messages[index]
            violations.append(Violation(index, message.sender, message.receiver,
                                        message.phase, found, check.describe()))
    return violations
