"""The row_reconstruction attack on federated kernel k-means.

Each planted leak must bring the server's best estimate of a private row to
~0 relative error (and break the contract, see test_contract.py). The
clean fit is the negative control: no violation, and every user's best
recovered row at least 0.5 relative error away whenever two or more users
contribute to the sums the server decodes.
"""

import numpy as np
import pytest

import skfed.cluster._estimator as kk
import skfed.cluster._protocol as protocol
from skfed.cluster import FederatedKernelKMeans
from skfed.cluster._attacks import row_reconstruction
from skfed.privacy import audit, check_messages

from ._plants import (X_std, _plaintext_sums, _user_uploads_its_rows,
                      estimator, fit_recorded)


def errors(est, messages, X):
    return {r["victim"]: r["value"] for r in row_reconstruction(est, messages, X)}


# -- the clean protocol -------------------------------------------------------------

@pytest.mark.parametrize("n_users", [2, 3])
def test_clean_fit_keeps_the_contract_and_hides_rows(n_users):
    report = audit(FederatedKernelKMeans(3, partition=n_users, random_state=0),
                   X_std)
    assert report.violations == []
    rows = report.attacks
    assert set(rows["victim"]) == {f"user{m}" for m in range(n_users)}
    assert (rows["metric"] == "relative_error").all()
    assert (rows["value"] >= 0.5).all(), rows
    assert (rows["chance"] == 1.0).all()


def test_clean_plain_dspgd_and_os_keys_keep_the_contract():
    for params in ({"communication_efficient": False}, {"party_keys": "os"}):
        est = estimator(**params)
        messages = fit_recorded(est, X_std)
        assert check_messages(est, messages, X_std) == [], params
        assert min(errors(est, messages, X_std).values()) >= 0.5


# -- planted leaks ------------------------------------------------------------------

@pytest.mark.parametrize("phase, found", [
    ("setup: row counts", "dtype kind 'f' where 'iu' is declared"),
    ("kmeans: local costs", "a vector equal to private row"),
])
def test_user_uploading_its_rows_is_caught(monkeypatch, phase, found):
    monkeypatch.setattr(protocol, "setup",
                        _user_uploads_its_rows(protocol.setup, phase))
    est = estimator()
    messages = fit_recorded(est, X_std)
    violations = check_messages(est, messages, X_std)
    assert sum(found in v.found for v in violations) == 3  # one per user
    assert max(errors(est, messages, X_std).values()) < 1e-9


def test_plaintext_moments_of_a_one_row_user_are_caught(monkeypatch):
    # The former protocol: a user holding one row uploaded that row.
    monkeypatch.setattr(protocol, "secure_sum",
                        _plaintext_sums(protocol.secure_sum, True))
    monkeypatch.setattr(kk, "check_user_rows", lambda n_rows, users: None)
    owners = np.r_[0, np.ones(74, int), np.full(75, 2)]  # user0 holds one row
    est = estimator()
    messages = fit_recorded(est, X_std, sample_party=owners)
    violations = check_messages(est, messages, X_std, sample_party=owners)
    assert any(v.phase == "setup: moments/upload" and "dtype kind 'f'" in v.found
               for v in violations)
    assert errors(est, messages, X_std)["user0"] < 1e-9
