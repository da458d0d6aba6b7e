import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skfed.partition import (
    HorizontalPartition,
    HybridPartition,
    VerticalPartition,
    resolve_partition,
)

X6 = np.arange(24.0).reshape(4, 6)


def test_none_is_two_parties_even_split():
    p = resolve_partition(None, X6, kind="vertical")
    assert p.n_parties == 2
    assert p.column_groups == [[0, 1, 2], [3, 4, 5]]
    assert p.active_parties == (0,)


def test_none_with_one_column_is_one_party():
    p = resolve_partition(None, X6[:, :1], kind="vertical")
    assert p.n_parties == 1


def test_int_spec_even_split():
    p = resolve_partition(4, X6, kind="vertical")
    assert p.column_groups == [[0, 1], [2, 3], [4], [5]]


def test_split_returns_blocks():
    p = resolve_partition([[5, 0], [1, 2, 3, 4]], X6, kind="vertical")
    blocks = p.split(X6)
    np.testing.assert_array_equal(blocks[0], X6[:, [5, 0]])
    np.testing.assert_array_equal(blocks[1], X6[:, 1:5])


def test_column_names():
    df = pd.DataFrame(X6, columns=list("abcdef"))
    p = resolve_partition([["a", "f"], ["b", "c", "d", "e"]], df, kind="vertical")
    assert p.column_groups == [[0, 5], [1, 2, 3, 4]]
    assert list(p.feature_names) == list("abcdef")


@pytest.mark.parametrize("spec, message", [
    ([[0, 1, 2], [2, 3, 4, 5]], r"\[2\] appear in more than one group"),
    ([[0, 1], [3, 4, 5]], r"\[2\] are in no group"),
    ([[0, 1, 2], []], "group 1 is empty"),
    ([[0, 1, 2], [3, 4, 9]], r"\[9\] are out of range"),
    ([[0, 1, 2], ["x"]], "mix names and integer"),
    ([["a", "b"], ["c"]], "X has no column names"),
    (7, r"6 feature\(s\) over 7 parties"),
    (0, "positive integer"),
    ("abc", "partition must be"),
])
def test_bad_vertical_specs(spec, message):
    with pytest.raises(ValueError, match=message):
        resolve_partition(spec, X6, kind="vertical")


def test_unknown_column_names_are_named():
    df = pd.DataFrame(X6, columns=list("abcdef"))
    with pytest.raises(ValueError, match=r"Unknown column names.*'zz'"):
        resolve_partition([["a", "b", "c"], ["d", "e", "f", "zz"]], df,
                          kind="vertical")


def test_active_parties():
    p = resolve_partition(VerticalPartition(3, active_parties=(0, 2)), X6,
                          kind="vertical")
    assert p.active_parties == (0, 2)
    assert p.passive_parties == (1,)
    with pytest.raises(ValueError, match="active_parties"):
        resolve_partition(VerticalPartition(2, active_parties=5), X6,
                          kind="vertical")


def test_horizontal_even_and_random():
    X = np.zeros((10, 2))
    p = resolve_partition(3, X, kind="horizontal")
    assert p.owners.tolist() == [0, 0, 0, 0, 1, 1, 1, 2, 2, 2]
    r1 = resolve_partition(HorizontalPartition(3, "random", 0), X, kind="horizontal")
    r2 = resolve_partition(HorizontalPartition(3, "random", 0), X, kind="horizontal")
    assert r1.owners.tolist() == r2.owners.tolist()
    assert sorted(np.bincount(r1.owners)) == [3, 3, 4]


def test_horizontal_metadata_and_errors():
    X = np.zeros((6, 2))
    p = resolve_partition(None, X, kind="horizontal",
                          sample_party=[0, 1, 2, 0, 1, 2])
    assert p.n_parties == 3
    np.testing.assert_array_equal(p.rows(2), [2, 5])
    with pytest.raises(ValueError, match=r"Party \[1\] hold\(s\) no rows"):
        resolve_partition(HorizontalPartition(3), X, kind="horizontal",
                          sample_party=[0, 0, 2, 2, 0, 2])
    with pytest.raises(ValueError, match=r"negative ids \[-1\]"):
        resolve_partition(None, X, kind="horizontal",
                          sample_party=[0, 1, -1, 0, 1, 0])
    with pytest.raises(ValueError, match="one party per row"):
        resolve_partition(None, X, kind="horizontal", sample_party=[0, 1])
    with pytest.raises(ValueError, match="7 parties"):
        resolve_partition(7, X, kind="horizontal")
    with pytest.raises(ValueError, match="splits rows"):
        resolve_partition([[0], [1]], X, kind="horizontal")


