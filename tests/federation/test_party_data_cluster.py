"""Parties that live apart: PartyData on a simulated multi-node Ray cluster.

One node per party, each with a custom resource naming it; each party's
table is a CSV file in a directory only its loader names. The fits below
run once for the module (a cluster starts slowly) while every object the
driver fetches from Ray is recorded; then every party saves its shares, the
homes are shut down, new homes load the shares back and predict again.
Two parties (two nodes) and a small table keep the module to a few seconds
beyond the cluster's start.
"""

import pickle

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone

import skfed
from skfed.ensemble import SecureBoostClassifier
from skfed.federation import PartyData, record_messages
from skfed.kernel_methods import AVFKAMRanker, FDSKLClassifier
from skfed.partition import VerticalPartition

ray = pytest.importorskip("ray")
cluster_utils = pytest.importorskip("ray.cluster_utils")
pytestmark = [pytest.mark.xdist_group("ray"), pytest.mark.slow]

PARTIES = ["party0", "party1"]
N = 40


def _tables(rng, first_id=0):
    """Two tables with some ids only one party has; party0 holds 'label'."""
    ids = first_id + np.arange(N)
    tables = []
    for k in range(len(PARTIES)):
        own = np.concatenate([ids, 1000 * (k + 1) + np.arange(5)])  # extra ids
        own = own[rng.permutation(own.size)]
        df = pd.DataFrame({"id": own})
        for j in range(2):
            df[f"p{k}_x{j}"] = rng.normal(size=own.size)
        tables.append(df)
    joined = pd.concat([t.set_index("id") for t in tables], axis=1, join="inner")
    joined = joined.sort_index()
    label = (joined.iloc[:, 0] + joined.iloc[:, 2] - joined.iloc[:, 3]
             + 0.3 * rng.normal(size=N) > 0).astype(int)
    tables[0]["label"] = label.reindex(tables[0]["id"]).fillna(0).astype(int).values
    return tables, joined.to_numpy(), label.to_numpy()


class _DriverGets:
    """Wraps ``ray.get`` in the driver; keeps every ref asked and value got."""

    def __init__(self, original):
        self.original = original
        self.refs, self.values = [], []

    def __call__(self, refs, *args, **kwargs):
        out = self.original(refs, *args, **kwargs)
        self.refs.extend(refs if isinstance(refs, list) else [refs])
        self.values.append(out)
        return out


def _estimators():
    return {
        # 40 rows: below the default min_passive_rows (64) the passive
        # party would reveal no sum and hold no lookup table to save
        "SecureBoostClassifier": SecureBoostClassifier(
            n_estimators=2, max_depth=2, key_size=512, random_state=0,
            min_passive_rows=0),
        "FDSKLClassifier": FDSKLClassifier(
            max_iter=4, batch_size=16, n_components_per_iter=8, random_state=0),
        "AVFKAMRanker": AVFKAMRanker(
            asynchronous=False, max_iter=4, n_random_features=16, batch_size=8,
            features_per_step=8, random_state=0),
    }


