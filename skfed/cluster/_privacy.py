"""Privacy hooks of :class:`~skfed.cluster.FederatedKernelKMeans`.

The contract itself is declared next to the protocol
(:func:`skfed.cluster._contract.kernel_kmeans_contract`); the attack is in
:mod:`skfed.cluster._attacks`.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np

__all__ = ["KernelKMeansPrivacyMixin"]


class KernelKMeansPrivacyMixin:
    """``_privacy_contract``, ``_privacy_secrets`` and ``_privacy_attacks``."""

    def _privacy_contract(self):
        from ._contract import kernel_kmeans_contract

        return kernel_kmeans_contract(self)

    def _privacy_secrets(self, X, y=None, **fit_params):
        """Each user's rows (from the base class) and its row sum and mean.

        A plaintext vector equal to a user's sum or mean of rows is what the
        unmasked moments of the default ``gamma`` used to send; with kind
        ``"rows"`` the semantic check flags it like a raw row.
        """
        from .._privacy_core import Secret

        secrets = list(super()._privacy_secrets(X, y, **fit_params))
        X = np.asarray(X, dtype=float)
        for m in range(self.partition_.n_parties):
            rows = X[self.partition_.rows(m)]
            secrets.append(Secret(
                f"user{m}", "rows", f"sum and mean of user{m}'s rows",
                np.vstack([rows.sum(axis=0), rows.mean(axis=0)])))
        return secrets

    def _privacy_attacks(self):
        from ._attacks import row_reconstruction

        return [row_reconstruction]
