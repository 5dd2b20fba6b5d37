"""The libraries under real faults: a node of a multi-node cluster is killed mid-run.

* Tune: the trial's node dies; with ``max_failures`` the trial restarts on another node
  from its last checkpoint and the experiment finishes.
* RLlib: a rollout worker's node dies; with ``ignore_worker_failures`` training goes on,
  and with ``recreate_failed_workers`` the lost worker is replaced.
* SGD: a replica's node dies; ``train(max_retries=...)`` rebuilds the group from its
  last checkpoint and reaches the same result as an uninterrupted run.

Each cluster has a head that runs no work (``num_cpus=0``: the driver lives there) and
one-CPU nodes, so the killed node is never the head. Nodes are killed with SIGKILL
(``remove_node(allow_graceful=False)``), as a machine failure would.
"""

from __future__ import annotations

import json
import os
import threading
import time

import numpy as np
import pytest

import ray
from ray.cluster_utils import Cluster

pytestmark = [pytest.mark.slow, pytest.mark.multinode]

# Notice a dead node within seconds, without declaring a live one dead on a loaded box.
FAST_FAILURE = json.dumps({"heartbeat_timeout_s": 4, "heartbeat_period_s": 0.3})
STORE = 100 * 1024**2


@pytest.fixture
def cluster():
    cluster = Cluster()
    cluster.add_node(num_cpus=0, object_store_memory=STORE, _internal_config=FAST_FAILURE)
    workers = [cluster.add_node(num_cpus=1, object_store_memory=STORE,
                                _internal_config=FAST_FAILURE) for _ in range(3)]
    cluster.wait_for_nodes(timeout=120)  # a loaded 2-core box starts nodes slowly
    ray.init(address=cluster.address)
    cluster.worker_nodes_for_test = workers
    try:
        yield cluster
    finally:
        ray.shutdown()
        cluster.shutdown()


def kill_node_running(cluster, node_id: str) -> None:
    [node] = [n for n in cluster.worker_nodes_for_test if n.node_id == node_id]
    cluster.worker_nodes_for_test.remove(node)
    cluster.remove_node(node, allow_graceful=False)


def wait_for(predicate, timeout_s: float, what: str):
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


# --- Tune -------------------------------------------------------------------------------------
def test_tune_trial_resumes_from_checkpoint_on_another_node(cluster, tmp_path):
    from ray import tune

    progress = tmp_path / "progress.jsonl"

    class Counter(tune.Trainable):
        def setup(self, config):
            self.count = 0

        def step(self):
            self.count += 1
            time.sleep(0.4)
            node = ray.get_runtime_context().get_node_id()
            with open(config_path(self.config), "a") as f:
                f.write(json.dumps({"count": self.count, "node": node}) + "\n")
            return {"count": self.count}

        def save_checkpoint(self, checkpoint_dir):
            with open(os.path.join(checkpoint_dir, "count.json"), "w") as f:
                json.dump(self.count, f)
            return checkpoint_dir

        def load_checkpoint(self, checkpoint):
            path = checkpoint if os.path.isdir(checkpoint) else os.path.dirname(checkpoint)
            with open(os.path.join(path, "count.json")) as f:
                self.count = json.load(f)

    def read_progress():
        if not progress.exists():
            return []
        return [json.loads(line) for line in progress.read_text().splitlines() if line]

    def killer():
        rows = wait_for(lambda: [r for r in read_progress() if r["count"] >= 3], 120,
                        "the trial to report 3 iterations")
        kill_node_running(cluster, rows[0]["node"])

    thread = threading.Thread(target=killer, daemon=True)
    thread.start()
    analysis = tune.run(
        Counter, config={"progress": str(progress)}, stop={"training_iteration": 8},
        checkpoint_freq=1, max_failures=3, resources_per_trial={"cpu": 1},
        local_dir=str(tmp_path / "results"), verbose=0)
    thread.join(5)
    [trial] = analysis.trials
    assert trial.status == "TERMINATED"
    assert trial.last_result["training_iteration"] == 8
    assert trial.last_result["count"] == 8
    rows = read_progress()
    nodes = [r["node"] for r in rows]
    assert len(set(nodes)) == 2, rows  # it moved once, to the surviving node
    first_on_new_node = next(r for r in rows if r["node"] != nodes[0])
    assert first_on_new_node["count"] > 1, rows  # resumed from a checkpoint, not from 0


def config_path(config) -> str:
    return config["progress"]


