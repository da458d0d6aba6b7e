"""Threads versus Ray actors: the same federated fits, side by side.

Every quick-tour case (one per estimator) is fitted twice with the same seed,
once with one thread per party and once with one Ray actor per party (local
worker processes). The table gives both wall times, their ratio, the number
of messages (identical by construction) and Ray's extra cost per message.

The last rows run parties that really live apart: a simulated three-node
Ray cluster (``ray.cluster_utils.Cluster``, one node and one custom resource
per party), each party's table a CSV file read by its own home actor
(:class:`~skfed.federation.PartyData`), rows aligned by private set
intersection, and every message passed actor to actor by reference
(SecureBoost, FDSKL, AVFKAM). They give the load-and-align time, each fit's
time, bytes per message and milliseconds per message, beside the same fit on
the joined table with threads (same model and messages checked).

``--nodes`` runs the rows of issue 39's acceptance instead: a three-node
cluster (one node per party, each party's actor pinned by a custom
resource), FDSKL (600 rows, 200 steps) and SecureBoost on the joined table
in memory, beside the threads backend, idle and then under load (two busy
processes at the caller's priority, started by the benchmark): wall time,
CPU seconds of the driver and of every Ray process (from ``/proc``), the
ratio to threads, milliseconds per message, and whether the decision values
are identical, with the Ray tasks sent and the driver's ``ray.get`` calls
of each Ray fit. A micro row gives the cost of one 20 KB message party to
party. The cluster runs in a private ``RAY_TMPDIR`` (a ``Cluster`` writes
Ray's "latest cluster" file into the default temp dir, where any default
``ray.init()`` on the host would find it) and is stopped by its own
``shutdown()``.

Run::

    python benchmarks/bench_backends.py            # every estimator
    python benchmarks/bench_backends.py --quick    # the first two only
    python benchmarks/bench_backends.py --nodes    # issue 39's rows
"""

import argparse
import os
import tempfile
import time

import numpy as np

import skfed
from skfed._tour import _cases


def _fit(case, backend):
    from sklearn.base import clone

    X_train, X_test, y_train, _ = case.make_data()
    model = clone(case.estimator)
    with skfed.config_context(backend=backend):
        start = time.perf_counter()
        model.fit(X_train, y_train, **case.fit_params)
        seconds = time.perf_counter() - start
        X_eval = X_train if X_test is None else X_test
        out = (model.predict(X_eval) if hasattr(model, "predict")
               else model.labels_)
    return model, seconds, np.asarray(out)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--nodes", action="store_true",
                        help="issue 39's rows on a three-node cluster")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--no-load", action="store_true",
                        help="skip the rows under load")
    args = parser.parse_args(argv)
    if args.nodes:
        _nodes_rows(args.steps, under_load=not args.no_load)
        return
    import ray

    start = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             configure_logging=False)
    print(f"ray.init: {time.perf_counter() - start:.1f} s (paid once per process)\n")
    cases = _cases()[: 2 if args.quick else None]
    header = (f"{'estimator':<34}{'threads s':>10}{'ray s':>9}{'ratio':>7}"
              f"{'messages':>10}{'ms/msg extra':>14}{'same model':>12}")
    print(header)
    print("-" * len(header))
    for case in cases:
        m_t, s_t, out_t = _fit(case, "threads")
        m_r, s_r, out_r = _fit(case, "ray")
        n_msg = m_t.communication_.total_messages
        same = (m_t.communication_ == m_r.communication_
                and np.array_equal(out_t, out_r))
        extra = 1000 * (s_r - s_t) / max(n_msg, 1)
        print(f"{case.name:<34}{s_t:>10.2f}{s_r:>9.2f}{s_r / s_t:>7.2f}"
              f"{n_msg:>10}{extra:>14.2f}{str(same):>12}")
    ray.shutdown()
    _multinode_row(quick=args.quick)