def test_hybrid_grid_and_special_cases():
    p = resolve_partition(HybridPartition(2, [[0, 1], [2, 3, 4, 5]]), X6,
                          kind="hybrid")
    assert p.n_clients == 4
    assert p.client_cell(3) == (1, 1)
    np.testing.assert_array_equal(p.client_rows(3), [2, 3])
    np.testing.assert_array_equal(p.client_columns(2), [0, 1])
    assert p.clients_of_row_group(1) == [2, 3]
    assert p.clients_of_column_group(0) == [0, 2]
    vertical = resolve_partition([[0, 1, 2], [3, 4, 5]], X6, kind="hybrid")
    assert (vertical.n_row_groups, vertical.n_column_groups) == (1, 2)
    horizontal = resolve_partition(HorizontalPartition(2), X6, kind="hybrid")
    assert (horizontal.n_row_groups, horizontal.n_column_groups) == (2, 1)
    with pytest.raises(ValueError, match="HybridPartition"):
        resolve_partition(3, X6, kind="hybrid")
    with pytest.raises(ValueError, match="partition is vertical"):
        resolve_partition([[0, 1, 2], [3, 4, 5]], X6, kind="hybrid",
                          sample_party=[0, 1, 0, 1])
    with pytest.raises(ValueError, match="needs a vertical partition"):
        resolve_partition(HorizontalPartition(2), X6, kind="vertical")


@settings(max_examples=60, deadline=None)
@given(n_features=st.integers(1, 12), data=st.data())
def test_any_valid_grouping_round_trips(n_features, data):
    # A random assignment of columns to k non-empty groups always resolves to
    # exactly those groups, by index and by name.
    k = data.draw(st.integers(1, n_features))
    owner = data.draw(st.permutations(list(range(n_features))))
    groups = [sorted(owner[i::k]) for i in range(k)]
    X = np.zeros((3, n_features))
    p = resolve_partition(groups, X, kind="vertical")
    assert p.column_groups == groups
    names = [f"c{j}" for j in range(n_features)]
    df = pd.DataFrame(X, columns=names)
    named = [[names[c] for c in g] for g in groups]
    assert resolve_partition(named, df, kind="vertical").column_groups == groups


