"""runtime_env across nodes: a worker on another node gets the job's working_dir from
the GCS, and every node removes what it unpacked when the cluster shuts down."""

import os

import ray
from ray.cluster_utils import Cluster


def test_working_dir_reaches_a_worker_on_another_node_and_is_removed_at_shutdown(tmp_path):
    (tmp_path / "remote_helper.py").write_text("ANSWER = 'shipped over the GCS'\n")
    (tmp_path / "notes.txt").write_text("read relative to the working_dir\n")
    cluster = Cluster()
    try:
        cluster.add_node(num_cpus=1)
        other = cluster.add_node(num_cpus=1, resources={"other_node": 1})
        ray.init(address=cluster.address, runtime_env={
            "working_dir": str(tmp_path), "env_vars": {"FROM_JOB": "yes"}})

        @ray.remote(resources={"other_node": 1})
        def on_other_node():
            import remote_helper

            return (ray.get_runtime_context().get_node_id(), remote_helper.ANSWER,
                    open("notes.txt").read().strip(), os.environ["FROM_JOB"], os.getcwd())

        node_id, answer, notes, flag, cwd = ray.get(on_other_node.remote(), timeout=120)
        assert node_id == other.node_id
        assert (answer, flag) == ("shipped over the GCS", "yes")
        assert notes == "read relative to the working_dir"
        unpacked_root = os.path.join(cluster.session_dir, "runtime_resources")
        assert cwd.startswith(os.path.join(unpacked_root, other.node_id[:12]))
        ray.shutdown()
    finally:
        ray.shutdown()
        cluster.shutdown()
    assert not os.path.exists(unpacked_root)  # each raylet removed its unpacked packages
