"""SecureBoost on wide data: seconds per tree on an a9a-shaped table.

Called by ``benchmarks/bench_secureboost.py --a9a`` (issue 18, item 6).
FedTree reports 5.25 s per tree on a9a (32,561 x 123, depth 6, 255 bins,
two parties) with 16 CPU threads (~84 thread-seconds), FATE 1.x 34 s. This
module fits ``trees`` trees of a table with a9a's shape (binary one-hot
columns, ~11% ones, 14 ones per row), half the columns on each of two
parties, depth 6, ``max_bins=255``, and prints for each tree its
wall-clock seconds (``seconds``) and its CPU seconds (``CPU s``: all
threads and waited-for forked workers; on a shared machine the wall-clock
seconds grow with the load, these do not), and the CPU seconds split into

- ``encrypt``: the active party's gradients, one packed ciphertext per row
  (the first tree also builds the key owner's CRT tables);
- ``hist``: the passive party's encrypted candidate sums;
- ``packing``: its candidate packing and re-randomisation (timed around
  :func:`skfed.ensemble._histogram.pack_candidates`);
- ``decrypt``: the active party's decryption;
- ``other``: split finding, the owner's lookups and the messages,

beside the same fit with the code of another git revision (``baseline``,
default: the commit before the sparse-aware histograms), run in a child
process on a copy of that revision's ``skfed`` package (``git archive``), so
both are measured on the same machine in the same run.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import contextlib
import io
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import types
from unittest import mock

import numpy as np

__all__ = ["a9a_like", "fit_splits", "tree_splits", "wide"]

# Today's code before the sparse-aware histograms (issue 18, item 6).
BASELINE = "51c1df5"
FEDTREE_SECONDS, FEDTREE_THREADS, FATE_SECONDS = 5.25, 16, 34.0


def a9a_like(n_rows=32_561, n_features=123, seed=0):
    """Binary columns with a9a's shape and density (~11% ones, 14 per row)."""
    rng = np.random.default_rng(seed)
    # a9a one-hot encodes 14 categorical/binned attributes: one 1 per group.
    groups = np.array_split(np.arange(n_features), 14)
    X = np.zeros((n_rows, n_features))
    for group in groups:
        weights = rng.dirichlet(np.ones(group.size))
        X[np.arange(n_rows), rng.choice(group, size=n_rows, p=weights)] = 1.0
    logit = X @ rng.normal(0, 1, n_features) - 1.2
    y = (rng.random(n_rows) < 1 / (1 + np.exp(-logit))).astype(int)
    return X, y


