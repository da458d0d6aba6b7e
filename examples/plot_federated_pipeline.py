"""
=====================================================================
A pipeline federated from the first step to the last
=====================================================================

Three hospitals hold the rows of scikit-learn's breast-cancer table (each
its own patients) and, inside each hospital, two departments hold different
columns: a hybrid split. :class:`~skfed.linear_model.HyFDCAClassifier`
learns on such a split without pooling it; but a pipeline whose first step
is scikit-learn's ``StandardScaler`` would pool the rows to compute the
column means and variances. :class:`skfed.preprocessing.StandardScaler`
computes the same statistics by secure sums between the holders of each
column's rows, and records every message.

We fit both steps with the hospitals named by ``sample_party`` (routed to
both steps by scikit-learn's metadata routing), check that the scaler's
statistics equal those of the pooled table, and show what crossed, by
phase, for each step.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

# %%
# The data and the split
# ----------------------
# ``hospital`` says which hospital holds each row; ``HybridPartition(3, 2)``
# gives the two departments of every hospital half of the columns each.
import matplotlib.pyplot as plt
import numpy as np
from sklearn import config_context
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import train_test_split
from sklearn.compose import ColumnTransformer
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler as PooledScaler

from skfed.linear_model import HyFDCAClassifier
from skfed.partition import HorizontalPartition, HybridPartition
from skfed.preprocessing import (KBinsDiscretizer, MaxAbsScaler,
                                 MinMaxScaler, OneHotEncoder, SimpleImputer,
                                 StandardScaler)
from skfed.privacy import audit

X, y = load_breast_cancer(return_X_y=True)
hospital = np.random.RandomState(0).randint(0, 3, len(y))
X_train, X_test, y_train, y_test, h_train, h_test = train_test_split(
    X, y, hospital, random_state=0, stratify=y)
split = HybridPartition(3, 2)

# %%
# The federated pipeline
# ----------------------
# Both steps ask for ``sample_party``; the pipeline passes the hospitals to
# each step's ``fit``. ``transform`` needs no party: every holder scales its
# own rows with the statistics it received.
with config_context(enable_metadata_routing=True):
    pipe = Pipeline([
        ("scale", StandardScaler(partition=split).set_fit_request(
            sample_party=True)),
        ("clf", HyFDCAClassifier(split, encryption=None, random_state=0)
         .set_fit_request(sample_party=True)),
    ]).fit(X_train, y_train, sample_party=h_train)

pooled = PooledScaler().fit(X_train)
scaler = pipe["scale"]
print("largest difference from the pooled scaler:",
      f"mean {np.max(np.abs(scaler.mean_ - pooled.mean_)):.1e},",
      f"scale {np.max(np.abs(scaler.scale_ - pooled.scale_)):.1e}")
print(f"test accuracy: {pipe.score(X_test, y_test):.3f}")

# %%
# What crossed, step by step
# --------------------------
# The scaler sends, per department pair, two masked secure sums (weights and
# sums, then centred sums of squares) and the fitted statistics back; the
# server decodes totals only. The classifier's phases are HyFDCA's.
print("scaler\n" + scaler.communication_.table())
print("\nclassifier\n" + pipe["clf"].communication_.table())

fig, axes = plt.subplots(1, 2, figsize=(11, 4), width_ratios=[1, 2])
scaler.communication_.plot(ax=axes[0])
axes[0].set_title("StandardScaler: bytes by phase")
pipe["clf"].communication_.plot(ax=axes[1])
axes[1].set_title("HyFDCAClassifier: bytes by phase")
fig.tight_layout()

# %%
# What the scaler's messages reveal
# ---------------------------------
# :func:`~skfed.privacy.audit` checks every message against the scaler's
# privacy contract and runs its attack, ``local_mean_recovery``: the
# server decoding one department's masked upload, and every other holder
# subtracting its own sums from the fitted totals. With three hospitals
# the relative error of each attack is large; with two, a holder would
# recover the other's sums exactly, which ``min_row_holders=3`` refuses.
report = audit(StandardScaler(partition=split), X_train,
               sample_party=h_train)
print(f"{len(report.messages)} messages, {len(report.violations)} violations")
print(report.attacks.groupby("attacker")["value"].median().round(3))

# %%
# Every transformer, and what each one costs
# ------------------------------------------
# Each transformer is fitted here on the hospitals' rows (departments
# aside: a horizontal split) of a few columns, with 5% of the values
# missing and one column cut into a category. Their ``communication_``
# counts differ by protocol: two secure sums for a mean and a variance,
# sixteen secure ORs for the extremes, keyed value counts for categories,
# histogram rounds for quantiles.
rows = HorizontalPartition(3)
rng = np.random.RandomState(0)
X_gaps = X_train[:, :4].copy()
X_gaps[rng.rand(*X_gaps.shape) < 0.05] = np.nan
size = np.digitize(X_train[:, [3]], [400, 700, 1000]).astype(float)
steps = {
    "SimpleImputer + StandardScaler": (
        make_pipeline(SimpleImputer(partition=rows),
                      StandardScaler(partition=rows)), X_gaps),
    "MinMaxScaler": (MinMaxScaler(partition=rows), X_train[:, :4]),
    "MaxAbsScaler": (MaxAbsScaler(partition=rows), X_train[:, :4]),
    "KBinsDiscretizer": (KBinsDiscretizer(n_bins=4, encode="ordinal",
                                          partition=rows), X_train[:, :4]),
    "OneHotEncoder (in a ColumnTransformer)": (ColumnTransformer([
        ("size", OneHotEncoder(partition=rows), [0])]), size),
    "SimpleImputer (mode)": (SimpleImputer(strategy="most_frequent",
                                           partition=rows), size),
}
cost = {}
for name, (est, data) in steps.items():
    if isinstance(est, Pipeline):
        est.fit(data, **{f"{s}__sample_party": h_train for s in est.named_steps})
        summaries = [step.communication_ for _, step in est.steps]
    elif isinstance(est, ColumnTransformer):
        # a ColumnTransformer passes fit parameters by metadata routing only
        with config_context(enable_metadata_routing=True):
            est.transformers[0][1].set_fit_request(sample_party=True)
            est.fit(data, sample_party=h_train)
        summaries = [t.communication_ for _, t, _ in est.transformers_]
    else:
        est.fit(data, sample_party=h_train)
        summaries = [est.communication_]
    cost[name] = (sum(c.total_messages for c in summaries),
                  sum(c.total_bytes for c in summaries))
    print(f"{name:39s} {cost[name][0]:4d} messages {cost[name][1]:8d} bytes")

fig, ax = plt.subplots(figsize=(8, 3.5))
ax.barh(list(cost), [b / 1e3 for _, b in cost.values()])
ax.set_xlabel("kB sent during fit (3 row holders)")
ax.invert_yaxis()
fig.tight_layout()