@pytest.fixture(scope="module")
def fits(tmp_path_factory):
    from skfed.federation._ray import shutdown_homes

    was_running = ray.is_initialized()
    if was_running:
        ray.shutdown()
    with pytest.MonkeyPatch.context() as patch:
        # workers at the caller's priority (see ray_instance in conftest.py)
        patch.setenv("RAY_worker_niceness", "0")
        cluster = cluster_utils.Cluster(
            initialize_head=True,
            head_node_args={"num_cpus": 1, "resources": {"party0": 1}})
        for name in PARTIES[1:]:
            cluster.add_node(num_cpus=1, resources={name: 1})
    ray.init(address=cluster.address, include_dashboard=False,
             log_to_driver=False, configure_logging=False)
    tables, X, y = _tables(np.random.RandomState(0))
    new_tables, X_new, _ = _tables(np.random.RandomState(1), first_id=10**5)
    paths, new_paths = {}, {}
    for name, table, new in zip(PARTIES, tables, new_tables):
        directory = tmp_path_factory.mktemp(name)  # only this party's loader
        paths[name] = str(directory / "table.csv")  # names its directory
        new_paths[name] = str(directory / "new.csv")
        table.to_csv(paths[name], index=False)
        new.drop(columns=["label"], errors="ignore").to_csv(new_paths[name],
                                                            index=False)
    placement = {name: {"resources": {name: 0.01}} for name in PARTIES}
    out = {"X": X, "y": y, "X_new": X_new, "models": {}}
    gets = _DriverGets(ray.get)
    try:
        with skfed.config_context(allow_insecure_keys=True):
            # SecureBoost also weights the rows (given in sorted-id order).
            weight = np.random.RandomState(2).uniform(0.5, 2.0, size=N)
            for name, estimator in _estimators().items():
                params = ({"sample_weight": weight}
                          if name == "SecureBoostClassifier" else {})
                reference = clone(estimator).set_params(partition=VerticalPartition(
                    [[0, 1], [2, 3]], active_parties=(0,))).fit(X, y, **params)
                data = PartyData(paths)
                with skfed.config_context(backend="ray",
                                          ray_actor_options=placement):
                    ray.get = gets
                    try:
                        with record_messages() as rec:
                            model = estimator.fit(data, "label", **params)
                            predicted = model.decision_function(
                                PartyData(new_paths))
                    finally:
                        ray.get = gets.original
                    out["models"][name] = (reference, model, predicted, rec, data)
            out["nodes"] = {
                name: gets.original(skfed.federation._ray.home_actor(name)
                                    .at_home.remote(_node_id, ()))
                for name in PARTIES}
            out["reloaded"] = _save_and_reload(out["models"], new_paths, placement,
                                               gets, tmp_path_factory.mktemp("shares"))
        out["resources"] = {node["NodeID"]: node["Resources"]
                            for node in ray.nodes() if node["Alive"]}
        out["gets"] = gets
        yield out
    finally:
        ray.get = gets.original
        shutdown_homes()
        ray.shutdown()
        cluster.shutdown()
        if was_running:  # the session's local instance (tests/conftest.py)
            with pytest.MonkeyPatch.context() as patch:
                patch.setenv("RAY_worker_niceness", "0")
                ray.init(num_cpus=2, resources={"bank_b": 1},
                         include_dashboard=False, log_to_driver=False,
                         configure_logging=False)


def _save_and_reload(models, new_paths, placement, gets, directory):
    """Every party saves its shares (the driver its part, to a file); the
    homes are shut down; new homes load the shares and predict again."""
    from skfed.federation._ray import shutdown_homes

    saved, out = {}, {}
    with skfed.config_context(backend="ray", ray_actor_options=placement):
        for name, (_, model, _, _, data) in models.items():
            folder = directory / name
            folder.mkdir()
            driver_file = str(folder / "driver.joblib")
            # An earlier save of the same model: another fingerprint (the
            # estimator records the seal of its latest save).
            again = directory / f"{name}-again"
            again.mkdir()
            data.save_shares(model, again)
            saved[name] = (folder, data.save_shares(model, folder, driver_file),
                           driver_file, again)
        shutdown_homes()
        ray.get = gets
        try:
            # One load serves all (SecureBoost's, which allows NaN, last).
            data = PartyData(new_paths)
            for name, (_, model, _, _, _) in reversed(list(models.items())):
                folder, paths, driver_file, again = saved[name]
                # The driver's part: from its file, or the stale estimator.
                driver = driver_file if name == "SecureBoostClassifier" else model
                refused = _refused_loads(data, driver, folder, again, directory / name)
                loaded = data.load_shares(driver, folder)
                out[name] = (loaded, loaded.decision_function(data), paths,
                             driver_file, refused)
        finally:
            ray.get = gets.original
    return out


def _refused_loads(data, driver, folder, again, scratch):
    """The errors of loads from doctored folders: party1's file from another
    save of the model, then party1's values changed and sealed anew."""
    import shutil

    import joblib

    from skfed.federation._fingerprint import seal

    errors = {}
    mixed = scratch / "mixed"
    shutil.copytree(folder, mixed)
    shutil.copy(again / "party1.joblib", mixed / "party1.joblib")
    edited = scratch / "edited"
    shutil.copytree(folder, edited)
    record = joblib.load(edited / "party1.joblib")
    values = pickle.loads(record["payload"])
    values = [np.where(np.isfinite(v), v + 0.5, v) if isinstance(v, np.ndarray)
              and v.dtype.kind == "f" else v for v in values]
    joblib.dump(seal(values, "party1", record["model"])[0],
                edited / "party1.joblib")
    for case, where in [("another save", mixed), ("edited", edited)]:
        with pytest.raises(skfed.federation.PartyError) as exc:
            data.load_shares(driver, where)
        errors[case] = str(exc.value)
    return errors


def _node_id(home):
    return ray.get_runtime_context().get_node_id()


def test_each_party_runs_on_its_own_node(fits):
    nodes = fits["nodes"]
    assert len(set(nodes.values())) == len(PARTIES)
    for name, node in nodes.items():
        assert fits["resources"][node].get(name) == 1


