"""align(): from one table per party to an aligned vertical table."""

import numpy as np
import pandas as pd
import pytest

from skfed.alignment import align
from skfed.federation import record_messages
from skfed.partition import VerticalPartition, resolve_partition


def _tables(rng=0, string_ids=False):
    rng = np.random.default_rng(rng)
    ids = [rng.choice(np.arange(1000, 1100), size=n, replace=False)
           for n in (60, 70, 50)]
    if string_ids:
        ids = [np.array([f"C{i}" for i in x], dtype=object) for x in ids]
    bank = pd.DataFrame({"cid": ids[0], "income": rng.normal(size=60),
                         "debt": rng.normal(size=60)})
    insurer = pd.DataFrame({"claims": rng.integers(0, 5, size=70),
                            "cid": ids[1],
                            "churned": rng.integers(0, 2, size=70)})
    shop = pd.DataFrame({"cid": ids[2], "visits": rng.poisson(3, size=50),
                         "basket": rng.normal(size=50),
                         "segment": rng.choice(["a", "b"], size=50)})
    return [bank, insurer, shop]


@pytest.mark.parametrize("string_ids", [False, True])
@pytest.mark.parametrize("group", ["curve25519", "test512"])
def test_align_matches_an_inner_join_sorted_by_id(small_group, string_ids, group):
    tables = _tables(string_ids=string_ids)
    X, y, partition = align(tables, on="cid", label="churned",
                            group=small_group if group == "test512" else group)

    joined = tables[0].merge(tables[1], on="cid").merge(tables[2], on="cid")
    joined = joined.sort_values("cid").set_index("cid")
    assert len(X) == len(joined) > 5
    assert list(X.columns) == ["income", "debt", "claims", "visits", "basket",
                               "segment"]
    pd.testing.assert_frame_equal(X, joined[X.columns])
    pd.testing.assert_series_equal(y, joined["churned"])
    assert X.index.is_monotonic_increasing and X.index.name == "cid"
    # Column dtypes survive (the shop's category strings stay strings).
    assert X["visits"].dtype == tables[2]["visits"].dtype

    assert isinstance(partition, VerticalPartition)
    assert partition.groups == [["income", "debt"], ["claims"],
                                ["visits", "basket", "segment"]]
    assert partition.active_parties == (1,)


def test_partition_resolves_against_x_and_splits_each_party_s_rows(small_group):
    tables = _tables()
    X, y, partition = align(tables, on="cid", label="churned", group=small_group)
    resolved = resolve_partition(partition, X, kind="vertical")
    assert resolved.n_parties == 3 and resolved.active_parties == (1,)
    blocks = resolved.split(X.to_numpy())
    for k, (block, table) in enumerate(zip(blocks, tables)):
        own = table.set_index("cid").loc[X.index, partition.groups[k]]
        np.testing.assert_array_equal(block, own.to_numpy(dtype=object))


def test_without_label_and_with_named_parties(small_group):
    tables = dict(zip(["bank", "insurer", "shop"], _tables()))
    tables["insurer"] = tables["insurer"].drop(columns="churned")
    X, y, partition, communication = align(
        tables, on="cid", group=small_group, return_communication=True)
    assert y is None and partition.active_parties == (0,)
    assert set(communication.by_party) == {"bank", "insurer", "shop"}
    assert {"exponentiate ids", "reveal positions"} <= set(communication.by_phase)


def test_result_does_not_depend_on_the_random_keys(small_group):
    tables = _tables(rng=3)
    first = align(tables, on="cid", label="churned", group=small_group)
    second = align(tables, on="cid", label="churned", group=small_group)
    pd.testing.assert_frame_equal(first[0], second[0])
    pd.testing.assert_series_equal(first[1], second[1])


