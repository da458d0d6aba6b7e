"""PartyData in one process (threads backend): loading, alignment, errors.

The multi-node behaviour (homes on their own nodes, references between
actors) is tested in ``test_party_data_cluster.py``.
"""

import numpy as np
import pandas as pd
import pytest

from skfed.alignment import align
from skfed.ensemble import SecureBoostClassifier, SecureBoostRegressor
from skfed.federation import PartyData, PartyError, record_messages
from skfed.federation._party_data import at_home_apply
from skfed.federation._ray import HomeRef
from skfed.kernel_methods import AVFKAMRanker


def _tables(seed=0, n=60):
    rng = np.random.RandomState(seed)
    ids = np.arange(n) * 7 + 3
    out = []
    for k in range(3):
        own = np.concatenate([ids[rng.rand(n) < 0.9], 5000 + 10 * k + np.arange(4)])
        own = own[rng.permutation(own.size)]
        df = pd.DataFrame({"id": own})
        for j in range(2):
            df[f"p{k}_{j}"] = np.sin(own * (k + 1) + j) + 0.1 * rng.normal(size=own.size)
        out.append(df)
    out[1]["target"] = np.cos(out[1]["id"]) + out[1]["p1_0"]
    out[1]["label"] = (out[1]["target"] > 0).astype(int).map({0: "no", 1: "yes"})
    return out


def _data(tables, drop=()):
    return PartyData({f"t{k}": (lambda t=t: t.drop(columns=[c for c in drop
                                                            if c in t.columns]))
                      for k, t in enumerate(tables)})


def _in_memory(tables, label, drop):
    X, y, partition = align([t.drop(columns=[c for c in drop if c in t.columns])
                             for t in tables], label=label)
    return X, (None if y is None else y.to_numpy()), partition


def test_classifier_equals_fit_on_the_aligned_table():
    tables = _tables()
    data = _data(tables, drop=("target",))
    model = SecureBoostClassifier(n_estimators=3, encryption=None, random_state=0)
    model.fit(data, "label")
    X, y, partition = _in_memory(tables, "label", ("target",))
    reference = SecureBoostClassifier(n_estimators=3, encryption=None,
                                      random_state=0, partition=partition).fit(X, y)
    assert data.n_rows_ == X.shape[0]
    assert data.alignment_communication_.total_messages > 0
    assert model.partition_.active_parties == (1,)
    assert model.communication_ == reference.communication_
    np.testing.assert_array_equal(model.classes_, ["no", "yes"])
    np.testing.assert_array_equal(model.predict(data), reference.predict(X))
    # A new PartyData with other rows, in another order (labels not needed).
    new = _tables(seed=1)
    got = model.predict_proba(_data(new, drop=("target", "label")))
    X_new, _, _ = _in_memory(new, None, ("target", "label"))
    np.testing.assert_allclose(got, reference.predict_proba(X_new))
    with pytest.raises(ValueError, match="keeps no share at the parties' homes"):
        data.save_shares(model, ".")  # threads: the estimator holds the model


def test_regressor_from_csv_files_equals_callables(tmp_path):
    tables = _tables()
    paths = {}
    for k, table in enumerate(tables):
        paths[f"t{k}"] = tmp_path / f"t{k}.csv"
        table.drop(columns=["label"], errors="ignore").to_csv(paths[f"t{k}"],
                                                              index=False)
    from_files = SecureBoostRegressor(n_estimators=2, encryption=None,
                                      random_state=0).fit(PartyData(paths), "target")
    from_callables = SecureBoostRegressor(n_estimators=2, encryption=None,
                                          random_state=0)
    from_callables.fit(_data(tables, drop=("label",)), "target")
    assert from_files.communication_ == from_callables.communication_
    np.testing.assert_allclose(from_files.predict(PartyData(paths)),
                               from_callables.predict(_data(tables, drop=("label",))))


def test_clear_errors():
    tables = _tables()
    model = SecureBoostClassifier(n_estimators=1, encryption=None)
    with pytest.raises(TypeError, match="names the label column"):
        model.fit(_data(tables), np.zeros(3))
    with pytest.raises(PartyError, match="Party 't0'.*no id column 'id'"):
        model.fit(_data([tables[0].rename(columns={"id": "key"}), tables[1]]), "label")
    bad = tables[0].copy()
    bad["label"] = 0
    with pytest.raises(ValueError, match="Exactly one party"):
        model.fit(_data([bad, tables[1]]), "label")
    strings = tables[0].assign(id=tables[0]["id"].astype(str))
    with pytest.raises(TypeError, match="different types"):
        model.fit(_data([strings, tables[1]]), "label")
    model.fit(_data(tables[:2], drop=("target",)), "label")
    with pytest.raises(ValueError, match="feature columns; the model was fitted"):
        model.predict(_data([tables[0].assign(extra=1.0), tables[1]],
                            drop=("target",)))
    with pytest.raises(ValueError, match="at least two parties"):
        PartyData({"a": "a.csv"})


def _double(values, factor):
    return values * factor


def test_home_references_read_and_transform():
    home = {("k", "X"): np.arange(12.0).reshape(4, 3)}
    ref = HomeRef("a", ("k", "X"), columns=[0, 2], shape=(4, 2))
    np.testing.assert_array_equal(ref.read(home), home[("k", "X")][:, [0, 2]])
    doubled = at_home_apply(ref, _double, 2.0)
    assert isinstance(doubled, HomeRef) and len(doubled) == 4
    np.testing.assert_array_equal(doubled.read(home), 2 * home[("k", "X")][:, [0, 2]])
    np.testing.assert_array_equal(at_home_apply(np.ones(2), _double, 3.0), [3.0, 3.0])


