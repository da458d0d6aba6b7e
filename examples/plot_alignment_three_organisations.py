"""
=========================================================
Aligning three organisations' customers, then SecureBoost
=========================================================

Vertical federated learning needs the parties' rows to be about the same
people, in the same order. In practice each organisation has its own table
keyed by a customer id, and each has seen a different subset of customers.
Before any training the parties must find the customers they all have,
without telling each other about the ones they do not share: a customer of
the bank who never visited the shop should stay unknown to the shop.

:func:`skfed.alignment.align` does this with a Diffie-Hellman private set
intersection (PSI) on the elliptic curve Curve25519, then hands back one
aligned table, the labels, and the
:class:`~skfed.partition.VerticalPartition` that any vertical estimator takes.
Here three organisations hold different measurements of scikit-learn's
breast-cancer patients, each for a different 85% of them, and we train
:class:`~skfed.ensemble.SecureBoostClassifier` on what they share.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

# %%
# Three tables with partially overlapping ids
# -------------------------------------------
# A clinic holds the diagnosis and the mean measurements, an imaging lab
# the standard errors and a hospital the worst values. Each saw a random 85%
# of the patients, listed in its own order under string ids.
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.model_selection import train_test_split

from skfed.alignment import PSIAudit, align
from skfed.ensemble import SecureBoostClassifier
from skfed.federation import record_messages
from skfed.privacy import check_messages

data = load_breast_cancer(as_frame=True)
frame = data.frame.rename(columns={"target": "benign"})
rng = np.random.default_rng(0)
frame.insert(0, "patient", [f"P-{i:06d}" for i in
                            rng.choice(10**6, size=len(frame), replace=False)])

columns = {
    "clinic": [c for c in data.feature_names if c.startswith("mean ")] + ["benign"],
    "lab": [c for c in data.feature_names if c.endswith(" error")],
    "hospital": [c for c in data.feature_names if c.startswith("worst ")],
}
tables = {}
for seed, (name, cols) in enumerate(columns.items()):
    seen = rng.random(len(frame)) < 0.85
    tables[name] = frame.loc[seen, ["patient"] + cols].sample(
        frac=1, random_state=seed).reset_index(drop=True)
    print(f"{name:<9} {len(tables[name])} patients, {len(cols)} columns")

# %%
# Private alignment
# -----------------
# The clinic holds the label, so it is the hub of the protocol: every
# party's ids are hashed onto Curve25519 and multiplied by every party's
# secret key (X25519, 128-bit security), and only the hub compares the
# results, without being able to map them back to ids. Each party learns
# which of its own rows are in the intersection, and nothing but set sizes
# about the rest.
with record_messages() as recorder:
    X, y, partition, communication = align(
        tables, on="patient", label="benign", return_communication=True)
print(f"{len(X)} patients in common; partition: {len(partition.groups)} parties, "
      f"active party {partition.active_parties}")
print(communication.table(by="link"))

# %%
# What crossed is a list of curve points: 32 bytes each (the point's
# u-coordinate), random-looking to whoever lacks the other parties' keys.
# No message holds an id, a measurement or a label; the last messages are
# positions in the receiver's own (secretly shuffled) list.
first = recorder.messages[0]
print(f"{first.sender} -> {first.receiver} ({first.phase}): "
      f"{len(first.payload[0])} points such as "
      f"{first.payload[0][0].tobytes().hex()[:32]}...")
last = recorder.messages[-1]
print(f"{last.sender} -> {last.receiver} ({last.phase}): {last.payload[0][:8]}...")

# %%
# The protocol's privacy contract says what each message may carry; every
# recorded message is held against it (the clinic, label holder, is the hub).
violations = check_messages(PSIAudit(party_names=list(tables), hub="clinic"),
                            recorder.messages)
print(f"{len(recorder.messages)} messages, {len(violations)} contract violations")

# %%
# Training on the aligned table
# -----------------------------
# The aligned table, its labels and its partition go straight into a
# vertical estimator. SecureBoost is lossless, so we run it in its plaintext
# mode here to keep the example fast (the encrypted default,
# ``encryption="paillier"``, builds the same trees), and compare it with
# scikit-learn's gradient boosting on the same rows, pooled in one place.
X_train, X_test, y_train, y_test = train_test_split(
    X, y, test_size=0.3, random_state=0, stratify=y)
federated = SecureBoostClassifier(n_estimators=20, partition=partition,
                                  encryption=None, random_state=0)
federated.fit(X_train, y_train)
centralized = HistGradientBoostingClassifier(max_iter=20, max_depth=3,
                                             random_state=0).fit(X_train, y_train)
scores = {"SecureBoost (federated)": federated.score(X_test, y_test),
          "HistGradientBoosting (pooled)": centralized.score(X_test, y_test)}
for name, score in scores.items():
    print(f"{name:<30} test accuracy {score:.3f}")

# %%
# Who kept how many rows, and what it cost
# ----------------------------------------
fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8))
names = list(tables)
left.bar(names + ["aligned"], [len(t) for t in tables.values()] + [len(X)],
         color=["tab:blue"] * len(names) + ["tab:green"])
left.set_ylabel("patients")
left.set_title("Rows held, and rows all three share")
links = sorted(communication.by_link.items())
right.barh([f"{s} -> {r}" for (s, r), _ in links],
           [v["bytes"] / 1e3 for _, v in links], color="tab:orange")
right.set_xlabel("kilobytes sent")
right.set_title("Traffic of the private intersection")
fig.tight_layout()
plt.show()
