"""A Ray instance that skfed starts itself (no ``ray_instance`` fixture)."""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import pytest

import skfed
from skfed.federation import Federation

ray = pytest.importorskip("ray")
pytestmark = [pytest.mark.xdist_group("ray"), pytest.mark.slow]


def _niceness(state):
    return os.nice(0)


def test_party_actors_of_a_ray_skfed_starts_run_at_the_callers_priority(
        monkeypatch):
    # Ray's default worker niceness is 15: any other busy process starved
    # the party actors. skfed's own start sets RAY_worker_niceness=0 for
    # the raylet it starts, and leaves the caller's environment as it was.
    if ray.is_initialized():
        ray.shutdown()
    monkeypatch.delenv("RAY_worker_niceness", raising=False)
    try:
        with skfed.config_context(backend="ray",
                                  ray_init_kwargs={"num_cpus": 1}):
            with Federation({"a": {}}) as fed:
                niceness = fed["a"].call(_niceness).result()
        assert niceness == os.nice(0)
        assert "RAY_worker_niceness" not in os.environ
    finally:
        ray.shutdown()


_CHILD = """
import json, os, sys
import ray
import skfed
from skfed.federation import Federation
from skfed.federation._ray import _ensure_ray

def fit(**config):
    with skfed.config_context(backend="ray", **config):
        with Federation({"a": {}}) as fed:
            fed["a"].call(lambda state: None).result()
    address = ray.get_runtime_context().gcs_address
    ray.shutdown()
    return address

out = {"default": fit(), "num_cpus": fit(ray_init_kwargs={"num_cpus": 1})}
# what skfed did before: a plain ray.init() joins the other instance (a
# private start turned token authentication on in this process; the other
# instance runs without it)
os.environ["RAY_AUTH_MODE"] = "disabled"
ray.init(include_dashboard=False, log_to_driver=False, configure_logging=False)
out["plain"] = ray.get_runtime_context().gcs_address
ray.shutdown()
# told to join: RAY_ADDRESS names the other instance
os.environ["RAY_ADDRESS"] = sys.argv[1]
_ensure_ray()
out["told"] = ray.get_runtime_context().gcs_address
ray.shutdown()
print("RESULT " + json.dumps(out))
"""


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _processes_naming(text):
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if text.encode() in f.read():
                    found.append(int(pid))
        except OSError:
            continue
    return found


def test_default_settings_do_not_join_another_ray_on_the_host():
    # Another job's Ray instance on the same host (`ray start`, which writes
    # the "latest cluster" file a plain ray.init() joins): skfed with default
    # settings, or ray_init_kwargs without an address (which made ray.init
    # refuse num_cpus: "When connecting to an existing cluster, num_cpus
    # and num_gpus must not be provided"), starts its own;
    # RAY_ADDRESS still joins the other one.
    tmp = tempfile.mkdtemp(prefix="skr", dir="/tmp")  # short: socket paths
    env = {k: v for k, v in os.environ.items()
           if k not in ("RAY_ADDRESS", "RAY_AUTH_MODE")}
    env.update(RAY_TMPDIR=tmp, RAY_AUTH_MODE="disabled",
               RAY_worker_niceness="0")
    ray_cli = os.path.join(os.path.dirname(sys.executable), "ray")
    port = _free_port()
    stranger = subprocess.Popen(
        [ray_cli, "start", "--head", "--block", f"--port={port}",
         "--num-cpus=1", "--include-dashboard=false",
         "--node-ip-address=127.0.0.1"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        latest = os.path.join(tmp, "ray", "ray_current_cluster")
        deadline = time.monotonic() + 180
        while not os.path.exists(latest):
            assert stranger.poll() is None, stranger.stderr.read().decode()[-2000:]
            assert time.monotonic() < deadline, "the other Ray did not start"
            time.sleep(0.5)
        time.sleep(1.0)
        with open(latest) as f:
            theirs = f.read().strip()
        child_env = {k: v for k, v in env.items() if k != "RAY_AUTH_MODE"}
        child_env.pop("RAY_worker_niceness")
        child = subprocess.run(
            [sys.executable, "-c", _CHILD, theirs],
            env=child_env, capture_output=True, text=True, timeout=300,
            cwd=os.getcwd())
        lines = [line for line in child.stdout.splitlines()
                 if line.startswith("RESULT ")]
        assert lines, child.stderr[-3000:]
        result = json.loads(lines[-1][len("RESULT "):])
        assert result["default"] != theirs
        assert result["num_cpus"] != theirs
        assert result["plain"] == result["told"] == theirs
    finally:
        stranger.terminate()  # --block: it stops its own processes
        try:
            stranger.wait(timeout=60)
        except subprocess.TimeoutExpired:
            stranger.kill()
        deadline = time.monotonic() + 30
        while _processes_naming(tmp) and time.monotonic() < deadline:
            time.sleep(0.5)
        left = _processes_naming(tmp)
        for pid in left:  # only what this test started (its own temp dir)
            os.kill(pid, signal.SIGKILL)
        shutil.rmtree(tmp, ignore_errors=True)
    assert not left


def test_skfed_joins_a_cluster_only_when_told(monkeypatch):
    from skfed.federation._ray import _init_kwargs

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    kwargs, private = _init_kwargs(None)
    assert kwargs["address"] == "local" and private
    kwargs, private = _init_kwargs({"num_cpus": 1})
    assert kwargs["address"] == "local" and kwargs["num_cpus"] == 1 and private
    for address in ("auto", "10.0.0.1:6379"):  # as the user wrote it
        kwargs, private = _init_kwargs({"address": address})
        assert kwargs["address"] == address and not private
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.1:6379")
    kwargs, private = _init_kwargs(None)  # ray.init reads RAY_ADDRESS
    assert "address" not in kwargs and not private


def test_a_party_data_let_go_after_shutdown_starts_no_ray(monkeypatch):
    # A PartyData's finalizer told the homes to forget its load: after
    # ray.shutdown() (or at exit) that call started a new default Ray
    # instance, which joins any cluster it finds on the host.
    from skfed.federation import _party_data
    from skfed.federation._ray import _homes

    if ray.is_initialized():
        ray.shutdown()
    calls = []

    class Handle:
        class at_home:  # noqa: N801 - stands for a Ray actor method
            @staticmethod
            def remote(*args):
                calls.append(args)

    monkeypatch.setitem(_homes, "a", (None, Handle()))
    _party_data._release(["a"], ("party_data", "k"), True)
    assert calls == []
    assert not ray.is_initialized()
