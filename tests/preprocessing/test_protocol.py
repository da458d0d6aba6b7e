"""The protocols of federated preprocessing: searches, counts, rounds (the
ring encodings they use are tested in tests/federation/test_secure_sum.py)."""

import numpy as np
import pytest
from sklearn import impute as sk_impute
from sklearn import preprocessing as skp

import skfed.preprocessing as fp
from skfed.federation import record_messages
from skfed.partition import HorizontalPartition
from skfed.preprocessing import _protocol
from skfed.preprocessing._protocol import (float_keys, keys_to_float,
                                           lerp, percentile_ranks)

RNG = np.random.RandomState(1)


def test_float_keys_sort_as_floats_and_invert():
    x = np.concatenate([RNG.randn(200) * 10.0 ** RNG.randint(-300, 300, 200),
                        [0.0, -0.0, 1e-310, -1e-310, np.inf, -np.inf,
                         np.nextafter(1.0, 2.0), 1.0]])
    keys = float_keys(x)
    order = np.argsort(keys, kind="stable")
    assert np.all(np.diff(x[order]) >= 0)
    back = keys_to_float(keys)
    np.testing.assert_array_equal(back, x + 0.0)


@pytest.mark.parametrize("method", ["linear", "averaged_inverted_cdf",
                                    "inverted_cdf", "nearest", "midpoint",
                                    "hazen", "weibull", "median_unbiased"])
def test_percentile_ranks_reproduce_numpy(method):
    x = np.sort(RNG.randn(37) * 1e3)
    levels = np.linspace(0, 100, 8)
    lo, hi, gamma = percentile_ranks(len(x), levels, method)
    np.testing.assert_allclose(lerp(x[lo], x[hi], gamma),
                               np.percentile(x, levels, method=method),
                               rtol=1e-13, atol=1e-12)


def test_extremes_exact_one_ulp_apart_on_different_holders():
    """The maximum is found bit by bit: a value one ulp above the other
    holders' is found, and only the extremes reach the server."""
    X = RNG.randn(30, 2)
    X[3, 0] = 5.0
    X[17, 0] = np.nextafter(5.0, 6.0)
    X[25, 1] = -7.0
    X[4, 1] = np.nextafter(-7.0, -8.0)
    owner = np.arange(30) % 3
    with record_messages() as rec:
        est = fp.MinMaxScaler(partition=HorizontalPartition(3)).fit(
            X, sample_party=owner)
    ref = skp.MinMaxScaler().fit(X)
    np.testing.assert_array_equal(est.data_max_, ref.data_max_)
    np.testing.assert_array_equal(est.data_min_, ref.data_min_)
    # sixteen 4-bit rounds of secure ORs, each asked of the three holders
    requests = [m for m in rec.messages if m.phase == "extremes/request"]
    assert len(requests) == 16 * 3


def test_value_counts_many_distinct_strings_and_ties():
    """Hash collisions send values to a new round; all are still found, and
    ties of the most frequent pick scikit-learn's (the smallest)."""
    values = np.array([f"v{i:03d}" for i in range(150)], dtype=object)
    X = np.concatenate([values, values[::-1], values[:40]])[:, None]
    owner = np.arange(len(X)) % 3
    enc = fp.OneHotEncoder(partition=HorizontalPartition(3)).fit(
        X, sample_party=owner)
    assert enc.categories_[0].tolist() == sorted(values.tolist())
    Xt = np.concatenate([np.array(["b", "a", "c", "a", "b"], dtype=object)]
                        * 4)[:, None]
    imp = fp.SimpleImputer(partition=HorizontalPartition(3),
                           strategy="most_frequent",
                           missing_values="c").fit(
        Xt, sample_party=np.arange(len(Xt)) % 3)
    ref = sk_impute.SimpleImputer(strategy="most_frequent",
                                  missing_values="c").fit(Xt)
    assert imp.statistics_.tolist() == ref.statistics_.tolist() == ["a"]


_EVERY_PROTOCOL = [
    (fp.StandardScaler, {}, "float"),
    (fp.MinMaxScaler, {}, "float"),
    (fp.MaxAbsScaler, {}, "float"),
    (fp.SimpleImputer, {"strategy": "median"}, "float"),
    (fp.SimpleImputer, {"strategy": "most_frequent"}, "int"),
    (fp.OneHotEncoder, {}, "int"),
    (fp.KBinsDiscretizer, {"n_bins": 3}, "float"),
]


