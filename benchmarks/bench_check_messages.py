"""How far ``check_messages`` sees, and what it costs.

Three tables:

1. Detection rate of a noisy copy of another party's column (noise of
   ``sigma`` standard deviations), alone and after a known permutation,
   over 40 columns of 120 normal values: where the affine and rank
   thresholds (0.97) stop, and that a permuted noisy copy is not seen.
2. The same copy hidden at a random offset of a message of ``L`` ring
   values: detection and CPU seconds per check, against ``L``.
3. CPU seconds of a whole check (contract, sizes, semantics) on every
   estimator's honest fit of the audit (150 rows), with the violations
   found (0 expected), beside the CPU seconds of the fit itself.

Run: ``python benchmarks/bench_check_messages.py`` (about a minute).
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import time
import warnings

import numpy as np
from _common import text_table
from sklearn.datasets import load_breast_cancer, make_blobs
from sklearn.preprocessing import StandardScaler

from skfed import config_context
from skfed.cluster import FederatedKernelKMeans
from skfed.ensemble import SecureBoostClassifier
from skfed.federation import Message, record_messages
from skfed.kernel_methods import AVFKAMRanker, FDSKLClassifier
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


def estimator_table():
    X_bc, y_bc = load_breast_cancer(return_X_y=True)
    pick = np.sort(np.random.RandomState(0).choice(len(X_bc), 150,
                                                   replace=False))
    X = StandardScaler().fit_transform(X_bc[pick][:, :9])
    y = y_bc[pick]
    X_blobs, _ = make_blobs(n_samples=150, centers=3, n_features=4,
                            random_state=0)
    cases = {
        "FDSKL": (FDSKLClassifier(VerticalPartition(3), max_iter=60,
                                  random_state=0), X, y),
        "AVFKAM": (AVFKAMRanker(VerticalPartition(3), max_iter=60,
                                random_state=0), X, y),
        "SecureBoost (512-bit)": (SecureBoostClassifier(
            n_estimators=2, partition=3, key_size=512, random_state=0), X, y),
        "kernel k-means": (FederatedKernelKMeans(3, partition=3,
                                                 random_state=0), X_blobs, None),
        "HyFDCA (512-bit)": (HyFDCAClassifier(
            HybridPartition(2, 2), max_iter=5, tol=None, key_size=512,
            random_state=0), X, y),
    }
    rows = []
    for name, (est, X_, y_) in cases.items():
        start = time.process_time()
        with config_context(allow_insecure_keys=True), record_messages() as rec:
            est.fit(X_, y_)
        fit = time.process_time() - start
        start = time.process_time()
        found = check_messages(est, rec.messages, X_, y_)
        check = time.process_time() - start
        rows.append([name, len(rec.messages), f"{fit:.2f}", f"{check:.2f}",
                     f"{check / max(fit, 1e-9):.2f}", len(found)])
    print(text_table(["estimator", "messages", "fit CPU s", "check CPU s",
                      "check / fit", "violations"], rows))


if __name__ == "__main__":
    warnings.filterwarnings("ignore")
    print("1. noisy copies (affine and rank thresholds 0.97)\n")
    noise_table()
    print("\n2. a monotone image at a random offset of a long element\n")
    window_table()
    print("\n3. honest fits of the audit (150 rows)\n")
    estimator_table()
