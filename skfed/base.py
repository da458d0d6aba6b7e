"""What every federated estimator shares.

The public ``fit`` of an estimator validates its input, then calls the helpers
here to resolve the partition and to run a federation; the algorithm module
only holds the protocol. After ``fit`` the estimator carries ``partition_``
and ``communication_`` (the message counts of ``fit``), and no thread, lock or
party state: it pickles like any sklearn estimator.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

from contextlib import contextmanager

import numpy as np
from sklearn.utils import check_random_state
from threadpoolctl import threadpool_limits

from .federation import Federation
from .partition import resolve_partition

__all__ = ["FederatedMixin", "party_seeds", "check_labels_not_single_class"]


def party_seeds(random_state, n):
    """``n`` independent 32-bit seeds drawn in the caller's thread, in order."""
    rng = check_random_state(random_state)
    return [int(s) for s in rng.randint(0, 2**31 - 1, size=n)]


class FederatedMixin:
    """Mixin for estimators that run a protocol between simulated parties.

    Subclasses set ``_partition_kind`` to ``"vertical"``, ``"horizontal"`` or
    ``"hybrid"``.
    """

    _partition_kind = "vertical"
    #: seconds a caller waits for one party call
    _party_timeout = 600.0

    def _resolve_partition(self, X, sample_party=None):
        """Resolve ``self.partition`` against ``X`` and store ``partition_``."""
        self.partition_ = resolve_partition(
            self.partition, X, kind=self._partition_kind,
            feature_names=getattr(self, "feature_names_in_", None),
            sample_party=sample_party,
        )
        return self.partition_

    @contextmanager
    def _federation(self, states, record=True):
        """Run a federation of ``states``; on exit store ``communication_``.

        With ``record=False`` (prediction) the counts are not stored, since
        ``predict`` must not change the estimator; a
        :func:`~skfed.federation.record_messages` recorder still sees them.
        """
        fed = Federation(states, timeout=self._party_timeout)
        # Every party thread runs its own numpy work at once: a multithreaded
        # BLAS in each would oversubscribe the cores (measured ~10x slower for
        # FDSKL on 2 cores), so BLAS gets one thread while parties run.
        with threadpool_limits(limits=1, user_api="blas"), fed:
            yield fed
        if record:
            self.communication_ = fed.summary()


def check_labels_not_single_class(classes):
    """Clear error for a classification target with one class."""
    if len(classes) < 2:
        raise ValueError(
            "The target has only one class "
            f"({np.asarray(classes).tolist()}); a classifier needs at least "
            "two. Check the labels, or the split that produced this fold."
        )

