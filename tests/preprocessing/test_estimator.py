"""The federated transformers against scikit-learn's on the pooled table."""

import pickle

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn import config_context
from sklearn import impute as sk_impute
from sklearn import preprocessing as skp
from sklearn.base import clone
from sklearn.compose import ColumnTransformer
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import GridSearchCV, StratifiedKFold
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.utils.estimator_checks import parametrize_with_checks

import skfed.preprocessing as fp
from skfed.federation import record_messages
from skfed.linear_model import HyFDCAClassifier
from skfed.partition import (HorizontalPartition, HybridPartition,
                             VerticalPartition)

RNG = np.random.RandomState(0)
N = 90
# columns of very different scales, one far from the origin: float64 sums
# in the wrong order would lose digits there
X_NUM = RNG.randn(N, 4) * [1.0, 10.0, 1e-3, 100.0] + [0.0, 5.0, -2.0, 1e6]
OWNER = RNG.randint(0, 3, N)
WEIGHT = RNG.uniform(0.1, 3.0, N)
X_MISS = X_NUM.copy()
X_MISS[RNG.rand(N, 4) < 0.15] = np.nan
X_CODES = RNG.randint(0, 5, (N, 3)).astype(float)
X_CODES_MISS = X_CODES.copy()
X_CODES_MISS[RNG.rand(N, 3) < 0.1] = np.nan
X_STR = np.array([["a", "b", "c", "dd", "e"][i] for i in
                  RNG.randint(0, 5, N * 2)], dtype=object).reshape(N, 2)

PARTITIONS = {
    "horizontal": HorizontalPartition(3),
    "hybrid": HybridPartition(3, 2),
    "vertical": VerticalPartition(2),
}


def _fit_both(ours, theirs, X, kind, **fit_params):
    """Fit ours (recording) and scikit-learn's; return ours and messages."""
    party = None if kind == "vertical" else OWNER
    with record_messages() as rec:
        ours.fit(X, sample_party=party, **fit_params)
    theirs.fit(X, **fit_params)
    return ours, list(rec.messages)


def _dense(a):
    return a.toarray() if sp.issparse(a) else np.asarray(a)


CASES = {
    "standard": (fp.StandardScaler, skp.StandardScaler, {}, X_NUM, {}),
    "standard-weighted": (fp.StandardScaler, skp.StandardScaler, {}, X_NUM,
                          {"sample_weight": WEIGHT}),
    "standard-missing": (fp.StandardScaler, skp.StandardScaler, {}, X_MISS,
                         {}),
    "standard-no-mean": (fp.StandardScaler, skp.StandardScaler,
                         {"with_mean": False}, X_NUM, {}),
    "minmax": (fp.MinMaxScaler, skp.MinMaxScaler, {"feature_range": (-1, 2)},
               X_MISS, {}),
    "maxabs": (fp.MaxAbsScaler, skp.MaxAbsScaler, {}, X_MISS, {}),
    "impute-mean": (fp.SimpleImputer, sk_impute.SimpleImputer, {}, X_MISS,
                    {}),
    "impute-median": (fp.SimpleImputer, sk_impute.SimpleImputer,
                      {"strategy": "median"}, X_MISS, {}),
    "impute-mode": (fp.SimpleImputer, sk_impute.SimpleImputer,
                    {"strategy": "most_frequent", "add_indicator": True},
                    X_CODES_MISS, {}),
    "onehot": (fp.OneHotEncoder, skp.OneHotEncoder, {"sparse_output": False},
               X_CODES, {}),
    "onehot-strings": (fp.OneHotEncoder, skp.OneHotEncoder,
                       {"handle_unknown": "ignore"}, X_STR, {}),
    "kbins-quantile": (fp.KBinsDiscretizer, skp.KBinsDiscretizer,
                       {"n_bins": 7, "encode": "ordinal"}, X_NUM, {}),
    "kbins-weighted": (fp.KBinsDiscretizer, skp.KBinsDiscretizer,
                       {"n_bins": 4, "encode": "ordinal",
                        "quantile_method": "averaged_inverted_cdf"}, X_NUM,
                       {"sample_weight": WEIGHT}),
    "kbins-uniform": (fp.KBinsDiscretizer, skp.KBinsDiscretizer,
                      {"n_bins": 6, "strategy": "uniform"}, X_NUM, {}),
}


