"""
=====================================================================
SecureBoost: what crosses the wire
=====================================================================

Every message between the simulated parties of
:class:`~skfed.ensemble.SecureBoostClassifier` is counted. Here three
parties share the breast-cancer columns; party 0 (the active party) holds the
labels. We record every message of a short fit with a small Paillier key and
look at who sent what to whom:

- the active party sends the passive parties one ciphertext per row and
  round (the packed gradient pair), and row ids (instance spaces);
- the passive parties send back a few packed, re-randomised ciphertexts of
  candidate sums per tree level, and, for a split they won, the left rows;
- nothing else: no plaintext gradient, label, threshold or column.

:func:`skfed.privacy.check_messages` holds the recorded messages against
SecureBoost's privacy contract, which says, for every phase and direction,
what each payload element may be. Then we check that federated prediction
needs at most ``max_depth`` rounds of queries per passive party, whatever the
number of rows and trees. Last, what the active party can still compute from
the sums it decrypts when a node has few rows, and what ``min_passive_rows``
does about it.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

# %%
# Recording a fit
# ---------------
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_breast_cancer

import skfed
from skfed.crypto import EncryptedArray
from skfed.ensemble import SecureBoostClassifier
from skfed.federation import record_messages

# 512-bit keys keep this example fast; they are not secure (skfed refuses
# keys below 1024 bits unless asked, and warns below 2048).
skfed.set_config(allow_insecure_keys=True)

X, y = load_breast_cancer(return_X_y=True)
clf = SecureBoostClassifier(n_estimators=5, partition=3, key_size=512, random_state=0)
with record_messages() as rec:
    clf.fit(X, y)


def kinds(payload):
    """Flatten a message into (kind, count) items."""
    for item in payload:
        if isinstance(item, (list, tuple)):
            yield from kinds(item)
        elif item is None:  # "every row", in a row-id slot
            continue
        elif isinstance(item, EncryptedArray):
            yield "ciphertexts", item.size
        elif hasattr(item, "key_size"):
            yield "public key", 1
        else:
            values = np.asarray(item)
            yield f"{values.dtype.kind}-scalars", values.size


table = {}
for m in rec.messages:
    for kind, count in kinds(m.payload):
        key = (f"{m.sender} -> {m.receiver}", m.phase, kind)
        table[key] = table.get(key, 0) + count
print(f"{'link':18s} {'phase':15s} {'content':14s} {'count':>8s}")
for (link, phase, kind), count in sorted(table.items()):
    print(f"{link:18s} {phase:15s} {kind:14s} {count:8d}")

# %%
# The contract
# ------------
# Each phase names its content: ``histogram/rows`` carries the instance
# spaces (row ids) the paper lets passive parties see, ``histogram/sums``
# the passive parties' anonymous candidate sums, ``split/choice`` and
# ``split/answer`` the winning candidate's random id and the left rows.
# ``check_messages`` finds no message the contract does not allow, and no
# plaintext array that matches a private column, the labels, the gradients
# or a passive party's bin indices.
from skfed.privacy import check_messages

print(clf._privacy_contract().table())
print("violations:", check_messages(clf, rec.messages, X, y))

# %%
# The only floating-point numbers that ever travel are inside ciphertexts:
# the plaintext scalars are integers (``i``: row ids, candidate ids, record
# ids, packing layout) and booleans. Bytes per link and phase:
summary = clf.communication_
links = sorted(summary.by_link)
phases = sorted(summary.by_phase)
# One figure per cell: the gallery draws each cell's figures when it ends.
fig, ax_links = plt.subplots(figsize=(6, 4))
bottom = np.zeros(len(links))
for phase in phases:
    kb = np.array([sum(r[6] for r in summary.records
                       if (r[0], r[1]) == link and r[2] == phase)
                   for link in links]) / 1e3
    ax_links.bar([f"{a}\n-> {b}" for a, b in links], kb, bottom=bottom, label=phase)
    bottom += kb
ax_links.set_ylabel("kB during fit (5 rounds)")
ax_links.set_title("Who sends what (512-bit key)")
ax_links.legend()
fig.tight_layout()
plt.show()

# %%
# Federated prediction rounds
# ---------------------------
# The active party walks all rows through all trees and asks each passive
# party, once per level, which way rows go at its records: the number of
# query messages per passive party is at most the depth.
depths = [1, 2, 3, 4, 5]
queries = []
for depth in depths:
    model = SecureBoostClassifier(n_estimators=5, max_depth=depth, partition=3,
                                  encryption=None, random_state=0).fit(X, y)
    with record_messages() as rec:
        model.predict(X)
    queries.append(max(sum(m.receiver == p for m in rec.messages)
                       for p in ("party1", "party2")))
fig, ax_predict = plt.subplots(figsize=(5.5, 4))
ax_predict.plot(depths, queries, "o-", label="query messages per passive party")
ax_predict.plot(depths, depths, "k--", label="max_depth")
ax_predict.set_xlabel("max_depth")
ax_predict.set_title(f"Predicting {X.shape[0]} rows x 5 trees")
ax_predict.legend()
fig.tight_layout()
plt.show()

# %%
# Small nodes: sums the active party can invert
# ---------------------------------------------
# The candidate sums are anonymous, but exact: the active party knows the
# rows of every node and their fixed-point gradients, so in a node of a few
# dozen rows it can search for the subset of rows whose gradients add up to
# a decrypted left sum, and that subset is the set of rows left of a passive
# party's threshold. :func:`skfed.privacy.audit` plays this ``subset_sum``
# attack. With the paper's protocol (``min_passive_rows=0``) and deep trees
# it fixes the side of a threshold for a share of every passive party's
# rows; by default the passive parties withhold the sums of nodes under 64
# rows (and any a subtraction would bring below that), and the contract
# flags a fit that does not.
from skfed.privacy import audit

rows = np.random.RandomState(0).choice(len(X), 300, replace=False)
for min_passive_rows in (0, 64):
    report = audit(SecureBoostClassifier(
        n_estimators=3, max_depth=6, partition=3, encryption=None,
        min_passive_rows=min_passive_rows, random_state=0),
        X[rows], y[rows], attacks=["subset_sum"])
    worst = report.attacks[report.attacks.metric == "fraction_worst_tree"]
    print(f"min_passive_rows={min_passive_rows}: rows whose side of a passive "
          f"threshold is recovered, worst tree: {worst.value.max():.1%} "
          f"(chance {worst.chance.max():.1%}); contract violations: "
          f"{len(report.violations)}")
