"""The rows of an audit's attack table, and the scores they share.

Every algorithm's attacks report their results as :func:`attack_row`
rows; :func:`column_r2` and :func:`psd_root` are the pieces of scoring that
several of them (HyFDCA's ``partner_block``, the generic accumulation
attack) compute the same way.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np

__all__ = ["attack_row", "ATTACK_COLUMNS", "column_r2", "psd_root"]

ATTACK_COLUMNS = ["attack", "attacker", "victim", "target", "metric", "value",
                  "chance"]


def attack_row(attack, attacker, victim, target, metric, value, chance):
    """One row of an audit's attack table.

    Parameters
    ----------
    attack : str
        The attack's name (``"column_reconstruction"``, ``"deshuffle"``...).
    attacker, victim : str
        Party names (the victim may be a group, e.g. ``"passive parties"``).
    target : str
        What the attacker tries to learn (``"column 3"``).
    metric : str
        How success is measured (``"r2"``, ``"relative_error"``...).
    value : float
        The attacker's score.
    chance : float
        What the metric is for an attacker who learnt nothing (a guess).
    """
    return {"attack": str(attack), "attacker": str(attacker),
            "victim": str(victim), "target": str(target),
            "metric": str(metric), "value": float(value),
            "chance": float(chance)}


def column_r2(fit, truth):
    """r2 of each column of ``fit`` against the same column of ``truth``;
    NaN for a constant column of ``truth`` (an intercept), which no score
    describes."""
    ss = np.sum((truth - truth.mean(axis=0)) ** 2, axis=0)
    res = np.sum((fit - truth) ** 2, axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(ss > 1e-12 * truth.shape[0], 1.0 - res / ss, np.nan)


def psd_root(G):
    """``R`` with ``R R^T`` the positive semi-definite part of the
    symmetrised ``G`` (a Gram matrix an attacker estimated)."""
    values, vectors = np.linalg.eigh(0.5 * (G + G.T))
    return vectors * np.sqrt(np.maximum(values, 0.0))