@pytest.mark.parametrize("cls, params, kind", _EVERY_PROTOCOL)
def test_every_step_of_the_server_is_a_round(cls, params, kind):
    """Each secure sum and each broadcast of the fitted statistics is a
    round of its own, numbered 0, 1, ...; only the holders' slot key (the
    set-up of the value counts) is outside any (it was: the broadcasts,
    and a mean imputer's fit showed one round)."""
    X = np.random.RandomState(0).normal(size=(60, 3))
    X = np.round(X) if kind == "int" else X
    with record_messages() as rec:
        est = cls(partition=HorizontalPartition(3), **params).fit(X)
    rounds = [m.round for m in rec.messages]
    assert sorted(set(rounds) - {None}) == list(range(max(r for r in rounds
                                                          if r is not None) + 1))
    assert {m.phase for m in rec.messages if m.round is None} <= {
        "categories: key", "mode: key"}
    assert [m.round for m in rec.messages] == sorted(rounds, key=lambda r: (
        -1 if r is None else r))  # in order: a round ends before the next
    fitted = {m.round for m in rec.messages if m.phase.endswith(": fitted")}
    others = {m.round for m in rec.messages if not m.phase.endswith(": fitted")}
    assert fitted and not fitted & others
    assert est.communication_.total_messages == len(rec.messages)


def _fixed_slot_key(state):
    state.slot_key = bytes(range(16))
    return np.frombuffer(state.slot_key, dtype=np.uint8).copy()


def test_slot_key_moves_the_message_count_never_the_model(monkeypatch):
    """The value counts' rounds depend on the slots' collisions, hence on
    the key the first holder draws from its CSPRNG: the message count varies
    between fits, the categories and modes never. With the key fixed, two
    fits send the very same messages."""
    rng = np.random.RandomState(0)
    X = rng.randint(0, 120, size=(400, 2)).astype(object)
    X[:, 1] = np.array([f"c{v}" for v in X[:, 1]], dtype=object)
    owner = np.arange(len(X)) % 3
    ref = skp.OneHotEncoder().fit(X)
    ref_mode = sk_impute.SimpleImputer(strategy="most_frequent").fit(X)
    for _ in range(6):
        enc = fp.OneHotEncoder(partition=HorizontalPartition(3)).fit(
            X, sample_party=owner)
        imp = fp.SimpleImputer(partition=HorizontalPartition(3),
                               strategy="most_frequent").fit(
            X, sample_party=owner)
        for ours, theirs in zip(enc.categories_, ref.categories_):
            assert ours.tolist() == theirs.tolist()
        assert imp.statistics_.tolist() == ref_mode.statistics_.tolist()
    monkeypatch.setattr(_protocol, "holder_draw_key", _fixed_slot_key)
    fits = [fp.OneHotEncoder(partition=HorizontalPartition(3)).fit(
        X, sample_party=owner) for _ in range(2)]
    assert fits[0].communication_ == fits[1].communication_
    # 120 values per column in 1024 slots: some collide, a second round runs
    assert fits[0].communication_.by_phase["categories: slots/upload"][
        "messages"] > 3


def test_a_collision_the_tags_miss_is_an_error_not_a_category(monkeypatch):
    """Every value in one slot with one tag: the server's Cauchy-Schwarz
    test sees one value and opens the mean of their bytes; a holder finds
    the opened value is not its own (before: a made-up category)."""
    monkeypatch.setattr(_protocol, "slot_of", lambda *args: (0, 0))
    X = np.array(["ab", "cd", "ef"] * 4, dtype=object)[:, None]
    enc = fp.OneHotEncoder(partition=HorizontalPartition(3))
    with pytest.raises(Exception, match="equal keyed tags"):
        enc.fit(X, sample_party=np.arange(12) % 3)
    # one value on every holder: the slot's bytes are that value's
    X = np.array(["ab"] * 6, dtype=object)[:, None]
    assert enc.fit(X, sample_party=np.arange(6) % 3).categories_[0].tolist() \
        == ["ab"]


def test_min_frequency_and_max_categories_match_sklearn():
    X = RNG.choice(list("abcdefg"), size=(200, 1),
                   p=[0.4, 0.2, 0.15, 0.1, 0.1, 0.03, 0.02]).astype(object)
    owner = np.arange(200) % 3
    for params in ({"min_frequency": 10}, {"max_categories": 3}):
        ours = fp.OneHotEncoder(partition=HorizontalPartition(3),
                                sparse_output=False, **params).fit(
            X, sample_party=owner)
        ref = skp.OneHotEncoder(sparse_output=False, **params).fit(X)
        np.testing.assert_array_equal(ours.transform(X), ref.transform(X))
        np.testing.assert_array_equal(ours.get_feature_names_out(),
                                      ref.get_feature_names_out())
