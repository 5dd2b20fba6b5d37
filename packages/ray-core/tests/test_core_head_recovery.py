"""Head recovery: the head node dies and `ray start --head` at the same address takes over.

Two real nodes from `ray start` (the head on 127.0.0.1 with --redis-persist, a worker node
on 127.0.0.2) and this test process as a driver attached to the worker node. Twice:

1. only the head's raylet is killed (its Redis lives on): the new head rejoins that GCS;
2. the head's Redis and raylet are both killed: the new head's Redis reloads the
   append-only file.

Each time the node table, the actors' records (named, detached), the placement groups and
the job come back; the worker node and this driver carry on; what ran on the old head is
gone (its node is marked dead at once; its placement-group bundle is placed again on the
new head); new drivers connect. `ray stop` then removes the persisted state.
See docs/architecture.md, "Head recovery".
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time

import psutil
import pytest

import ray
from ray._private import auth
from ray._private.gcs import keys
from ray.util.placement_group import placement_group, remove_placement_group
from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

pytestmark = [pytest.mark.slow, pytest.mark.multinode]

RAY = [sys.executable, "-m", "ray.scripts.cli"]
CONFIG = json.dumps({"heartbeat_timeout_s": 6.0})


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def cli(tmp_path):
    env = dict(os.environ)
    env.pop(auth.SECRET_ENV, None)
    temp = str(tmp_path / "ray")

    def run(*args, check=True):
        out = subprocess.run(RAY + list(args) + ["--temp-dir", temp], capture_output=True,
                             text=True, env=env, timeout=180)
        if check:
            assert out.returncode == 0, out.stdout + out.stderr
        return out

    run.temp = temp
    yield run
    ray.shutdown()
    run("stop", check=False)


def _start_head(cli, port):
    return cli("start", "--head", "--port", str(port), "--num-cpus", "1",
               "--resources", '{"h": 1}', "--node-ip-address", "127.0.0.1",
               "--redis-persist", "--include-dashboard", "false",
               "--internal-config", CONFIG).stdout


def _gcs():
    from ray._private import runtime as rt

    return rt.current().gcs_client()


def _head_info() -> tuple[str, dict]:
    for node_id, info in _gcs().hgetall_obj(keys.NODES).items():
        if info.get("is_head") and info.get("alive", True):
            return node_id, info
    raise AssertionError("no live head")


def _wait(predicate, timeout_s=60.0, what="condition"):
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            value = predicate()
        except ray.exceptions.RayError:
            value = None  # the GCS may be coming back
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


@ray.remote
class Keeper:
    def __init__(self):
        self.items = []

    def add(self, x):
        self.items.append(x)
        return list(self.items)


@ray.remote
def where():
    return ray.get_runtime_context().get_node_id()


def _pg_state(name):
    return ray.util.placement_group_table(
        ray.util.get_placement_group(name))["state"]


def test_the_head_comes_back_and_the_cluster_carries_on(cli):
    port = _free_port()
    address = f"127.0.0.1:{port}"
    _start_head(cli, port)
    cli("start", "--address", address, "--num-cpus", "2", "--resources", '{"w": 8}',
        "--node-ip-address", "127.0.0.2", "--internal-config", CONFIG)
    ray.init(address=address, node_ip_address="127.0.0.2", namespace="recovery")
    worker_id = next(n["NodeID"] for n in ray.nodes() if n["NodeManagerAddress"] == "127.0.0.2")

    keeper = Keeper.options(name="keeper", lifetime="detached", resources={"w": 1},
                            num_cpus=0).remote()
    plain = Keeper.options(name="plain", resources={"w": 1}, num_cpus=0).remote()
    on_head = Keeper.options(name="on_head", resources={"h": 0.5}, num_cpus=0).remote()
    assert ray.get([keeper.add.remote(1), plain.add.remote(1), on_head.add.remote(1)],
                   timeout=120) == [[1], [1], [1]]
    pg_worker = placement_group([{"w": 1}], name="pg_worker", lifetime="detached")
    pg_head = placement_group([{"h": 0.5}], name="pg_head")
    assert pg_worker.wait(60) and pg_head.wait(60)
    kept = ray.put(b"kept" * 100_000)  # in the worker node's store (this driver's node)
    job_hex = ray.get_runtime_context().get_job_id()
    old_head, old_info = _head_info()

    # 1. The head's raylet dies; its Redis lives on.
    os.kill(old_info["pid"], signal.SIGKILL)
    psutil.Process(old_info["pid"]).wait(30) if psutil.pid_exists(old_info["pid"]) else None
    out = _start_head(cli, port)
    assert "Recovered the cluster's state from the GCS still running" in out, out
    new_head = _check_recovered(keeper, plain, on_head, kept, job_hex, worker_id, old_head,
                                expected=[1, 2])

    # 2. The whole head dies: its Redis too. The append-only file brings the state back.
    _, info = _head_info()
    redis_pids = [p.pid for p in psutil.process_iter(["cmdline"])
                  if f"127.0.0.1:{port}" in " ".join(p.info["cmdline"] or [])
                  or any(a == str(port) for a in (p.info["cmdline"] or []))
                  if "valkey" in " ".join(p.info["cmdline"] or [])
                  or "redis" in " ".join(p.info["cmdline"] or [])]
    assert redis_pids, "the head's Redis process"
    for pid in [info["pid"], *redis_pids]:
        os.kill(pid, signal.SIGKILL)
    time.sleep(1.0)
    out = _start_head(cli, port)
    assert "Recovered the cluster's state from the append-only file" in out, out
    _check_recovered(keeper, plain, on_head, kept, job_hex, worker_id, new_head,
                     expected=[1, 2, 3], head_actor_checked=True)

    # A head refuses to start next to a live one.
    second = cli("start", "--head", "--port", str(port), "--node-ip-address", "127.0.0.1",
                 "--redis-persist", check=False)
    assert second.returncode != 0 and "still has a live head node" in second.stderr

    # ray stop ends the cluster: its persisted state and secret go with it.
    persist_dir = os.path.join(cli.temp, "gcs", f"127.0.0.1_{port}")
    assert os.path.isdir(persist_dir)
    ray.shutdown()
    cli("stop")
    assert not os.path.exists(persist_dir)
    assert auth.load_secret(address) is None


def _check_recovered(keeper, plain, on_head, kept, job_hex, worker_id, old_head, expected,
                     head_actor_checked=False):
    # The node table: the old head dead at once, a new head, the same worker node.
    nodes = _wait(lambda: {n["NodeID"]: n for n in ray.nodes()}
                  if sum(n["Alive"] for n in ray.nodes()) == 2 else None, what="two live nodes")
    assert not nodes[old_head]["Alive"]
    assert nodes[worker_id]["Alive"]
    new_head, _ = _head_info()
    assert new_head not in (old_head, worker_id)

    # Actors on the worker node: the same instances, by handle and by name.
    items = ray.get(keeper.add.remote(expected[-1]), timeout=60)
    assert [x for x in items if x > 0] == expected, items  # (0 and -1: the checks below)
    assert ray.get(ray.get_actor("keeper").add.remote(0), timeout=60)[-1] == 0
    assert ray.get(plain.add.remote(0), timeout=60)[-1] == 0
    if not head_actor_checked:  # it ran on the dead head: gone, and its callers are told
        with pytest.raises(ray.exceptions.RayActorError):
            ray.get(on_head.add.remote(2), timeout=60)

    # Placement groups: the one on the worker is untouched; the head's bundle is placed
    # again on the new head; both can be used, removed, and new ones made.
    assert _pg_state("pg_worker") == "CREATED"
    _wait(lambda: _pg_state("pg_head") == "CREATED", what="pg_head placed again")
    pg = ray.util.get_placement_group("pg_head")
    strategy = PlacementGroupSchedulingStrategy(pg)
    assert ray.get(where.options(scheduling_strategy=strategy, num_cpus=0,
                                 resources={"h": 0.1}).remote(), timeout=60) == new_head
    fresh = placement_group([{"h": 0.2}])
    assert fresh.wait(60)
    remove_placement_group(fresh)

    # The job and this driver's objects.
    job = _gcs().hget_obj(keys.JOBS, job_hex)
    assert job is not None and job["alive"], job
    assert ray.get(kept, timeout=60) == b"kept" * 100_000
    assert ray.get(where.options(resources={"w": 1}).remote(), timeout=60) == worker_id

    # A new driver joins (through the new head's GCS) and finds the detached actor.
    code = ("import ray\n"
            f"ray.init(address={ray.get_runtime_context().gcs_address!r}, "
            "namespace='recovery')\n"
            "print(ray.get(ray.get_actor('keeper').add.remote(-1))[-1],"
            " ray.get(ray.remote(lambda: 'ran').remote()))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=180)
    assert out.stdout.split()[-2:] == ["-1", "ran"], out.stderr[-3000:]
    return new_head
