"""Planted leak of HyFDCA's row weights (held by the clients of each row).

The weights are a secret of kind "weights" owned by every client holding
the rows; a fit that sends them to the server must be flagged by
:func:`~skfed.privacy.check_messages`, the clean weighted fit must not be.
"""

import math

import numpy as np
import scipy.sparse as sp
from sklearn.datasets import make_classification
from sklearn.preprocessing import StandardScaler

from skfed.federation import record_messages
from skfed.linear_model import HyFDCAClassifier, _protocol
from skfed.partition import HybridPartition
from skfed.privacy import check_messages

X, Y = make_classification(120, 8, n_informative=5, random_state=0)
X = StandardScaler().fit_transform(X)
WEIGHT = np.random.RandomState(1).randint(1, 5, size=len(Y)).astype(float)


def _fit_recorded(X=X):
    clf = HyFDCAClassifier(HybridPartition(2, 2), max_iter=3, tol=None,
                           key_size=512, random_state=0)
    with record_messages() as rec:
        clf.fit(X, Y, sample_weight=WEIGHT)
    return clf, rec.messages


def test_clean_weighted_fit_keeps_the_weights_with_their_rows():
    for data in (X, sp.csr_matrix(X)):
        clf, messages = _fit_recorded(data)
        secrets = clf._privacy_secrets(data, Y, sample_weight=WEIGHT)
        owners = {s.owner for s in secrets if s.kind == "weights"}
        assert owners == {f"client{k}" for k in range(4)}
        assert any(m.phase == "setup/weights/upload" for m in messages)
        assert check_messages(clf, messages, data, Y,
                              sample_weight=WEIGHT) == []


def test_planted_weight_leak_is_detected(monkeypatch):
    # Each row group's reporter sends its rows' weights in place of the
    # exponent of their total (integers, where one value is declared); the
    # server takes the exponent from them and the fit goes on. The size
    # bound sees it; only the "weights" secret tells what it is.
    def leaky(client):
        return client.s[:, 0].astype(np.int64)

    def server_reads_them(server, shares):
        return max(int(math.ceil(math.log2(v.sum()))) for v in shares.values())

    monkeypatch.setattr(_protocol, "client_weight_exponent", leaky)
    monkeypatch.setattr(_protocol, "server_largest_exponent",
                        server_reads_them)
    clf, messages = _fit_recorded()
    found = check_messages(clf, messages, X, Y, sample_weight=WEIGHT)
    assert found and {v.phase for v in found} == {"setup/weights/scale"}
    assert all(v.receiver == "server" for v in found)
    assert any("'s weights" in v.found for v in found)
    # without the weights secret only the size bound (one exponent) sees it
    without = check_messages(clf, messages, X, Y)
    assert without and all("where at most 1" in v.found for v in without)