@pytest.mark.parametrize("kind", list(PARTITIONS))
@pytest.mark.parametrize("case", list(CASES))
def test_transform_equals_sklearn_on_pooled_table(case, kind):
    ours_cls, theirs_cls, params, X, fit_params = CASES[case]
    ours, messages = _fit_both(ours_cls(partition=PARTITIONS[kind], **params),
                               theirs_cls(**params), X, kind, **fit_params)
    theirs = theirs_cls(**params).fit(X, **fit_params)
    got, want = _dense(ours.transform(X)), _dense(theirs.transform(X))
    assert got.shape == want.shape
    if got.dtype.kind in "fc":
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)
    else:
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(ours.get_feature_names_out(),
                                  theirs.get_feature_names_out())
    # the vertical split sends nothing; a row split always sends something
    # (given categories aside, tested below)
    assert (len(messages) == 0) == (kind == "vertical")
    if kind == "vertical":
        assert ours.communication_ is None or not ours.communication_.records


def test_standard_scaler_statistics_to_1e10():
    ours = fp.StandardScaler(partition=HorizontalPartition(3)).fit(
        X_NUM, sample_party=OWNER)
    theirs = skp.StandardScaler().fit(X_NUM)
    np.testing.assert_allclose(ours.mean_, theirs.mean_, rtol=1e-12, atol=0)
    np.testing.assert_allclose(ours.var_, theirs.var_, rtol=1e-10, atol=0)
    assert ours.n_samples_seen_ == theirs.n_samples_seen_ == N
    assert sorted(ours.communication_.by_phase) == [
        "moments: fitted", "moments: mean/keys", "moments: mean/upload",
        "moments: variance/request", "moments: variance/upload"]


def test_standard_scaler_sparse_without_mean():
    X = sp.random(N, 5, density=0.3, format="csr", random_state=0) * 10
    ours = fp.StandardScaler(partition=HorizontalPartition(3),
                             with_mean=False).fit(X, sample_party=OWNER)
    theirs = skp.StandardScaler(with_mean=False).fit(X)
    np.testing.assert_allclose(ours.var_, theirs.var_, rtol=1e-10)
    np.testing.assert_allclose(ours.transform(X).toarray(),
                               theirs.transform(X).toarray(), rtol=1e-10)
    with pytest.raises(ValueError, match="Cannot center sparse"):
        fp.StandardScaler(partition=HorizontalPartition(3)).fit(X)


def test_one_hot_given_categories_send_nothing():
    cats = [[0.0, 1.0, 2.0, 3.0, 4.0, 9.0]] * 3
    with record_messages() as rec:
        ours = fp.OneHotEncoder(partition=HorizontalPartition(3),
                                categories=cats, sparse_output=False).fit(
            X_CODES, sample_party=OWNER)
    assert rec.messages == []
    theirs = skp.OneHotEncoder(categories=cats, sparse_output=False).fit(
        X_CODES)
    np.testing.assert_array_equal(ours.transform(X_CODES),
                                  theirs.transform(X_CODES))


def test_one_hot_union_of_holders_categories():
    # each holder sees different categories; the encoder knows their union
    X = np.array([["a"], ["b"], ["c"], ["d"], ["e"], ["f"]], dtype=object)
    owner = np.array([0, 0, 1, 1, 2, 2])
    enc = fp.OneHotEncoder(partition=HorizontalPartition(3)).fit(
        X, sample_party=owner)
    assert enc.categories_[0].tolist() == list("abcdef")


