"""
=============================================
Partitions, parties and what crosses between
=============================================

Every skfed estimator starts from the same two ideas:

1. a **partition** says which party holds which columns (vertical), which
   rows (horizontal) or which block of both (hybrid);
2. the parties are **actors**: each one holds only its own block, and the
   only thing that ever leaves a party is a *message*, which skfed counts.

This example uses no estimator at all, only the foundation those estimators
are built on. Four hospitals hold different measurements of the same
patients (a vertical split of scikit-learn's breast-cancer table) and want
the sum over hospitals of a per-patient score ``x_l^T w_l``, where hospital
``l`` knows only its own columns ``x_l`` and weights ``w_l``. This sum is the
inner loop of FDSKL and AVFKAM (``w^T x`` for a random direction ``w``).

We compute it twice: with a plain tree sum, where partial sums cross in the
clear, and with FDSKL's masked two-tree sum, where every message is hidden
by random offsets, and we look at what the receiving party actually saw.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

# %%
# The data and a vertical partition by column names
# --------------------------------------------------
# The breast-cancer table has 30 columns: ten measurements as a mean, their
# standard error and their worst value. We give the means to one hospital,
# the errors to a second one and split the worst values between two more.
# Column groups are written with the DataFrame's own column names.
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.preprocessing import StandardScaler

from skfed.base import party_seeds
from skfed.partition import HorizontalPartition, HybridPartition, VerticalPartition

X, y = load_breast_cancer(return_X_y=True, as_frame=True)
means = [c for c in X.columns if c.startswith("mean ")]
errors = [c for c in X.columns if c.endswith(" error")]
worst = [c for c in X.columns if c.startswith("worst ")]
spec = VerticalPartition([means, errors, worst[:5], worst[5:]])
partition = spec.resolve(X)

for k in range(partition.n_parties):
    names = X.columns[partition.columns(k)]
    print(f"party{k}: {len(names):2d} columns, e.g. {list(names[:2])}")
print("labels held by parties", partition.active_parties)

# %%
# Resolving a spec turns names into integer column indices; estimators do the
# same in ``fit`` and keep the result as ``partition_``. The same spec
# language covers rows. A horizontal partition gives each party some rows
# (by a rule, or by a per-row ``sample_party`` array passed to ``fit``); a
# hybrid one is a grid of row groups times column groups.
rows = HorizontalPartition(3, split="random", random_state=0).resolve(X)
print("rows per party (horizontal):", np.bincount(rows.owners).tolist())
grid = HybridPartition(2, [means + errors, worst]).resolve(X)
for client in range(grid.n_clients):
    print(f"client{client}: row group / column group {grid.client_cell(client)},"
          f" {len(grid.client_rows(client))} rows x "
          f"{len(grid.client_columns(client))} columns")

# %%
# Each party is an actor with a private state
# -------------------------------------------
# Scaling a column needs only that column, so in a vertical split every party
# standardises its own block. Each party draws its own weights ``w_l`` from a
# seed of its own: nobody ever sends weights. ``party_seeds`` draws one seed
# per party from a single ``random_state``, as estimators do.
from skfed.federation import (  # noqa: E402
    Federation,
    PartyState,
    balanced_tree,
    choose_excluded,
    masked_tree_sum,
    record_messages,
    totally_different_trees,
    tree_leaves,
    tree_leader,
    tree_sum,
)

names = [f"party{k}" for k in range(partition.n_parties)]
blocks = [StandardScaler().fit_transform(block)
          for block in partition.split(X.to_numpy())]
seeds = party_seeds(random_state=0, n=len(names))
states = {name: {"X": block, "seed": seed}
          for name, block, seed in zip(names, blocks, seeds)}


def partial_score(state):
    """Run on one party: ``x_l^T w_l`` for every patient, from its own block."""
    w = np.random.default_rng(state.seed).normal(size=state.X.shape[1])
    return state.X @ w


def true_partials():
    """What each party computes (we may look: we are the simulator)."""
    return {name: partial_score(PartyState(**s)) for name, s in states.items()}


truth = true_partials()
total = sum(truth.values())

# %%
# A plain tree sum
# ----------------
# ``tree_sum`` adds the parties' values up a balanced binary tree: at every
# inner node the right child's leader sends its partial sum to the left
# child's leader, so four parties need two rounds and three messages, and
# the total lands at ``party0``. ``record_messages`` keeps every message
# with its payload, which lets us check what ``party0`` received.
tree = balanced_tree(names)
print("tree:", tree)

with record_messages() as plain:
    with Federation(states) as fed:
        own = {name: fed[name].call(partial_score) for name in names}
        result = tree_sum(fed, tree, own, phase="tree-sum").result()
        plain_summary = fed.summary()

print("equals the centralised sum:", np.allclose(result, total))
print(plain_summary.table(by="link"))

# %%
# Every message holds one number per patient (569 floats of 8 bytes). The
# problem is *what* they hold: ``party0`` receives ``party1``'s partial score
# and the sum of ``party2`` and ``party3``, in the clear. With two parties
# that would reveal the other party's score outright.


def subtree_senders(tree):
    """Map each sender of a tree sum to the parties whose values it sends."""
    out = {}

    def visit(node):
        if isinstance(node, tuple):
            out[tree_leader(node[1])] = tree_leaves(node[1])
            for child in node:
                visit(child)

    visit(tree)
    return out


def received_vs_true(recorder, tree, phase):
    """Pairs (what the receiver got, the senders' true unmasked partial sum)."""
    senders = subtree_senders(tree)
    pairs = []
    for m in recorder.messages:
        if m.phase == phase:
            got = np.asarray(m.payload[0])
            pairs.append((got, sum(truth[p] for p in senders[m.sender])))
    return pairs


plain_pairs = received_vs_true(plain, tree, "tree-sum")
for got, true in plain_pairs:
    print("received == sender's true partial sum:", np.allclose(got, true))

# %%
# FDSKL's masked two-tree sum
# ---------------------------
# FDSKL (Algorithm 3) only needs ``cos(w^T x + b)`` with a random phase
# ``b``. In skfed every party but one adds to its value a uniform mask drawn
# from its own cryptographic generator, fresh for every entry, in a ring
# (integers modulo ``2^64`` standing for fixed-point numbers), and sends the
# masked value up a tree ``T1``; the masks go up a second tree ``T2`` and are
# subtracted, so they cancel exactly. The one party ``l'`` (drawn at random)
# adds its private offset ``b^{l'}`` instead of a mask: the receiver is left
# with ``w^T x + b^{l'}``, the whole sum plus one random phase, exactly what
# the random feature needs. ``l'`` only ever sends inside a sum that carries
# the others' fresh masks, and the trees are *totally different* (no subtree
# of more than one party in common), so no party can subtract a ``T2``
# partial sum of masks from a ``T1`` partial sum and unmask a group of
# others: everything but the result looks uniformly random.


def masked_partial(state):
    """Run on one party: its value and its private offset (only ``l'``'s is
    used; the others mask with fresh ring masks drawn inside the protocol)."""
    value = partial_score(state)
    offset = np.random.default_rng([state.seed, 1]).uniform(0, 2 * np.pi,
                                                            size=value.shape)
    return value, offset


excluded = choose_excluded(names, "party0", random_state=0)
t1, t2 = totally_different_trees(names, "party0", excluded, random_state=0)
print("T1:", t1, "  T2:", t2, "  l' =", excluded)

with record_messages() as masked:
    with Federation(states) as fed:
        masked_result = masked_tree_sum(fed, (t1, t2), masked_partial,
                                        phase="masked-sum").result()
        masked_summary = fed.summary()

# Only for this check do we recompute l''s offset from its seed; no party can.
offset_excluded = masked_partial(PartyState(**states[excluded]))[1]
print("receiver holds w^T x + b^{l'}:",
      np.allclose(masked_result, total + offset_excluded))
print(masked_summary.table(by="phase"))

# %%
# The masked sum costs one more round and a few more messages (the ``T2``
# sum of masks), all of the same size. In return, look at what ``party0``
# received over ``T1``, compared with the true partial sums of the senders,
# both taken modulo ``2 pi`` (the period of the cosine, which is all that
# matters to FDSKL): the plain sum shows them on the diagonal, the masked
# sum spreads them uniformly over the square.
masked_pairs = received_vs_true(masked, t1, "masked-sum/T1")

fig, axes = plt.subplots(1, 3, figsize=(13, 4))
for ax, pairs, title in [(axes[0], plain_pairs, "plain tree sum"),
                         (axes[1], masked_pairs, "masked sum, tree T1")]:
    for got, true in pairs:
        ax.scatter(np.mod(true, 2 * np.pi), np.mod(got, 2 * np.pi), s=4,
                   alpha=0.5)
    ax.set(title=f"{title}:\nwhat the receiver saw",
           xlabel="senders' true partial sum (mod 2 pi)",
           ylabel="message received (mod 2 pi)", aspect="equal")

labels = sorted(set(plain_summary.by_phase) | set(masked_summary.by_phase))
kib = [(plain_summary.by_phase.get(p, {}).get("bytes", 0)
        + masked_summary.by_phase.get(p, {}).get("bytes", 0)) / 1024
       for p in labels]
axes[2].barh(labels, kib, color=["C0" if p in plain_summary.by_phase else "C1"
                                 for p in labels])
axes[2].set(title="bytes sent per protocol phase", xlabel="KiB")
fig.tight_layout()

# %%
# What to take away
# -----------------
# * A partition is resolved against the data; estimators keep it as
#   ``partition_``.
# * Parties only exchange messages; a fitted estimator reports their counts
#   in ``communication_`` (the same :class:`~skfed.federation.CommunicationSummary`
#   as ``fed.summary()`` above), and ``record_messages`` shows their content.
# * The same sum can be computed in ways that reveal very different things.
#   The user-guide page of each algorithm says what its messages reveal, and
#   :ref:`security_guide` collects them in one place.
