"""How far ``check_messages`` sees, and what it costs.

Four tables:

1. Detection rate of a noisy copy of another party's column (noise of
   ``sigma`` standard deviations), alone and after a known permutation,
   over 40 columns of 120 normal values: where the affine and rank
   thresholds (0.97) stop, and that a permuted noisy copy is not seen.
2. The same copy hidden at a random offset of a message of ``L`` ring
   values: detection and CPU seconds per check, against ``L``.
3. Issue 37's disguises (a column over two messages of one phase, first
   differences, cumulative sums, rounded permutations, coarse
   quantisation) and the blind spots the checker declares, as the share
   of 40 columns caught.
4. CPU seconds of a whole check (contract, sizes, semantics, streams,
   key binding) on every estimator's honest fit of the audit (150 rows;
   both HyFDCA solvers, vertical, horizontal and hybrid splits, plaintext
   and 512-bit keys), with the violations found (0 expected), beside the
   CPU seconds of the fit itself; with ``--today DIR`` also the check of
   the code in ``DIR`` (before issue 37's streams, transforms and step
   functions) on the same recorded messages.

Run: ``python benchmarks/bench_check_messages.py [--today DIR]`` (a few
minutes on a loaded machine).
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import argparse
import json
import os
import pickle
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np
from _common import text_table
from sklearn.datasets import load_breast_cancer, load_digits, make_blobs
from sklearn.preprocessing import StandardScaler

from skfed import config_context
from skfed.cluster import FederatedKernelKMeans
from skfed.ensemble import SecureBoostClassifier, SecureBoostRegressor
from skfed.federation import Message, record_messages
from skfed.kernel_methods import AVFKAMRanker, FDSKLClassifier, FDSKLRegressor
from skfed.linear_model import HyFDCAClassifier
from skfed.partition import HybridPartition, VerticalPartition
from skfed.privacy import Contract, Masked, Rule, Secret, check_messages

N, TRIALS = 120, 40


class _Toy:
    """Party ``p`` sends one masked element to ``a``, who must not learn
    ``p``'s columns."""

    encryption = None

    def __init__(self, max_size):
        self.max_size = max_size

    def _privacy_contract(self):
        return Contract("toy", [Rule("values", "p", "a", (
            Masked("ring values", max_size=self.max_size),))])

    def _privacy_roles(self):
        return {"a": {"a"}, "p": {"p"}}

    def _privacy_secrets(self, X, y=None):
        return [Secret("p", "columns", "columns of p", X)]


def _caught(toy, X, payload):
    return bool(check_messages(toy, [Message("p", "a", "values", 0, 0, 0,
                                             (payload,))], X))


def noise_table():
    rng = np.random.RandomState(0)
    X = rng.normal(size=(N, TRIALS))
    toy = _Toy("rows")
    rows = []
    for sigma in (0.0, 0.12, 0.18, 0.20, 0.22, 0.25, 0.30):
        plain = permuted = 0
        for t in range(TRIALS):
            noisy = X[:, t] + sigma * rng.normal(size=N)
            plain += _caught(toy, X, noisy)
            permuted += _caught(toy, X, noisy[rng.permutation(N)])
        rows.append([f"{sigma:.2f}", f"{plain / TRIALS:.2f}",
                     f"{permuted / TRIALS:.2f}"])
    print(text_table(["noise (sd)", "copy caught", "permuted copy caught"],
                     rows))


def window_table():
    rng = np.random.RandomState(1)
    X = rng.normal(size=(N, 10))
    rows = []
    for length in (10**3, 10**4, 10**5, 10**6):
        toy = _Toy(length)
        caught, seconds = 0, 0.0
        for t in range(5):
            filler = rng.randint(-2**31, 2**31, size=length - N).astype(float)
            at = rng.randint(0, length - N + 1)
            payload = np.insert(filler, at, np.exp(X[:, t]))  # monotone image
            start = time.process_time()
            caught += _caught(toy, X, payload)
            seconds += time.process_time() - start
        rows.append([f"{length:,}", f"{caught}/5", f"{seconds / 5:.3f}"])
    print(text_table(["element values L", "exp(copy) found",
                      "CPU s per check"], rows))


def _quartiles(x):
    return np.digitize(x, np.quantile(x, [0.25, 0.5, 0.75])).astype(float)


def _haar(x):
    """One level of the Haar transform: pair sums and differences."""
    pairs = x.reshape(-1, 2)
    return np.concatenate([pairs.sum(1), pairs[:, 0] - pairs[:, 1]]) / 2**.5


