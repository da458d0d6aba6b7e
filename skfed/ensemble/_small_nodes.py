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

On a small table this leaves the passive parties out of the whole model:
:func:`warn_if_withheld` tells the caller when a passive party sent no sums
at the root of a tree, or for nodes holding more than half of the gradient
rows of all the nodes searched for a split over the fit.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import warnings

import numpy as np

from .._stacklevel import user_stacklevel

__all__ = ["RevealedNodes", "warn_if_withheld"]


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


def warn_if_withheld(estimator, coverage):
    """Warn if ``min_passive_rows`` left a passive party out of the model.

    A party is left out when it withheld its sums at the root of at least
    one tree (that whole tree is then the label holder's alone) or for most
    of the fit: for nodes that hold more than half of the gradient rows of
    every node searched for a split, over all trees. Rows weigh the nodes
    because a node's split decides for its rows: withheld leaves-to-be of
    a few rows each cost the model little, a withheld first level a lot.
    (Default settings, 10 trees of depth 3: 100 regression rows 66% of the
    rows withheld, warned; 150 rows 48%; breast cancer, 569 rows, 27%.)

    Parameters
    ----------
    estimator : SecureBoost estimator
        Names the class and ``min_passive_rows`` in the message.
    coverage : dict
        ``{party: {"nodes", "withheld", "rows", "rows_withheld", "roots",
        "roots_withheld"}}``, as counted by the active party
        (:func:`~._grower.passive_coverage`).
    """
    left_out = [
        f"{party}: the root of {c['roots_withheld']} of {c['roots']} trees, "
        f"{c['withheld']} of {c['nodes']} nodes searched for a split, holding "
        f"{c['rows_withheld'] / max(c['rows'], 1):.0%} of their rows"
        for party, c in sorted(coverage.items())
        if c["roots_withheld"] > 0 or 2 * c["rows_withheld"] > c["rows"]]
    if not left_out:
        return
    warnings.warn(
        f"{type(estimator).__name__}: with min_passive_rows="
        f"{estimator.min_passive_rows}, passive parties withheld their "
        f"candidate sums from most of the fit ({'; '.join(left_out)}), so "
        "only the label holder's columns could split those nodes: the model "
        "is close to one of the label holder's columns alone. "
        "min_passive_rows protects the passive parties' columns: the label "
        "holder knows each node's rows and its own gradients, and from the "
        "candidate sums of a node with few rows it can work out which rows "
        "lie below a passive party's threshold (a subset-sum attack). Fit on "
        "more rows, or lower min_passive_rows knowing that cost "
        "(min_passive_rows=0 is the paper's protocol); see the SecureBoost "
        "user guide.",
        UserWarning, stacklevel=user_stacklevel(fallback=2))
