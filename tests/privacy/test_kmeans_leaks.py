"""Planted leaks in federated kernel k-means, and the clean protocol.

Each leak is planted with a monkeypatch and must be caught: by
``check_messages`` (the contract) and by the ``row_reconstruction`` attack
(the server's best estimate of a private row reaching ~0 relative error).
The clean fit is the negative control: no violation, and every user's best
recovered row at least 0.5 relative error away whenever two or more users
contribute to the sums the server decodes.
"""

import numpy as np
import pytest
from sklearn.datasets import make_blobs
from sklearn.preprocessing import StandardScaler

import skfed.cluster._coreset as coreset
import skfed.cluster._estimator as kk
import skfed.cluster._protocol as protocol
from skfed.cluster import FederatedKernelKMeans
from skfed.federation import record_messages
from skfed.privacy import audit, check_messages
from skfed.cluster._attacks import row_reconstruction

X_raw, _ = make_blobs(150, n_features=6, centers=3, center_box=(-10, 30),
                      random_state=0)
X_std = StandardScaler().fit_transform(X_raw)


def estimator(**params):
    return FederatedKernelKMeans(3, max_iter=4, tol=None, random_state=0,
                                 **{"partition": 3, **params})


def fit_recorded(est, X, **fit_params):
    with record_messages() as rec:
        est.fit(X, **fit_params)
    return rec.messages


def errors(est, messages, X):
    return {r["victim"]: r["value"] for r in row_reconstruction(est, messages, X)}


# -- the clean protocol ------------------------------------------------------------

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


def test_clean_fit_on_raw_data_keeps_the_contract():
    # Far from the origin the decoded total (a rotated sum of rows: the mean
    # row's norm in a direction the server does not know) can land near some
    # rows by chance, so only the contract is asserted here.
    report = audit(FederatedKernelKMeans(3, partition=2, random_state=0), X_raw)
    assert report.violations == []


def test_clean_plain_dspgd_and_os_keys_keep_the_contract():
    for params in ({"communication_efficient": False}, {"party_keys": "os"}):
        est = estimator(**params)
        messages = fit_recorded(est, X_std)
        assert check_messages(est, messages, X_std) == [], params
        assert min(errors(est, messages, X_std).values()) >= 0.5


def test_predict_sends_nothing():
    est = estimator().fit(X_std)
    with record_messages() as rec:
        est.predict(X_std[:20])
    assert rec.messages == []


# -- planted leaks -----------------------------------------------------------------

def _user_uploads_its_rows(original, phase):
    def leaky_setup(fed, users, gamma, *, draw_key):
        out = original(fed, users, gamma, draw_key=draw_key)
        for u in users:
            rows = fed[u].call(lambda state: state.X).result()
            fed["server"].call(lambda state, rows: None, rows, sender=u,
                               phase=phase).result()
        return out
    return leaky_setup


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


class _Total:
    def __init__(self, value):
        self.value = value

    def result(self):
        return self.value


def _take(state, value):
    state.stash.setdefault("leak", []).append(np.asarray(value, dtype=float))


def _plaintext_sums(real, moments_only):
    """Users upload their sums in plaintext, the server adds them; the moment
    upload is the former protocol's ``(n, sum x, sum ||x||^2)``."""

    def leaky(fed, parties, receiver, local, *args, phase="secure-sum",
              encoder=None, sender=None):
        # The setup's sums (moments_only) or the others: one module holds both.
        if (phase != "setup: moments" if moments_only
                else phase.startswith("setup:")):
            return real(fed, parties, receiver, local, *args, phase=phase,
                        encoder=encoder, sender=sender)
        if phase == "setup: moments":
            def local(state):
                X = state.X
                return np.concatenate([[len(X)], X.sum(0), [np.sum(X * X)]])
        values = [fed[p].call(local, *args, sender=sender,
                              phase=f"{phase}/request").result() for p in parties]
        for p, v in zip(parties, values):
            fed[receiver].call(_take, v, sender=p, phase=f"{phase}/upload").result()
        total = fed[receiver].call(
            lambda state: np.sum(state.stash.pop("leak"), axis=0)).result()
        return _Total(total[1:] if phase == "setup: moments" else total)

    return leaky


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


def test_per_user_gram_products_are_caught(monkeypatch):
    # W_t[m]^T W_t[m] c per user, not summed: plaintext where masks are due.
    monkeypatch.setattr(protocol, "secure_sum",
                        _plaintext_sums(protocol.secure_sum, False))
    est = estimator()
    messages = fit_recorded(est, X_std)
    phases = {v.phase for v in check_messages(est, messages, X_std)}
    assert "dspgd: lanczos/upload" in phases and "oos: embedding map/upload" in phases


def test_user_with_too_few_rows_is_refused_before_any_message():
    owners = np.r_[np.zeros(3, int), np.ones(72, int), np.full(75, 2)]
    with record_messages() as rec, pytest.raises(ValueError, match="user0"):
        estimator().fit(X_std, sample_party=owners)
    assert rec.messages == []


def _summary_phase(violations):
    return [v for v in violations if v.phase == "kmeans: coreset"]


def test_group_means_of_single_rows_are_caught(monkeypatch):
    # Planted: the merge of groups under MIN_GROUP rows is skipped and the
    # budget is raised so that local k-means leaves one-row groups, whose
    # means are rows of H. The contract checks the whole-number sizes.
    monkeypatch.setattr(coreset, "_merge_small_groups",
                        lambda H, labels, n_groups: labels)
    monkeypatch.setattr(coreset, "MIN_GROUP", 1)  # lets the budget reach n_rows
    est = estimator(coreset_size=150)
    messages = fit_recorded(est, X_std)
    monkeypatch.setattr(coreset, "MIN_GROUP", 2)  # the contract's threshold
    sizes = np.concatenate([m.payload[1] for m in messages
                            if m.phase == "kmeans: coreset"])
    assert sizes.dtype.kind == "i" and sizes.min() == 1
    found = _summary_phase(check_messages(est, messages, X_std))
    assert found and "fewer than MIN_GROUP=2 rows" in found[0].found


def test_clean_summaries_send_whole_row_counts_of_at_least_min_group():
    est = estimator(coreset_size=150)
    messages = fit_recorded(est, X_std)
    sizes = np.concatenate([m.payload[1] for m in messages
                            if m.phase == "kmeans: coreset"])
    assert sizes.dtype.kind == "i" and sizes.min() >= coreset.MIN_GROUP
    assert _summary_phase(check_messages(est, messages, X_std)) == []
    # A size edited below MIN_GROUP in the record is a violation.
    edited = list(messages)
    index = next(i for i, m in enumerate(edited) if m.phase == "kmeans: coreset")
    means, counts = edited[index].payload
    counts = counts.copy()
    counts[0] = 1
    edited[index] = edited[index]._replace(payload=(means, counts))
    assert _summary_phase(check_messages(est, edited, X_std))


def test_weighted_summaries_send_weight_sums():
    w = np.linspace(0.5, 2.0, len(X_std))
    est = estimator()
    messages = fit_recorded(est, X_std, sample_weight=w)
    sizes = [m.payload[1] for m in messages if m.phase == "kmeans: coreset"]
    assert sizes and all(s.dtype.kind == "f" for s in sizes)
    assert check_messages(est, messages, X_std) == []
