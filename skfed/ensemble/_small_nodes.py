"""Telling the caller when ``min_passive_rows`` left a passive party out.

On a small table the reveal rule (:class:`~._histogram.RevealedNodes`)
leaves the passive parties out of the whole model:
:func:`warn_if_withheld` tells the caller when a passive party sent no sums
at the root of a tree, or for nodes holding more than half of the gradient
rows of all the nodes searched for a split over the fit.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import warnings

from .._stacklevel import user_stacklevel

__all__ = ["warn_if_withheld"]


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
