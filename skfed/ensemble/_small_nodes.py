"""Which nodes' candidate sums a passive party may reveal (``min_passive_rows``).

The active party knows the rows of every node and its own fixed-point
gradients, so a decrypted left sum ``(G_left, H_left)`` of a node with few
gradient rows is a subset-sum instance it can solve: the unique subset of the
node's rows with those sums is the set of rows with ``x_f <= t`` for the
passive party's (anonymous) feature ``f`` and threshold ``t``
(:func:`~._attack_subset_sum.subset_sum`). A passive party therefore
withholds its sums for nodes it cannot reveal safely, deciding from row
counts it knows itself.

Counting only the revealed node is not enough: the active party subtracts
(a sibling's sums are the parent's minus the built child's), so what it can
compute is every sum over a union of *atoms*, where an atom is a revealed
node minus the revealed nodes inside it (the revealed nodes of a tree form a
nested family, and their indicator vectors span exactly the unions of these
disjoint atoms). :class:`RevealedNodes` keeps every non-empty atom at
``min_rows`` gradient rows or more: a node is revealed only if it holds at
least ``min_rows`` gradient rows and leaves its nearest revealed ancestor's
atom empty or still at ``min_rows`` or more. The same bookkeeping replays a
recorded fit in the contract's check (:class:`~._contract.MinPassiveRows`).
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np

__all__ = ["RevealedNodes"]


class RevealedNodes:
    """One passive party's revealed nodes of one tree.

    Parameters
    ----------
    min_rows : int
        Smallest allowed atom (gradient rows); 0 reveals every node (the
        paper's protocol).
    """

    def __init__(self, min_rows):
        self.min_rows = int(min_rows)
        self.owner = np.full(0, -1, dtype=np.intp)  # innermost revealed node
        self.atoms = []                             # its rows in no sub-node

    def _grow(self, rows):
        size = int(rows.max()) + 1 if rows.size else 0
        if size > self.owner.size:
            self.owner = np.concatenate(
                [self.owner, np.full(size - self.owner.size, -1, dtype=np.intp)])

    def problem(self, rows):
        """Why revealing the node of gradient rows ``rows`` is unsafe, or None."""
        if self.min_rows <= 0:
            return None
        rows = np.asarray(rows, dtype=np.intp)
        if rows.size < self.min_rows:
            return f"a node of {rows.size} gradient rows"
        self._grow(rows)
        owners, counts = np.unique(self.owner[rows], return_counts=True)
        for owner, count in zip(owners, counts):
            left = self.atoms[owner] - count if owner >= 0 else 0
            if 0 < left < self.min_rows:
                return (f"a node of {rows.size} gradient rows whose revealed "
                        f"ancestor would keep {left} rows in no revealed "
                        "node (derivable by subtraction)")
        return None

    def add(self, rows):
        """Record the node of gradient rows ``rows`` as revealed."""
        if self.min_rows <= 0:
            return
        rows = np.asarray(rows, dtype=np.intp)
        self._grow(rows)
        owners, counts = np.unique(self.owner[rows], return_counts=True)
        for owner, count in zip(owners, counts):
            if owner >= 0:
                self.atoms[owner] -= int(count)
        self.owner[rows] = len(self.atoms)
        self.atoms.append(int(rows.size))

    def reveal(self, rows):
        """Record and return True if the node may be revealed, else False."""
        if self.problem(rows) is not None:
            return False
        self.add(rows)
        return True
