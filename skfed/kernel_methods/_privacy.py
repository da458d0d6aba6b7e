"""The kernel estimators' privacy bookkeeping: the keys and rows of a fit.

:class:`KernelPrivacyMixin` files every party's key with the fitted
:class:`FDSKLClassifier`, :class:`FDSKLRegressor` and :class:`AVFKAMRanker`
(with the row facts the privacy checks read) and puts the secrets of
:mod:`skfed.privacy` in the parties' row order.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
from sklearn.utils.validation import _num_samples

from ..federation._fingerprint import new_fingerprint
from . import _vertical_features
from ._vertical_features import party_key_mode

__all__ = ["KernelPrivacyMixin"]


class KernelPrivacyMixin:
    """The privacy hooks of the kernel estimators (see :mod:`skfed.privacy`)."""

    def _keep_party_keys(self, fed, names, n_rows, row_order=None):
        """File each party's key with the fitted model (prediction needs
        them), with the row facts the privacy checks need and the fit's
        fingerprint (which its exported shares carry).

        The simulation keeps every party's share in the estimator, as it
        does the coefficient stores; fetching them is not a message. The
        estimator thus holds every party's key: it is the whole simulation,
        never a thing to hand to one party (``export_shares()`` splits it).
        """
        self.party_keys_ = party_key_mode(self.party_keys, self.random_state)
        self._party_keys = fed.gather(fed[p].call(_vertical_features.party_key)
                                      for p in names)
        self._privacy_n_rows = int(n_rows)
        self._row_order = None if row_order is None else np.asarray(row_order)
        # Names this fit in every share export_shares() makes of it, so that
        # shares of two fits refuse to be used together (never shapes the
        # model: drawn from secrets, after training).
        self._model_fingerprint = new_fingerprint()

    def _privacy_row_order(self, n_rows):
        """Row ``r`` of the parties' blocks is row ``order[r]`` of the
        caller's ``X`` (a fit may put held-out rows first)."""
        order = getattr(self, "_row_order", None)
        return np.arange(n_rows) if order is None else np.asarray(order)

    def _privacy_secrets(self, X, y=None, **fit_params):
        # The messages refer to rows in the parties' order: so do the secrets.
        secrets = super()._privacy_secrets(X, y, **fit_params)
        order = self._privacy_row_order(_num_samples(X))
        for secret in secrets:
            if secret.kind != "rows" and len(secret.values) == len(order):
                secret.values = np.asarray(secret.values)[order]
        return secrets
