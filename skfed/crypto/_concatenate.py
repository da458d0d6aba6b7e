"""Joining encrypted (or plaintext) arrays along an axis.

:func:`concatenate` aligns the exponents of
:class:`~skfed.crypto.EncryptedArray` inputs to the smallest and joins their
ciphertexts; arrays of :class:`~skfed.crypto.PlaintextArray` are joined by
:mod:`skfed.crypto._plaintext`.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np

from ._array import EncryptedArray, _is_plaintext_array

__all__ = ["concatenate"]


def concatenate(arrays, axis=0):
    """Join EncryptedArrays (or PlaintextArrays) along an existing axis.

    Parameters
    ----------
    arrays : sequence of EncryptedArray or of PlaintextArray
        Same key (and same PackedEncoder if packed); exponents are aligned to
        the smallest.
    axis : int, default=0
        Axis along which to join (as :func:`numpy.concatenate`).

    Returns
    -------
    EncryptedArray or PlaintextArray
    """
    arrays = list(arrays)
    if not arrays:
        raise ValueError("need at least one array to concatenate")
    if all(_is_plaintext_array(a) for a in arrays):
        from ._plaintext import concatenate_plaintext

        return concatenate_plaintext(arrays, axis)
    if not all(isinstance(a, EncryptedArray) for a in arrays):
        raise TypeError("concatenate needs all EncryptedArrays or all PlaintextArrays.")
    first = arrays[0]
    for other in arrays[1:]:
        first._check_same_key(other)
    exponent = min(a.exponent for a in arrays)
    aligned = [a.decrease_exponent_to(exponent) for a in arrays]
    ciphertexts = np.concatenate([a.ciphertexts for a in aligned], axis=axis)
    counts = None
    if first.counts is not None:
        counts = np.concatenate([a.counts for a in arrays], axis=axis)
    bounds = [a.mantissa_bound for a in aligned]
    return EncryptedArray(
        first.public_key, ciphertexts, exponent,
        is_integer=all(a.is_integer for a in arrays), encoder=first.encoder,
        counts=counts, mantissa_bound=None if None in bounds else max(bounds),
    )