def _party_tables(n_rows, rng):
    """Three parties' tables (3 columns each, a few ids of their own);
    party0 holds the label. Returns the tables and the joined X, y."""
    import pandas as pd

    tables = []
    for k in range(3):
        ids = np.concatenate([np.arange(n_rows), 10**6 * (k + 1) + np.arange(20)])
        ids = ids[rng.permutation(ids.size)]
        table = pd.DataFrame({"id": ids})
        for j in range(3):
            table[f"p{k}_x{j}"] = rng.normal(size=ids.size)
        tables.append(table)
    joined = pd.concat([t.set_index("id") for t in tables], axis=1,
                       join="inner").sort_index()
    X = joined.to_numpy()
    y = (X[:, 0] + X[:, 3] - X[:, 6] + 0.5 * rng.normal(size=n_rows) > 0).astype(int)
    tables[0]["label"] = pd.Series(y, index=joined.index).reindex(
        tables[0]["id"]).fillna(0).astype(int).to_numpy()
    return tables, X, y


def _multinode_estimators():
    from skfed.ensemble import SecureBoostClassifier
    from skfed.kernel_methods import AVFKAMRanker, FDSKLClassifier

    return {
        "SecureBoost (1024-bit key)": SecureBoostClassifier(
            n_estimators=3, max_depth=3, key_size=1024, random_state=0),
        "FDSKL": FDSKLClassifier(max_iter=40, random_state=0),
        "AVFKAM (synchronous)": AVFKAMRanker(asynchronous=False, max_iter=40,
                                             random_state=0),
    }


def _multinode_row(quick=False):
    import ray
    from ray.cluster_utils import Cluster
    from sklearn.base import clone

    from skfed.federation import PartyData
    from skfed._party_data_fit import load
    from skfed.federation._party_data import _at_homes
    from skfed.federation._ray import shutdown_homes
    from skfed.partition import VerticalPartition

    names = ["party0", "party1", "party2"]
    n_rows = 300 if quick else 2000
    tables, X, y = _party_tables(n_rows, np.random.RandomState(0))
    partition = VerticalPartition([[0, 1, 2], [3, 4, 5], [6, 7, 8]],
                                  active_parties=(0,))
    rows = {}
    with skfed.config_context(allow_insecure_keys=True):
        for label, estimator in _multinode_estimators().items():
            memory = clone(estimator).set_params(partition=partition)
            start = time.perf_counter()
            memory.fit(X, y)
            rows[label] = [memory, time.perf_counter() - start]
    start = time.perf_counter()
    cluster = Cluster(initialize_head=True,
                      head_node_args={"num_cpus": 1, "resources": {"party0": 1}})
    for name in names[1:]:
        cluster.add_node(num_cpus=1, resources={name: 1})
    ray.init(address=cluster.address, include_dashboard=False,
             log_to_driver=False, configure_logging=False)
    print(f"\nsimulated cluster of {len(names)} nodes: "
          f"{time.perf_counter() - start:.1f} s to start")
    placement = {name: {"resources": {name: 0.01}} for name in names}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            paths = {}
            for name, table in zip(names, tables):
                os.makedirs(os.path.join(tmp, name))
                paths[name] = os.path.join(tmp, name, "table.csv")
                table.to_csv(paths[name], index=False)
            data = PartyData(paths)
            with skfed.config_context(backend="ray", ray_actor_options=placement,
                                      allow_insecure_keys=True):
                start = time.perf_counter()
                _at_homes({name: () for name in names}, len)  # homes start
                print(f"home actors: {time.perf_counter() - start:.1f} s to start "
                      "(once per party and session)")
                start = time.perf_counter()
                load(data, "label", False, True)  # load, align (PSI), validate
                print(f"load {n_rows} rows x 3 CSV files, align (PSI), validate: "
                      f"{time.perf_counter() - start:.2f} s\n")
                for label, estimator in _multinode_estimators().items():
                    memory = rows[label][0]
                    start = time.perf_counter()
                    model = clone(estimator).fit(data, "label")
                    rows[label] += [time.perf_counter() - start, model.communication_,
                                    np.allclose(model.decision_function(data),
                                                memory.decision_function(X))
                                    and model.communication_ == memory.communication_]
    finally:
        shutdown_homes()
        ray.shutdown()
        cluster.shutdown()
    header = (f"{'multi-node row (PartyData, 3 nodes)':<38}{'rows':>6}{'fit s':>8}"
              f"{'threads s':>10}{'messages':>10}{'bytes/msg':>11}{'ms/msg':>8}"
              f"{'same model':>12}")
    print(header)
    print("-" * len(header))
    for label, (_, s_threads, s_fit, summary, same) in rows.items():
        n_msg = summary.total_messages
        print(f"{label:<38}{n_rows:>6}{s_fit:>8.2f}{s_threads:>10.2f}{n_msg:>10}"
              f"{summary.total_bytes / n_msg:>11.0f}{1000 * s_fit / n_msg:>8.1f}"
              f"{str(same):>12}")


