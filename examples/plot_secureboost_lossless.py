"""
=====================================================================
SecureBoost is lossless: federated vs centralized boosting
=====================================================================

:class:`~skfed.ensemble.SecureBoostClassifier` grows gradient-boosted trees
on a table whose columns are split between two parties: party 0 holds half
of the columns and the labels, party 1 the other half. Party 1 only ever
receives Paillier ciphertexts of the gradients, and party 0 never sees party
1's columns or thresholds.

The paper's claim is that nothing is lost: the federated model is the model
a centralized booster would grow. We check it two ways on scikit-learn's
breast-cancer table:

1. the models trained with real Paillier encryption and with
   Okamoto-Uchiyama (``encryption="ou"``, the faster scheme SecretFlow uses;
   small 512-bit keys, to keep the example fast) and the one trained in
   plaintext build the *same* trees and give the *same* predictions, round
   after round;
2. both follow scikit-learn's centralized
   :class:`~sklearn.ensemble.HistGradientBoostingClassifier` with the same
   depth, learning rate, bins and leaf constraints.

Then we look at what crossed the wire, and check the regressor the same way.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

# %%
# Learning curves
# ---------------
# Test log-loss after each number of rounds, for the centralized booster and
# the federated one (plaintext and Paillier).
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.metrics import log_loss
from sklearn.model_selection import train_test_split

import skfed
from skfed.ensemble import SecureBoostClassifier

# 512-bit keys keep this example fast; they are not secure (skfed refuses
# keys below 1024 bits unless asked, and warns below 2048).
skfed.set_config(allow_insecure_keys=True)

X, y = load_breast_cancer(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(
    X, y, test_size=0.3, random_state=0, stratify=y)

same = dict(learning_rate=0.3, max_depth=3, max_bins=32, early_stopping=False)
n_rounds = 20
hgb = HistGradientBoostingClassifier(max_iter=n_rounds, **same).fit(X_train, y_train)
curves = {"HistGradientBoosting (centralized)": [
    log_loss(y_test, p) for p in hgb.staged_predict_proba(X_test)]}
models = {}
for name, encryption in (("plaintext", None), ("Paillier 512-bit", "paillier"),
                         ("OU 512-bit", "ou")):
    # sklearn's leaf constraints, so that the comparison is like for like;
    # min_passive_rows=0 is the paper's protocol (by default passive parties
    # withhold the sums of nodes under 64 rows, which the active party could
    # invert: see the "what crosses the wire" example).
    models[name] = SecureBoostClassifier(
        n_estimators=n_rounds, min_samples_leaf=20, reg_lambda=0.0,
        min_passive_rows=0, encryption=encryption, key_size=512,
        random_state=0, **same)
    models[name].fit(X_train, y_train)
    # staged_predict_proba: one federated inference, then a sum per round.
    curves[f"SecureBoost, {name}"] = [
        log_loss(y_test, p) for p in models[name].staged_predict_proba(X_test)]
for scheme in ("Paillier 512-bit", "OU 512-bit"):
    identical = all(
        np.array_equal(a, b) for a, b in zip(
            models["plaintext"].staged_predict_proba(X_test),
            models[scheme].staged_predict_proba(X_test)))
    print(f"{scheme} and plaintext predictions identical after every round:",
          identical)
rounds = np.arange(1, n_rounds + 1)

# One figure per cell: the gallery draws each cell's figures when it ends.
fig, ax_curve = plt.subplots(figsize=(5.5, 4))
for (label, values), style in zip(curves.items(), ["-", "o", "x", "+"]):
    ax_curve.plot(rounds, values, style, label=label, markersize=8)
ax_curve.set_xlabel("boosting rounds")
ax_curve.set_ylabel("test log-loss")
ax_curve.set_title("Federated = centralized")
ax_curve.legend()
fig.tight_layout()
plt.show()

# %%
# What crossed the wire
# ---------------------
# ``communication_`` counts every message of ``fit``. Per round, the active
# party sends one ciphertext per row (the packed gradient pair); per tree
# level, the passive party sends a few packed, re-randomised ciphertexts of
# candidate sums; per split it won, it answers with the left rows.
paillier = models["Paillier 512-bit"]
print(paillier.communication_.table())
# Phases by step (``histogram/rows`` and ``histogram/sums`` are "histogram").
phases = ["setup", "gradients", "histogram", "split"]
kilobytes = [sum(v["bytes"] for k, v in paillier.communication_.by_phase.items()
                 if k.split("/")[0] == p) / 1e3
             for p in phases]
fig, ax_bytes = plt.subplots(figsize=(5.5, 4))
ax_bytes.bar(phases, kilobytes, color=["grey", "tab:blue", "tab:orange", "tab:green"])
ax_bytes.set_ylabel("kB sent during fit (20 rounds)")
ax_bytes.set_title("Messages by protocol phase (512-bit key)")
fig.tight_layout()
plt.show()

# %%
# The regressor, too
# ------------------
# :class:`~skfed.ensemble.SecureBoostRegressor` uses the squared error: the
# active party's gradients are the residuals, everything else is the same
# protocol. Here in plaintext mode (losslessness was shown above), with the
# three parties holding the diabetes table's columns.
from sklearn.datasets import load_diabetes
from sklearn.ensemble import HistGradientBoostingRegressor
from sklearn.metrics import r2_score

from skfed.ensemble import SecureBoostRegressor

X, y = load_diabetes(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3,
                                                    random_state=0)
hgb_r = HistGradientBoostingRegressor(max_iter=n_rounds, **same).fit(X_train, y_train)
sb_r = SecureBoostRegressor(n_estimators=n_rounds, min_samples_leaf=20,
                            reg_lambda=0.0, min_passive_rows=0, encryption=None,
                            partition=3, random_state=0, **same).fit(X_train, y_train)
fig, ax = plt.subplots(figsize=(5.5, 4))
ax.plot(rounds, [r2_score(y_test, p) for p in hgb_r.staged_predict(X_test)], "-",
        label="HistGradientBoosting (centralized)")
ax.plot(rounds, [r2_score(y_test, p) for p in sb_r.staged_predict(X_test)], "o",
        label="SecureBoostRegressor, 3 parties")
ax.set_xlabel("boosting rounds")
ax.set_ylabel("test R$^2$")
ax.set_title("Diabetes: federated = centralized")
ax.legend()
fig.tight_layout()
plt.show()
