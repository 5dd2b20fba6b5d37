"""ray.cluster_utils.Cluster: the helpers Ray's tests use, in 0.7's and 2.x's spellings."""

import pytest

import ray
from ray.cluster_utils import Cluster, NodeArgs


# -- NodeArgs (pure) ----------------------------------------------------------------------
def test_node_args_defaults_match_ray():
    args = NodeArgs.parse({})
    assert args.num_cpus == 1 and args.num_gpus == 0
    assert args.object_store_memory == 150 * 1024**2
    assert args.node_resources() == {"CPU": 1}


def test_node_args_accept_both_eras_spellings():
    args = NodeArgs.parse({"num_cpus": 2, "num_gpus": 1, "resources": {"x": 1, "zero": 0},
                           "_internal_config": '{"heartbeat_timeout_s": 1}',
                           "redis_max_memory": 10**8, "include_webui": False,
                           "redirect_output": False, "num_redis_shards": 1,
                           "cleanup": True, "min_worker_port": 0, "max_worker_port": 0,
                           "node_manager_port": 0})
    assert args.node_resources() == {"CPU": 2, "GPU": 1, "x": 1}  # zero capacity dropped
    assert args.internal_config == '{"heartbeat_timeout_s": 1}'
    assert args.redis_max_memory == 10**8 and args.redirect_worker_output is False


@pytest.mark.parametrize("kwargs,error,match", [
    ({"num_cpu": 1}, TypeError, "Did you mean 'num_cpus'"),
    ({"include_webui": True}, ValueError, "dashboard"),
    ({"include_dashboard": True}, ValueError, "dashboard"),
    ({"num_redis_shards": 3}, ValueError, "num_redis_shards"),
    ({"num_cpus": -1}, ValueError, "num_cpus"),
    ({"resources": {"CPU": 2}}, ValueError, "num_cpus"),
    ({"resources": [("x", 1)]}, TypeError, "resources"),
    ({"object_store_memory": 0}, ValueError, "object_store_memory"),
])
def test_node_args_reject_bad_input_naming_the_argument(kwargs, error, match):
    with pytest.raises(error, match=match):
        NodeArgs.parse(kwargs)


def test_cluster_constructor_checks():
    with pytest.raises(RuntimeError, match="uninitialized"):
        Cluster(connect=True)
    with pytest.raises(ValueError, match="shutdown_at_exit"):
        Cluster(shutdown_at_exit=False)


# -- a real two-node cluster -----------------------------------------------------------
def test_cluster_helpers_through_a_node_lifecycle():
    cluster = Cluster(initialize_head=True, connect=True,
                      head_node_args={"num_cpus": 1, "redis_max_memory": 10**8},
                      _internal_config='{"heartbeat_timeout_s": 2}')
    try:
        assert cluster.connected and ray.is_initialized()
        assert cluster.address == cluster.redis_address == cluster.gcs_address
        assert cluster.head_node.address == cluster.address
        worker = cluster.add_node(num_cpus=1, resources={"w": 1})
        with pytest.raises(ValueError, match="first add_node"):
            cluster.add_node(redis_max_memory=10**8)
        cluster.wait_for_nodes()
        assert cluster.list_all_nodes() == [cluster.head_node, worker]
        assert cluster.remaining_processes_alive()
        assert worker.node_manager_port > 0 and worker.any_processes_alive()
        assert len([n for n in ray.nodes() if n["Alive"]]) == 2

        @ray.remote(resources={"w": 1})
        def on_worker():
            return ray.get_runtime_context().node_id

        assert ray.get(on_worker.remote(), timeout=60) is not None

        cluster.remove_node(worker)  # graceful: the GCS learns at once
        cluster.wait_for_nodes(timeout=10)
        assert cluster.list_all_nodes() == [cluster.head_node]
        with pytest.raises(ValueError, match="not a node of this cluster"):
            cluster.remove_node(worker)

        other = cluster.add_node(num_cpus=1)
        other.kill_raylet()  # killed on purpose: no longer counted as a live process
        assert not other.any_processes_alive()
        assert cluster.remaining_processes_alive()
        cluster.remove_node(other, allow_graceful=False)
        cluster.wait_for_nodes(timeout=30)  # until the GCS marks the killed node dead
        assert len([n for n in ray.nodes() if n["Alive"]]) == 1
    finally:
        cluster.shutdown()
    assert not ray.is_initialized() and not cluster.connected


def test_cluster_connect_takes_a_namespace():
    cluster = Cluster()
    try:
        cluster.add_node(num_cpus=1)
        cluster.connect(namespace="compat-ns")

        @ray.remote
        class Named:
            def ping(self):
                return "pong"

        # keep the handle: as in Ray 2.x, a named actor that is not detached ends with
        # its last handle (the dropped one could end it before get_actor's call ran)
        kept = Named.options(name="n1").remote()
        assert ray.get(ray.get_actor("n1", namespace="compat-ns").ping.remote()) == "pong"
        del kept
    finally:
        cluster.shutdown()
