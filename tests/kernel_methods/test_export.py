"""FDSKL and AVFKAM shares: one per party, nothing secret twice, same predictions."""

import copy
import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import make_classification, make_regression

from skfed.kernel_methods import (
    AVFKAMRanker,
    FDSKLClassifier,
    FDSKLRegressor,
    KernelConsolidated,
    KernelShare,
    consolidate_shares,
    predict_with_shares,
)
from skfed.kernel_methods._vertical_features import party_key_mode, resolve_party_keys
from skfed.partition import VerticalPartition


def _blobs(share):
    """Every secret array and key of a share, as bytes (public parameters
    and empty arrays excluded)."""
    out = {"key": share.key, "columns": share.columns.tobytes(),
           "feature_ids": share.feature_ids.tobytes(), "coef": share.coef.tobytes()}
    if share.output is not None:
        out.update({f"output.{k}": np.asarray(v).tobytes()
                    for k, v in share.output.items()})
    return {k: v for k, v in out.items() if len(v)}


def _cases():
    Xc, yc = make_classification(150, 9, n_informative=5, n_classes=3,
                                 random_state=0)
    Xr, yr = make_regression(150, 7, random_state=0)
    Xb, yb = make_classification(150, 8, weights=[0.8], random_state=1)
    two_active = VerticalPartition(3, active_parties=(0, 2))
    return {
        "classifier, two label holders": (FDSKLClassifier(
            two_active, max_iter=12, random_state=0), Xc, yc,
            ("decision_function", "predict", "predict_proba")),
        "regressor": (FDSKLRegressor(2, max_iter=12, random_state=0), Xr, yr,
                      ("predict",)),
        "ranker, os keys": (AVFKAMRanker(3, max_iter=60, n_random_features=150,
                                         party_keys="os", random_state=0),
                            Xb, yb, ("decision_function", "predict")),
    }


@pytest.fixture(scope="module", params=list(_cases()))
def case(request):
    return _cases()[request.param]


@pytest.fixture(scope="module")
def fitted(case):
    est, X, y, methods = case
    return clone(est).fit(X, y), X, methods


@pytest.fixture(scope="module")
def other_fit(case):
    """The same estimator fitted with another seed: another model."""
    est, X, y, _ = case
    return clone(est).set_params(random_state=1).fit(X, y)


def test_each_share_holds_only_its_own_secrets(fitted):
    est, X, _ = fitted
    shares = est.export_shares()
    assert [s.party for s in shares] == list(range(est.partition_.n_parties))
    assert all(isinstance(s, KernelShare) for s in shares)
    assert sum(s.output is not None for s in shares) == 1
    assert shares[est.partition_.active_parties[0]].output is not None
    for k, share in enumerate(shares):
        assert share.key == est._party_keys[k]
        np.testing.assert_array_equal(share.columns, est.partition_.columns(k))
    assert _shared_secrets(shares) == set()
    # the check sees a planted leak: party 1's share carrying party 0's key
    leaky = [pickle.loads(pickle.dumps(s)) for s in shares]
    leaky[1].key = shares[0].key
    assert (0, 1, "key", "key") in _shared_secrets(leaky)


def _shared_secrets(shares):
    """Secret blobs found in two parties' shares, or inside another party's
    pickled share."""
    blobs = [_blobs(s) for s in shares]
    dumps = [pickle.dumps(s) for s in shares]
    found = set()
    for a in range(len(shares)):
        for b in range(len(shares)):
            if a == b:
                continue
            found |= {(a, b, n, m) for n, v in blobs[a].items()
                      for m, w in blobs[b].items() if v == w}
            found |= {(a, b, n, "pickle") for n, v in blobs[a].items()
                      if n in ("key", "coef") and v in dumps[b]}
    return found


def test_shares_predict_as_the_estimator_bit_for_bit(fitted):
    est, X, methods = fitted
    shares = [pickle.loads(pickle.dumps(s)) for s in est.export_shares()]
    blocks = [X[:, s.columns] for s in shares]
    whole = consolidate_shares(shares[::-1])
    assert isinstance(whole, KernelConsolidated)
    for method in methods:
        expected = getattr(est, method)(X)
        np.testing.assert_array_equal(
            predict_with_shares(shares[::-1], blocks, method), expected)
        np.testing.assert_array_equal(getattr(whole, method)(X), expected)
    np.testing.assert_array_equal(est.consolidate().predict(X), est.predict(X))


def test_shares_refuse_a_missing_party_or_a_wrong_block(fitted):
    est, X, _ = fitted
    shares = est.export_shares()
    blocks = [X[:, s.columns] for s in shares]
    with pytest.raises(ValueError, match="one share per party"):
        predict_with_shares(shares[1:], blocks[1:])
    with pytest.raises(ValueError, match="columns"):
        predict_with_shares(shares, [X] * len(shares))