@pytest.mark.parametrize("group", ["curve25519", "test512"])
def test_no_id_feature_or_label_crosses(small_group, group):
    tables = _tables(string_ids=True)
    with record_messages() as rec:
        X, y, _ = align(tables, on="cid", label="churned",
                        group=small_group if group == "test512" else group)
    assert rec.messages
    private = set()
    for table in tables:
        for column in table.columns:
            private.update(table[column].tolist())
    for m in rec.messages:
        for item in m.payload:
            assert isinstance(item, np.ndarray)
            if item.dtype == object:  # group elements only: big integers
                assert group == "test512"
                assert all(v.bit_length() > 64 for v in item.tolist())
            elif item.dtype == np.dtype("V32"):  # 32-byte curve points
                assert group == "curve25519"
                assert not private & set(item.tolist())
            else:  # positions: the receiver's own rows of the intersection
                assert item.dtype == np.int64 and len(item) == len(X)
            assert not {v for v in item.tolist() if isinstance(v, str)}
            assert not private & {v for v in item.tolist()
                                  if not isinstance(v, (int, np.integer))}


def _with(tables, k, df):
    tables = list(tables)
    tables[k] = df
    return tables


@pytest.mark.parametrize("edit, error, match", [
    (lambda t: t[:1], ValueError, "at least two parties"),
    (lambda t: t[0], TypeError, "one DataFrame per party"),
    (lambda t: _with(t, 2, t[2].to_numpy()), TypeError, "Table 2 .* ndarray"),
    (lambda t: _with(t, 0, t[0].rename(columns={"cid": "id"})), ValueError,
     "Table 0 .* no id column 'cid'"),
    (lambda t: _with(t, 2, pd.concat([t[2], t[2].iloc[:3]])), ValueError,
     "party2 has duplicate ids in the id column 'cid' \\(3 repeated"),
    (lambda t: _with(t, 1, t[1].assign(cid=t[1]["cid"].astype(str))), TypeError,
     "different types .*party1: string"),
    (lambda t: _with(t, 0, t[0].assign(cid=t[0]["cid"] + 0.5)), TypeError,
     "party0 has an id 1.*integers or strings"),
    (lambda t: _with(t, 0, t[0].assign(cid=t[0]["cid"].where(
        t[0]["cid"] > 1010))), ValueError, "missing id"),
    (lambda t: _with(t, 1, t[1].drop(columns="churned")), ValueError,
     "No table has the label column 'churned'"),
    (lambda t: _with(t, 2, t[2].assign(churned=0)), ValueError,
     "'churned' is in several tables .*party1, party2"),
    (lambda t: _with(t, 2, t[2].rename(columns={"basket": "income"})),
     ValueError, "'income' in party0, party2.*Prefix"),
    (lambda t: _with(t, 1, t[1][["cid", "churned"]]), ValueError,
     "Table 1 .* no feature columns"),
    (lambda t: _with(t, 2, t[2].assign(cid=t[2]["cid"] + 10_000)), ValueError,
     "no id in common"),
    (lambda t: _with(t, 2, t[2].iloc[:0]), ValueError, "Table 2 .* no rows"),
])
def test_bad_tables_get_clear_errors(small_group, edit, error, match):
    with pytest.raises(error, match=match):
        align(edit(_tables()), on="cid", label="churned", group=small_group)


def test_label_may_not_be_the_id(small_group):
    with pytest.raises(ValueError, match="label and on both name the column"):
        align(_tables(), on="cid", label="cid", group=small_group)


def test_aligned_table_trains_a_vertical_estimator(small_group):
    from skfed.ensemble import SecureBoostClassifier

    tables = _tables(rng=1)
    tables[2] = tables[2].drop(columns="segment")  # numeric features only
    X, y, partition = align(tables, on="cid", label="churned", group=small_group)
    model = SecureBoostClassifier(n_estimators=3, partition=partition,
                                  encryption=None, random_state=0).fit(X, y)
    assert model.partition_.active_parties == (1,)
    assert [list(X.columns[model.partition_.columns(k)]) for k in range(3)] == \
        [["income", "debt"], ["claims"], ["visits", "basket"]]
    assert model.predict(X).shape == y.shape


def test_on_as_a_one_element_list(small_group):
    # pandas' merge(on=["id"]) idiom used to be a TypeError inside align.
    tables = _tables()
    X1, y1, p1 = align(tables, on=["cid"], label="churned", group=small_group)
    X2, y2, p2 = align(tables, on="cid", label="churned", group=small_group)
    pd.testing.assert_frame_equal(X1, X2)
    pd.testing.assert_series_equal(y1, y2)
    with pytest.raises(ValueError, match="align joins on one id column.*"
                                         "Combine the key columns"):
        align(tables, on=["cid", "income"], group=small_group)
