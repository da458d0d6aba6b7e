"""SecureBoost's privacy hooks, read by :mod:`skfed.privacy`.

``_privacy_contract`` returns :data:`~._contract.CONTRACT`;
``_privacy_secrets`` adds to the base class's columns and labels what the
SecureBoost protocol computes from them and must keep: the active party's
first-round gradients and hessians, the labels of the rows sampled in each
round, and every passive party's bin indices; ``_privacy_attacks`` lists
``deshuffle``, ``leaf_purity`` and ``subset_sum``
(:mod:`skfed.ensemble._attacks`).
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np

from ..federation import network as _network
from ._attacks import deshuffle, leaf_purity, subset_sum
from ._binning import BinMapper
from ._contract import CONTRACT
from ._loss import LOSSES
from ._sampling import goss_rows, training_rows, uniform_rows

__all__ = ["SecureBoostPrivacyMixin", "is_recording", "round_sample"]


def is_recording():
    """Whether a :func:`~skfed.federation.record_messages` recorder is active."""
    return bool(_network._active_recorders)


def round_sample(estimator, n_rows, round_index):
    """The rows (positions among the training rows) sampled in a round.

    The same draw as the active party's (``random_state`` shapes the model).
    """
    seed = estimator._model_seeds[estimator.partition_.active_parties[0]]
    return uniform_rows(seed, round_index, n_rows, estimator.subsample)


class SecureBoostPrivacyMixin:
    """Privacy hooks of SecureBoostClassifier and SecureBoostRegressor."""

    def _privacy_contract(self):
        return CONTRACT

    def _privacy_attacks(self):
        return [deshuffle, leaf_purity, subset_sum]

    def _encoded_target(self, y):
        """``y`` as the active party holds it: class codes, or floats."""
        y = np.asarray(y)
        if hasattr(self, "classes_"):
            return np.searchsorted(self.classes_, y.ravel())
        return y.astype(np.float64).ravel()

    def _privacy_secrets(self, X, y=None, **fit_params):
        """The base secrets, plus what the protocol derives from them.

        - ``"gradients"``: the active party's first-round gradients and
          hessians on the sampled rows, as it computes them in plaintext;
        - ``"labels"``: the labels of the rows sampled in each round (a row
          subset: a leak of these would not match the full label vector);
          with early stopping, also the labels and ``"columns"`` of the
          training rows;
        - ``"bins"``: each passive party's bin indices of the training rows;
        - ``"weights"``: the active party's row weights (``sample_weight``
          times ``class_weight``), which scale its gradients and never leave it.
        """
        from .._privacy_core import Secret

        out = list(super()._privacy_secrets(X, y, **fit_params))
        X = np.asarray(X, dtype=np.float64)
        partition = self.partition_
        names = self._privacy_party_names()
        active = partition.active_parties[0]
        seeds = self._model_seeds
        codes = None if y is None else self._encoded_target(y)
        train = training_rows(self, X.shape[0], codes)
        X_train = X[train]
        if train.size < X.shape[0]:
            for k, name in enumerate(names):
                out.append(Secret(name, "columns", f"training columns of {name}",
                                  X_train[:, partition.columns(k)]))
        for k, name in enumerate(names):
            if k == active:
                continue
            mapper = BinMapper(self.max_bins, seeds[k]).fit(
                X_train[:, partition.columns(k)])
            out.append(Secret(name, "bins", f"bin indices of {name}",
                              mapper.transform(X_train[:, partition.columns(k)])
                              .astype(np.float64)))
        if codes is None:
            return out
        y_train = codes[train]
        labels = self._label_matrix(y_train)
        owner = names[active]
        if train.size < X.shape[0]:
            out.append(Secret(owner, "labels", "labels of the training rows",
                              labels))
        # First-round gradients and hessians, as the active party has them
        # (times the row weights, which only it holds).
        loss = LOSSES[self._loss_name()]()
        n_outputs = self.n_trees_per_iteration_
        weights = self._final_sample_weight(X, codes,
                                            fit_params.get("sample_weight"))
        w_train = None if weights is None else weights[train]
        baseline = loss.baseline(y_train, n_outputs, w_train)
        g, h = loss.gradients(y_train, np.tile(baseline, (y_train.size, 1)))
        scale = np.ones(y_train.size) if w_train is None else w_train
        g, h = g * scale[:, None], h * scale[:, None]
        goss = self._goss()
        if goss is None:
            sample = round_sample(self, y_train.size, 0)
            g, h = g[sample], h[sample]
        else:  # the same GOSS draw as the active party's first round
            sample, factor = goss_rows(seeds[active], 0, g, h, *goss)
            g, h = g[sample] * factor[:, None], h[sample] * factor[:, None]
        if w_train is not None:
            out.append(Secret(owner, "weights", "row weights of the training rows",
                              w_train))
        out.append(Secret(owner, "gradients", "first-round gradients", g))
        out.append(Secret(owner, "gradients", "first-round hessians", h))
        if self.subsample < 1.0:
            for it in range(self.n_iter_):
                rows = round_sample(self, y_train.size, it)
                out.append(Secret(owner, "labels",
                                  f"labels of the rows sampled in round {it + 1}",
                                  labels[rows]))
        return out

    def _label_matrix(self, codes):
        """Labels as the semantic check compares them (one-hot if multiclass)."""
        if not hasattr(self, "classes_") or self.classes_.size <= 2:
            return codes.astype(np.float64)
        return np.eye(self.classes_.size)[codes]