def _tree_cpu():
    """CPU seconds of this process and of each of its descendants (the
    nodes of a ``Cluster`` and their workers), from ``/proc``."""
    tick = os.sysconf("SC_CLK_TCK")
    procs = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                data = f.read()
        except OSError:
            continue
        rest = data[data.rindex(")") + 2:].split()
        procs[int(entry)] = (int(rest[1]), (int(rest[11]) + int(rest[12])) / tick)
    children = {}
    for pid, (ppid, _) in procs.items():
        children.setdefault(ppid, []).append(pid)
    out, stack = {}, [os.getpid()]
    while stack:
        pid = stack.pop()
        if pid in procs:
            out[pid] = procs[pid][1]
        stack.extend(children.get(pid, []))
    return out


def _measured(fn, exclude=()):
    """``(result, wall s, driver CPU s, other CPU s, load)`` of ``fn()``;
    ``exclude``: pids not counted (the busy processes of the load rows)."""
    before, start = _tree_cpu(), time.perf_counter()
    result = fn()
    wall = time.perf_counter() - start
    after = _tree_cpu()
    driver = after.get(os.getpid(), 0.0) - before.get(os.getpid(), 0.0)
    other = sum(cpu - before.get(pid, 0.0) for pid, cpu in after.items()
                if pid != os.getpid() and pid not in exclude)
    return result, wall, driver, other, os.getloadavg()[0]


class _RayCalls:
    """Counts the Ray actor tasks this process sends and its ``ray.get``
    calls (the driver's round trips), by wrapping Ray's entry points."""

    def __init__(self):
        import ray
        import ray.actor

        self.tasks = self.gets = 0
        remote, get = ray.actor.ActorMethod._remote, ray.get

        def counted_remote(method, *args, **kwargs):
            self.tasks += 1
            return remote(method, *args, **kwargs)

        def counted_get(*args, **kwargs):
            self.gets += 1
            return get(*args, **kwargs)

        ray.actor.ActorMethod._remote = counted_remote
        ray.get = counted_get

    def snapshot(self):
        return self.tasks, self.gets


def _stop(processes):
    for process in processes:
        process.terminate()
        process.wait()


def _message(state, value):
    return value


def _micro(n_messages, placement):
    """ms per 20 KB message party to party (a round trip through a relay)."""
    from skfed.federation import Federation

    value = np.random.RandomState(0).normal(size=2500)  # 20 KB
    with skfed.config_context(backend="ray", ray_actor_options=placement):
        with Federation({"party0": {}, "party1": {}, "party2": {}}) as fed:
            fed["party1"].call(_message, value, sender="party0").result()
            start = time.perf_counter()
            for k in range(n_messages):
                receiver = ("party1", "party2")[k % 2]
                fed[receiver].call(_message, value, sender="party0").result()
            return 1000 * (time.perf_counter() - start) / n_messages


