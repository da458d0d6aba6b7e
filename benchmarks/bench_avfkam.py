"""AVFKAMRanker at scale, its messages against the paper's formula, and the
paper's straggler experiment; all tables measured in one run.

1. Scale: test ROC AUC and fit time at 2k, 10k, 50k and 200k rows
   (``make_classification``, 20 columns, 10% positives, 70/30 split) for
   AVFKAM with one party (no messages) and with three parties (one active),
   the same triply stochastic maths centralized in numpy (one machine, every
   column, no parties), ``SVC(class_weight="balanced")`` and what a user
   would pick for large data, ``RBFSampler`` + ``SGDClassifier`` (hinge,
   balanced). SVC is skipped above 10k rows: its kernel matrix and
   super-quadratic solver take minutes at 50k and hours at 200k.
2. Sparse: an rcv1-like table (tf-idf-like rows, density 0.16%), CSR input,
   the same estimators.
3. Bytes per step: ``communication_`` split into the preprocessing and the
   training steps, divided by the steps, beside the paper's formula.
4. Stragglers (section 6.3): synchronous (VFKAM) against asynchronous
   (AVFKAM) for the same number of updates, one active party ``s`` times
   slower (``party_delays``: it takes ``s`` times its own work per update),
   with 8 parties of which 4 are active (the paper's q=8, m=4), and with 2
   active parties, one 4x slower (the issue's acceptance row).
5. (``--quality``) the imbalanced-table comparison of
   ``benchmarks/_avfkam_quality.py`` when that module is present.

The machine these numbers come from may be shared with other jobs: the
header prints the load average, and every ratio is measured within the run.
The baselines and the numpy loop run with BLAS on one thread, as every
party does.

Run::

    python benchmarks/bench_avfkam.py            # all sizes (~15 min idle)
    python benchmarks/bench_avfkam.py --quick    # 2k and 10k rows (~2 min)
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import argparse
import os
import time

import numpy as np
import scipy.sparse as sp
from sklearn.datasets import make_classification
from sklearn.kernel_approximation import RBFSampler
from sklearn.linear_model import SGDClassifier
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC
from threadpoolctl import threadpool_limits

from skfed.base import party_seeds
from skfed.kernel_approximation import keyed_directions, keyed_phases
from skfed.kernel_methods import AVFKAMRanker
from skfed.losses import get_loss
from skfed.partition import VerticalPartition

#: above this many training rows SVC is not run (see the module docstring)
SVC_MAX_ROWS = 10_000
#: AVFKAM's default pool of random features (RBFSampler gets as many)
DEFAULT_POOL = AVFKAMRanker().n_random_features


def table(rows, header):
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    fmt = "   " + "  ".join(f"{{:<{w}}}" if i == 0 else f"{{:>{w}}}"
                          for i, w in enumerate(widths))
    for row in (header, *rows):
        print("" + fmt.format(*row))


def timed(fn, one_thread=False):
    """``(fn(), seconds)``. ``one_thread``: BLAS on one thread, as each
    party runs (on busy cores OpenBLAS threads spin and slow small products
    down several times)."""
    start = time.perf_counter()
    if one_thread:
        with threadpool_limits(limits=1):
            out = fn()
    else:
        out = fn()
    return out, time.perf_counter() - start


def dense_data(n, seed=0):
    X, y = make_classification(n_samples=n, n_features=20, n_informative=8,
                               n_redundant=4, weights=[0.9], flip_y=0.02,
                               random_state=seed)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, stratify=y,
                                          random_state=seed)
    scaler = StandardScaler().fit(Xtr)
    return scaler.transform(Xtr), scaler.transform(Xte), ytr, yte


def sparse_data(n, d, density=0.0016, n_topics=20, seed=0):
    """rcv1-like: documents of one of ``n_topics`` topics, each drawing most
    of its ``density * d`` words from its topic's vocabulary (2% of the
    columns) and the rest from all of them; tf-idf-like weights, rows of
    unit norm. The positives (10%) are two of the topics."""
    rng = np.random.RandomState(seed)
    per_row = max(2, int(round(density * d)))
    vocab = [rng.choice(d, size=max(per_row, d // 50), replace=False)
             for _ in range(n_topics)]
    topic = rng.choice(n_topics, size=n)
    indices = np.empty((n, per_row), dtype=np.int64)
    for t in range(n_topics):
        rows = np.flatnonzero(topic == t)
        own = rng.rand(len(rows), per_row) < 0.7
        indices[rows] = np.where(
            own, vocab[t][rng.randint(len(vocab[t]), size=(len(rows), per_row))],
            rng.randint(d, size=(len(rows), per_row)))
    X = sp.csr_matrix((rng.lognormal(size=n * per_row),
                       (np.repeat(np.arange(n), per_row), indices.ravel())),
                      shape=(n, d))
    X.sum_duplicates()
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    X = (sp.diags(1.0 / np.maximum(norms, 1e-12)) @ X).tocsr()
    # two topics of ~5% each are the positive class; a few labels flipped
    y = np.isin(topic, (0, 1)) ^ (rng.rand(n) < 0.01)
    return train_test_split(X, y.astype(int), test_size=0.3, stratify=y,
                            random_state=seed)


def centralized(Xtr, ytr, Xte, est):
    """The same maths on one machine, in plain numpy: the model of ``est``,
    a fitted one-party AVFKAMRanker, recomputed without parties, threads or
    messages (its key, loop seed, held-out split, step and updates)."""
    loop_seed = party_seeds(est.random_state, 4)[3]  # as fit draws them
    ids = np.arange(est.n_random_features)
    W = keyed_directions(est._party_keys[0], Xtr.shape[1], ids, est.kernel,
                         est.gamma_)
    b = keyed_phases(est._party_keys[0], ids)
    Z = np.sqrt(2.0) * np.cos(Xtr @ W + b)
    y_signed = np.where(ytr == est.classes_[1], 1.0, -1.0)
    split = est._validation_split(y_signed)
    train = np.arange(len(ytr)) if split is None else split[0]
    pos, neg = train[y_signed[train] > 0], train[y_signed[train] < 0]
    w, rng = np.zeros(len(ids)), np.random.RandomState(loop_seed)
    loss = get_loss(est.loss, pairwise=True)
    B, r = est.batch_size, min(est.features_per_step, len(ids))
    lr = est.learning_rate_
    for _ in range(est.n_iter_):
        rows = np.r_[pos[rng.randint(len(pos), size=B)],
                     neg[rng.randint(len(neg), size=B)]]
        j = rng.choice(len(ids), r, replace=False)
        f = Z[rows] @ w
        slope = loss.derivative(f[:B] - f[B:])
        block = Z[np.ix_(rows, j)]
        w *= 1 - lr * est.alpha
        w[j] += -lr * slope @ (block[:B] - block[B:]) / (B * r)
    return np.sqrt(2.0) * np.cos(Xte @ W + b) @ w


def _variance(X):
    if sp.issparse(X):
        mean = X.sum() / (X.shape[0] * X.shape[1])
        return X.multiply(X).sum() / (X.shape[0] * X.shape[1]) - mean**2
    return X.var()


def baselines(Xtr, Xte, ytr, yte, n_components):
    """SVC (when small enough) and RBFSampler + SGDClassifier: (AUC, s)."""
    out = {}
    gamma = 1.0 / (Xtr.shape[1] * _variance(Xtr))
    if Xtr.shape[0] <= SVC_MAX_ROWS:
        svc, t = timed(lambda: SVC(gamma=gamma, class_weight="balanced")
                       .fit(Xtr, ytr), one_thread=True)
        out["SVC"] = (roc_auc_score(yte, svc.decision_function(Xte)), t)
    sgd, t = timed(lambda: make_pipeline(
        RBFSampler(gamma=gamma, n_components=n_components, random_state=0),
        SGDClassifier(class_weight="balanced", random_state=0)).fit(Xtr, ytr),
        one_thread=True)
    out["RBFSampler+SGD"] = (roc_auc_score(yte, sgd.decision_function(Xte)), t)
    return out


def ours(Xtr, Xte, ytr, yte, **params):
    """AVFKAM with 1 party and with 3 parties (party0 active)."""
    out, fits = {}, {}
    for q in (1, 3):
        fits[q], t = timed(lambda: AVFKAMRanker(q, random_state=0, **params)
                           .fit(Xtr, ytr))
        out[f"AVFKAM {q} part."] = (fits[q].score(Xte, yte), t,
                                    fits[q].communication_.total_bytes)
    scores, t = timed(lambda: centralized(Xtr, ytr, Xte, fits[1]),
                      one_thread=True)
    out["numpy, same maths"] = (roc_auc_score(yte, scores), t)
    gap = np.abs(scores - fits[1].decision_function(Xte) - fits[1].threshold_)
    return out, float(gap.max())


def _print_case(label, res):
    rows = []
    for name, value in res.items():
        auc, seconds = value[0], value[1]
        sent = f"{value[2] / 1e6:.1f}" if len(value) > 2 else ""
        rows.append((name, f"{auc:.4f}", f"{seconds:.2f}", sent))
    print(f"   {label}")
    table(rows, ("estimator", "test AUC", "fit s", "MB sent"))


def scale_table(sizes):
    print("\n1. Scale: make_classification, 20 columns, 10% positives, 70/30 "
          "split; AVFKAM defaults (n_random_features="
          f"{DEFAULT_POOL}) except where noted; RBFSampler with as many "
          "components")
    summary = []
    for n in sizes:
        Xtr, Xte, ytr, yte = dense_data(n)
        params = {}
        if n > 100_000:
            # 2,000 features x 140,000 rows are 2.2 GB of float64 per copy
            params["n_random_features"] = 500
        res, gap = ours(Xtr, Xte, ytr, yte, **params)
        res.update(baselines(Xtr, Xte, ytr, yte,
                             params.get("n_random_features", DEFAULT_POOL)))
        note = (f" (n_random_features={params['n_random_features']}, "
                "RBFSampler too)" if params else "")
        _print_case(f"{n:,} rows ({len(ytr):,} training){note}; numpy scores "
                    f"= 1-party scores within {gap:.1e}", res)
        one, three = res["AVFKAM 1 part."], res["AVFKAM 3 part."]
        summary.append((f"{n:,}", f"{one[1]:.2f}", f"{three[1]:.2f}",
                        f"{three[1] / one[1]:.2f}",
                        f"{res['numpy, same maths'][1]:.2f}",
                        f"{res['SVC'][1]:.2f}" if "SVC" in res else "skipped",
                        f"{res['RBFSampler+SGD'][1]:.2f}"))
    print("fit seconds side by side:")
    table(summary, ("rows", "1 party", "3 parties", "3/1", "numpy", "SVC",
                    "RBFSampler+SGD"))
    print(f"   SVC skipped above {SVC_MAX_ROWS:,} training rows (kernel "
          "matrix, super-quadratic solver: minutes at 50k, hours at 200k)")


def sparse_table(n, d):
    print(f"\n2. Sparse (rcv1-like): {n:,} x {d:,}, density 0.16%, CSR, 20 "
          "topics with their own vocabularies, two of them positive (~10%); "
          "the paper's rcv1 is 534,135 x 47,236, smaller here to keep the run "
          "short")
    Xtr, Xte, ytr, yte = sparse_data(n, d)
    res, gap = ours(Xtr, Xte, ytr, yte)
    res.update(baselines(Xtr, Xte, ytr, yte, DEFAULT_POOL))
    _print_case(f"{n:,} rows, {Xtr.nnz / Xtr.shape[0]:.0f} non-zeros per row; "
                f"numpy scores = 1-party scores within {gap:.1e}", res)


def paper_values_per_step(n, q, m_active, batch, seeds_per_step):
    """The paper's messages per step (appendix C, Algorithms 1-3), values.

    A step creates ``seeds_per_step`` new seeds; each is aggregated once
    over the ``n`` rows through ``T1`` (``q - 1`` edges) with its phase sum
    over ``T2`` (``q - 2`` edges, one value per seed). The step's ``2 B``
    rows get every other worker's ``f^l`` (``2 B (q - 1)`` values), and the
    decay goes to the other ``m - 1`` active workers.
    """
    pre = seeds_per_step * (n * (q - 1) + max(q - 2, 0))
    train = 2 * batch * (q - 1) + (m_active - 1)
    return pre, train


def bytes_table(n, quick):
    print(f"\n3. Bytes per step: {n:,} rows x 8 columns, squared loss, "
          "communication_ of the fit split into the preprocessing (phases "
          "preprocess/*, gamma/*) and the rest, divided by the steps")
    X, y = make_classification(n_samples=n, n_features=8, n_informative=5,
                               weights=[0.9], random_state=0)
    X = StandardScaler().fit_transform(X)
    default = AVFKAMRanker()
    B, r, D = (default.batch_size, default.features_per_step,
               default.n_random_features)
    settings = [(3, 1, B, r, D, 1000), (4, 2, B, r, D, 1000),
                (8, 4, B, r, D, 1000), (3, 1, 1, 1, D, 1000)]
    if quick:
        settings = settings[:2] + settings[3:]
    rows = []
    for q, m, B, r, D, t in settings:
        est = AVFKAMRanker(VerticalPartition(q, active_parties=tuple(range(m))),
                           batch_size=B, features_per_step=r,
                           n_random_features=D, max_iter=t, random_state=0,
                           asynchronous=False).fit(X, y)
        frame = est.communication_.to_frame()
        pre_mask = frame["phase"].str.startswith(("preprocess", "gamma"))
        pre = frame.loc[pre_mask, "bytes"].sum() / est.n_iter_
        train = frame.loc[~pre_mask, "bytes"].sum() / est.n_iter_
        p_pre, p_train = paper_values_per_step(n, q, m, B, r)
        rows.append((f"q={q} m={m} B={B} seeds/step={r} pool={D} t={t}",
                     f"{pre / 1e3:.1f}", f"{train / 1e3:.2f}",
                     f"{8 * p_pre / 1e3:.1f}", f"{8 * p_train / 1e3:.2f}",
                     f"{(pre + train) / (8 * (p_pre + p_train)):.3f}"))
    table(rows, ("setting", "ours pre kB", "ours train kB", "paper pre kB",
                 "paper train kB", "ours/paper"))
    print("paper: per step, seeds/step new seeds x (n (q-1) + (q-2)) values "
          "for the features, 2 B (q-1) + (m-1) for f^l and the decay, 8 bytes "
          "each; ours: measured (angles are 4-byte ring elements, T2 carries "
          "fresh masks per entry, the pool is reused across steps)")


def straggler_run(part, delays, max_iter, reps, Xtr, ytr, Xte, yte,
                  **params):
    """Median wall times of ``reps`` synchronous and asynchronous fits (in
    alternating order, so a burst of load from other jobs hits both modes),
    the AUCs and the asynchronous update counts of the first pair."""
    times, first = {False: [], True: []}, {}
    for rep in range(reps):
        for mode in ((False, True) if rep % 2 == 0 else (True, False)):
            est = AVFKAMRanker(part, asynchronous=mode, max_iter=max_iter,
                               party_delays=delays, random_state=0,
                               **params).fit(Xtr, ytr)
            times[mode].append(est.training_time_)
            first.setdefault(mode, (est.score(Xte, yte),
                                    est.n_iter_per_party_))
    return {mode: (float(np.median(times[mode])), *first[mode])
            for mode in (False, True)}


def straggler_label(s):
    """``s`` and, where it is one, the paper's delay fraction ``d = s - 1``
    (its "1x", "2x", "4x" are s = 2, 3, 5; s = 1 is no straggler)."""
    if s == 1:
        return "s=1 (none)"
    d = s - 1
    paper = " (paper's {}x)".format(d) if d in (1, 2, 4) else f" (d={d:g})"
    return f"s={s:g}{paper}"


def straggler_table(n, max_iter, reps, quick):
    print(f"\n4. Stragglers: {n:,} rows x 16 columns; the same {max_iter} "
          "updates synchronously (VFKAM) and asynchronously (AVFKAM), median "
          f"wall time of {reps} fits each; a party with factor s takes s "
          "times its own work per update (the paper's delay fraction d is "
          "s = 1 + d)")
    X, y = make_classification(n_samples=n, n_features=16, n_informative=8,
                               weights=[0.9], random_state=0)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, stratify=y,
                                          random_state=0)
    scaler = StandardScaler().fit(Xtr)
    Xtr, Xte = scaler.transform(Xtr), scaler.transform(Xte)
    # Steps large enough that a party's own work, not the messages,
    # dominates an update (as for the paper's compute-bound workers).
    params = dict(batch_size=256, features_per_step=512, n_random_features=4000,
                  early_stopping=False)
    cases = [("q=8, m=4", 8, 4, s) for s in ((1, 4) if quick else (1, 2, 4))]
    cases.append(("q=4, m=2 (acceptance)", 4, 2, 4))
    rows = []
    for label, q, m, s in cases:
        delays = [1.0] * q
        delays[1] = s  # party1, an active party, is the straggler
        part = VerticalPartition(q, active_parties=tuple(range(m)))
        res = straggler_run(part, delays, max_iter, reps, Xtr, ytr, Xte, yte,
                            **params)
        (ts, auc_s, _), (ta, auc_a, per) = res[False], res[True]
        rows.append((label, straggler_label(s), f"{ts:.2f}", f"{ta:.2f}", f"{ta / ts:.2f}",
                     f"{auc_s:.4f}", f"{auc_a:.4f}", f"{auc_a - auc_s:+.4f}",
                     "/".join(str(per[p]) for p in sorted(per))))
    table(rows, ("setting", "straggler", "sync s", "async s", "async/sync",
                 "sync AUC", "async AUC", "diff", "async updates per party"))
    print("   acceptance: async/sync <= 0.5 and |diff| <= 0.005 on the last "
          "row (2 active parties, one 4x slower)")


def quality_section(quick):
    try:
        from _avfkam_quality import HEADER, quality_rows
    except ImportError:
        print("\n5. benchmarks/_avfkam_quality.py is not in this checkout: "
              "no imbalanced-table comparison.")
        return
    print("\n5. Imbalanced tables (benchmarks/_avfkam_quality.py): defaults, "
          "2 parties (1 active), against SVC(class_weight='balanced'), "
          f"held-out ROC AUC, mean over {1 if quick else 3} split(s)")
    table(quality_rows(quick), HEADER)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="2k and 10k rows, smaller sparse and straggler runs")
    parser.add_argument("--quality", action="store_true",
                        help="also run benchmarks/_avfkam_quality.py")
    parser.add_argument("--only", choices=("scale", "sparse", "bytes",
                                           "straggler"),
                        help="run one section")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    start = time.perf_counter()
    quick = args.quick
    sections = {
        "scale": lambda: scale_table((2_000, 10_000) if quick else
                                     (2_000, 10_000, 50_000, 200_000)),
        "sparse": lambda: sparse_table(*((5_000, 10_000) if quick
                                         else (20_000, 47_000))),
        "bytes": lambda: bytes_table(2_000, quick),
        "straggler": lambda: straggler_table(6_000, 200 if quick else 400,
                                             2 if quick else 3, quick),
    }
    for name, run in sections.items():
        if args.only in (None, name):
            run()
    if args.quality:
        quality_section(quick)
    print(f"\nTotal {time.perf_counter() - start:.0f} s, load average "
          f"{os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
