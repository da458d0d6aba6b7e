"""Grouped homomorphic sums: encrypted histograms.

``sum_{i in group g} E(x_i) = prod_{i in group g} E(x_i) mod n**2``. Rows are
sorted by group id with numpy, so each group is a running product over one
contiguous block of ciphertexts: one modular multiplication per row, and no
Python-level dictionary or mask per group.

Several histograms at once (2-D ids, one column per feature) share their
row products: features are grouped (:func:`feature_groups`) and each group
gets one *joint* histogram, one product per row, over the cells of the
combinations of its features' ids that occur; each feature's histogram is
then the product of the cells with its id, one product per cell. Two
features with 33 ids each over 30,000 rows cost ``30,000 + 2 * 1,089``
products instead of ``60,000``; six binary features ``n + 6 * 3**6`` instead
of ``6 n``. Products modulo ``n**2`` commute, so every histogram is the same
integer as the product of its rows taken feature by feature: the result does
not depend on the grouping.
"""

import gmpy2
import numpy as np

from ._parallel import effective_n_jobs, parallel_tasks
from ._raw import object_array

__all__ = ["feature_groups", "group_counts", "raw_group_sum"]

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


class _FeatureGroup:
    """Features sharing one joint histogram (see :func:`feature_groups`).

    ``columns``: the features; ``codes``: each row's cell (-1: the row is
    skipped by every feature of the group); ``cell_ids``: ``(n_cells,
    len(columns))``, each cell's id in each feature (-1: skipped).
    """

    def __init__(self, columns, codes, cell_ids):
        self.columns = columns
        self.codes = codes
        self.cell_ids = cell_ids

    @property
    def n_cells(self):
        return self.cell_ids.shape[0]

    def cost(self):
        """Products to build the joint histogram, then every feature's."""
        if len(self.columns) == 1:
            return int((self.codes >= 0).sum())
        return int((self.codes >= 0).sum()) + int((self.cell_ids >= 0).sum())


def _single(ids, f):
    column = ids[:, f]
    return _FeatureGroup([f], np.where(column >= 0, column, -1), None)


