"""HyFDCA's data preparation: what the driver hands each client.

Everything here runs before any party starts: the checks of the arguments
that need the data or the resolved partition, the check that the data fits
the protocol's fixed-point range, each client's block of the table (a dense
C-ordered array, or CSR for sparse input, so that every product a client
computes, ``x^T w`` and ``X_k^T v``, is a sparse product and nothing is
densified), the squared row norms of either kind, and the row weights that
go to the clients holding the rows (and to no one else).
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import math

import numpy as np
import scipy.sparse as sp

from ..partition import VerticalPartition

__all__ = ["row_sqnorms", "check_encodable", "check_sample_party",
           "check_participation", "client_blocks", "row_reader"]


def row_sqnorms(X):
    """``||x_i||^2`` of every row of a dense array or a sparse matrix."""
    if sp.issparse(X):
        return np.asarray(X.multiply(X).sum(axis=1), dtype=np.float64).ravel()
    return np.einsum("ij,ij->i", X, X)


def _largest_abs(X):
    if sp.issparse(X):
        return float(abs(X).max()) if X.nnz else 0.0
    return float(np.max(np.abs(X), initial=0.0))


def check_encodable(X, *, alpha, fit_intercept, intercept_scaling, encryption):
    """Refuse, before any party starts, data no fixed-point scale fits."""
    with np.errstate(over="ignore"):
        sq = row_sqnorms(X) + (intercept_scaling ** 2 if fit_intercept else 0.0)
    bound = float(np.sqrt(np.max(sq, initial=0.0))) / alpha
    if np.all(np.isfinite(sq)) and math.isfinite(bound) and bound < 2.0 ** 500:
        return
    largest = _largest_abs(X)
    if encryption is None:  # no encoding to speak of here
        raise ValueError(
            "HyFDCA cannot fit this X: its values are too large "
            f"(largest |x| = {largest:.3g}); the squared row norms divided by "
            "alpha overflow the protocol's arithmetic (they must stay below "
            "2**500). Rescale the features (for example with StandardScaler) "
            "or raise alpha.")
    raise ValueError(
        f"HyFDCA cannot encode this X: its row norms (largest |x| = "
        f"{largest:.3g}) divided by alpha overflow the fixed-point range, so "
        "rescale the features (for example with StandardScaler) or raise "
        "alpha.")


def check_sample_party(partition_spec, sample_party):
    """Row owners make sense only when the partition splits rows."""
    if sample_party is not None and isinstance(
            partition_spec, (VerticalPartition, list, tuple)):
        raise ValueError(
            "sample_party was given, but the partition is vertical (one "
            "row group: every client holds every row). Pass a "
            "HybridPartition or HorizontalPartition to split rows.")


def check_participation(participation, partition, solver="accelerated",
                        schedule="random"):
    """Partial participation needs a row group that can sit a round out, or
    (``solver="paper"``, a vertical split) section 4.3's cyclic sets."""
    if participation >= 1 or partition.n_row_groups > 1:
        return
    if solver != "paper":
        raise ValueError(
            f"participation={participation} on a split with one row group (a "
            "vertical split: every client holds part of every row) needs "
            "solver='paper', which runs section 4.3's cyclic participation "
            "(clients in turn, with stale weights of the absent ones and "
            "gamma_t = 1/t); the accelerated solver moves a row group's duals "
            "only when all its clients take part. Use solver='paper' with "
            "schedule='cyclic', participation=1.0, or split the rows too with "
            "a HybridPartition.")
    if schedule != "cyclic":
        raise ValueError(
            f"participation={participation} on a vertical split needs "
            "schedule='cyclic' (section 4.3, Assumption 4.10: the clients take "
            "part in fixed sets, in turn); random subsets are not covered on "
            "a vertical split.")
    if partition.n_clients < 2:
        raise ValueError(
            f"participation={participation} needs at least two clients to "
            "take turns; this split has one.")


def client_blocks(X, partition, fit_intercept, intercept_scaling):
    """Each client's block, the ids of its rows, and the global weight ids
    of its columns (the constant column travels with column group 0).

    Sparse ``X`` gives CSR blocks: rows are cut from a CSR copy, columns
    from the row cut, so no step builds a dense matrix.
    """
    sparse = sp.issparse(X)
    if sparse:
        X = sp.csr_matrix(X, dtype=np.float64)
    n_features = X.shape[1]
    blocks, rows, columns = {}, {}, {}
    for k in range(partition.n_clients):
        r_idx = partition.client_rows(k)
        c_idx = partition.client_columns(k)
        block = X[r_idx][:, c_idx] if sparse else X[np.ix_(r_idx, c_idx)]
        ids = c_idx
        if fit_intercept and partition.client_cell(k)[1] == 0:
            constant = np.full((len(r_idx), 1), float(intercept_scaling))
            block = (sp.hstack([block, sp.csr_matrix(constant)], format="csr")
                     if sparse else np.hstack([block, constant]))
            ids = np.append(c_idx, n_features)
        if sparse:
            block.sort_indices()
        blocks[k], rows[k], columns[k] = block, r_idx, ids
    return blocks, rows, columns


def row_reader(X):
    """``read(i) -> (columns, values)`` of row ``i`` of a dense array or CSR
    block, for the sequential coordinate pass (``columns`` a slice for
    dense rows)."""
    if sp.issparse(X):
        indptr, indices, data = X.indptr, X.indices, X.data

        def read(i):
            lo, hi = indptr[i], indptr[i + 1]
            return indices[lo:hi], data[lo:hi]
        return read
    everything = slice(None)
    return lambda i: (everything, X[i])