@pytest.mark.parametrize("name", sorted(_estimators()))
def test_same_model_and_messages_as_in_memory_threads(fits, name):
    reference, model, predicted, _, data = fits["models"][name]
    assert data.n_rows_ == N
    np.testing.assert_allclose(predicted,
                               reference.decision_function(fits["X_new"]),
                               rtol=1e-9, atol=1e-9)
    assert model.communication_ == reference.communication_
    assert model.communication_.total_messages > 0


def _arrays(obj):
    if isinstance(obj, np.ndarray):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for item in obj:
            yield from _arrays(item)
    elif isinstance(obj, dict):
        for item in obj.values():
            yield from _arrays(item)


def _public(contract, phase, position):
    """Whether the contract declares element ``position`` of ``phase`` public."""
    from skfed.privacy import Public, RandomIds

    return any(position < len(rule.elements)
               and isinstance(rule.elements[position], (Public, RandomIds))
               for rule in contract.rules_for(phase))


def test_driver_never_holds_a_block_or_a_payload(fits):
    from skfed.crypto import EncryptedArray
    from skfed.federation._ray import RemoteValue

    gets = fits["gets"]
    got = [a for value in gets.values for a in _arrays(value)]
    assert all(not isinstance(v, EncryptedArray) for v in gets.values)
    # No fetched array is (or contains) a column of any party's block.
    X = fits["X"]
    for array in got:
        if array.ndim and array.shape[0] == X.shape[0]:
            flat = array.reshape(X.shape[0], -1).astype(float)
            for j in range(X.shape[1]):
                for c in range(flat.shape[1]):
                    assert not np.allclose(flat[:, c], X[:, j])
    # Every message between parties travelled as a reference that the
    # driver never fetched (only the receiving party's actor did), except
    # the public ids the driver itself schedules (declared Public).
    asked = {ref.hex() for ref in gets.refs}
    for name, (_, model, _, rec, _) in fits["models"].items():
        contract = model._privacy_contract()
        n_refs = 0
        for message in rec.messages:
            for position, item in enumerate(message.payload):
                if isinstance(item, RemoteValue):
                    n_refs += 1
                    assert item.ref.hex() not in asked
                elif any(True for _ in _arrays(item)):
                    assert _public(contract, message.phase, position), (
                        name, message.phase, position)
        assert n_refs > 0


def test_shares_saved_at_home_load_back_at_new_homes(fits):
    import joblib

    from skfed.federation._party_data import SavedShare
    from skfed.federation._ray import RemoteValue, leaves

    asked = {ref.hex() for ref in fits["gets"].refs}
    for name, (loaded, predicted, paths, driver_file, _) in fits["reloaded"].items():
        assert sorted(paths) == PARTIES
        # Same scores as the model before its homes were shut down.
        np.testing.assert_array_equal(predicted, fits["models"][name][2])
        # The driver holds references to the loaded shares, never fetched.
        shares = [leaf for leaf in leaves(vars(loaded))
                  if isinstance(leaf, RemoteValue)]
        assert {s.party for s in shares} == set(PARTIES)
        # The driver holds references to the loaded shares; it fetches no
        # passive share, and of the label holder's only SecureBoost's
        # baseline (a number added to every prediction).
        baseline = getattr(loaded, "_baseline", None)
        fetched = [s for s in shares if s.ref.hex() in asked and s is not baseline]
        assert not fetched, (name, fetched)
        # The driver's file names the shares; it holds none of them.
        part = [leaf for leaf in leaves(vars(joblib.load(driver_file)))
                if isinstance(leaf, (RemoteValue, SavedShare))]
        assert len(part) == len(shares)
        assert all(isinstance(leaf, SavedShare) for leaf in part)
    # A passive party's SecureBoost file holds its own lookup table, sealed.
    record = joblib.load(fits["reloaded"]["SecureBoostClassifier"][2]["party1"])
    records = pickle.loads(record["payload"])
    assert records and all(len(r) == 3 for r in records[0])


def test_shares_of_another_save_or_edited_are_refused(fits):
    # A passive party's share from another fit used to load silently (29/120
    # SecureBoost labels changed), as did shifted thresholds or another
    # fit's FDSKL key: every file now carries the model's fingerprint and a
    # digest the driver recorded at save.
    for name, (*_, refused) in fits["reloaded"].items():
        assert "party1" in refused["another save"], name
        assert "saved from another model or another save" in refused["another save"]
        assert "fails its integrity check" in refused["edited"], name