def test_weighted_kernel_regression_equals_in_memory():
    from skfed.kernel_methods import FDSKLRegressor

    tables = _tables()
    data = _data(tables, drop=("label",))
    X, y, partition = _in_memory(tables, "target", ("label",))
    weight = np.random.RandomState(0).uniform(0.5, 2.0, size=len(y))
    params = dict(max_iter=5, batch_size=8, n_components_per_iter=8, random_state=0)
    model = FDSKLRegressor(**params).fit(data, "target", sample_weight=weight)
    reference = FDSKLRegressor(partition=partition, **params).fit(
        X, y, sample_weight=weight)
    assert model.communication_ == reference.communication_
    assert (model._y_mean, model._y_scale) == (reference._y_mean, reference._y_scale)
    np.testing.assert_allclose(model.predict(data), reference.predict(X))


def test_unsupported_combinations_fail_before_any_party_starts():
    from skfed.kernel_methods import AVFKAMRanker, FDSKLClassifier

    tables = _tables()
    data = _data(tables[:2], drop=("target",))
    refused = [
        (SecureBoostClassifier(class_weight="balanced"), "class_weight=.... is not"),
        (FDSKLClassifier(class_weight={"no": 1.0, "yes": 2.0}), "class_weight"),
        (SecureBoostClassifier(early_stopping=True), "early stopping is not"),
        (AVFKAMRanker(early_stopping=True), "early stopping is not"),
    ]
    for model, message in refused:
        with record_messages() as rec:
            with pytest.raises(ValueError, match=message.replace("....", ".*")):
                model.fit(data, "label")
        assert rec.messages == []  # not even the alignment ran
        assert not hasattr(model, "partition_")
    from skfed.cluster import FederatedKernelKMeans
    from skfed.linear_model import HyFDCAClassifier

    for model in (HyFDCAClassifier(), FederatedKernelKMeans()):
        with pytest.raises(TypeError, match="does not take a PartyData; "
                           "SecureBoostClassifier, .* AVFKAMRanker do"):
            model.fit(data, "label")
    from skfed._party_data_fit import check_supported

    # 'auto' is off with a PartyData, whatever the rows; True is refused.
    for model in (SecureBoostClassifier(), AVFKAMRanker()):
        check_supported(model)
        with pytest.raises(ValueError, match="'auto' \\(off with a PartyData\\)"):
            check_supported(model.set_params(early_stopping=True))
    check_supported(SecureBoostClassifier(early_stopping=True,
                                          validation_fraction=None))


def _counted_tables(n):
    """Two tables of ``n`` common rows whose sources count their reads."""
    rng = np.random.RandomState(0)
    ids = np.arange(n)
    a = pd.DataFrame({"id": ids, "a0": rng.normal(size=n)})
    b = pd.DataFrame({"id": ids[::-1].copy(), "b0": rng.normal(size=n)})
    b["label"] = (b["b0"] > 0).astype(int)
    reads = []

    def source(table, name):
        def read():
            reads.append(name)
            return table
        return read

    return PartyData({"a": source(a, "a"), "b": source(b, "b")}), reads


def test_secureboost_early_stopping_with_party_data():
    # Above 10,000 rows 'auto' turned early stopping on, and a PartyData fit
    # was refused after the parties had loaded and aligned their tables
    # (171.6 s on the cluster); now 'auto' means off there, and an
    # explicit True is refused before any party reads its table.
    data, reads = _counted_tables(10_001)
    with pytest.raises(ValueError, match="early stopping is not supported"):
        SecureBoostClassifier(early_stopping=True).fit(data, "label")
    assert reads == []
    model = SecureBoostClassifier(n_estimators=1, max_depth=1, encryption=None,
                                  random_state=0).fit(data, "label")
    assert sorted(reads) == ["a", "b"]
    assert model.do_early_stopping_ is False
    assert model.n_iter_ == 1


def test_avfkam_early_stopping_with_party_data():
    # As SecureBoost's: AVFKAM's held-out rows are drawn in the driver,
    # stratified by label, so True is refused before any read and 'auto'
    # (on above 10,000 rows in memory) is off.
    data, reads = _counted_tables(10_001)
    with pytest.raises(ValueError, match="early stopping is not supported"):
        AVFKAMRanker(early_stopping=True).fit(data, "label")
    assert reads == []
    model = AVFKAMRanker(asynchronous=False, max_iter=2, n_random_features=8,
                         batch_size=8, features_per_step=4,
                         random_state=0).fit(data, "label")
    assert sorted(reads) == ["a", "b"]
    assert model.n_iter_ <= 2 and len(model.validation_score_) == 0


def test_privacy_checks_say_what_to_do_with_party_data():
    from skfed.alignment._contract import CONTRACT
    from skfed.privacy import audit, check_messages

    tables = _tables()
    data = _data(tables[:2], drop=("target",))
    model = SecureBoostClassifier(n_estimators=1, max_depth=2, encryption=None,
                                  random_state=0)
    with pytest.raises(TypeError, match="need the table in memory"):
        audit(model, data, "label")
    with record_messages() as rec:
        model.fit(data, "label")
    with pytest.raises(ValueError, match="include the alignment's"):
        check_messages(model, rec.messages)
    with pytest.raises(TypeError, match="need the table in memory"):
        check_messages(model, rec.messages, data, "label")
    # The recipe of the message: the estimator's own messages check clean.
    own = [m for m in rec.messages if not CONTRACT.rules_for(m.phase)]
    assert 0 < len(own) < len(rec.messages)
    assert check_messages(model, own) == []
