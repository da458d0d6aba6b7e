"""Parties on the nodes of a Ray cluster: placement, busy homes, lost nodes.

One ``ray.cluster_utils.Cluster`` of three nodes for the module (one node
per party, each offering a custom resource of its party's name; the homes
ask for it), in a private ``RAY_TMPDIR``: a ``Cluster`` writes Ray's
"latest cluster" file into the default temp dir, where every default
``ray.init()`` on the host would find it. The test that removes a node runs
last.
"""

import os
import shutil
import tempfile
import threading
import time

import numpy as np
import pandas as pd
import pytest

import skfed
from skfed.federation import Federation, PartyData, PartyError
from skfed.kernel_methods import FDSKLClassifier

ray = pytest.importorskip("ray")
cluster_utils = pytest.importorskip("ray.cluster_utils")
pytestmark = [pytest.mark.xdist_group("ray"), pytest.mark.slow]

PARTIES = ["party0", "party1", "party2"]
PLACEMENT = {name: {"resources": {name: 0.01}} for name in PARTIES}


def _write_tables(directory, n=80, seed=0):
    rng = np.random.RandomState(seed)
    ids = np.arange(n)
    paths = {}
    for k, name in enumerate(PARTIES):
        own = np.concatenate([ids, 10**6 * (k + 1) + np.arange(3)])
        own = own[rng.permutation(own.size)]
        table = pd.DataFrame({"id": own})
        for j in range(2):
            table[f"p{k}_x{j}"] = rng.normal(size=own.size)
        if k == 0:
            table["label"] = (table["p0_x0"] > 0).astype(int)
        folder = os.path.join(directory, name)
        os.makedirs(folder)
        paths[name] = os.path.join(folder, "table.csv")
        table.to_csv(paths[name], index=False)
    return paths


def _model():
    return FDSKLClassifier(max_iter=3, batch_size=16, n_components_per_iter=8,
                           random_state=0)


@pytest.fixture(scope="module")
def cluster():
    from skfed.federation._ray import shutdown_homes

    was_running = ray.is_initialized()
    if was_running:
        ray.shutdown()
    tmp = tempfile.mkdtemp(prefix="skn", dir="/tmp")  # short: socket paths
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RAY_TMPDIR", tmp)
        patch.setenv("RAY_worker_niceness", "0")
        nodes = {}
        made = cluster_utils.Cluster(
            initialize_head=True,
            head_node_args={"num_cpus": 1, "resources": {PARTIES[0]: 1}})
        nodes[PARTIES[0]] = made.head_node
        for name in PARTIES[1:]:
            nodes[name] = made.add_node(num_cpus=1, resources={name: 1})
        ray.init(address=made.address, include_dashboard=False,
                 log_to_driver=False, configure_logging=False)
    try:
        yield made, nodes, _write_tables(tmp)
    finally:
        try:
            shutdown_homes()
        finally:
            ray.shutdown()
            made.shutdown()
            shutil.rmtree(tmp, ignore_errors=True)
        if was_running:  # the session's local instance (tests/conftest.py)
            with pytest.MonkeyPatch.context() as patch:
                patch.setenv("RAY_worker_niceness", "0")
                ray.init(address="local", num_cpus=2, resources={"bank_b": 1},
                         include_dashboard=False, log_to_driver=False,
                         configure_logging=False)


def _noop(state):
    return None


def test_a_party_no_node_can_host_is_refused_at_once(cluster):
    # It waited for a node that never comes (the driver hung 6 min
    # on a typo in a worker node's flags).
    start = time.monotonic()
    with skfed.config_context(backend="ray", ray_actor_options={
            "a": {"resources": {"nowhere": 0.01}}}):
        with pytest.raises(PartyError, match="Party 'a' cannot start: no alive "
                           "node of the Ray cluster offers 0.01 of resource "
                           "'nowhere'") as info:
            with Federation({"a": {}, "b": {}}) as fed:
                fed["a"].call(_noop).result()
    assert info.value.party == "a"
    assert time.monotonic() - start < 10


class _Nodes:
    """Stands for ``ray`` where only ``ray.nodes()`` is read."""

    def __init__(self, nodes):
        self._nodes = nodes

    def nodes(self):
        return self._nodes


