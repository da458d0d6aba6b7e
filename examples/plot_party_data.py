"""
===================================================
Data that stays home: fitting on each party's file
===================================================

In the other examples the estimator receives the whole table ``X`` and hands
each simulated party its columns. Real parties do not send their tables to
anyone: each keeps a file on its own machine. :class:`~skfed.federation.PartyData`
names, per party, where that file is (or a function that loads it) and the
id column to align on; the estimator takes it in place of ``X``. Each party
reads its own file, the parties align their rows by a private set
intersection, and the fit runs on what each party loaded.

Here the three "machines" are three directories of one computer and the
parties are threads, so that the example runs in seconds. With
``skfed.set_config(backend="ray")`` the same code runs each party on its own
Ray node, messages go from party to party by reference, and the process
that calls ``fit`` never holds a party's columns (see the user guide's
multi-node recipe).
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

# %%
# Three files, one per party
# --------------------------
# A bank (with the label), a shop and an operator each hold three columns
# about partly different customers, listed in their own order.
import os
import tempfile

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from skfed.ensemble import SecureBoostClassifier
from skfed.federation import PartyData
from skfed.partition import VerticalPartition

rng = np.random.default_rng(0)
n = 400
features = rng.normal(size=(n, 9))
default = (features[:, 0] - features[:, 4] + features[:, 7]
           + 0.5 * rng.normal(size=n) > 0).astype(int)
customer = rng.choice(10**6, size=n, replace=False)

root = tempfile.mkdtemp()
paths = {}
for k, party in enumerate(["bank", "shop", "operator"]):
    seen = rng.random(n) < 0.9  # each party knows 90% of the customers
    table = pd.DataFrame(features[seen, 3 * k:3 * k + 3],
                         columns=[f"{party}_{j}" for j in range(3)])
    table.insert(0, "customer", customer[seen])
    if party == "bank":
        table["default"] = default[seen]
    table = table.sample(frac=1, random_state=k)
    os.makedirs(os.path.join(root, party))
    paths[party] = os.path.join(root, party, "table.csv")
    table.to_csv(paths[party], index=False)
    print(f"{party:<9} {len(table)} customers -> {paths[party]}")

# %%
# Fit on the files
# ----------------
# ``y`` names the label column, which only the bank's file has: the bank
# is the active party. The parties first find the customers they all know.
data = PartyData(paths, id_column="customer")
model = SecureBoostClassifier(n_estimators=5, encryption=None, random_state=0)
model.fit(data, "default")
print(f"{data.n_rows_} customers in common; alignment: "
      f"{data.alignment_communication_.total_messages} messages")
print(model.communication_.table(by="link"))

# %%
# The same model as on the joined table
# -------------------------------------
# Joining the files (which no party could do) and fitting in memory with the
# same partition gives the same model and the same messages.
tables = [pd.read_csv(p).set_index("customer") for p in paths.values()]
joined = pd.concat(tables, axis=1, join="inner").sort_index()
y = joined.pop("default").to_numpy()
X = joined.to_numpy()
in_memory = SecureBoostClassifier(n_estimators=5, encryption=None, random_state=0,
                                  partition=VerticalPartition(
                                      [[0, 1, 2], [3, 4, 5], [6, 7, 8]],
                                      active_parties=(0,)))
in_memory.fit(X, y)
print("same predictions:",
      np.array_equal(model.predict_proba(data), in_memory.predict_proba(X)))
print("same messages:", model.communication_ == in_memory.communication_)

# %%
# Who sent what
# -------------
# The passive parties only ever send encrypted (here: plaintext, for speed)
# histogram sums and split answers to the bank.
model.communication_.plot(by="link")
plt.tight_layout()
plt.show()

# %%
# The files were only for this example.
import shutil  # noqa: E402

shutil.rmtree(root)
