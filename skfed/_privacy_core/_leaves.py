"""What a payload element may be made of: the leaf whitelist and its size.

A payload element is walked down to its leaves (lists and tuples are
containers). Only these leaves are allowed:

- a ciphertext array (:class:`~skfed.crypto.EncryptedArray`), and only where
  a :class:`~._contract.Ciphertext` is declared (its unencrypted stand-in,
  :class:`~skfed.crypto._plaintext.PlaintextArray`, in plaintext mode);
- a public key, where :class:`~._contract.Public` is declared;
- a numpy array or a number (Python or numpy scalar) of a declared dtype
  kind (numeric or boolean unless the element declares others, such as the
  ``V32`` points of PSI);
- ``None``;
- a string no longer than the element's ``text`` (party and table names).

Everything else is a violation: bytes (a float32 column packed into bytes
is a column), a dict (its keys are never walked by anyone but a reader), a
Python list or tuple of floats (a plaintext vector travels as a declared
numpy array), an undeclared string, and any other object.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import numbers

import numpy as np

from ..crypto import OUPublicKey, PaillierPublicKey, PlaintextPublicKey
from ..crypto._array import EncryptedArray
from ..crypto._plaintext import PlaintextArray
from ._contract import Ciphertext, Public

__all__ = ["leaves", "is_encrypted", "describe_leaf", "structural_problems",
           "element_size"]

_KEYS = (PaillierPublicKey, OUPublicKey, PlaintextPublicKey)


def leaves(value):
    """Every leaf of a payload element (lists and tuples are walked)."""
    if isinstance(value, (list, tuple)):
        for item in value:
            yield from leaves(item)
    else:
        yield value


def is_encrypted(leaf):
    return isinstance(leaf, (EncryptedArray, PlaintextArray))


def describe_leaf(leaf):
    if isinstance(leaf, EncryptedArray):
        return f"a ciphertext array of shape {leaf.shape}"
    if isinstance(leaf, PlaintextArray):
        return f"an unencrypted PlaintextArray of shape {leaf.shape}"
    if isinstance(leaf, np.ndarray):
        return f"a plaintext {leaf.dtype} array of shape {leaf.shape}"
    if isinstance(leaf, (str, bytes, bytearray, dict)):
        return f"a plaintext {type(leaf).__name__} of length {len(leaf)}"
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


def _leaf_size(leaf):
    if leaf is None:
        return 0
    if isinstance(leaf, (np.ndarray, EncryptedArray, PlaintextArray)):
        return int(np.prod(leaf.shape, dtype=np.int64))
    return 1


def element_size(value):
    """The number of values an element holds (see ``Element.max_size``)."""
    return sum(_leaf_size(leaf) for leaf in leaves(value))


def _float_items(value):
    """Python or numpy float/complex scalars directly inside a sequence."""
    return sum(1 for item in value
               if isinstance(item, (numbers.Complex, np.number))
               and not isinstance(item, (numbers.Integral, np.bool_)))


def _container_problems(value, position):
    """A sequence of floats, a dict: not a declared leaf, wherever it is."""
    if isinstance(value, dict):
        return [f"element {position}: a dict of {len(value)} item(s): not an "
                "allowed leaf (only arrays, numbers, None, ciphertexts, keys "
                "and declared strings travel)"]
    if not isinstance(value, (list, tuple)):
        return []
    problems = []
    floats = _float_items(value)
    if floats:
        problems.append(
            f"element {position}: a Python {type(value).__name__} holding "
            f"{floats} float(s): a plaintext vector must travel as a numpy "
            "array of a declared dtype")
    for item in value:
        problems += _container_problems(item, position)
    return problems


def _leaf_problem(spec, leaf, plaintext_mode):
    """What is wrong with one leaf under ``spec`` (None: nothing)."""
    if isinstance(spec, Ciphertext):
        ok = isinstance(leaf, EncryptedArray) or (
            plaintext_mode and isinstance(leaf, PlaintextArray))
        return None if ok else " where a ciphertext is declared"
    if is_encrypted(leaf):
        return f" where {spec.kind} is declared"
    if isinstance(leaf, _KEYS):
        # A public key is public: allowed where Public is declared.
        return None if isinstance(spec, Public) else \
            f" where {spec.kind} is declared"
    if leaf is None:
        return None
    if isinstance(leaf, str):
        if len(leaf) <= spec.text:
            return None
        return (" where no string is declared" if not spec.text else
                f", longer than the {spec.text} characters declared")
    if isinstance(leaf, (bytes, bytearray, memoryview)):
        return ", not an allowed leaf (bytes can hold any array)"
    kind = _dtype_kind(leaf)
    if kind is None:
        return (", not a number or array (allowed leaves: arrays, numbers, "
                "None, ciphertexts, keys, declared strings)")
    if spec.dtype is not None and kind not in spec.dtype:
        return f": dtype kind {kind!r} where {spec.dtype!r} is declared"
    if spec.dtype is None and kind not in "biuf":
        return f": dtype kind {kind!r} is not numeric"
    if spec.validate is not None:
        problem = spec.validate(leaf)
        return f": {problem}" if problem else None
    return None


def structural_problems(rule, payload, plaintext_mode, sizes):
    """Whether ``payload`` fits ``rule``: count, leaf types, dtypes, sizes."""
    if len(payload) != len(rule.elements):
        return [f"{len(payload)} payload element(s) where the rule declares "
                f"{len(rule.elements)}"]
    problems = []
    for position, (spec, value) in enumerate(zip(rule.elements, payload)):
        problems += _container_problems(value, position)
        for leaf in leaves(value):
            problem = _leaf_problem(spec, leaf, plaintext_mode)
            if problem:
                problems.append(
                    f"element {position}: {describe_leaf(leaf)}{problem}")
        bound = spec.size_bound(sizes)
        size = element_size(value)
        if bound is not None and size > bound:
            problems.append(f"element {position}: {size} value(s) where at "
                            f"most {bound} ({spec.max_size}) are declared")
    return problems