def _nodes_rows(steps, under_load=True):
    import shutil
    import subprocess
    import sys

    from sklearn.base import clone

    from skfed.ensemble import SecureBoostClassifier
    from skfed.federation._ray import shutdown_homes
    from skfed.kernel_methods import FDSKLClassifier
    from skfed.partition import VerticalPartition

    names = ["party0", "party1", "party2"]
    _, X, y = _party_tables(600, np.random.RandomState(0))
    partition = VerticalPartition([[0, 1, 2], [3, 4, 5], [6, 7, 8]],
                                  active_parties=(0,))
    estimators = {
        f"FDSKL 600 rows, {steps} steps": FDSKLClassifier(
            partition=partition, max_iter=steps, random_state=0),
        "SecureBoost 600 rows (1024-bit)": SecureBoostClassifier(
            partition=partition, n_estimators=3, max_depth=3, key_size=1024,
            random_state=0),
    }
    tmp = tempfile.mkdtemp(prefix="skb", dir="/tmp")  # short: socket paths
    os.environ["RAY_TMPDIR"] = tmp
    os.environ.setdefault("RAY_worker_niceness", "0")
    import ray
    from ray.cluster_utils import Cluster

    placement = {name: {"resources": {name: 0.01}} for name in names}
    start = time.perf_counter()
    busy, cluster = [], None
    try:
        for attempt in range(3):  # a loaded host can time a node's start out
            try:
                cluster = Cluster(initialize_head=True, head_node_args={
                    "num_cpus": 1, "resources": {"party0": 1}})
                break
            except Exception as exc:  # noqa: BLE001 - retried, then raised
                print(f"cluster start failed ({exc}); retrying")
                if attempt == 2:
                    raise
        for name in names[1:]:
            cluster.add_node(num_cpus=1, resources={name: 1})
        ray.init(address=cluster.address, include_dashboard=False,
                 log_to_driver=False, configure_logging=False)
        print(f"three-node cluster (one node per party): "
              f"{time.perf_counter() - start:.1f} s to start, load "
              f"{os.getloadavg()[0]:.1f}\n")
        calls = _RayCalls()
        header = (f"{'fit':<34}{'load':>6}{'backend':>9}{'wall s':>8}"
                  f"{'drv CPU':>9}{'Ray CPU':>9}{'ratio':>7}{'msgs':>7}"
                  f"{'ms/msg':>8}{'tasks':>7}{'gets':>7}{'same':>6}")
        conditions = ["idle"] + (["loaded"] if under_load else [])
        with skfed.config_context(allow_insecure_keys=True):
            for condition in conditions:
                if condition == "loaded":  # two busy processes at nice 0
                    busy = [subprocess.Popen([sys.executable, "-c",
                                              "while True: pass"])
                            for _ in range(2)]
                pids = {process.pid for process in busy}
                micro = _micro(100, placement)
                print(f"[{condition}] one 20 KB message party to party: "
                      f"{micro:.1f} ms, load {os.getloadavg()[0]:.1f}")
                print(header)
                print("-" * len(header))
                for label, estimator in estimators.items():
                    threads, t_wall, t_drv, _, t_load = _measured(
                        lambda: clone(estimator).fit(X, y), pids)
                    print(f"{label:<34}{t_load:>6.1f}{'threads':>9}{t_wall:>8.2f}"
                          f"{t_drv:>9.2f}{'':>9}{'1.00':>7}")
                    # warm: the actors of the previous run are reused; cold:
                    # every party actor started anew (as before issue 39)
                    runs = ["ray warm"] + (["ray cold"] if label.startswith(
                        "FDSKL") else [])
                    for run in runs:
                        if run == "ray cold":
                            shutdown_homes()  # kills the idle actors too
                        with skfed.config_context(backend="ray",
                                                  ray_actor_options=placement):
                            before = calls.snapshot()
                            model, r_wall, r_drv, r_other, r_load = _measured(
                                lambda: clone(estimator).fit(X, y), pids)
                            tasks, gets = (b - a for a, b in
                                           zip(before, calls.snapshot()))
                            decision = model.decision_function(X)
                        same = (np.array_equal(decision,
                                               threads.decision_function(X))
                                and model.communication_ == threads.communication_)
                        n_msg = model.communication_.total_messages
                        print(f"{'':<34}{r_load:>6.1f}{run:>9}{r_wall:>8.2f}"
                              f"{r_drv:>9.2f}{r_other:>9.2f}"
                              f"{r_wall / t_wall:>7.2f}{n_msg:>7}"
                              f"{1000 * r_wall / n_msg:>8.1f}{tasks:>7}"
                              f"{gets:>7}{str(same):>6}")
                print()
                _stop(busy)
                busy = []
    finally:
        _stop(busy)
        if ray.is_initialized():
            shutdown_homes()
            ray.shutdown()
        if cluster is not None:
            cluster.shutdown()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