def _joined(group, ids, f, n_groups):
    """``group`` with feature ``f`` added: its cells are the occurring pairs."""
    skip = n_groups  # an id of its own for skipped rows
    if group.cell_ids is None:  # a single feature: its ids are its cells
        column = ids[:, group.columns[0]]
        base = np.where(column >= 0, column, skip)
        base_cells = np.arange(n_groups + 1)[:, None]
    else:
        base = group.codes.copy()
        base_cells = group.cell_ids
        if (base < 0).any():  # rows skipped by every feature so far
            base_cells = np.vstack([base_cells, np.full(base_cells.shape[1], -1)])
            base[base < 0] = base_cells.shape[0] - 1
    column = ids[:, f]
    key = base.astype(np.int64) * (n_groups + 1) + np.where(column >= 0, column, skip)
    cells, codes = np.unique(key, return_inverse=True)
    cell_ids = np.column_stack([base_cells[cells // (n_groups + 1)],
                                cells % (n_groups + 1)])
    cell_ids = np.where(cell_ids == skip, -1, cell_ids)
    codes = codes.reshape(-1).astype(np.intp)
    empty = np.flatnonzero((cell_ids < 0).all(axis=1))
    if empty.size:  # rows skipped by every feature: in no cell at all
        codes[codes == empty[0]] = -1
    return _FeatureGroup(group.columns + [f], codes, cell_ids)


def feature_groups(ids, n_groups):
    """Consecutive features grouped where a joint histogram saves products.

    A feature joins the current group when building the group's joint
    histogram and then every member's (one product per row, then one per
    cell and member) costs fewer products than keeping the feature apart
    (one per row). Dense columns with many ids end up in pairs; columns
    with few ids (binary ones) in larger groups.

    Parameters
    ----------
    ids : ndarray of int, shape (n, n_features)
        Group ids, negative ones skipped.
    n_groups : int

    Returns
    -------
    groups : list of _FeatureGroup
    """
    groups = []
    for f in range(ids.shape[1]):
        alone = _single(ids, f)
        if groups:
            joined = _joined(groups[-1], ids, f, n_groups)
            if joined.cost() < groups[-1].cost() + alone.cost():
                groups[-1] = joined
                continue
        groups.append(alone)
    return groups


def _block_tasks(tasks, n_rows, n_jobs):
    """Split ``(ciphertexts, ids, n_out)`` tasks into row blocks for the workers."""
    n_workers = effective_n_jobs(n_jobs)
    n_blocks = 1 if n_workers == 1 else -(-2 * n_workers // max(len(tasks), 1))
    n_blocks = max(1, min(n_blocks, n_rows // _MIN_BLOCK_ROWS))
    edges = [n_rows * i // n_blocks for i in range(n_blocks + 1)]
    blocks = [(cts[a:b], col[a:b], n_out)
              for cts, col, n_out in tasks
              for a, b in zip(edges[:-1], edges[1:])]
    return blocks, n_blocks


def _task_products(tasks, n_rows, nsquare, n_jobs):
    """Grouped products of each task ``(ciphertexts, ids, n_out)``, blocks combined."""
    blocks, n_blocks = _block_tasks(tasks, n_rows, n_jobs)
    partials = parallel_tasks(
        lambda block: _grouped_product(block[0], block[1], block[2], nsquare),
        blocks,
        n_jobs,
        release_gil=False,  # short products
    )
    # Combine the row blocks of each task: sums of partial sums.
    results = []
    for t in range(len(tasks)):
        acc = partials[t * n_blocks]
        for partial in partials[t * n_blocks + 1:(t + 1) * n_blocks]:
            acc = [x * y % nsquare for x, y in zip(acc, partial)]
        results.append(acc)
    return results


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
        Threads; tasks are (column or feature group, row block) pairs, with
        rows split into blocks only when there are fewer tasks than twice
        the workers.

    Returns
    -------
    ndarray of object
        Shape ``(n_groups,) + ciphertexts.shape[1:]`` for 1-D ids,
        ``(n_features, n_groups)`` for 2-D ids (features grouped as in
        :func:`feature_groups`; the same integers as feature by feature).
    """
    n_rows = ciphertexts.shape[0]
    if ids.ndim == 1:
        n_columns = int(np.prod(ciphertexts.shape[1:]))
        columns = ciphertexts.reshape(n_rows, n_columns).T
        results = _task_products([(column, ids, n_groups) for column in columns],
                                 n_rows, nsquare, n_jobs)
        # results[column][group] -> (n_groups, n_columns) row-major.
        flat = [results[j][g] for g in range(n_groups) for j in range(n_columns)]
        return object_array(flat, (n_groups,) + ciphertexts.shape[1:])
    groups = feature_groups(ids, n_groups)
    tasks = [(ciphertexts, group.codes,
              n_groups if group.cell_ids is None else group.n_cells)
             for group in groups]
    joint = _task_products(tasks, n_rows, nsquare, n_jobs)
    # Each feature's histogram from its group's cells: one product per cell.
    marginals = [(cells, group.cell_ids[:, j])
                 for cells, group in zip(joint, groups) if group.cell_ids is not None
                 for j in range(len(group.columns))]
    marginal = iter(parallel_tasks(
        lambda task: _grouped_product(object_array(task[0], (len(task[0]),)),
                                      task[1], n_groups, nsquare),
        marginals, n_jobs, release_gil=False))
    histograms = [None] * ids.shape[1]
    for cells, group in zip(joint, groups):
        if group.cell_ids is None:
            histograms[group.columns[0]] = cells
        else:
            for f in group.columns:
                histograms[f] = next(marginal)
    return object_array([c for histogram in histograms for c in histogram],
                         (ids.shape[1], n_groups))


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
