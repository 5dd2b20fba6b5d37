"""Ray 2.x public behaviours checked through the public API: the runtime context dict,
recursive cancellation, auto-init joining a running cluster, ``accelerator_type``
scheduling, pending actors dropped with their owner, ``ray.wait(fetch_local=)`` across
nodes, and the options this runtime refuses."""

import os
import socket
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import plasma
import ray
from ray.cluster_utils import Cluster
from ray.exceptions import TaskCancelledError

RAY = [sys.executable, "-m", "ray.scripts.cli"]


def _until(check, what: str, timeout_s: float = 30.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _driver_env(**extra) -> dict:
    env = dict(os.environ)
    env.pop("RAY_ADDRESS", None)
    env.update(extra)
    return env


# -- one node ---------------------------------------------------------------------------

@ray.remote
class _Box:
    """Holds refs a task hands over (inside a list, so they are not resolved)."""

    def __init__(self):
        self.refs = []

    def put(self, refs):
        self.refs.extend(refs)

    def get(self):
        return self.refs


@ray.remote
def _child():
    time.sleep(3)
    return "child finished"


@ray.remote
def _parent(box):
    child = _child.remote()
    ray.get(box.put.remote([child]))
    return ray.get(child)


def test_runtime_context_get_returns_the_keys_ray_returns(ray_start):
    ray_start()
    with pytest.warns(DeprecationWarning):
        here = ray.get_runtime_context().get()
    context = ray.get_runtime_context()
    assert set(here) == {"job_id", "node_id", "namespace"}
    assert here["job_id"] == context.get_job_id()
    assert here["node_id"] == context.get_node_id()
    assert here["namespace"] == context.namespace

    @ray.remote
    def in_task():
        return ray.get_runtime_context().get(), ray.get_runtime_context().get_task_id()

    @ray.remote
    class InActor:
        def context(self):
            return ray.get_runtime_context().get(), ray.get_runtime_context().get_actor_id()

    task_context, task_id = ray.get(in_task.remote())
    assert set(task_context) == {"job_id", "node_id", "namespace", "task_id"}
    assert task_context["task_id"] == task_id
    actor_context, actor_id = ray.get(InActor.remote().context.remote())
    assert set(actor_context) == {"job_id", "node_id", "namespace", "task_id", "actor_id"}
    assert actor_context["actor_id"] == actor_id


@pytest.mark.parametrize("recursive", [True, False])
def test_cancel_stops_the_tasks_a_task_submitted_only_when_recursive(ray_start, recursive):
    ray_start(num_cpus=2)
    box = _Box.remote()
    parent = _parent.remote(box)
    (child,) = _until(lambda: ray.get(box.get.remote()), "the child's ref")
    ray.cancel(parent, recursive=recursive)
    with pytest.raises(TaskCancelledError):
        ray.get(parent, timeout=30)
    if recursive:
        with pytest.raises(TaskCancelledError):
            ray.get(child, timeout=30)
    else:  # the child is left running
        assert ray.get(child, timeout=30) == "child finished"


def test_options_not_implemented_are_refused_naming_what_to_use():
    with pytest.raises(ValueError, match="'label_selector' is not supported.*resources="):
        ray.remote(label_selector={"zone": "a"})(lambda: None)

    @ray.remote
    def plain():
        return 1

    with pytest.raises(ValueError, match="label_selector"):
        plain.options(label_selector={"zone": "a"})

    class Plain:
        pass

    with pytest.raises(ValueError, match="label_selector"):
        ray.remote(Plain).options(label_selector={"zone": "a"})
    # Streaming backpressure is for remote functions; actors' generators stream freely.
    with pytest.raises(ValueError, match="_generator_backpressure_num_objects.*remote func"):
        ray.remote(_generator_backpressure_num_objects=2)(Plain)
    with pytest.raises(ValueError, match="_generator_backpressure_num_objects.*Queue"):
        ray.method(_generator_backpressure_num_objects=1)
    with pytest.raises(ValueError, match="must be a positive integer"):
        plain.options(_generator_backpressure_num_objects=0)


@ray.remote(_generator_backpressure_num_objects=2)
def _stamped(n):
    """Yields when each value was made: a paused producer makes the next one late."""
    for _ in range(n):
        yield time.time()


def test_streaming_backpressure_pauses_until_the_caller_takes_values(ray_start):
    ray_start(num_cpus=1)
    gen = _stamped.remote(5)
    ray.get(next(gen))  # value 0 taken: the task may run on to value 2, then waits
    time.sleep(1.5)
    caught_up_at = time.time()
    rest = [ray.get(ref) for ref in gen]
    assert len(rest) == 4
    # Value 3 waited for value 1 to be taken (2 were unconsumed); values 1-2 did not.
    assert rest[2] >= caught_up_at > rest[0]
    # Without the option the task runs ahead of its caller.
    free = _stamped.options(_generator_backpressure_num_objects=None).remote(5)
    ray.get(next(free))
    time.sleep(1.5)
    caught_up_at = time.time()
    assert all(stamp < caught_up_at for stamp in ray.get(list(free)))


def test_a_paused_stream_ends_when_dropped_and_stops_when_cancelled(ray_start):
    ray_start(num_cpus=1)
    dropped = _stamped.remote(10)
    done = dropped.completed()
    ray.get(next(dropped))
    del dropped  # the caller will take no more: the task runs to its end
    assert ray.get(done, timeout=30) is None
    paused = _stamped.remote(10)
    ray.get(next(paused))
    time.sleep(0.5)
    ray.cancel(paused)
    with pytest.raises(TaskCancelledError):
        ray.get(paused.completed(), timeout=30)


# -- auto-init --------------------------------------------------------------------------

_AUTO_INIT_DRIVER = textwrap.dedent("""
    import ray

    @ray.remote
    def where():
        return ray.get_runtime_context().get_node_id()

    print("NODE", ray.get(where.remote()))  # no ray.init(): the first .remote() connects
    print("GCS", ray.get_runtime_context().gcs_address)
""")


def _run_driver(env: dict) -> dict[str, str]:
    out = subprocess.run([sys.executable, "-c", _AUTO_INIT_DRIVER], capture_output=True,
                         text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    return dict(line.split(" ", 1) for line in out.stdout.splitlines()
                if line.startswith(("NODE ", "GCS ")))


def test_auto_init_joins_the_cluster_named_by_ray_address():
    cluster = Cluster()
    try:
        node = cluster.add_node(num_cpus=1)
        printed = _run_driver(_driver_env(RAY_ADDRESS=cluster.address))
        assert printed["NODE"] == node.node_id
        assert printed["GCS"] == cluster.address
    finally:
        cluster.shutdown()


def test_auto_init_joins_a_cluster_from_ray_start_and_starts_no_other(tmp_path):
    # RAY_TMPDIR keeps this cluster's address file away from other drivers on the machine.
    env = _driver_env(RAY_TMPDIR=str(tmp_path))
    port = _free_port()
    start = subprocess.run(
        RAY + ["start", "--head", "--port", str(port), "--num-cpus", "1",
               "--include-dashboard", "false", "--node-ip-address", "127.0.0.1"],
        capture_output=True, text=True, timeout=120, env=env)
    assert start.returncode == 0, start.stdout + start.stderr
    try:
        printed = _run_driver(env)
        assert printed["GCS"] == f"127.0.0.1:{port}"
        ray.init(address=printed["GCS"])
        nodes = [n for n in ray.nodes() if n["Alive"]]
        assert [n["NodeID"] for n in nodes] == [printed["NODE"]]  # no second cluster
        ray.shutdown()
        sessions = [d for d in os.listdir(tmp_path / "ray") if d.startswith("session_2")]
        assert len(sessions) == 1, sessions
    finally:
        ray.shutdown()
        subprocess.run(RAY + ["stop"], capture_output=True, timeout=60, env=env)


# -- several nodes ----------------------------------------------------------------------

@pytest.fixture
def two_nodes():
    cluster = Cluster()
    head = cluster.add_node(num_cpus=1)
    other = cluster.add_node(num_cpus=1, resources={"accelerator_type:A100": 1, "far": 1})
    ray.init(address=cluster.address)
    yield cluster, head, other
    ray.shutdown()
    cluster.shutdown()


def test_accelerator_type_runs_only_on_a_node_with_that_accelerator(two_nodes):
    _, _, gpu_node = two_nodes

    @ray.remote(accelerator_type="A100")
    def where():
        time.sleep(0.2)
        return ray.get_runtime_context().get_node_id()

    assert set(ray.get([where.remote() for _ in range(4)])) == {gpu_node.node_id}
    missing = where.options(accelerator_type="V100").remote()
    ready, _ = ray.wait([missing], timeout=2)
    assert ready == []  # infeasible: no node has a V100
    ray.cancel(missing)


def test_wait_fetch_local_pulls_or_leaves_a_value_stored_on_another_node(two_nodes):
    cluster, head, _ = two_nodes

    @ray.remote(resources={"far": 1})
    def make(seed):
        return np.full(2_000_000, seed, dtype=np.uint8)  # in the far node's store

    store = plasma.connect(head.plasma_store_socket_name)
    try:
        not_pulled = make.remote(1)
        ready, _ = ray.wait([not_pulled], timeout=60, fetch_local=False)
        assert ready == [not_pulled]
        time.sleep(0.5)
        assert not store.contains(not_pulled.binary())  # ready where it is, not copied

        pulled = make.remote(2)
        ready, _ = ray.wait([pulled], timeout=60)  # fetch_local=True (the default)
        assert ready == [pulled]
        assert store.contains(pulled.binary())  # ready only once here
        assert ray.get(pulled)[0] == 2 and ray.get(not_pulled)[0] == 1
    finally:
        store.disconnect()


def test_dashboard_lists_actor_addresses_as_host_port(two_nodes):
    from ray._private import runtime as rt
    from ray.dashboard.data import ClusterView

    @ray.remote
    class Alive:
        def ping(self):
            return True

    actor = Alive.remote()
    assert ray.get(actor.ping.remote())
    (row,) = [a for a in ClusterView(rt.current().gcs_client()).actors()
              if a["class_name"] == "Alive"]
    for key in ("owner", "address"):
        host, _, port = row[key].rpartition(":")
        assert host == "127.0.0.1" and int(port) > 0, row


# -- pending actors and their owners ----------------------------------------------------

def _actor_state(name: str):
    from ray.util.state import list_actors

    states = [a.state for a in list_actors() if a.name == name]
    return states[0] if states else None


def test_a_pending_actor_goes_when_the_task_that_created_it_exits(ray_start):
    ray_start(num_cpus=1)

    @ray.remote(resources={"no_such_resource": 1})
    class Unplaceable:
        pass

    @ray.remote
    def create_and_leave():
        Unplaceable.options(name="pending_of_task").remote()
        return "left"

    assert ray.get(create_and_leave.remote()) == "left"
    _until(lambda: _actor_state("pending_of_task") == "DEAD", "the pending actor to go")
    with pytest.raises(ValueError):
        ray.get_actor("pending_of_task")


def test_a_pending_actor_goes_when_the_driver_that_created_it_exits(ray_start):
    ray_start(num_cpus=1)
    script = textwrap.dedent(f"""
        import ray
        ray.init(address={ray.get_runtime_context().gcs_address!r})

        @ray.remote(resources={{"no_such_resource": 1}})
        class Unplaceable:
            pass

        a = Unplaceable.options(name="pending_of_driver", namespace="other").remote()
        print("created", flush=True)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120, env=_driver_env())
    assert out.returncode == 0 and "created" in out.stdout, out.stdout + out.stderr
    _until(lambda: _actor_state("pending_of_driver") == "DEAD", "the pending actor to go")
    with pytest.raises(ValueError):
        ray.get_actor("pending_of_driver", namespace="other")