# --- RLlib ------------------------------------------------------------------------------------
def test_rllib_keeps_training_and_recreates_a_worker_lost_with_its_node(cluster):
    from ray.rllib.agents.pg import PGTrainer

    trainer = PGTrainer(env="CartPole-v0", config={
        "num_workers": 2, "sample_batch_size": 50, "train_batch_size": 100,
        "ignore_worker_failures": True, "recreate_failed_workers": True,
    })
    try:
        trainer.train()
        workers = trainer.workers.remote_workers()
        assert len(workers) == 2
        node_of = ray.get(workers[0].apply.remote(
            lambda worker: ray.get_runtime_context().get_node_id()))
        kill_node_running(cluster, node_of)
        results = [trainer.train() for _ in range(3)]  # no exception: training goes on
        assert results[-1]["training_iteration"] == 4
        assert len(trainer.workers.remote_workers()) == 2  # the lost worker was replaced
        nodes = ray.get([w.apply.remote(lambda worker: ray.get_runtime_context().get_node_id())
                         for w in trainer.workers.remote_workers()])
        assert node_of not in nodes
        assert results[-1]["num_healthy_workers"] == 2
    finally:
        trainer.stop()


def test_rllib_without_recreation_continues_on_the_surviving_worker(cluster):
    from ray.rllib.agents.pg import PGTrainer

    trainer = PGTrainer(env="CartPole-v0", config={
        "num_workers": 2, "sample_batch_size": 50, "train_batch_size": 100,
        "ignore_worker_failures": True,
    })
    try:
        trainer.train()
        node_of = ray.get(trainer.workers.remote_workers()[0].apply.remote(
            lambda worker: ray.get_runtime_context().get_node_id()))
        kill_node_running(cluster, node_of)
        result = trainer.train()
        result = trainer.train()
        assert result["num_healthy_workers"] == 1
    finally:
        trainer.stop()


# --- SGD ----------------------------------------------------------------------------------------
def _model(config):
    import torch

    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))


class _SlowData:
    """A regression dataset whose items take a moment, so an epoch can be cut; the replica
    that serves its ``mark_after``-th item first creates ``marker`` (once per test)."""

    def __init__(self, n: int, delay_s: float, marker: str | None, mark_after: int):
        import torch

        generator = torch.Generator().manual_seed(1)
        self.x = torch.randn(n, 4, generator=generator)
        self.y = self.x.sum(dim=1, keepdim=True) * 0.5 + 1
        self.delay_s, self.marker, self.mark_after, self.served = delay_s, marker, mark_after, 0

    def __len__(self):
        return len(self.x)

    def __getitem__(self, index):
        time.sleep(self.delay_s)
        self.served += 1
        if self.marker and self.served == self.mark_after:
            try:
                os.close(os.open(self.marker, os.O_CREAT | os.O_EXCL))
            except FileExistsError:
                pass
        return self.x[index], self.y[index]


def _data(config):
    data = _SlowData(400, config["delay_s"], config.get("marker"), config["mark_after"])
    return data, data


def _optimizer(model, config):
    import torch

    return torch.nn.MSELoss(), torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)


def test_sgd_trainer_recovers_from_its_checkpoint_when_a_replica_node_dies(cluster, tmp_path):
    from ray.sgd import PyTorchTrainer
    from ray.sgd.weights import get_flat

    job = dict(model_creator=_model, data_creator=_data, optimizer_creator=_optimizer,
               num_replicas=2, batch_size=8, timeout_s=60)
    marker = tmp_path / "mid-run"
    # 2 steps of 8 items come first; the 100th item is served mid-way through the 30 steps.
    trainer = PyTorchTrainer(**job, config={"delay_s": 0.005, "marker": str(marker),
                                            "mark_after": 100})
    try:
        trainer.train(num_steps=2)
        before = trainer.save(str(tmp_path / "before.pt"))
        replica_nodes = trainer_nodes(trainer)
        first_pids = list(trainer.pids)

        def killer():
            wait_for(marker.exists, 120, "training to be under way")
            kill_node_running(cluster, replica_nodes[1])

        thread = threading.Thread(target=killer, daemon=True)
        thread.start()
        recovered = trainer.train(num_steps=30, max_retries=2)
        thread.join(5)
        assert trainer.pids != first_pids  # a new group, on the surviving nodes
        assert replica_nodes[1] not in trainer_nodes(trainer)
        recovered_weights = trainer.foreach_model(get_flat)
        assert np.array_equal(*recovered_weights)
        # The same result as a run that was never interrupted.
        trainer.restore(before)
        uninterrupted = trainer.train(num_steps=30)
        assert recovered["train_loss"] == pytest.approx(uninterrupted["train_loss"])
        np.testing.assert_allclose(recovered_weights[0], trainer.foreach_model(get_flat)[0])
    finally:
        trainer.shutdown()


def trainer_nodes(trainer) -> list[str]:
    """The node of each replica, in rank order."""
    return trainer.foreach_model(lambda model: ray.get_runtime_context().get_node_id())
