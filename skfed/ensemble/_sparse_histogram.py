"""Encrypted candidate sums of one node, sparse-aware (the passive party's work).

A node's encrypted histogram costs one ciphertext product (a multiplication
modulo ``n**2``) per row and feature when every bin is summed. Most of that
is avoidable: per feature, the bin holding the most rows of the node (the
zero bin of a sparse or one-hot column) is derived instead of summed,

    ``E(hist[f, mode]) = E(total) * E(sum of the other bins of f)**-1``,

where ``E(total)``, the node's sum over all its rows, is built once per node
and shared by every feature. A feature then costs one product per row *off*
its most frequent bin, plus one modular inverse. The sums are the
same integers either way (Paillier adds modulo ``n``, and every bin sum,
derived or not, is a sum of the node's rows), so the model does not change.

The remaining (row, feature) pairs go to the shared grouped products of
:func:`skfed.crypto._group_sum.raw_group_sum`: features whose rows often
coincide share one joint histogram (a row costs one product per group of
features, not per feature), over worker threads. The node total is one more
column of those products (every row in one bin), so it joins a group and
costs almost nothing. On the a9a-shaped benchmark table (62 binary columns
per party, 14 ones per row in all) the root costs ~3.5 products per row
instead of 62 (the dense histogram) or ~8 (sparse alone).

Which bin is derived depends only on the passive party's own bins of the
node's rows; nothing about it leaves the party, and the candidate sums it
sends are the same plaintexts as before (re-randomised by
:func:`~._packing.pack_candidates`).
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import gmpy2
import numpy as np

from ..crypto import EncryptedArray
from ..crypto._group_sum import feature_groups, raw_group_sum
from ..crypto._raw import object_array

__all__ = ["NodeBins", "candidate_sums"]

_ONE = gmpy2.mpz(1)  # the encryption of 0 without randomness (an empty sum)


class NodeBins:
    """The passive party's plan for one node: which (row, feature) pairs to sum.

    Built once per node from the party's plaintext bins and shared by every
    ciphertext array summed over the node (one per output group of a
    multi-output tree).

    Parameters
    ----------
    bins : ndarray of shape (n_rows, n_features)
        Bin indices of the node's gradient rows (the tree's columns).
    n_groups : int
        Bins per feature, the missing bin included (``missing_bin + 1``).
    """

    def __init__(self, bins, n_groups):
        n_rows, n_features = bins.shape
        self.n_rows, self.n_features, self.n_groups = n_rows, n_features, n_groups
        bins = bins.astype(np.intp)
        counts = np.zeros((n_features, n_groups), dtype=np.intp)
        for f in range(n_features):
            counts[f] = np.bincount(bins[:, f], minlength=n_groups)
        # The derived bin of each feature: the one with the most rows.
        self.mode = counts.argmax(axis=1)
        counts[np.arange(n_features), self.mode] = 0
        self.summed = [np.flatnonzero(row).tolist() for row in counts]
        # Features constant in the node (frequent deep in a tree) need no
        # products at all: their one bin is the node total.
        self.varying = np.flatnonzero(counts.any(axis=1))
        # Group ids for the grouped products: the fullest bins are skipped
        # (-1), and column 0, every row in group 0, is the node total.
        self.ids = np.empty((n_rows, self.varying.size + 1), dtype=np.intp)
        self.ids[:, 0] = 0
        self.ids[:, 1:] = np.where(bins[:, self.varying] != self.mode[self.varying],
                                   bins[:, self.varying], -1)

    @property
    def n_products(self):
        """Ciphertext products this node costs (before the per-feature inverses)."""
        return sum(group.cost() for group in feature_groups(self.ids, self.n_groups))

    def histogram(self, ciphertexts, nsquare, n_jobs=None):
        """Raw encrypted histogram, a list of ``n_features`` lists of ``n_groups``.

        Parameters
        ----------
        ciphertexts : ndarray of object, shape (n_rows,)
            Raw ciphertexts of the node's gradient rows, in the order of
            ``bins``.
        nsquare : mpz
        n_jobs : int or None
        """
        if self.n_rows == 0:
            return [[_ONE] * self.n_groups for _ in range(self.n_features)]
        # Features sharing row products where that saves products (see
        # skfed.crypto._group_sum.feature_groups); the node total rides along.
        sums = raw_group_sum(ciphertexts, self.ids, self.n_groups, nsquare, n_jobs)
        total = sums[0, 0]
        hist = [[_ONE] * self.n_groups for _ in range(self.n_features)]
        for column, f in enumerate(self.varying.tolist(), start=1):
            hist[f] = sums[column].tolist()
        for f, row in enumerate(hist):
            rest = None
            for b in self.summed[f]:
                rest = row[b] if rest is None else rest * row[b] % nsquare
            row[self.mode[f]] = (total if rest is None else
                                 total * gmpy2.invert(rest, nsquare) % nsquare)
        return hist


def candidate_sums(hist, features, bins, missing_left, missing_bin, public_key):
    """Left sums of candidates from a raw histogram (see :func:`NodeBins.histogram`).

    Cumulative sums run once per feature and only up to the feature's last
    candidate bin; a "missing left" candidate adds the feature's missing bin
    to the cumulative sum (one product each).

    Parameters
    ----------
    hist : list of lists of mpz
    features, bins : ndarray of int
        Column (index into ``hist``) and bin ``v`` of each candidate
        ("bin <= v goes left").
    missing_left : ndarray of bool
    missing_bin : int
    public_key : PaillierPublicKey or OUPublicKey

    Returns
    -------
    EncryptedArray of shape (n_candidates,)
    """
    nsquare = public_key.ciphertext_modulus
    last = np.full(len(hist), -1, dtype=np.intp)
    np.maximum.at(last, features, bins)
    cumulative = {}
    for f in np.flatnonzero(last >= 0).tolist():
        acc, run = None, []
        for h in hist[f][:last[f] + 1]:
            acc = h if acc is None else (acc if h == 1 else acc * h % nsquare)
            run.append(acc)
        cumulative[f] = run
    out = object_array([
        cumulative[f][v] * hist[f][missing_bin] % nsquare if left
        else cumulative[f][v]
        for f, v, left in zip(features.tolist(), bins.tolist(), missing_left.tolist())
    ], (features.size,))
    return EncryptedArray(public_key, out, 0, is_integer=True)
