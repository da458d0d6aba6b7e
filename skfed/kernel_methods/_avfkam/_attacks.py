"""AVFKAM's masked sums, laid out from a recorded fit for the attacks.

The attacks (:mod:`skfed.kernel_methods._attacks`) are FDSKL's and AVFKAM's
alike: they assemble what each party received in the masked two-tree sums
of Algorithm 3. AVFKAM sends such sums in its preprocessing only (appendix
C: each active party asks every other party for the features of every row
at the seeds its training will draw); a training step sends no masked sum,
only ``f^l`` between active parties, who hold the labels. Each request
names its rows and seeds, so :func:`masked_sums` reads the pairs of every
sum off the recorded requests.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

from .._attacks import requested_sums

__all__ = ["masked_sums"]


def masked_sums(estimator, messages, n_rows):
    """Every preprocessing masked sum of a recorded AVFKAM fit (list of
    :class:`~skfed.kernel_methods._attacks.MaskedSum`)."""
    return requested_sums(estimator, messages, "preprocess", n_rows)