def cpu_seconds():
    """CPU seconds so far: this process's threads and its waited-for children."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def tree_splits(n_rows, key_size, n_jobs, trees, encryption="paillier"):
    """Fit ``trees`` depth-6 trees; per tree, wall and CPU seconds by step.

    The fit's own step clock (``verbose=2``) is switched to CPU seconds, so
    the split does not depend on what else the machine runs; the tree's
    wall-clock seconds come from the progress line.
    """
    from skfed.ensemble import SecureBoostClassifier

    X, y = a9a_like(n_rows)
    clf = SecureBoostClassifier(n_estimators=trees, max_depth=6, max_bins=255,
                                encryption=encryption, key_size=key_size,
                                n_jobs=n_jobs, early_stopping=False, random_state=0,
                                verbose=2)
    return fit_splits(clf, X, y)


def fit_splits(clf, X, y, on_round=None, patches=()):
    """Fit ``clf`` (``verbose=2``); per round, wall and CPU seconds by step.

    ``on_round()`` is called as each round starts and once after the fit;
    ``patches`` are more context managers held during the fit. Returns the
    splits and the model after each round (see :func:`tree_splits`).
    """
    from skfed.ensemble import _grower, _histogram, _protocol

    trees = clf.n_estimators
    packing, marks = [], []
    pack, gradients = _histogram.pack_candidates, _protocol.active_gradients

    def timed_pack(*args, **kwargs):
        start = cpu_seconds()
        message = pack(*args, **kwargs)
        packing.append(cpu_seconds() - start)
        return message

    def marked_gradients(*args, **kwargs):
        marks.append(cpu_seconds())  # a round starts with its gradients
        if on_round is not None:
            on_round()
        return gradients(*args, **kwargs)

    cpu_clock = types.SimpleNamespace(perf_counter=cpu_seconds)
    out = io.StringIO()
    with mock.patch.object(_histogram, "pack_candidates", timed_pack), \
            mock.patch.object(_protocol, "active_gradients", marked_gradients), \
            mock.patch.object(_protocol, "time", cpu_clock), \
            mock.patch.object(_grower, "time", cpu_clock), \
            contextlib.ExitStack() as more, contextlib.redirect_stdout(out):
        for patch in patches:
            more.enter_context(patch)
        clf.fit(X, y)
    marks.append(cpu_seconds())
    if on_round is not None:
        on_round()
    text = out.getvalue()
    totals = [float(s) for s in re.findall(r"round \d+/\d+: .*?, ([0-9.]+) s", text)]
    phases = [dict((k, float(v)) for k, v in re.findall(r"(\w+) ([0-9.]+)", line))
              for line in re.findall(r"seconds: (.*)", text)]
    per_tree = len(packing) // trees
    splits = []
    for t, (seconds, steps) in enumerate(zip(np.diff([0.0] + totals), phases)):
        packed = sum(packing[t * per_tree:(t + 1) * per_tree])
        cpu = marks[t + 1] - marks[t]
        known = steps["encrypt"] + steps["histograms"] + steps["decrypt"]
        splits.append({"tree": float(seconds), "cpu": cpu,
                       "encrypt": steps["encrypt"],
                       "histograms": steps["histograms"] - packed, "packing": packed,
                       "decrypt": steps["decrypt"], "other": cpu - known})
    # The model after each tree, to check that both revisions fit the same.
    return splits, [float(np.round(p[:, 1].sum(), 9))
                    for p in clf.staged_predict_proba(X[:2000])]


def _baseline_splits(revision, n_rows, key_size, n_jobs, trees,
                     function="_secureboost_wide:tree_splits"):
    """``function`` (default :func:`tree_splits`) with ``revision``'s skfed,
    in a child process; ``module:name`` of a benchmark module here."""
    root = subprocess.run(["git", "rev-parse", "--show-toplevel"], check=True,
                          capture_output=True, text=True,
                          cwd=os.path.dirname(os.path.abspath(__file__))).stdout.strip()
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(["git", "archive", "--format=tar", revision, "skfed"],
                                 check=True, capture_output=True, cwd=root).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(tmp, filter="data")
        here = os.path.dirname(os.path.abspath(__file__))
        # The editable install's import hook would find this checkout's
        # skfed first: drop it, so that the revision's copy is imported.
        code = ("import json, sys, warnings; warnings.simplefilter('ignore'); "
                "sys.meta_path[:] = [f for f in sys.meta_path if '__editable__' "
                "not in str(getattr(f, '__module__', ''))]; "
                "import skfed; assert skfed.__file__.startswith(sys.argv[1]); "
                "from {} import {} as run; ".format(*function.split(":")) +
                f"print(json.dumps(run({n_rows}, {key_size}, {n_jobs}, {trees})))")
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([tmp, here])}
        result = subprocess.run([sys.executable, "-c", code, tmp], check=True, env=env,
                                capture_output=True, text=True, cwd=tmp)
    return json.loads(result.stdout.strip().splitlines()[-1])


def _row(name, s):
    return (f"{name:24s}  {s['tree']:7.2f}  {s['cpu']:7.2f}  {s['encrypt']:7.2f}  "
            f"{s['histograms']:6.2f}  {s['packing']:7.2f}  {s['decrypt']:7.2f}  "
            f"{s['other']:6.2f}")


def wide(n_rows=32_561, key_size=2048, n_jobs=2, trees=2, baseline=BASELINE,
         baseline_trees=None, schemes=("paillier",)):
    """Print the a9a table: ours per tree by step, beside ``baseline``'s."""
    header = (f"{'code, tree':24s}  {'seconds':>7}  {'CPU s':>7}  {'encrypt':>7}  "
              f"{'hist':>6}  {'packing':>7}  {'decrypt':>7}  {'other':>6}")
    print(f"SecureBoost, a9a-shaped table ({n_rows} x 123 binary, one-hot groups, "
          f"~11% ones), depth 6, max_bins=255, {key_size}-bit keys, 2 parties, "
          f"n_jobs={n_jobs}, {trees} tree(s)",
          f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())} "
          f"on {os.cpu_count()} cores\n", header, "-" * len(header), sep="\n")
    checks = {}
    for scheme in schemes:
        ours, checks[scheme] = tree_splits(n_rows, key_size, n_jobs, trees, scheme)
        name = "this code" if scheme == "paillier" else f"this code, {scheme}"
        for t, s in enumerate(ours, start=1):
            print(_row(f"{name}, tree {t}", s), flush=True)
    check = checks[schemes[0]]
    for scheme in schemes[1:]:
        same = "same" if checks[scheme] == check else "DIFFERENT"
        print(f"{scheme} vs {schemes[0]}: {same} predictions after every tree")
    old = None
    if baseline:
        old, old_check = _baseline_splits(baseline, n_rows, key_size, n_jobs,
                                          baseline_trees or trees)
        for t, s in enumerate(old, start=1):
            print(_row(f"{baseline}, tree {t}", s), flush=True)
        common = min(len(check), len(old_check))
        same = "same" if old_check[:common] == check[:common] else "DIFFERENT"
        print(f"\nmodels after {common} tree(s): {same} predictions (sum of P(y=1) "
              f"over 2000 rows: {check[common - 1]} vs {old_check[common - 1]})")
    ref, cpu = ours[-1]["tree"], ours[-1]["cpu"]
    print(f"\nthis code ({schemes[-1]}), tree {len(ours)}: {ref:.2f} s on "
          f"{n_jobs} threads, "
          f"{cpu:.1f} CPU seconds (thread-seconds)")
    if old is not None:
        print(f"  {old[-1]['tree'] / ref:.1f}x faster than {baseline} in seconds, "
              f"{old[-1]['cpu'] / cpu:.1f}x in CPU seconds (its tree {len(old)}: "
              f"{old[-1]['tree']:.2f} s, {old[-1]['cpu']:.1f} CPU s)")
    if n_rows != 32_561:
        print(f"  ({n_rows} rows, not a9a's 32,561: not comparable with the "
              "published figures below)")
    print(f"  FedTree {FEDTREE_SECONDS} s on {FEDTREE_THREADS} threads = "
          f"{FEDTREE_SECONDS * FEDTREE_THREADS:.0f} thread-seconds "
          f"({FEDTREE_SECONDS * FEDTREE_THREADS / cpu:.1f}x our CPU seconds); "
          f"FATE 1.x {FATE_SECONDS:.0f} s ({FATE_SECONDS / ref:.1f}x ours)")
    print("(FedTree's and FATE's figures are as published, on their machines and on "
          "the real a9a; the step columns are CPU seconds)")
    print("tree 1 also builds the key owner's tables and the passive party's "
          "obfuscator table")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return ours, old