def test_quantile_bound_holds_and_shrinks():
    """With capped rounds, every edge is within its stated bound of
    scikit-learn's, and the bound shrinks with every round."""
    X = np.exp(RNG.randn(400, 2)) * [1.0, 1e3]
    owner = np.arange(400) % 3
    theirs = skp.KBinsDiscretizer(n_bins=8, encode="ordinal",
                                  quantile_method="linear").fit(X)
    previous = None
    # (one round of 16 sub-ranges leaves edges so close that scikit-learn's
    # rule drops one: the edge arrays would not line up)
    for rounds in (2, 3, 4):
        ours = fp.KBinsDiscretizer(n_bins=8, encode="ordinal",
                                   quantile_method="linear",
                                   partition=HorizontalPartition(3),
                                   histogram_bins=16,
                                   histogram_rounds=rounds).fit(
            X, sample_party=owner)
        worst = 0.0
        for j in range(2):
            err = np.abs(ours.bin_edges_[j] - theirs.bin_edges_[j])
            bound = ours.bin_edges_bound_[j]
            assert np.all(err <= bound + 1e-12 * np.abs(theirs.bin_edges_[j]))
            worst = max(worst, bound.max() / np.ptp(theirs.bin_edges_[j]))
        if previous is not None:
            assert worst < previous
        previous = worst
    exact = fp.KBinsDiscretizer(n_bins=8, encode="ordinal",
                                quantile_method="linear",
                                partition=HorizontalPartition(3)).fit(
        X, sample_party=owner)
    for j in range(2):
        np.testing.assert_array_equal(exact.bin_edges_[j], theirs.bin_edges_[j])
        assert not exact.bin_edges_bound_[j].any()


def test_min_row_holders_refuses_two_holders():
    owner = np.arange(N) % 2
    est = fp.StandardScaler(partition=HorizontalPartition(2),
                            min_row_holders=3)
    with pytest.raises(ValueError, match="fewer than min_row_holders=3"):
        est.fit(X_NUM, sample_party=owner)
    # a vertical split has one holder per column: never refused
    fp.StandardScaler(partition=VerticalPartition(2), min_row_holders=3).fit(
        X_NUM)


def test_no_partial_fit():
    with pytest.raises(AttributeError, match="no partial_fit"):
        fp.StandardScaler().partial_fit


def test_pipeline_column_transformer_set_output_pickle_clone():
    df = pd.DataFrame({"x0": X_NUM[:, 0], "x1": X_NUM[:, 3],
                       "c": X_STR[:, 0]})
    part = HorizontalPartition(3)
    ct = ColumnTransformer([
        ("num", fp.StandardScaler(partition=part), ["x0", "x1"]),
        ("cat", fp.OneHotEncoder(partition=part, sparse_output=False), ["c"]),
    ]).set_output(transform="pandas")
    ref = ColumnTransformer([
        ("num", skp.StandardScaler(), ["x0", "x1"]),
        ("cat", skp.OneHotEncoder(sparse_output=False), ["c"]),
    ]).set_output(transform="pandas")
    got, want = ct.fit_transform(df), ref.fit_transform(df)
    assert isinstance(got, pd.DataFrame)
    assert got.columns.tolist() == want.columns.tolist()
    np.testing.assert_allclose(got.to_numpy(float), want.to_numpy(float),
                               rtol=1e-10, atol=1e-12)
    again = pickle.loads(pickle.dumps(ct))
    pd.testing.assert_frame_equal(again.transform(df), got)
    fresh = clone(ct)
    assert not hasattr(fresh.transformers[0][1], "mean_")
    pipe = make_pipeline(fp.SimpleImputer(partition=part),
                         fp.MinMaxScaler(partition=part))
    np.testing.assert_allclose(
        pipe.fit_transform(X_MISS),
        make_pipeline(sk_impute.SimpleImputer(),
                      skp.MinMaxScaler()).fit_transform(X_MISS),
        rtol=1e-10, atol=1e-12)


class _SpyScaler(fp.StandardScaler):
    """Keeps the statistics and the owners of every fit (for the search)."""

    seen = []

    def fit(self, X, y=None, sample_weight=None, sample_party=None):
        super().fit(X, y, sample_weight=sample_weight,
                    sample_party=sample_party)
        type(self).seen.append((self.mean_.copy(), int(self.n_samples_seen_),
                                self.partition_.owners.copy()))
        return self