@settings(max_examples=60, deadline=None)
@given(n_features=st.integers(2, 10), data=st.data())
def test_invalid_groupings_always_raise(n_features, data):
    cols = list(range(n_features))
    groups = [cols[: n_features // 2], cols[n_features // 2:]]
    mutation = data.draw(st.sampled_from(["drop", "repeat", "outside"]))
    if mutation == "drop":
        groups[1] = groups[1][:-1] or [0]
    elif mutation == "repeat":
        groups[1] = groups[1] + [groups[0][0]]
    else:
        groups[0] = groups[0] + [n_features + data.draw(st.integers(0, 5))]
    with pytest.raises(ValueError):
        resolve_partition(groups, np.zeros((2, n_features)), kind="vertical")


def _churn_table():
    rng = np.random.default_rng(0)
    n = 80
    X = pd.DataFrame({
        "minutes": rng.normal(200, 50, n),
        "international_plan": rng.choice(["no", "yes"], n),
        "calls": rng.poisson(3, n).astype(float),
        "plan": rng.choice(["a", "b", "c"], n),
        "plan_type": rng.choice(["x", "y"], n),
    })
    y = (X["minutes"] / 50 + (X["international_plan"] == "yes")
         + rng.normal(size=n) > 4.5).astype(int)
    return X, y


def _encoder(verbose):
    from sklearn.compose import ColumnTransformer
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    return ColumnTransformer(
        [("num", StandardScaler(), ["minutes", "calls"]),
         ("cat", OneHotEncoder(sparse_output=False),
          ["international_plan", "plan", "plan_type"])],
        verbose_feature_names_out=verbose).set_output(transform="pandas")


def test_one_hot_columns_follow_their_original_name():
    # After OneHotEncoder the partition's 'international_plan' used to be
    # "unknown" (X has international_plan_no/_yes), with no hint.
    from sklearn.pipeline import make_pipeline
    from skfed.kernel_methods import FDSKLClassifier

    X, y = _churn_table()
    groups = [["minutes", "international_plan", "plan_type"], ["calls", "plan"]]
    Xt = _encoder(False).fit_transform(X)
    resolved = VerticalPartition(groups).resolve(Xt)
    names = [list(Xt.columns[g]) for g in resolved.column_groups]
    # 'plan_type_x' follows 'plan_type', the longest name it starts with.
    assert names == [["minutes", "international_plan_no", "international_plan_yes",
                      "plan_type_x", "plan_type_y"],
                     ["calls", "plan_a", "plan_b", "plan_c"]]
    model = make_pipeline(_encoder(False), FDSKLClassifier(
        partition=groups, max_iter=3, random_state=0)).fit(X, y)
    assert model[-1].partition_.column_groups == resolved.column_groups


def test_one_hot_columns_with_the_transformer_prefix_get_the_hint():
    X, y = _churn_table()
    Xt = _encoder(True).fit_transform(X)
    with pytest.raises(ValueError, match="verbose_feature_names_out=False") as exc:
        VerticalPartition([["num__minutes", "num__calls", "cat__plan_a"],
                           ["international_plan", "cat__plan_b"]]).resolve(Xt)
    assert "'cat__international_plan_no'" in str(exc.value)


# -- sample_party labels (issue 35) ----------------------------------------------

def test_sample_party_labels_are_numbered_in_sorted_order():
    X = np.zeros((6, 2))
    labels = np.array(["south", "north", "west", "south", "north", "west"])
    p = resolve_partition(None, X, kind="horizontal", sample_party=labels)
    assert p.owners.tolist() == [1, 0, 2, 1, 0, 2]  # north < south < west
    same = resolve_partition(None, X, kind="horizontal",
                             sample_party=[1, 0, 2, 1, 0, 2])
    assert same.owners.tolist() == p.owners.tolist()
    # floats and booleans too, as numpy.unique sorts them
    floats = resolve_partition(None, X, kind="horizontal",
                               sample_party=[2.5, -1.0, 2.5, -1.0, 7.0, 7.0])
    assert floats.owners.tolist() == [1, 0, 1, 0, 2, 2]
    hybrid = resolve_partition(HybridPartition(2, 2), np.zeros((6, 4)),
                               kind="hybrid",
                               sample_party=labels)
    assert hybrid.owners.tolist() == [1, 0, 2, 1, 0, 2]


@pytest.mark.parametrize("labels, match", [
    (np.array(["a", None, "b", "a", "b", "a"], dtype=object), "missing"),
    ([0.0, 1.0, np.nan, 0.0, 1.0, 0.0], "missing"),
    (np.array(["a", 1, "a", 1, "a", 1], dtype=object), "must sort together"),
])
def test_sample_party_labels_that_cannot_be_numbered(labels, match):
    with pytest.raises(ValueError, match=match):
        resolve_partition(None, np.zeros((6, 2)), kind="horizontal",
                          sample_party=labels)


def _takes_sample_party():
    import inspect

    from skfed.utils import all_estimators

    return [(name, cls) for name, cls in all_estimators()
            if "sample_party" in inspect.signature(cls.fit).parameters]


def test_every_estimator_taking_sample_party_is_tested():
    names = {name for name, _ in _takes_sample_party()}
    assert {"FederatedKernelKMeans", "HyFDCAClassifier"} <= names


@pytest.mark.parametrize("name, cls", _takes_sample_party())
def test_labels_give_the_model_of_the_ids_they_sort_to(name, cls):
    from sklearn.datasets import make_blobs

    from ._instances import CHECK_PARAMS

    X, y = make_blobs(90, n_features=4, centers=2, random_state=0)
    labels = np.array(["south", "north", "west"])[np.arange(90) % 3]
    ids = np.unique(labels, return_inverse=True)[1]  # north 0, south 1, west 2
    models = []
    params = dict(CHECK_PARAMS.get(name, {}))
    if "random_state" in cls().get_params():
        params["random_state"] = 0  # the transformers have none (but KBins)
    for owners in (labels, ids):
        model = cls(**params)
        model.fit(X, y, sample_party=owners)
        models.append(model)
    by_label, by_id = models
    assert by_label.partition_.owners.tolist() == ids.tolist()
    assert by_label.communication_.total_messages > 0  # a federated fit
    if hasattr(by_id, "predict"):
        np.testing.assert_array_equal(by_label.predict(X), by_id.predict(X))
    else:  # a transformer (OneHotEncoder's output is sparse)
        out = [m.transform(X) for m in models]
        out = [o.toarray() if hasattr(o, "toarray") else o for o in out]
        np.testing.assert_array_equal(*out)
    for attr in ("coef_", "intercept_", "cluster_centers_"):
        if hasattr(by_id, attr):
            np.testing.assert_array_equal(getattr(by_label, attr),
                                          getattr(by_id, attr))
