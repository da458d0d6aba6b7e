"""The row_reconstruction attack on federated kernel k-means.

Each planted leak must bring the server's best estimate of a private row to
~0 relative error (and break the contract, see test_contract.py). The
clean fit is the negative control: no violation, and every user's best
recovered row at least 0.5 relative error away whenever two or more users
contribute to the sums the server decodes.
"""

import warnings

import numpy as np
import pytest

from sklearn.datasets import make_blobs, make_moons
from sklearn.exceptions import ConvergenceWarning

import skfed.cluster._estimator as kk
import skfed.cluster._protocol as protocol
import skfed.cluster._refine as refine
from skfed.cluster import FederatedKernelKMeans
from skfed.cluster._attacks import (_Features, map_inversion, recover_rows,
                                   inversion_scores, refinement_differences,
                                   row_reconstruction, totals_inversion)
from skfed.privacy import audit, check_messages

from ._plants import (X_std, _plaintext_sums, _totals_to_the_server,
                      _user_uploads_its_rows, estimator, fit_recorded)


def errors(est, messages, X):
    return {r["victim"]: r["value"] for r in row_reconstruction(est, messages, X)}


# -- the clean protocol -------------------------------------------------------------

@pytest.mark.parametrize("n_users", [2, 3])
def test_clean_fit_keeps_the_contract_and_hides_rows(n_users):
    # The inversions have tests of their own below (they cost ~10 s here).
    report = audit(FederatedKernelKMeans(3, partition=n_users, random_state=0),
                   X_std, attacks=["row_reconstruction",
                                   "refinement_differences"])
    assert report.violations == []
    attacks = report.attacks
    rows = attacks[attacks["attack"] == "row_reconstruction"]
    assert set(rows["victim"]) == {f"user{m}" for m in range(n_users)}
    assert (rows["metric"] == "relative_error").all()
    assert (rows["value"] >= 0.5).all(), rows
    assert (rows["chance"] == 1.0).all()
    # The default refinement releases its totals once: no two totals to
    # difference, so the rows that moved are guessed at random by everyone.
    assert report.estimator.n_refine_iter_ == 1
    moved = attacks[(attacks["attack"] == "refinement_differences")
                    & (attacks["metric"] == "recovered_share")]
    assert len(moved) == n_users * n_users  # the server and each user
    assert (moved["value"] == moved["chance"]).all(), moved


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


# -- refinement_differences: the moved rows behind consecutive totals -----------

@pytest.fixture(scope="module")
def small_moons():
    # 300 rows, 3 users: the refinement releases two totals (8 rows moved
    # between them, then 4: it stops).
    return make_moons(300, noise=0.05, random_state=0)[0]


def moon_estimator(**params):
    return FederatedKernelKMeans(2, gamma=8.0, partition=3, random_state=1,
                                 refine="auto", **params)


def by_attacker(rows, metric):
    return {(r["attacker"], r["victim"]): (r["value"], r["chance"])
            for r in rows if r["metric"] == metric}


def test_refinement_totals_reach_the_users_only(small_moons):
    report = audit(moon_estimator(), small_moons,
                   attacks=["refinement_differences"])
    assert report.violations == []
    assert report.estimator.refine_moves_.tolist() == [8, 4]
    shares = by_attacker(report.attacks.to_dict("records"), "recovered_share")
    errors = by_attacker(report.attacks.to_dict("records"),
                         "mean_relative_error")
    assert len(shares) == 3 + 3 * 2
    for (attacker, victim), (value, chance) in shares.items():
        if attacker == "server":
            # No total reaches it: it can only guess.
            assert value == chance < 0.2
            assert errors[attacker, victim][0] == errors[attacker, victim][1]
        else:
            # What the users learn: the others' moved rows, every one (the
            # guide quotes it).
            assert value >= 0.8 > chance
            assert errors[attacker, victim][0] < 0.05


@pytest.mark.parametrize("party_keys, leaks", [
    ("random_state", True),
    pytest.param("os", False, marks=pytest.mark.slow)])
def test_totals_decoded_by_the_server_give_away_moved_rows(
        monkeypatch, small_moons, party_keys, leaks):
    # The refinement as first built (the server decoded the totals): with
    # the key known from random_state the server recovers the moved rows;
    # with party_keys="os" its guess of the key is wrong and so are its rows.
    monkeypatch.setattr(refine, "release_totals", _totals_to_the_server)
    est = moon_estimator(party_keys=party_keys)
    messages = fit_recorded(est, small_moons)
    rows = refinement_differences(est, messages, small_moons)
    shares = by_attacker(rows, "recovered_share")
    for victim in ("user0", "user1", "user2"):
        value, chance = shares["server", victim]
        if leaks:
            assert value >= 0.8 > chance
        else:
            assert value <= max(chance, 0.2)


def test_recover_rows_solves_a_signed_sum_of_features():
    # Two rows in, one row out, 2,000 features: the three rows come back to
    # 1e-3 from candidates drawn uniformly in the range.
    rng = np.random.default_rng(0)
    features = _Features(b"k" * 16, 8.0, 2000, 2)
    rows = np.array([[0.1, 0.2], [1.2, -0.3], [-0.6, 0.7]])
    target = features(rows[:2]).sum(axis=0) - features(rows[2])[0]
    low, high = np.array([-1.5, -1.0]), np.array([2.5, 1.5])
    found = recover_rows(features, target[None], rng.uniform(low, high,
                                                             (4000, 2)),
                         low, high, max_atoms=3)
    assert found.shape == (3, 2)
    dist = np.linalg.norm(rows[:, None] - found[None], axis=-1).min(axis=1)
    assert dist.max() < 1e-3


