"""SecureBoost (Cheng et al.): lossless, and RL-SecureBoost's Tables I-II.

1. Lossless (the paper's title claim, section 4: the federated trees are the
   trees a centralized XGBoost would grow). The test needs a centralized
   booster with *matched* settings and the same bins, not the scores of two
   boosters with different leaf rules: the columns are pre-binned (16
   quantile levels per column, so that every booster's binning keeps each
   level as its own bin), and ``HistGradientBoostingClassifier`` and
   ``SecureBoostClassifier`` get the same rounds, depth 3, learning rate
   0.3, 32 bins, ``min_samples_leaf=20``, no L2 (``l2_regularization=0``,
   ``reg_lambda=0``), the same minimum hessian (``min_child_weight=1e-3``,
   HistGradientBoosting's fixed ``min_hessian_to_split``), no subsampling,
   no early stopping, and the paper's protocol (``min_passive_rows=0``
   where skfed has that defence; one more row shows its default).
   SecureBoost runs with 1, 2 and 3 parties in plaintext mode and with 2
   parties under Paillier at the paper's 512-bit key (teaching size;
   skfed's default is 2048); printed: the largest difference of the
   raw scores (log-odds) on the test rows against HistGradientBoosting and
   the share of identical predictions.
2. RL-SecureBoost (section 7-8, Tables I and II): the paper's settings (two
   parties holding half of the columns each, depth 3, subsample 0.8,
   learning rate 0.3, 2/3 of the rows for training). SecureBoost against
   RL-SecureBoost (``active_only_rounds=1``: the first tree on the active
   party's columns only): accuracy, F1 and AUC of the first tree and of the
   whole model (Table II) and the mean leaf purity of the first and second
   trees (Table I), beside the paper's figures on Credit 1 and Credit 2.
   Those sets are not shipped with scikit-learn (Kaggle, UCI): the tables
   here are generated at their shapes and class balance ("credit-1-like":
   150,000 x 10, 7% positives; "credit-2-like": 30,000 x 23, 22%
   positives; ``--quick`` uses 15,000 and 6,000 rows; each party holds half
   of the 8 useful columns), so the pattern, not
   the numbers, is what should match: RL's first tree a little weaker, the
   whole models equal, the second tree's leaves far less pure than the
   first's.

Run::

    python benchmarks/papers/secureboost.py            # paper's sizes, 50 rounds
    python benchmarks/papers/secureboost.py --quick    # smaller tables, 20 rounds
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import warnings

import numpy as np
from scipy.special import expit
from sklearn.datasets import make_classification
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.metrics import accuracy_score, f1_score, log_loss, roc_auc_score
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import KBinsDiscretizer
from threadpoolctl import threadpool_limits

import _paper
from _paper import clock, text_table

import skfed
from skfed.ensemble import SecureBoostClassifier

MATCHED = dict(learning_rate=0.3, max_depth=3, max_bins=32,
               early_stopping=False)
#: the paper's protocol: where SecureBoost has a minimum number of rows
#: below which passive parties send no sums (a defence the paper does not
#: have, which changes the trees), it is turned off for the lossless test
PAPER_PROTOCOL = ({"min_passive_rows": 0}
                  if "min_passive_rows" in SecureBoostClassifier().get_params()
                  else {})
#: the paper's Tables I and II: {data: {row: (ACC, F1, AUC)}}, purity
PAPER_TABLE2 = {
    "credit 1": {"1st tree, SecureBoost": (0.9298, 0.012, 0.7002),
                 "1st tree, RL-SecureBoost": (0.9186, 0.0, 0.6912),
                 "overall, SecureBoost": (0.9345, 0.2576, 0.8461),
                 "overall, RL-SecureBoost": (0.9331, 0.2549, 0.8423)},
    "credit 2": {"1st tree, SecureBoost": (0.7806, 0.0, 0.6381),
                 "1st tree, RL-SecureBoost": (0.7793, 0.0, 0.6320),
                 "overall, SecureBoost": (0.8180, 0.4634, 0.7701),
                 "overall, RL-SecureBoost": (0.8179, 0.4650, 0.7682)},
}
PAPER_TABLE1 = {"credit 1": (0.8058, 0.66663), "credit 2": (0.7159, 0.638)}


def credit_like(name, quick):
    """A table at the shape and class balance of the paper's credit set."""
    n, d, positives = {"credit 1": (150_000, 10, 0.067),
                       "credit 2": (30_000, 23, 0.221)}[name]
    if quick:
        n //= {"credit 1": 10, "credit 2": 5}[name]
    X, y = make_classification(n, d, n_informative=min(6, d), n_redundant=2,
                               weights=[1 - positives], flip_y=0.05,
                               class_sep=0.6, shuffle=False, random_state=0)
    # The 8 useful columns come first; even ones to the first half (the
    # active party's), odd ones to the second, so both parties hold some.
    X = X[:, np.argsort(np.arange(d) % 2, kind="stable")]
    return train_test_split(X, y, test_size=1 / 3, stratify=y, random_state=0)


