"""The rows of an audit's attack table, shared by every algorithm's attacks."""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

__all__ = ["attack_row", "ATTACK_COLUMNS"]

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
