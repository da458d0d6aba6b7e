"""
=====================================================================
SecureBoost models split into shares, and consolidated on request
=====================================================================

A fitted :class:`~skfed.ensemble.SecureBoostClassifier` stands for every
party at once. Deployed, each party keeps only its own share of the model
(section 4 of the paper): the label holder keeps the trees (which party owns
each split, under which record id) and the leaf weights; every other party
keeps its lookup table of thresholds. We

1. export the shares and save each one to a file of its own, as each party
   would on its own machine;
2. load them back and predict by the federated protocol, the label holder
   asking each party only "which way do these rows go at your record?";
3. consolidate the shares into one plaintext model, which every party must
   agree to (it reveals all thresholds), and predict without any federation.

The three give the same probabilities, bit for bit.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

# %%
# Fit on three parties, export the shares
# ---------------------------------------
import tempfile
from pathlib import Path

import joblib
import numpy as np
from sklearn.datasets import load_breast_cancer

from skfed.ensemble import SecureBoostClassifier

X, y = load_breast_cancer(return_X_y=True)
clf = SecureBoostClassifier(n_estimators=10, encryption=None, random_state=0,
                            partition=3).fit(X, y)
shares = clf.export_shares()
folder = Path(tempfile.mkdtemp())
for share in shares:
    joblib.dump(share, folder / f"party{share.party}.joblib")
    print(f"party{share.party}: {type(share).__name__}, columns "
          f"{share.columns.tolist()}, {len(share.table)} lookup records")

# %%
# Federated prediction from the loaded shares
# -------------------------------------------
# Each party loads its own file and holds its own columns of the new rows.
# ``ask`` is the transport; here a function call, in a deployment a network
# message (the tests run each passive party in a process of its own).
active = joblib.load(folder / "party0.joblib")
passive = {k: joblib.load(folder / f"party{k}.joblib") for k in (1, 2)}
queries = []


def ask(party, record_ids, rows):
    queries.append((party, len(rows)))
    share = passive[party]
    # model=: a share of another fit refuses to answer (each share also
    # checks its own digest: an edited threshold is refused too).
    return share.answer(X[:, share.columns], record_ids, rows,
                        model=active.model)


federated = active.predict_proba(X[:, active.columns], ask)
print(f"{len(queries)} queries (at most depth x parties), "
      f"{sum(n for _, n in queries)} (row, node) questions in total")

# %%
# Consolidated plaintext model
# ----------------------------
model = clf.consolidate()
plain = model.predict_proba(X)
rows = [("estimator.predict_proba", clf.predict_proba(X)),
        ("shares, federated", federated),
        ("consolidated", plain)]
print(f"{'':26s} {'mean P(y=1)':>12s} {'identical':>10s}")
for name, proba in rows:
    same = np.array_equal(proba, rows[0][1])
    print(f"{name:26s} {proba[:, 1].mean():12.6f} {str(same):>10s}")