def test_auto_keys_come_from_the_os_without_a_seed():
    assert party_key_mode("auto", None) == "os"
    assert party_key_mode("auto", 0) == "random_state"
    assert resolve_party_keys("auto", [1, 2], None) == [None, None]
    X, y = make_classification(80, 6, random_state=0)
    fits = [FDSKLClassifier(2, max_iter=3).fit(X, y) for _ in range(2)]
    assert all(f.party_keys_ == "os" for f in fits)
    assert not set(fits[0]._party_keys) & set(fits[1]._party_keys)
    seeded = [FDSKLClassifier(2, max_iter=3, random_state=0).fit(X, y)
              for _ in range(2)]
    assert seeded[0].party_keys_ == "random_state"
    assert seeded[0]._party_keys == seeded[1]._party_keys
    np.testing.assert_array_equal(seeded[0].decision_function(X),
                                  seeded[1].decision_function(X))


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("partition", [1, 2])
def test_shares_of_one_party_and_of_sparse_rows(partition, sparse):
    import scipy.sparse as sp

    X, y = make_classification(100, 6, random_state=0)
    if sparse:
        X = sp.csr_matrix(np.where(np.abs(X) > 1, X, 0))
    est = FDSKLClassifier(partition, max_iter=5, random_state=0).fit(X, y)
    shares = est.export_shares()
    expected = est.decision_function(X)
    np.testing.assert_array_equal(predict_with_shares(
        shares, [X[:, s.columns] for s in shares], "decision_function"), expected)
    np.testing.assert_array_equal(est.consolidate().decision_function(X), expected)


def _use(shares, X, route, method):
    if route == "predict_with_shares":
        blocks = [X[:, s.columns] for s in sorted(shares, key=lambda s: s.party)]
        return predict_with_shares(shares, blocks, method)
    return getattr(consolidate_shares(shares), method)(X)


@pytest.mark.parametrize("route", ["predict_with_shares", "consolidate_shares"])
def test_shares_of_another_fit_or_edited_are_refused(fitted, other_fit, route):
    # Shares of two fits used to mix silently (FDSKL 140/240 and AVFKAM
    # 127/240 signs flipped), and a NaN coefficient gave NaN scores only.
    est, X, methods = fitted
    shares = est.export_shares()
    foreign = other_fit.export_shares()
    mixed = [foreign[1] if s.party == 1 else s for s in shares]
    with pytest.raises(ValueError, match="share of party 1 is of another fit"):
        _use(mixed, X, route, methods[0])
    # One fingerprint per fit, the same in every export of it.
    assert len({s.model for s in shares}) == 1
    assert {s.model for s in est.export_shares()} == {shares[0].model}
    assert foreign[1].model != shares[1].model

    k = next(s.party for s in shares if s.coef.size)
    for bad in (np.nan, np.inf):
        edited = copy.deepcopy(shares)
        edited[k].coef[0, 0] = bad
        with pytest.raises(ValueError, match=f"share of party {k} has 1 non-finite"):
            _use(edited, X, route, methods[0])
    # A share built anew around a NaN (its digest then agrees) is refused too.
    rebuilt = copy.deepcopy(shares)
    old = rebuilt[k]
    coef = old.coef.copy()
    coef[-1, 0] = np.nan
    rebuilt[k] = KernelShare(old.party, old.columns, old.key, old.feature_ids, coef,
                             old.public, old.output, model=old.model)
    with pytest.raises(ValueError, match=f"share of party {k} has 1 non-finite"):
        _use(rebuilt, X, route, methods[0])
    # Finite edits, and a share without a fingerprint, fail the checks too.
    edited = copy.deepcopy(shares)
    edited[k].coef[0, 0] += 0.5
    with pytest.raises(ValueError, match=f"party {k} fails its integrity check"):
        _use(edited, X, route, methods[0])
    edited = copy.deepcopy(shares)
    edited[2 % len(shares)].key = shares[0].key[::-1]
    with pytest.raises(ValueError, match="fails its integrity check"):
        _use(edited, X, route, methods[0])
    old_format = copy.deepcopy(shares)
    del old_format[1].model, old_format[1].digest
    with pytest.raises(ValueError, match="party 1 carries no model fingerprint"):
        _use(old_format, X, route, methods[0])
    # Untouched shares of one fit, pickled, still score as the estimator.
    np.testing.assert_array_equal(
        _use([pickle.loads(pickle.dumps(s)) for s in shares], X, route, methods[0]),
        getattr(est, methods[0])(X))


@pytest.mark.parametrize("bad, says", [(np.nan, "NaN"), (np.inf, "infinity")])
def test_blocks_are_validated_as_predict_validates_x(fitted, bad, says):
    # A NaN in a block used to surface from a party thread as "angles
    # omega.x overflow float64 ... the entries of X are too large".
    est, X, methods = fitted
    shares = est.export_shares()
    blocks = [X[:, s.columns].copy() for s in shares]
    blocks[1][3, 0] = bad
    with pytest.raises(ValueError, match=f"Input blocks\\[1\\] contains {says}"):
        predict_with_shares(shares, blocks)
    X_bad = X.copy()
    X_bad[3, shares[1].columns[0]] = bad
    with pytest.raises(ValueError, match=f"Input X contains {says}"):
        getattr(est, methods[0])(X_bad)
    with pytest.raises(ValueError, match=f"Input X contains {says}"):
        getattr(consolidate_shares(shares), methods[0])(X_bad)
    blocks[1] = blocks[1][:, 0]
    with pytest.raises(ValueError, match="Expected 2D array"):
        predict_with_shares(shares, blocks)
