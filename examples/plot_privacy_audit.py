"""
=====================================================================
What an honest-but-curious party can learn
=====================================================================

A federated protocol keeps each party's columns at home, but the parties
still exchange messages, and a curious party can compute with everything
it receives. :func:`skfed.privacy.audit` plays that party: it fits an
estimator while recording every message, holds the messages against the
protocol's privacy contract, and runs the attacks that apply, each scored
against the victim's true data beside what an attacker who learnt nothing
would score (``chance``).

Here three parties share the breast-cancer columns and
:class:`~skfed.kernel_methods.AVFKAMRanker` learns a kernel ranker. Party 0
holds the labels and receives the random features ``cos(omega^T x + b)``
of every row, computed with masked sums over two trees. We ask three
questions:

1. can party 0 rebuild another party's columns from what it received?
   (``column_reconstruction``: least squares with every direction it can
   compute);
2. can it, if it already knows a few of the other party's rows, as a bank
   knows some of its customers? (``column_reconstruction_known_rows``);
3. can it tell which rows are close to each other in the other party's
   columns? (``distance_reconstruction``).

The first answer is no: the other parties' directions come from keys only
they hold, and every masked value is fresh. The other two answers are yes,
and they are inherent to kernel learning on shared rows: the features
party 0 must hold for the model *are* an estimate of the kernel of the
other parties' columns.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

# %%
# Auditing a fit
# --------------
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.preprocessing import StandardScaler

from skfed.kernel_methods import AVFKAMRanker
from skfed.partition import VerticalPartition
from skfed.privacy import audit
from skfed.kernel_methods._attacks import (
    column_reconstruction,
    column_reconstruction_known_rows,
)

X, y = load_breast_cancer(return_X_y=True)
X = StandardScaler().fit_transform(X[:300, :12])
y = y[:300]
model = AVFKAMRanker(VerticalPartition(3), random_state=0)
report = audit(model, X, y)
print(f"{len(report.messages)} messages, "
      f"{len(report.violations)} contract violations")

# %%
# The attack table has one row per attack, attacker, victim and target
# column. We keep the label holder's best score per attack.
table = report.attacks
holder = table[table["attacker"] == "party0"]
summary = holder.groupby("attack").agg(best=("value", "max"),
                                       chance=("chance", "mean"))
print(summary.round(3))

# %%
# Reconstructed columns against the true ones
# -------------------------------------------
# We run the two column attacks again, asking for the reconstructions, and
# plot the label holder's best-reconstructed column of party 1 in each case.


def best_estimate(attack, **kwargs):
    estimates = {}
    rows = attack(report.estimator, report.messages, X, y,
                  estimates=estimates, **kwargs)
    mine = [r for r in rows if r["attacker"] == "party0"
            and r["victim"] == "party1"]
    best = max(mine, key=lambda r: r["value"])
    key = (best["attacker"], best["victim"], best["target"])
    return best, estimates[key]


fig, axes = plt.subplots(1, 2, figsize=(9, 4), sharey=True)
for ax, attack, title in zip(
        axes, [column_reconstruction, column_reconstruction_known_rows],
        ["from the messages alone", "knowing a few of party 1's rows"]):
    best, (rows, estimate, truth) = best_estimate(attack)
    ax.scatter(truth - truth.mean(), estimate - estimate.mean(), s=8,
               alpha=0.6)
    lim = np.abs(truth - truth.mean()).max()
    ax.plot([-lim, lim], [-lim, lim], color="grey", lw=1, ls="--")
    ax.set_title(f"{title}\n{best['target']}: r2 = {best['value']:.2f}")
    ax.set_xlabel("true value (centred)")
axes[0].set_ylabel("party 0's reconstruction (centred)")
fig.suptitle("What party 0 can rebuild of party 1's columns")
fig.tight_layout()

# %%
# Without prior knowledge the best reconstruction is flat: party 0 does no
# better than guessing the mean (r2 near 0, the ``chance`` column). With a
# handful of known rows it can fit, feature by feature, the unknown
# directions from those rows and then solve for the others: the features
# it legitimately holds for the model carry the other parties' data, up to
# the kernel's resolution. The docs' security page lists these figures for
# every estimator (``benchmarks/bench_privacy.py``), and the planted-leak
# tests in ``tests/privacy/`` check that each attack does find a leak when
# one is put in the protocol.
plt.show()
