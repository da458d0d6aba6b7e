"""Which rows carry gradients in a round, and which columns a tree may use.

Model randomness only (from ``random_state``, through each party's model
seed): the same ``random_state`` gives the same rows and columns.

- Rows (active party): a uniform ``subsample``, or gradient-based one-side
  sampling (GOSS, Ke et al., *LightGBM*, NeurIPS 2017, Algorithm 2): keep
  the ``goss_top_rate`` share of rows with the largest ``|g h|`` (summed over
  outputs, as LightGBM ranks them), plus a uniform ``goss_other_rate`` share
  of the rest whose ``g`` and ``h`` are amplified by
  ``(1 - top_rate) / other_rate`` so that sums stay unbiased. Only these rows
  are encrypted and sent, so GOSS divides the encryptions of a round by
  ``1 / (top_rate + other_rate)``.
- Columns (every party, its own): ``colsample_bytree``, a share of the
  party's own columns drawn per tree with the party's seed and the tree's
  key. Nobody else learns which columns a party kept.
- Training rows (the estimator, before any party starts): with early
  stopping, a validation split drawn from ``random_state``;
  :func:`training_rows` replays it for the privacy checks and the attacks.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
from sklearn.model_selection import train_test_split

__all__ = ["uniform_rows", "goss_rows", "tree_columns", "training_rows"]


def uniform_rows(seed, round_index, n_rows, subsample):
    """Sorted positions of a uniform row sample of a round (all rows at 1.0)."""
    if subsample >= 1.0:
        return np.arange(n_rows)
    rng = np.random.default_rng([seed, round_index])
    size = max(2, int(round(subsample * n_rows)))
    return np.sort(rng.choice(n_rows, size=min(size, n_rows), replace=False))


def goss_rows(seed, round_index, g, h, top_rate, other_rate):
    """GOSS: ``(sorted sampled rows, amplification per sampled row)``.

    ``g`` and ``h`` are the (weighted) gradients of every row, shape
    ``(n_rows, n_outputs)``. Ties in ``|g h|`` are broken by row position
    (a stable sort), so the sample depends on the data and the seed only.
    """
    n_rows = g.shape[0]
    n_top = int(round(top_rate * n_rows))
    n_other = min(n_rows - n_top, max(1, int(round(other_rate * n_rows))))
    magnitude = np.abs(g * h).sum(axis=1)
    ranked = np.argsort(-magnitude, kind="stable")
    top, rest = ranked[:n_top], ranked[n_top:]
    rng = np.random.default_rng([seed, round_index, 1])
    other = rng.choice(rest, size=n_other, replace=False)
    rows = np.concatenate([top, other])
    factor = np.concatenate([np.ones(n_top),
                             np.full(n_other, (1.0 - top_rate) / other_rate)])
    order = np.argsort(rows)
    return rows[order], factor[order]


def tree_columns(seed, tree_key, n_features, colsample):
    """Sorted own columns a party offers candidates of in one tree."""
    if colsample >= 1.0 or n_features == 0:
        return np.arange(n_features)
    rng = np.random.default_rng([seed, *tree_key, 2])
    size = max(1, int(round(colsample * n_features)))
    return np.sort(rng.choice(n_features, size=size, replace=False))


def training_rows(estimator, n_rows, y=None):
    """Positions in ``X`` of the rows the trees were grown on.

    Early stopping holds out a validation split drawn from ``random_state``
    (model randomness, reproduced here exactly); otherwise every row.
    """
    if (not getattr(estimator, "do_early_stopping_", False)
            or estimator.validation_fraction is None):
        return np.arange(n_rows)
    seeds = estimator._model_seeds
    stratify = y if hasattr(estimator, "classes_") else None
    train, _ = train_test_split(np.arange(n_rows),
                                test_size=estimator.validation_fraction,
                                random_state=seeds[-1], stratify=stratify)
    return train
