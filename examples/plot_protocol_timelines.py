"""
=====================================================================
What each protocol sends, round by round
=====================================================================

Every message between simulated parties is recorded with the protocol round
that sent it (:func:`skfed.federation.protocol_rounds` marks the drivers'
main loops) and the time it left. Here each algorithm is fitted on a tiny
problem inside :func:`~skfed.federation.record_messages`, and
:meth:`~skfed.federation.MessageRecorder.plot_timeline` draws its set-up and
first round as a sequence diagram: one lane per party, time going down, one
arrow per run of messages of one phase between two parties. Arrows are
**green** when ciphertexts cross, **orange** when the estimator's privacy
contract declares the values masked (or random ids), **red** otherwise:
public parameters, row ids, or plaintext the paper accepts (SecureBoost's
split choices, the decision values FDSKL's parties add up).
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

# %%
# Five protocols on a tiny problem
# --------------------------------
# 1024-bit Paillier keys (the smallest skfed accepts without an explicit
# opt-in; it warns that they are for teaching only, which is what this is)
# and a few rounds each keep this example to seconds.
import warnings

import matplotlib.pyplot as plt
from sklearn.datasets import make_classification

from skfed.cluster import FederatedKernelKMeans
from skfed.crypto import InsecureKeyWarning
from skfed.ensemble import SecureBoostClassifier
from skfed.federation import record_messages
from skfed.kernel_methods import AVFKAMRanker, FDSKLClassifier
from skfed.linear_model import HyFDCAClassifier
from skfed.partition import HybridPartition, VerticalPartition

X, y = make_classification(n_samples=120, n_features=6, weights=[0.7],
                           random_state=0)

protocols = {
    "SecureBoost (vertical, Paillier)": SecureBoostClassifier(
        n_estimators=2, max_depth=2, key_size=1024, random_state=0),
    "FDSKL (vertical, masked sums)": FDSKLClassifier(
        partition=3, max_iter=4, batch_size=16, random_state=0),
    "AVFKAM (vertical, 2 active parties)": AVFKAMRanker(
        VerticalPartition(3, active_parties=(0, 1)), max_iter=4,
        n_random_features=50, batch_size=8, features_per_step=16,
        random_state=0),
    "HyFDCA (2x2 grid, Paillier)": HyFDCAClassifier(
        HybridPartition(2, 2), key_size=1024, max_iter=2, tol=None,
        random_state=0),
    "Kernel k-means (3 users + server)": FederatedKernelKMeans(
        3, partition=3, max_iter=2, tol=None, n_random_features=20,
        coreset_size=30, random_state=0),
}

warnings.filterwarnings("ignore", category=InsecureKeyWarning)
recorders = {}
for title, estimator in protocols.items():
    with record_messages() as rec:
        estimator.fit(X, None if "k-means" in title else y)
    recorders[title] = rec
    print(f"{title}: {len(rec.messages)} messages, "
          f"{estimator.communication_.total_bytes / 1e3:.0f} kB")

# %%
# Set-up and first round, side by side
# ------------------------------------
# ``rounds=(None, 0, 1)`` keeps the set-up messages (outside any round) and
# rounds 0 and 1: SecureBoost's first two trees and FDSKL's first two steps
# (numbered from 0), the first round of HyFDCA and of kernel k-means' DSPGD,
# AVFKAM's first iteration (numbered from 1). Read down a column: the set-up
# (keys, scales, the shared kernel width), then what one round repeats.
fig, axes = plt.subplots(1, len(protocols), figsize=(4.2 * len(protocols), 9))
for ax, (title, rec) in zip(axes, recorders.items()):
    rec.plot_timeline(ax=ax, contract=protocols[title], rounds=(None, 0, 1),
                      max_arrows=40)
    ax.set_title(title, pad=28, fontsize="medium")
    if ax is not axes[-1]:
        ax.get_legend().remove()
fig.tight_layout()

# %%
# How much each phase sends
# -------------------------
# :meth:`~skfed.federation.CommunicationSummary.plot` draws the bytes of
# each phase (bars) and the number of messages (labels) of the whole fit.
fig, axes = plt.subplots(1, len(protocols), figsize=(4.2 * len(protocols), 4))
for ax, (title, estimator) in zip(axes, protocols.items()):
    estimator.communication_.plot(by="phase", ax=ax)
    ax.set_title(title, fontsize="medium")
fig.tight_layout()
plt.show()