def lossless(quick):
    n_rounds = 10 if quick else 30
    Xtr, Xte, ytr, yte = credit_like("credit 2", quick)
    binner = KBinsDiscretizer(16, encode="ordinal", strategy="quantile",
                              quantile_method="averaged_inverted_cdf").fit(Xtr)
    Xtr, Xte = binner.transform(Xtr), binner.transform(Xte)
    with threadpool_limits(1), clock() as spent:
        hgb = HistGradientBoostingClassifier(
            max_iter=n_rounds, min_samples_leaf=20, l2_regularization=0.0,
            **MATCHED).fit(Xtr, ytr)
    ref = hgb.decision_function(Xte)
    curves = {"HistGradientBoosting": [log_loss(yte, expit(r)) for r in
                                       hgb.staged_decision_function(Xte)]}
    rows = [("HistGradientBoosting (centralized)", "-", "-", "0", "1.0000",
             f"{hgb.score(Xte, yte):.4f}", f"{spent['wall']:.2f}")]
    skfed.set_config(allow_insecure_keys=True)  # the paper's 512-bit keys
    warnings.filterwarnings("ignore", message="A 512-bit Paillier key")
    cases = [(1, None, PAPER_PROTOCOL), (2, None, PAPER_PROTOCOL),
             (3, None, PAPER_PROTOCOL), (2, "paillier", PAPER_PROTOCOL)]
    if PAPER_PROTOCOL:  # and once with the defence's default, to show it
        cases.append((2, None, {}))
    for parties, encryption, protocol in cases:
        rows_fit = (Xtr, ytr) if encryption is None else (Xtr[:2000], ytr[:2000])
        with clock() as spent:
            ours = SecureBoostClassifier(
                n_estimators=n_rounds, min_samples_leaf=20, reg_lambda=0.0,
                min_child_weight=1e-3, partition=parties,
                encryption=encryption, key_size=512, random_state=0,
                **protocol, **MATCHED).fit(*rows_fit)
        if encryption is None and not protocol and PAPER_PROTOCOL:
            gap = np.abs(ours.decision_function(Xte) - ref).max()
            same = np.mean(ours.predict(Xte) == hgb.predict(Xte))
            name = (f"plaintext, default min_passive_rows="
                    f"{ours.min_passive_rows} (not the paper's)")
        elif encryption is None:
            curves[f"SecureBoost, {parties} part."] = [
                log_loss(yte, expit(r))
                for r in ours.staged_decision_function(Xte)]
            gap = np.abs(ours.decision_function(Xte) - ref).max()
            same = np.mean(ours.predict(Xte) == hgb.predict(Xte))
            name = "plaintext"
        else:
            # the encrypted fit against the plaintext fit of the same rows
            plain = SecureBoostClassifier(
                n_estimators=n_rounds, min_samples_leaf=20, reg_lambda=0.0,
                min_child_weight=1e-3, partition=parties, encryption=None,
                random_state=0, **protocol, **MATCHED).fit(*rows_fit)
            gap = np.abs(ours.decision_function(Xte)
                         - plain.decision_function(Xte)).max()
            same = np.mean(ours.predict(Xte) == plain.predict(Xte))
            name = "Paillier 512-bit, first 2,000 rows (vs plaintext)"
        rows.append((f"SecureBoost, {parties} part., {name}", parties,
                     f"{ours.communication_.total_bytes / 1e6:.1f}",
                     f"{gap:.1e}", f"{same:.4f}", f"{ours.score(Xte, yte):.4f}",
                     f"{spent['wall']:.2f}"))
    print(f"\n1. Lossless: credit-2-like table pre-binned to 16 levels per "
          f"column ({len(ytr):,} training rows, {Xtr.shape[1]} columns), "
          f"{n_rounds} rounds, matched settings (depth 3, lr 0.3, "
          "min_samples_leaf=20, no L2, no subsampling)")
    print(text_table(("model", "parties", "MB sent", "max |score diff|",
                      "same predictions", "test acc", "fit s"), rows))
    print("paper: lossless, the same model as centralized XGBoost (section 4, "
          "Figure 4: the same learning curves as GBDT and XGBoost)")
    return curves


def tree_purity(staged_scores, y):
    """Mean leaf purity of trees 1 and 2 (the paper's sum n_i/n p_i): a
    tree's leaf of each row is read from its contribution to the score."""
    out = []
    for before, after in zip(staged_scores, staged_scores[1:]):
        _, leaf = np.unique(np.round(after - before, 10), return_inverse=True)
        purity = 0.0
        for j in np.unique(leaf):
            theta = y[leaf == j].mean()
            purity += (leaf == j).sum() * max(theta, 1 - theta)
        out.append(purity / len(y))
    return out