# -- totals_inversion: the others' rows behind one release of the totals ----

def fit_once(X, k, gamma, **fit_params):
    """A fit whose refinement releases the totals once (the default
    refine="once"), with its messages."""
    est = FederatedKernelKMeans(k, gamma=gamma, partition=3, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        messages = fit_recorded(est, X, **fit_params)
    return est, messages


@pytest.fixture(scope="module")
def planted_victim():
    # Two users hold 30 rows each in two tight blobs; user2 holds six rows
    # far from the blobs and from each other.
    X, _ = make_blobs(60, centers=[[-5, 0], [5, 0]], cluster_std=0.5,
                      random_state=0)
    planted = np.array([[0, 3.0], [0, -3.0], [-5, 3.0], [5, -3.0],
                        [-2.5, 3.0], [2.5, -3.0]])
    X = np.vstack([X, planted])
    owners = np.r_[np.arange(60) % 2, [2] * 6]
    est, messages = fit_once(X, 2, 1.0, sample_party=owners)
    return X, est, totals_inversion(est, messages, X)


def test_one_release_gives_away_a_few_isolated_rows(planted_victim):
    # Each other user subtracts its own rows and reads the six planted rows
    # in what is left, to 1e-2 of the data's scale; without the message
    # (uniform guesses, or its own rows in the blobs) it gets at most a
    # third of them.
    _, _, rows = planted_victim
    shares = by_attacker(rows, "recovered_share")
    matched = by_attacker(rows, "matched_share")
    errors = by_attacker(rows, "mean_relative_error")
    for attacker in ("user0", "user1"):
        value, chance = shares[attacker, "user2"]
        assert value == 1.0 and chance < 0.4
        assert matched[attacker, "user2"][0] == 1.0
        value, chance = errors[attacker, "user2"]
        assert value < 0.01 < 0.1 < chance


def test_totals_inversion_rows_and_the_server(planted_victim):
    X, est, rows = planted_victim
    metrics = {"recovered_share", "mean_relative_error", "matched_share"}
    assert {r["metric"] for r in rows} == metrics
    assert {r["attack"] for r in rows} == {"totals_inversion"}
    # Server -> 3 victims, each user -> the 2 others; three metrics each.
    assert len(rows) == 3 * (3 + 3 * 2)
    for r in rows:
        assert np.isfinite(r["value"]) and np.isfinite(r["chance"])
        if r["attacker"] == "server":
            # No total reaches it: it can only guess.
            assert r["value"] == r["chance"]
        if r["metric"] != "mean_relative_error":
            assert 0.0 <= r["value"] <= 1.0
    # The paper's clustering releases no totals: no rows.
    est.refine = None
    assert totals_inversion(est, [], X) == []


def test_a_non_iid_split_leaks_beyond_the_own_rows():
    # Users hold terciles of the moons' first coordinate (30 rows each): an
    # attacker's own rows give at most 0.07 of another user's rows a guess
    # of their own, uniform guesses about 0.2; one release gives at least
    # 0.8 of them one (measured 0.93-1.0, seeds 0-1). The guesses are the
    # others' rows: as many, and outside the attacker's tercile (at most
    # 2%) once it took its own rows off the totals.
    X = make_moons(90, noise=0.05, random_state=0)[0]
    edges = np.quantile(X[:, 0], [1 / 3, 2 / 3])
    owners = np.digitize(X[:, 0], edges)
    est, messages = fit_once(X, 2, 8.0, sample_party=owners)
    for score in inversion_scores(est, messages, X):
        if score["attacker"] == "server":
            continue
        # matched share (third metric) of the attack and of chance
        assert score["attack"][2] >= 0.8
        assert score["attack"][2] > score["chance"][2] + 0.3
        m = int(score["attacker"][-1])
        guesses = score["guesses"]
        assert len(guesses) <= np.sum(owners != m)
        inside = np.digitize(guesses[:, 0], edges) == m
        assert inside.mean() < 0.1


# -- map_inversion: the rows behind the published out-of-sample map ------------

@pytest.mark.parametrize("party_keys", [
    "random_state", pytest.param("os", marks=pytest.mark.slow)])
def test_the_published_map_locates_the_other_users_rows(party_keys):
    # The map is a kernel mean of all rows weighted by H (published whatever
    # refine is). Users hold terciles of 150 moons' first coordinate: the
    # middle user gives 0.62-0.72 of each neighbour's rows a guess of their
    # own (chance 0.20-0.23, seeds 0-2); the server, which derives the key
    # from random_state, 0.52-0.72 of each user's (chance 0.32-0.35). With
    # party_keys="os" the server's key is wrong: it finds no atom (chance).
    X = make_moons(150, noise=0.05, random_state=0)[0]
    owners = np.digitize(X[:, 0], np.quantile(X[:, 0], [1 / 3, 2 / 3]))
    est = FederatedKernelKMeans(2, gamma=8.0, partition=3, random_state=0,
                                refine=None, party_keys=party_keys)
    est.fit(X, sample_party=owners)
    rows = map_inversion(est, [], X)
    matched = by_attacker(rows, "matched_share")
    assert len(matched) == 3 + 3 * 2
    assert {r["metric"] for r in rows} == {
        "recovered_share", "mean_relative_error", "matched_share"}
    if party_keys == "random_state":
        # (With "os" the key, hence the map, is drawn afresh in every fit:
        # the users' figures vary, 0.36-0.81 for the middle user.)
        for victim in ("user0", "user2"):
            value, chance = matched["user1", victim]
            assert value > chance + 0.3
    for victim in ("user0", "user1", "user2"):
        value, chance = matched["server", victim]
        if party_keys == "random_state":
            assert value > chance + 0.1
        else:
            assert value == chance
