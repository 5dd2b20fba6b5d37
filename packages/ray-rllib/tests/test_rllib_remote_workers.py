"""Rollout workers as Ray actors (num_workers > 0), and Trainers under Tune."""

import numpy as np
import pytest

import ray
from ray import tune
from ray.rllib.agents.a3c import A2CTrainer, A3CTrainer
from ray.rllib.agents.ppo import PPOTrainer
from ray.rllib.models import ModelCatalog
from ray.rllib.models.pytorch.model import TorchModel


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2)
    try:
        yield
    finally:
        ray.shutdown()


def test_ppo_with_two_workers_syncs_weights_and_filters(cluster):
    trainer = PPOTrainer(env="CartPole-v0", config={
        "num_workers": 2, "train_batch_size": 400, "sample_batch_size": 100,
        "sgd_minibatch_size": 128, "num_sgd_iter": 2, "observation_filter": "MeanStdFilter",
        "model": {"fcnet_hiddens": [16]}})
    try:
        result = trainer.train()
        assert result["num_healthy_workers"] == 2
        assert result["timesteps_total"] >= 400
        weights = trainer.workers.foreach_worker(
            lambda ev: ev.get_policy().get_weights()["logits.0.weight"])
        assert len(weights) == 3
        for w in weights[1:]:
            np.testing.assert_array_equal(w, weights[0])
        counts = trainer.workers.foreach_worker(lambda ev: ev.filters["default_policy"].rs.n)
        assert counts[0] >= 400 and len(set(counts)) == 1
        assert trainer.workers.foreach_worker_with_index(lambda ev, i: i) == [0, 1, 2]
    finally:
        trainer.stop()


def test_env_methods_reach_every_worker_for_curricula(cluster):
    trainer = A2CTrainer(env="CartPole-v0", config={
        "num_workers": 1, "min_iter_time_s": 0, "num_envs_per_worker": 2,
        "model": {"fcnet_hiddens": [8]}})
    try:
        trainer.train()
        phases = trainer.workers.foreach_worker(
            lambda ev: ev.foreach_env(lambda env: setattr(env, "phase", 2) or env.phase))
        assert phases == [[2, 2], [2, 2]]
    finally:
        trainer.stop()


def test_a3c_applies_asynchronous_gradients(cluster):
    trainer = A3CTrainer(env="CartPole-v0", config={
        "num_workers": 2, "min_iter_time_s": 0, "grads_per_step": 6,
        "sample_async": False, "model": {"fcnet_hiddens": [8]}})
    try:
        before = trainer.get_policy().get_weights()["logits.0.weight"].copy()
        result = trainer.train()
        assert result["timesteps_total"] >= 6 * 10
        assert not np.array_equal(before, trainer.get_policy().get_weights()["logits.0.weight"])
    finally:
        trainer.stop()


class _TinyModel(TorchModel):
    def __init__(self, obs_space, num_outputs, options):
        TorchModel.__init__(self, obs_space, num_outputs, options)
        import torch.nn as nn

        self.fc = nn.Linear(obs_space.shape[0], num_outputs)
        self.vf = nn.Linear(obs_space.shape[0], 1)

    def _forward(self, input_dict, hidden_state):
        obs = input_dict["obs"]
        return self.fc(obs), obs, self.vf(obs).squeeze(-1), hidden_state


def test_custom_models_registered_in_the_driver_work_in_workers(cluster):
    ModelCatalog.register_custom_model("rllib_test_tiny", _TinyModel)
    trainer = PPOTrainer(env="CartPole-v0", config={
        "num_workers": 1, "train_batch_size": 200, "sample_batch_size": 100,
        "sgd_minibatch_size": 100, "num_sgd_iter": 1,
        "model": {"custom_model": "rllib_test_tiny"}})
    try:
        trainer.train()
        names = trainer.workers.foreach_worker(
            lambda ev: type(ev.get_policy().model).__name__)
        assert names == ["_TinyModel", "_TinyModel"]
    finally:
        trainer.stop()


@pytest.mark.timeout(300)
def test_tune_runs_trainers_by_name_with_a_grid_search(cluster, tmp_path):
    trials = tune.run(
        "PPO",
        local_dir=str(tmp_path),
        stop={"training_iteration": 1},
        config={
            "env": "CartPole-v0",
            "num_workers": 0,
            "train_batch_size": 200,
            "sgd_minibatch_size": 100,
            "num_sgd_iter": 1,
            "lr": tune.grid_search([0.01, 0.001]),
        },
        verbose=0,
    )
    trials = getattr(trials, "trials", trials)
    assert len(trials) == 2
    assert sorted(t.last_result["config"]["lr"] for t in trials) == [0.001, 0.01]
    assert all(t.last_result["timesteps_total"] >= 200 for t in trials)


def test_ignore_worker_failures_keeps_training_without_the_dead_worker(cluster):
    trainer = PPOTrainer(env="CartPole-v0", config={
        "num_workers": 2, "train_batch_size": 200, "sample_batch_size": 50,
        "sgd_minibatch_size": 100, "num_sgd_iter": 1, "ignore_worker_failures": True,
        "model": {"fcnet_hiddens": [8]}})
    try:
        trainer.train()
        ray.kill(trainer.workers.remote_workers()[0])
        result = trainer.train()
        assert result["num_healthy_workers"] == 1
        assert trainer.train()["timesteps_total"] >= 600
    finally:
        trainer.stop()
