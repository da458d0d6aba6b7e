"""Every message of a federated preprocessing fit is declared and checked."""

import numpy as np
import pytest
from sklearn import preprocessing as skp

import skfed.preprocessing as fp
from skfed.federation import record_messages
from skfed.partition import (HorizontalPartition, HybridPartition,
                             VerticalPartition)
from skfed.privacy import check_messages

RNG = np.random.RandomState(2)
N = 60
X = RNG.randn(N, 4) * [1.0, 10.0, 100.0, 1e3] + [0.0, 5.0, 1e4, -3.0]
X_MISS = X.copy()
X_MISS[RNG.rand(N, 4) < 0.1] = np.nan
X_CODES = RNG.randint(0, 4, (N, 3)).astype(float)
X_CODES_MISS = X_CODES.copy()
X_CODES_MISS[RNG.rand(N, 3) < 0.1] = np.nan
OWNER = RNG.randint(0, 3, N)
WEIGHT = RNG.uniform(0.5, 2.0, N)


def _record(est, data, **fit_params):
    with record_messages() as rec:
        est.fit(data, **fit_params)
    return list(rec.messages)


def test_acceptance_standard_scaler():
    """The issue's acceptance: horizontal to 1e-10 with 0 violations, and
    a vertical split sends no message."""
    est = fp.StandardScaler(partition=HorizontalPartition(3))
    messages = _record(est, X, sample_party=OWNER)
    np.testing.assert_allclose(est.transform(X),
                               skp.StandardScaler().fit(X).transform(X),
                               rtol=1e-10, atol=1e-10)
    assert len(messages) == 15
    assert check_messages(est, messages, X, sample_party=OWNER) == []
    vertical = fp.StandardScaler(partition=VerticalPartition(2))
    assert _record(vertical, X) == []
    assert check_messages(vertical, [], X) == []
    np.testing.assert_allclose(vertical.transform(X),
                               skp.StandardScaler().fit(X).transform(X),
                               rtol=1e-10, atol=1e-10)


CASES = [
    ("standard", fp.StandardScaler(), X, {"sample_weight": WEIGHT}),
    ("minmax", fp.MinMaxScaler(), X_MISS, {}),
    ("maxabs", fp.MaxAbsScaler(), X_MISS, {}),
    ("impute-mean", fp.SimpleImputer(add_indicator=True), X_MISS, {}),
    ("impute-median", fp.SimpleImputer(strategy="median"), X_MISS, {}),
    ("impute-mode", fp.SimpleImputer(strategy="most_frequent"), X_CODES_MISS,
     {}),
    ("impute-constant", fp.SimpleImputer(strategy="constant"), X_MISS, {}),
    ("onehot", fp.OneHotEncoder(min_frequency=3), X_CODES, {}),
    ("onehot-given", fp.OneHotEncoder(categories=[[0., 1, 2, 3]] * 3),
     X_CODES, {}),
    ("kbins", fp.KBinsDiscretizer(n_bins=4), X, {}),
    ("kbins-weighted", fp.KBinsDiscretizer(n_bins=4), X,
     {"sample_weight": WEIGHT}),
    ("kbins-capped", fp.KBinsDiscretizer(n_bins=4, histogram_rounds=2), X, {}),
]


@pytest.mark.parametrize("split", ["horizontal", "hybrid"])
@pytest.mark.parametrize("name, est, data, fit_params", CASES,
                         ids=[c[0] for c in CASES])
def test_every_message_is_declared(name, est, data, fit_params, split):
    partition = (HorizontalPartition(3) if split == "horizontal"
                 else HybridPartition(3, 2))
    est = est.set_params(partition=partition)
    messages = _record(est, data, sample_party=OWNER, **fit_params)
    violations = check_messages(est, messages, data, sample_party=OWNER,
                                **fit_params)
    assert violations == []
    # every phase recorded is a phase of the contract
    declared = {rule.phase for rule in est._privacy_contract().rules}
    assert {m.phase for m in messages} <= declared


def test_forged_messages_are_violations():
    est = fp.StandardScaler(partition=HorizontalPartition(3))
    messages = _record(est, X, sample_party=OWNER)
    upload = next(m for m in messages if m.phase == "moments: mean/upload")
    fitted = next(m for m in messages if m.phase == "moments: fitted")
    own = X[OWNER == 0]
    forged = [
        # a holder's own column sums sent in the clear, as floats
        upload._replace(payload=(own.sum(axis=0),)),
        # the server forwarding a holder's raw column
        fitted._replace(payload=(own[:, 0],)),
        # a phase the protocol does not have
        upload._replace(phase="moments: raw rows"),
        # one holder's rows sent to another holder
        upload._replace(receiver="user1", payload=(own,)),
    ]
    found = check_messages(est, messages + forged, X, sample_party=OWNER)
    assert sorted({v.index for v in found}) == list(
        range(len(messages), len(messages) + 4))