def metrics(y, score):
    pred = (score > 0).astype(int)
    return accuracy_score(y, pred), f1_score(y, pred), roc_auc_score(y, score)


def rl_secureboost(quick):
    n_rounds = 20 if quick else 50
    aucs = {}
    print(f"\n2. RL-SecureBoost vs SecureBoost (Tables I-II): 2 parties, "
          f"half of the columns each, depth 3, subsample 0.8, lr 0.3, "
          f"{n_rounds} rounds, plaintext mode (the same model as Paillier)")
    for name in ("credit 1", "credit 2"):
        Xtr, Xte, ytr, yte = credit_like(name, quick)
        rows, purity = [], {}
        for label, rl in (("SecureBoost", 0), ("RL-SecureBoost", 1)):
            with clock() as spent:
                clf = SecureBoostClassifier(
                    n_estimators=n_rounds, subsample=0.8, partition=2,
                    active_only_rounds=rl, encryption=None, random_state=0,
                    **PAPER_PROTOCOL, **MATCHED).fit(Xtr, ytr)
            stages = list(clf.staged_decision_function(Xte))
            train_stages = list(clf.staged_decision_function(Xtr))
            # the leaves of trees 1 and 2 over the training rows (the first
            # stage adds the constant baseline, which keeps leaves apart)
            purity[label] = tree_purity([np.zeros(len(ytr))]
                                        + train_stages[:2], ytr)
            for which, score in (("1st tree", stages[0]),
                                 ("overall", stages[-1])):
                paper = PAPER_TABLE2[name][f"{which}, {label}"]
                ours = metrics(yte, score)
                aucs[(name, which, label)] = (ours[2], paper[2])
                rows.append((f"{which}, {label}",
                             *(f"{v:.4f}" for v in ours),
                             *(f"{v:.4f}" for v in paper),
                             f"{spent['wall']:.1f}" if which == "overall" else ""))
        print(f"\n{name}-like: {len(ytr):,} training rows x {Xtr.shape[1]}, "
              f"{ytr.mean():.1%} positives")
        print(text_table(("model", "ACC", "F1", "AUC", "paper ACC",
                          "paper F1", "paper AUC", "fit s"), rows))
        p1, p2 = PAPER_TABLE1[name]
        share = max(ytr.mean(), 1 - ytr.mean())
        print(text_table(
            ("mean leaf purity (Table I)", "1st tree", "2nd tree",
             "majority share", "paper 1st", "paper 2nd"),
            [(label, f"{a:.4f}", f"{b:.4f}", f"{share:.4f}", f"{p1:.4f}",
              f"{p2:.4f}") for label, (a, b) in purity.items()]))
    print("paper: RL-SecureBoost 'performs equally well' (Table II) and the "
          "second tree's leaves are much less pure than the first's (Table "
          "I).\nPurity here is sum_i n_i/n max(theta_i, 1 - theta_i) over the "
          "training rows with the true labels, so it is never below the "
          "majority share;\nthe paper's 0.81 on Credit 1 (93% negatives) "
          "means its purity is measured another way (not stated), so compare "
          "the first-to-second-tree drop, not the values.")
    return aucs


def main(args):
    curves = lossless(args.quick)
    aucs = rl_secureboost(args.quick)
    if args.plot:
        plot(curves, aucs, args.plot)


def plot(curves, aucs, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.3))
    for (label, values), style in zip(curves.items(), ("-", "o", "x", "+")):
        left.plot(np.arange(1, len(values) + 1), values, style, label=label)
    left.set_xlabel("boosting rounds")
    left.set_ylabel("test log-loss")
    left.set_title("Lossless: pre-binned credit-2-like table", fontsize=9)
    left.legend(fontsize=7)
    keys = sorted(aucs)
    x = np.arange(len(keys))
    right.bar(x - 0.2, [aucs[k][0] for k in keys], 0.4, label="skfed")
    right.bar(x + 0.2, [aucs[k][1] for k in keys], 0.4, label="paper")
    right.set_xticks(x, [f"{d[-1]}: {w}\n{'RL' if l.startswith('RL') else 'SB'}"
                         for d, w, l in keys], fontsize=6)
    right.set_ylim(0.5, 1.0)
    right.set_ylabel("test AUC")
    right.set_title("Table II: SecureBoost (SB) vs RL-SecureBoost", fontsize=9)
    right.legend(fontsize=7)
    _paper.save_figure(fig, path)


if __name__ == "__main__":
    _paper.run("SecureBoost: lossless, and RL-SecureBoost (Tables I-II)",
               main, doc=__doc__)