def test_what_the_placement_check_says(monkeypatch):
    from skfed.federation import _ray as backend

    monkeypatch.setattr(backend, "_offered_by", {})
    alive = {"NodeID": "aaaa1111ffff", "Alive": True, "NodeManagerAddress": "h1",
             "Resources": {"party2": 1.0, "CPU": 1.0}}
    assert backend._unplaceable(_Nodes([alive]), {"resources": {"party2": 0.01}}) is None
    # too much of a resource a living node offers: no node named
    said = backend._unplaceable(_Nodes([alive]), {"resources": {"party2": 2}})
    assert said.endswith("offers 2 of resource 'party2' (its ray_actor_options "
                         "ask for it)")
    # Ray forgets a dead node's resources: the node seen alive is named
    dead = dict(alive, Alive=False, Resources={},
                DeathReasonMessage="health check failed")
    said = backend._unplaceable(_Nodes([dead]), {"resources": {"party2": 0.01}})
    assert said.endswith("The node that offered it, aaaa1111 at h1, is dead "
                         "(health check failed)")
    said = backend._unplaceable(_Nodes([]), {"resources": {"party2": 0.01}})
    assert said.endswith("aaaa1111 at h1, has left the cluster")
    other = dict(alive, NodeID="b", Resources={"x": 1.0})
    said = backend._unplaceable(_Nodes([alive, other]),
                                {"resources": {"party2": 0.5, "x": 0.5}})
    assert "offers all of {'party2': 0.5, 'x': 0.5} together" in said
    said = backend._unplaceable(_Nodes([alive]), {"num_cpus": 2})
    assert "offers 2 of resource 'CPU'" in said


def test_concurrent_fits_on_one_party_data_work_or_are_refused(cluster):
    # Two fits sharing the homes at once: a home holds one federation's
    # state, so the second is refused with a clear error (before: a
    # PartyError naming the wrong party, a bare KeyError, ActorDiedError).
    _, _, paths = cluster
    shared = PartyData(paths)
    outcomes = []

    def fit(data):
        try:
            with skfed.config_context(backend="ray", ray_actor_options=PLACEMENT):
                model = _model().fit(data, "label")
            outcomes.append(("ok", model))
        except Exception as exc:  # noqa: BLE001 - the test sorts them
            outcomes.append((type(exc).__name__, str(exc)))

    for datasets in ([shared, shared], [shared, PartyData(paths)]):
        outcomes.clear()
        threads = [threading.Thread(target=fit, args=(d,)) for d in datasets]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(300)
        kinds = sorted(kind for kind, _ in outcomes)
        assert len(kinds) == 2
        assert "ok" in kinds, outcomes
        for kind, detail in outcomes:
            if kind != "ok":
                assert kind == "RuntimeError", detail
                assert "home is running another fit or predict" in detail
    # after them, a fit runs as usual, as on the threads backend
    with skfed.config_context(backend="ray", ray_actor_options=PLACEMENT):
        model = _model().fit(shared, "label")
        predicted = model.decision_function(shared)
    alone = _model().fit(PartyData(paths), "label")
    np.testing.assert_array_equal(predicted,
                                  alone.decision_function(PartyData(paths)))


def test_after_a_node_is_lost_the_next_fit_ends_with_a_party_error(cluster):
    # Last: it removes party2's node. Before, every later fit hung (more
    # than 120 s) waiting for a home no node could host.
    made, nodes, paths = cluster
    data = PartyData(paths)
    with skfed.config_context(backend="ray", ray_actor_options=PLACEMENT):
        _model().fit(data, "label")  # the homes are placed
        made.remove_node(nodes["party2"], allow_graceful=False)
        for attempt in (data, PartyData(paths), PartyData(paths)):
            start = time.monotonic()
            with pytest.raises(PartyError) as info:
                _model().fit(attempt, "label")
            took = time.monotonic() - start
            assert took < 60, (took, str(info.value))
            assert "party2" in str(info.value)
        # once Ray has marked the node dead: at once, naming what is missing
        # and the node that offered it
        assert took < 10
        assert ("no alive node of the Ray cluster offers 0.01 of resource "
                "'party2'" in str(info.value))
        assert "The node that offered it" in str(info.value)
