"""
=====================================================================
FDSKL models split into shares, and what the label holder can infer
=====================================================================

A fitted :class:`~skfed.kernel_methods.FDSKLClassifier` is the whole
simulation: it holds every party's private key (its block of the random
directions) and every party's coefficients. Handed to one party, it would
let that party rebuild the others' columns from the messages it received.
Deployed, each party keeps only its own share. We

1. export the shares and save each one to a file of its own;
2. load them back and predict by the federated protocol (each party holds
   its share and its own columns), bit for bit as the estimator;
3. consolidate them into one plaintext model (every party must agree),
   and see shares of another fit, or edited, refused;
4. show what the label holder still infers from what it received by
   design, ``omega^T x + b`` of the training rows: the kernel of the other
   parties' columns, hence their distances, and by classical MDS their
   block up to a rotation (the ``distance_mds`` attack of
   :func:`skfed.privacy.audit`).
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

# %%
# Fit on three parties while recording, export the shares
# -------------------------------------------------------
import tempfile
from pathlib import Path

import joblib
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.preprocessing import StandardScaler

from skfed.federation import record_messages
from skfed.kernel_methods import FDSKLClassifier, consolidate_shares, predict_with_shares
from skfed.kernel_methods._attacks import distance_mds

X, y = load_breast_cancer(return_X_y=True)
X = StandardScaler().fit_transform(X)
clf = FDSKLClassifier(partition=3, max_iter=100, random_state=0)
with record_messages() as recorder:
    clf.fit(X, y)
print(f"keys from {clf.party_keys_!r} (party_keys='auto' with a seed)")

folder = Path(tempfile.mkdtemp())
for share in clf.export_shares():
    joblib.dump(share, folder / f"party{share.party}.joblib")
    print(f"party{share.party}: columns {share.columns.tolist()}, "
          f"{len(share.feature_ids)} coefficients, its own 32-byte key"
          + (", the output" if share.output else ""))

# %%
# Federated prediction from the loaded shares, and the consolidated model
# -----------------------------------------------------------------------
shares = [joblib.load(folder / f"party{k}.joblib") for k in range(3)]
federated = predict_with_shares(shares, [X[:, s.columns] for s in shares],
                                "predict_proba")
plain = consolidate_shares(shares).predict_proba(X)
for name, proba in [("shares, federated", federated), ("consolidated", plain)]:
    print(f"{name:18s} identical to the estimator: "
          f"{np.array_equal(proba, clf.predict_proba(X))}")

# %%
# Shares of another fit, or edited, are refused
# ---------------------------------------------
# Every share of one fit carries the fit's fingerprint and a digest of its
# content: party 1's share of another fit, or a share whose coefficient was
# changed, stops the prediction before any party computes.
other = FDSKLClassifier(partition=3, max_iter=5, random_state=1).fit(X, y)
edited = joblib.load(folder / "party0.joblib")
edited.coef[0, 0] = np.nan
for name, bad in [("another fit's party 1", [shares[0], other.export_shares()[1],
                                             shares[2]]),
                  ("party 0 edited", [edited, shares[1], shares[2]])]:
    try:
        predict_with_shares(bad, [X[:, s.columns] for s in shares])
    except ValueError as error:
        print(f"{name}: {error}")

# %%
# What the label holder infers without knowing any row
# ----------------------------------------------------
# ``distance_mds`` estimates the kernel between rows from the features the
# label holder received, turns it into distances with the public
# ``gamma_`` and embeds them by classical MDS. The plot aligns the
# embedding with the truth by the best rotation (which the attacker does
# not know: an upper bound); the ICA row of the table is the score without
# side information.
estimates = {}
rows = distance_mds(clf, recorder.messages, X, y, estimates=estimates)
oracle = [r for r in rows if r["attacker"] == "party0" and "oracle" in r["target"]]
ica = [r for r in rows if r["attacker"] == "party0" and "ICA" in r["target"]]
print(f"oracle-rotation r2: mean {np.mean([r['value'] for r in oracle]):.2f}; "
      f"ICA |corr|: mean {np.mean([r['value'] for r in ica]):.2f} "
      f"(chance {ica[0]['chance']:.2f})")
(_, Y, truth), = [v for k, v in estimates.items() if k[0] == "party0"]
Y, T = Y - Y.mean(axis=0), truth - truth.mean(axis=0)
U, _, Vt = np.linalg.svd(Y.T @ T)
aligned = Y @ U @ Vt
best = int(np.argmax([r["value"] for r in oracle]))
fig, ax = plt.subplots(figsize=(4.5, 4))
ax.scatter(T[:, best], aligned[:, best], s=8, alpha=0.6)
ax.set_xlabel(f"true column ({oracle[best]['target'].split(' (')[0]}, centred)")
ax.set_ylabel("label holder's MDS estimate (best rotation)")
ax.set_title(f"distance_mds, r2 = {oracle[best]['value']:.2f}")
fig.tight_layout()
plt.show()