@pytest.mark.slow
def test_grid_search_routes_sample_party_to_both_steps():
    """Every fold's scaler sees its training rows only, with their owners."""
    data = load_breast_cancer()
    X, y = data.data[:150, :6], data.target[:150]
    groups = np.arange(len(y)) % 3
    _SpyScaler.seen = []
    cv = StratifiedKFold(2)
    with config_context(enable_metadata_routing=True):
        pipe = Pipeline([
            ("scale", _SpyScaler(partition=HybridPartition(3, 2)).set_fit_request(
                sample_party=True)),
            ("clf", HyFDCAClassifier(HybridPartition(3, 2), max_iter=20,
                                     tol=None, encryption=None,
                                     random_state=0).set_fit_request(
                sample_party=True)),
        ])
        search = GridSearchCV(pipe, {"clf__alpha": [1e-2, 1e-1]}, cv=cv)
        search.fit(X, y, sample_party=groups)
    assert search.best_estimator_.score(X, y) > 0.8
    # 2 candidates x 2 folds, then the refit on every row
    assert len(_SpyScaler.seen) == 5
    folds = [train for train, _ in cv.split(X, y)]
    for i, (mean, n_seen, owners) in enumerate(_SpyScaler.seen):
        train = folds[i % 2] if i < 4 else np.arange(len(y))
        assert n_seen == len(train)
        np.testing.assert_array_equal(owners, groups[train])
        np.testing.assert_allclose(mean, X[train].mean(axis=0), rtol=1e-12)
    # the final classifier got the same owners as the final scaler
    np.testing.assert_array_equal(
        search.best_estimator_["clf"].partition_.owners, groups)


# tests/test_common.py runs scikit-learn's checks on every transformer as
# constructed by default (two row holders); here on three row holders with
# min_row_holders=3, so that every check's fit runs the three-party secure
# sums, extremes, histograms and value counts.
@parametrize_with_checks([
    cls(partition=3, min_row_holders=3)
    for cls in (fp.StandardScaler, fp.MinMaxScaler, fp.MaxAbsScaler,
                fp.SimpleImputer, fp.OneHotEncoder)
])
def test_sklearn_compatible_transformer(estimator, check):
    # no expected failure: every check passes, as for scikit-learn's own
    # transformers
    check(estimator)


# KBinsDiscretizer's quantile search takes ~60 s over its 54 checks on
# three holders (11 histogram rounds a fit); test_common checks it on two
@pytest.mark.slow
@parametrize_with_checks([fp.KBinsDiscretizer(partition=3, min_row_holders=3)])
def test_sklearn_compatible_discretizer(estimator, check):
    check(estimator)


def _carries(messages, word):
    """Whether some payload array holds ``word`` (a 40-bit word of bytes)."""
    for m in messages:
        for part in m.payload:
            arr = np.asarray(part)
            if arr.dtype.kind in "ui" and np.any(arr == word):
                return True
    return False


def test_one_hot_min_category_rows_keeps_rare_categories_home():
    X = np.array([["a"]] * 10 + [["b"]] * 6 + [["rare"]], dtype=object)
    owner = np.arange(len(X)) % 3
    # "rare" is sent as its type tag and bytes, b"srare": one 40-bit word
    rare = int.from_bytes(b"srare", "big")
    runs = {}
    for k in (1, 2):
        with record_messages() as rec:
            runs[k] = fp.OneHotEncoder(
                partition=HorizontalPartition(3), min_category_rows=k,
                handle_unknown="ignore", sparse_output=False).fit(
                X, sample_party=owner)
        runs[k, "messages"] = list(rec.messages)
    assert runs[1].categories_[0].tolist() == ["a", "b", "rare"]
    assert _carries(runs[1, "messages"], rare)  # opened: the fitted category
    assert runs[2].categories_[0].tolist() == ["a", "b"]
    assert not _carries(runs[2, "messages"], rare)  # never left its holder
    np.testing.assert_array_equal(runs[2].transform([["rare"]]), [[0.0, 0.0]])
    with pytest.raises(ValueError, match="handle_unknown"):
        fp.OneHotEncoder(partition=HorizontalPartition(3),
                         min_category_rows=2).fit(X, sample_party=owner)
