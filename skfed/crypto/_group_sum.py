"""Grouped homomorphic sums: encrypted histograms.

``sum_{i in group g} E(x_i) = prod_{i in group g} E(x_i) mod n**2``. Rows are
sorted by group id with numpy, so each group is a running product over one
contiguous block of ciphertexts: exactly one modular multiplication per row
and feature, and no Python-level dictionary or mask per group.
"""

import gmpy2
import numpy as np

from ._parallel import effective_n_jobs, parallel_tasks

__all__ = ["group_counts", "raw_group_sum"]

_ONE = gmpy2.mpz(1)

# Row blocks smaller than this are not split further across threads.
_MIN_BLOCK_ROWS = 64


def _grouped_product(ciphertexts, ids, n_groups, nsquare):
    """Products of ``ciphertexts`` per id in ``[0, n_groups)`` (negatives skipped)."""
    order = np.argsort(ids, kind="stable")
    bounds = np.searchsorted(ids[order], np.arange(n_groups + 1)).tolist()
    sorted_ciphertexts = ciphertexts[order].tolist()
    out = []
    for g in range(n_groups):
        acc = _ONE
        for c in sorted_ciphertexts[bounds[g]:bounds[g + 1]]:
            acc = acc * c % nsquare
        out.append(acc)
    return out


def raw_group_sum(ciphertexts, ids, n_groups, nsquare, n_jobs=None):
    """Grouped products of raw ciphertexts.

    Parameters
    ----------
    ciphertexts : ndarray of object, shape (n, ...)
    ids : ndarray of int, shape (n,) or (n, n_features)
        Validated group ids (< n_groups; negative ids are skipped).
    n_groups : int
    nsquare : mpz
    n_jobs : int or None
        Threads; tasks are (column, row block) pairs, with rows split into
        blocks only when there are fewer columns than twice the workers.

    Returns
    -------
    ndarray of object
        Shape ``(n_groups,) + ciphertexts.shape[1:]`` for 1-D ids,
        ``(n_features, n_groups)`` for 2-D ids.
    """
    n_rows = ciphertexts.shape[0]
    if ids.ndim == 1:
        n_columns = int(np.prod(ciphertexts.shape[1:]))
        tasks = [(column, ids) for column in ciphertexts.reshape(n_rows, n_columns).T]
        out_shape = (n_groups,) + ciphertexts.shape[1:]
    else:
        tasks = [(ciphertexts, column) for column in ids.T]
        out_shape = (ids.shape[1], n_groups)
    n_workers = effective_n_jobs(n_jobs)
    n_blocks = 1 if n_workers == 1 else -(-2 * n_workers // max(len(tasks), 1))
    n_blocks = max(1, min(n_blocks, n_rows // _MIN_BLOCK_ROWS))
    edges = [n_rows * i // n_blocks for i in range(n_blocks + 1)]
    blocks = [
        (cts[a:b], col[a:b])
        for cts, col in tasks
        for a, b in zip(edges[:-1], edges[1:])
    ]
    partials = parallel_tasks(
        lambda block: _grouped_product(block[0], block[1], n_groups, nsquare),
        blocks,
        n_jobs,
    )
    # Combine the row blocks of each task: sums of partial sums.
    results = []
    for t in range(len(tasks)):
        acc = partials[t * n_blocks]
        for partial in partials[t * n_blocks + 1:(t + 1) * n_blocks]:
            acc = [x * y % nsquare for x, y in zip(acc, partial)]
        results.append(acc)
    if ids.ndim == 1:
        # results[column][group] -> (n_groups, n_columns) row-major.
        flat = [results[j][g] for g in range(n_groups) for j in range(len(tasks))]
    else:
        flat = [c for result in results for c in result]
    out = np.empty(len(flat), dtype=object)
    out[:] = flat
    return out.reshape(out_shape)


def group_counts(counts, ids, n_groups):
    """Summand counts of a packed array after :func:`raw_group_sum`."""
    valid = ids >= 0
    if ids.ndim == 2:
        return np.stack([
            np.bincount(ids[valid[:, f], f], weights=counts[valid[:, f]],
                        minlength=n_groups).astype(np.int64)
            for f in range(ids.shape[1])
        ])
    out = np.zeros((n_groups,) + counts.shape[1:], dtype=np.int64)
    np.add.at(out, ids[valid], counts[valid])
    return out
