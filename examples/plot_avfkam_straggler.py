"""
=================================================================
AUC against wall time: asynchronous AVFKAM with a slow party
=================================================================

:class:`~skfed.kernel_methods.AVFKAMRanker` trains a kernel model that ranks
the rare positive rows above the negative ones (it maximises a smooth
surrogate of ROC AUC), on columns split over several parties. Each party
that holds the labels (an *active* party) runs its own training loop.

In the synchronous mode every round waits for every active party, so the
slowest one sets the pace. In the asynchronous mode (the default, and the
point of the paper) a fast party keeps updating the shared model while a
slow one is still busy, reading the slow party's possibly stale
coefficients. Here four parties split the columns of the
digits data ("is it an 8?", 10% positives), two of them hold the labels, and
one of those two is made four times slower. We plot test AUC against wall
time for both modes.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

# %%
# An imbalanced ranking problem split over four parties
# -----------------------------------------------------
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from skfed.kernel_methods import AVFKAMRanker
from skfed.partition import VerticalPartition

X, y = load_digits(return_X_y=True)
y = (y == 8).astype(int)
X_train, X_test, y_train, y_test = train_test_split(
    X, y, test_size=0.3, stratify=y, random_state=0)
scaler = StandardScaler().fit(X_train)
X_train, X_test = scaler.transform(X_train), scaler.transform(X_test)
print(f"{len(y_train)} training rows, {y_train.mean():.0%} positive")

# Four parties with 16 pixel columns each; parties 0 and 1 hold the labels.
partition = VerticalPartition(4, active_parties=(0, 1))

# %%
# A straggler
# -----------
# ``party_delays`` simulates computing power: a party with factor ``s``
# takes ``s`` times its own work per update (it waits ``s - 1`` times what
# computing its step took). Party 1 is four times slower than party 0
# (passive parties run no updates).
delays = [1, 4, 1, 1]
fits = {}
for asynchronous in (False, True):
    ranker = AVFKAMRanker(partition, asynchronous=asynchronous,
                          party_delays=delays, max_iter=300,
                          n_random_features=500, random_state=0)
    fits[asynchronous] = ranker.fit(X_train, y_train)
    print(f"{'async' if asynchronous else 'sync '}: "
          f"{ranker.training_time_:.2f} s, test AUC "
          f"{ranker.score(X_test, y_test):.4f}, updates per party "
          f"{ranker.n_iter_per_party_}")

# %%
# In the synchronous mode both active parties made the same number of
# updates and every round waited for the slow one. In the asynchronous mode
# the fast party made most of the updates in much less time.
#
# AUC against wall time
# ---------------------
# ``staged_decision_function`` gives the model's scores at the checkpoints
# recorded during training (``checkpoint_times_`` is the wall time of each).
fig, ax = plt.subplots(figsize=(6, 4))
for asynchronous, ranker in fits.items():
    aucs = [roc_auc_score(y_test, s)
            for s in ranker.staged_decision_function(X_test)]
    ax.plot(ranker.checkpoint_times_, aucs, marker="o", markersize=3,
            label="asynchronous (AVFKAM)" if asynchronous
            else "synchronous (VFKAM)")
ax.set_xlabel("training wall time (s)")
ax.set_ylabel("test ROC AUC")
ax.set_title("Two active parties, one 4x slower")
ax.legend(loc="lower right")
fig.tight_layout()

# %%
# What crossed between the parties
# --------------------------------
# The preprocessing (masked tree sums of the random features) is the bulk of
# the bytes; each training step sends row ids and scores between the two
# active parties and a decay notice. Passive parties only took part in the
# preprocessing.
print(fits[True].communication_.table())

# %%
# Probabilities and a threshold
# -----------------------------
# The pairwise loss fixes only the order of the scores. The label holder
# fits Platt's sigmoid to them after training: ``predict_proba`` is that
# sigmoid and ``predict`` marks the rows whose probability exceeds 1/2.
# To flag a chosen share of rows instead, threshold ``decision_function``
# at its quantile.
ranker = fits[True]
proba = ranker.predict_proba(X_test)[:, 1]
print(f"positive rate {np.mean(y_test == ranker.classes_[1]):.3f}, mean "
      f"probability {proba.mean():.3f}, marked positive "
      f"{np.mean(ranker.predict(X_test) == ranker.classes_[1]):.3f}")