#: name -> disguise of a column x (a list of messages); rng for noise
ROUND_3 = {
    "two halves, one phase": lambda x, rng: [x[:N // 2], x[N // 2:]],
    "first differences": lambda x, rng: [np.diff(x, prepend=0.0)],
    "cumulative sums": lambda x, rng: [np.cumsum(x)],
    "known permutation, 3 decimals": lambda x, rng: [
        np.round(x[np.random.RandomState(1).permutation(N)], 3)],
    "sorted, 3 decimals": lambda x, rng: [np.round(np.sort(x), 3)],
    "2-bit quantisation": lambda x, rng: [_quartiles(x)],
    "1 bit": lambda x, rng: [(x > np.median(x)).astype(float)],
    # declared blind spots
    "halves, a message between (blind)": lambda x, rng: [
        x[:N // 2], rng.randint(-2**31, 2**31, size=N).astype(float),
        x[N // 2:]],
    "cumulative sums after ring values (blind)": lambda x, rng: [
        np.concatenate([rng.randint(-2**31, 2**31, size=N).astype(float),
                        np.cumsum(x)])],
    "Haar transform (blind)": lambda x, rng: [_haar(x)],
    "2-bit of x + noise 0.1 sd (blind)": lambda x, rng: [
        _quartiles(x + 0.1 * rng.normal(size=N))],
    "2-bit of x + noise 0.02 sd (blind)": lambda x, rng: [
        _quartiles(x + 0.02 * rng.normal(size=N))],
    "3 bits, 5% of rows one level off": lambda x, rng: [
        np.digitize(x, np.quantile(x, np.arange(1, 8) / 8))
        + (rng.uniform(size=N) < 0.05)],
}


def round_3_table():
    """Each disguise of issue 37 on 40 normal columns of 120 values."""
    rng = np.random.RandomState(2)
    X = rng.normal(size=(N, TRIALS))
    toy = _Toy("4 * rows")
    rows = []
    for name, disguise in ROUND_3.items():
        caught = 0
        for t in range(TRIALS):
            parts = disguise(X[:, t], rng)
            caught += bool(check_messages(toy, [
                Message("p", "a", "values", 0, 0, 0, (part,))
                for part in parts], X))
        rows.append([name, f"{caught / TRIALS:.2f}"])
    print(text_table(["disguise of a column (120 values)",
                      f"caught (of {TRIALS})"], rows))


def _cases():
    """The honest fits of ``tests/privacy/test_audit.py`` (150 rows; 512-bit
    and plaintext keys) and both HyFDCA solvers on vertical, horizontal and
    hybrid splits."""
    X_bc, y_bc = load_breast_cancer(return_X_y=True)
    pick = np.sort(np.random.RandomState(0).choice(len(X_bc), 150,
                                                   replace=False))
    X = StandardScaler().fit_transform(X_bc[pick][:, :9])
    y = y_bc[pick]
    X_blobs, _ = make_blobs(n_samples=150, centers=3, n_features=4,
                            random_state=0)

    def hyfdca(grid, **params):
        params = {"max_iter": 5, "tol": None, "key_size": 512,
                  "random_state": 0, **params}
        return HyFDCAClassifier(HybridPartition(*grid), **params), X, y

    return {
        "FDSKL": (FDSKLClassifier(VerticalPartition(3), max_iter=60,
                                  random_state=0), X, y),
        "FDSKL regressor": (FDSKLRegressor(VerticalPartition(3), max_iter=60,
                                           random_state=0), X,
                            X[:, 0] - X[:, 5]),
        "AVFKAM": (AVFKAMRanker(VerticalPartition(3), max_iter=60,
                                random_state=0), X, y),
        "SecureBoost (512-bit)": (SecureBoostClassifier(
            n_estimators=2, partition=3, key_size=512, random_state=0), X, y),
        "SecureBoost (plaintext)": (SecureBoostClassifier(
            n_estimators=2, partition=3, encryption=None, random_state=0),
            X, y),
        "SecureBoost regressor (512-bit)": (SecureBoostRegressor(
            n_estimators=2, partition=3, key_size=512, random_state=0), X,
            X[:, 0] + X[:, 5]),
        "kernel k-means": (FederatedKernelKMeans(3, partition=3,
                                                 random_state=0), X_blobs, None),
        "HyFDCA 3x1 (horizontal)": hyfdca((3, 1)),
        "HyFDCA 2x2 (512-bit)": hyfdca((2, 2)),
        "HyFDCA 2x2 (plaintext)": hyfdca((2, 2), encryption=None),
        "HyFDCA 2x2 (OU 512-bit)": hyfdca((2, 2), encryption="ou"),
        "HyFDCA 1x3 (vertical, plaintext)": hyfdca((1, 3), encryption=None,
                                                   max_iter=30),
        "HyFDCA paper 2x2 (plaintext)": hyfdca((2, 2), solver="paper",
                                               encryption=None, max_iter=20),
        "HyFDCA paper 2x2 (OU 512-bit)": hyfdca((2, 2), solver="paper",
                                                encryption="ou", max_iter=20),
    }


def _long_cases():
    """Default-length fits on 300 breast-cancer rows (digits for kernel
    k-means), as issue 37's research design timed them."""
    X_bc, y_bc = load_breast_cancer(return_X_y=True)
    keep = np.sort(np.random.RandomState(0).choice(len(X_bc), 300,
                                                   replace=False))
    X, y = StandardScaler().fit_transform(X_bc[keep]), y_bc[keep]
    X_digits = StandardScaler().fit_transform(load_digits().data[:300])
    return {
        "long FDSKL": (FDSKLClassifier(VerticalPartition(3),
                                       random_state=0), X, y),
        "long AVFKAM": (AVFKAMRanker(VerticalPartition(3), random_state=0),
                        X, y),
        "long SecureBoost 10 trees (plaintext)": (SecureBoostClassifier(
            n_estimators=10, partition=3, encryption=None, random_state=0),
            X, y),
        "long kernel k-means (digits)": (FederatedKernelKMeans(
            10, partition=3, random_state=0), X_digits, None),
        "long HyFDCA 2x2 (plaintext)": (HyFDCAClassifier(
            HybridPartition(2, 2), encryption=None, random_state=0), X, y),
        "long HyFDCA paper 2x2, 200 rounds (plaintext)": (HyFDCAClassifier(
            HybridPartition(2, 2), solver="paper", max_iter=200,
            encryption=None, random_state=0), X, y),
        "long HyFDCA 3x1": (HyFDCAClassifier(HybridPartition(3, 1),
                                             random_state=0), X, y),
    }


def _check_cost(fits):
    """``{name: (violations, CPU s)}`` of ``check_messages`` on each fit."""
    out = {}
    for name, (est, messages, X_, y_) in fits.items():
        start = time.process_time()
        found = check_messages(est, messages, X_, y_)
        out[name] = (len(found), time.process_time() - start)
    return out


def _today(fits, base):
    """The same check in a process importing skfed from ``base`` (a
    checkout of the code before issue 37), on the same pickled messages."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "fits.pkl")
        with open(path, "wb") as f:
            pickle.dump(fits, f)
        code = ("import json, pickle, sys, warnings; "
                "warnings.filterwarnings('ignore'); "
                "sys.path.insert(0, sys.argv[2]); "
                "import bench_check_messages as b; "
                "fits = pickle.load(open(sys.argv[1], 'rb')); "
                "import skfed; assert skfed.__file__.startswith(sys.argv[3]), "
                "skfed.__file__; "
                "print(json.dumps(b._check_cost(fits)))")
        env = dict(os.environ, PYTHONPATH=base)
        done = subprocess.run(
            [sys.executable, "-c", code, path,
             os.path.dirname(os.path.abspath(__file__)),
             os.path.abspath(base)],
            env=env, capture_output=True, text=True, check=True, cwd=tmp)
    return {k: tuple(v) for k, v in
            json.loads(done.stdout.strip().splitlines()[-1]).items()}


def estimator_table(base=None, long=False):
    fits, fit_cpu = {}, {}
    for name, (est, X_, y_) in (_long_cases() if long else _cases()).items():
        start = time.process_time()
        with config_context(allow_insecure_keys=True), record_messages() as rec:
            est.fit(X_, y_)
        fit_cpu[name] = time.process_time() - start
        fits[name] = (est, list(rec.messages), X_, y_)
    now = _check_cost(fits)
    today = _today(fits, base) if base else {}
    rows = []
    for name, (est, messages, _, _) in fits.items():
        found, check = now[name]
        before = today.get(name)
        rows.append([name, len(messages), f"{fit_cpu[name]:.2f}",
                     "-" if before is None else f"{before[1]:.2f}",
                     f"{check:.2f}",
                     "-" if before is None else f"{check / max(before[1], 1e-9):.1f}",
                     f"{check / max(fit_cpu[name], 1e-9):.2f}",
                     "-" if before is None else before[0], found])
    print(text_table(["estimator", "messages", "fit CPU s",
                      "check CPU s today", "check CPU s now", "now / today",
                      "check / fit", "violations today", "violations now"],
                     rows))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--today", metavar="DIR", default=None,
        help="a checkout of skfed before issue 37 (e.g. `git worktree add "
             "DIR ed2f309`): table 4 also times its check_messages on the "
             "same recorded messages")
    parser.add_argument(
        "--long", action="store_true",
        help="table 4 only, on default-length fits of 300 rows (FDSKL: "
             "6,000 messages; ten minutes or more)")
    args = parser.parse_args()
    if args.long:
        warnings.filterwarnings("ignore")
        print(f"load {os.getloadavg()}")
        start, cpu = time.perf_counter(), time.process_time()
        print("4. default-length fits (300 rows): the check's CPU seconds "
              "and violations, before issue 37 (today) and now\n")
        estimator_table(args.today, long=True)
        print(f"\n{time.perf_counter() - start:.0f} s wall, "
              f"{time.process_time() - cpu:.0f} s CPU (this process), load "
              f"{os.getloadavg()}")
        sys.exit(0)
    warnings.filterwarnings("ignore")
    print(f"load {os.getloadavg()}")
    start, cpu = time.perf_counter(), time.process_time()
    print("1. noisy copies (affine and rank thresholds 0.97)\n")
    noise_table()
    print("\n2. a monotone image at a random offset of a long element\n")
    window_table()
    print("\n3. issue 37's disguises, and the declared blind spots\n")
    round_3_table()
    print("\n4. honest fits (150 rows): the check's CPU seconds and "
          "violations, before issue 37 (today) and now\n")
    estimator_table(args.today)
    print(f"\n{time.perf_counter() - start:.0f} s wall, "
          f"{time.process_time() - cpu:.0f} s CPU (this process), load "
          f"{os.getloadavg()}")
