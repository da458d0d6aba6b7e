"""Homomorphic sums of an EncryptedArray: over an axis, and per group.

A sum of ciphertexts is their product modulo the ciphertext modulus
(``n**2`` for Paillier, ``n`` for OU). These are the
reductions protocols are built from: a party adds up encrypted values over
all rows (:meth:`SumsMixin.sum`), or per group of rows, e.g. the gradient
histograms of SecureBoost (:meth:`SumsMixin.group_sum`, whose raw products
live in :mod:`skfed.crypto._group_sum`). :class:`~skfed.crypto.EncryptedArray`
inherits them.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import gmpy2
import numpy as np

from ._group_sum import group_counts, raw_group_sum
from ._parallel import parallel_map
from ._raw import as_object, mulmod, object_array

__all__ = ["SumsMixin"]

_ONE = gmpy2.mpz(1)  # the raw encryption of 0 with obfuscator 1


class SumsMixin:
    """Sums of an :class:`~skfed.crypto.EncryptedArray` (see the module docstring)."""

    def sum(self, axis=None, n_jobs=None):
        """Homomorphic sum over ``axis`` (all elements if None).

        Parameters
        ----------
        axis : int or None, default=None
            Axis to sum over; None sums every element.
        n_jobs : int or None, default=None
            Worker threads (used for ``axis=None``).

        Returns
        -------
        EncryptedArray
            0-d for ``axis=None``, otherwise the shape without ``axis``.
        """
        modulus = self.public_key.ciphertext_modulus
        if axis is None:
            def product(chunk):
                acc = _ONE
                for c in chunk:
                    acc = acc * c % modulus
                return [acc]

            partials = parallel_map(
                product, self.ciphertexts.ravel().tolist(), n_jobs,
                release_gil=False,  # short products
            )
            total = product(partials)[0]
            counts = None if self.counts is None else np.asarray(self.counts.sum())
            return self._new(
                object_array([total], ()), counts=counts,
                bound=self._scaled_bound(self.size),
            )
        moved = np.moveaxis(self.ciphertexts, axis, 0)
        if moved.shape[0] == 0:
            acc = object_array([_ONE] * int(np.prod(moved.shape[1:])), moved.shape[1:])
        else:
            acc = moved[0]
            for row in moved[1:]:
                acc = mulmod(acc, row, modulus)
        counts = None if self.counts is None else self.counts.sum(axis=axis)
        return self._new(
            as_object(acc, moved.shape[1:]), counts=counts,
            bound=self._scaled_bound(moved.shape[0]),
        )

    def group_sum(self, group_ids, n_groups, n_jobs=None):
        """Sum the elements of each group: the encrypted histogram primitive.

        Parameters
        ----------
        group_ids : array-like of int, shape (n,) or (n, n_features)
            Group of each row (row = element along axis 0). Negative ids
            are skipped (e.g. rows outside a tree node, or missing values).
        n_groups : int
            Number of groups; ids must be < n_groups.
        n_jobs : int or None, default=None
            Worker threads; work is split over features and row blocks.

        Returns
        -------
        EncryptedArray
            With 1-D ``group_ids``: shape ``(n_groups,) + self.shape[1:]``,
            ``out[g] = sum(self[i] for i with group_ids[i] == g)`` (like
            ``np.add.at(out, group_ids, x)``).
            With 2-D ``group_ids`` (``self`` must be 1-D): shape
            ``(n_features, n_groups)``, ``out[f, g] = sum(self[i] for i with
            group_ids[i, f] == g)``: one histogram per feature, e.g. the
            gradient histograms of SecureBoost from the bin indices of all
            features in one call.

        Notes
        -----
        Each row costs one modular multiplication per feature (see
        :func:`skfed.crypto._group_sum.raw_group_sum`). An empty group gets
        the constant ``1`` (an encryption of 0 without randomness):
        rerandomize before sending.
        """
        ids = np.asarray(group_ids)
        if ids.dtype.kind not in "iu":
            raise TypeError(f"group_ids must be integers, got dtype {ids.dtype}.")
        n_groups = int(n_groups)
        if self.ndim == 0 or ids.ndim not in (1, 2) or ids.shape[0] != self.shape[0]:
            raise ValueError(
                f"group_ids of shape {ids.shape} do not match an EncryptedArray of "
                f"shape {self.shape}: expected ({self.shape[0] if self.ndim else 0},) "
                "or (n_rows, n_features)."
            )
        if ids.size and ids.max() >= n_groups:
            raise ValueError(f"group id {int(ids.max())} >= n_groups={n_groups}.")
        if ids.ndim == 2 and self.ndim != 1:
            raise ValueError("2-D group_ids need a 1-D EncryptedArray.")
        ciphertexts = raw_group_sum(
            self.ciphertexts, ids, n_groups, self.public_key.ciphertext_modulus, n_jobs
        )
        counts = None
        if self.counts is not None:
            counts = group_counts(self.counts, ids, n_groups)
        largest_group = max(
            (int(np.bincount(column[column >= 0]).max(initial=0))
             for column in ids.reshape(ids.shape[0], -1).T),
            default=0,
        )
        return self._new(
            ciphertexts, counts=counts, bound=self._scaled_bound(largest_group)
        )
