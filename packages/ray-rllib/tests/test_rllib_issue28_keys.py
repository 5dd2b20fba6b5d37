"""Keys and 0.7 names that used to be accepted and ignored, now each doing what the
documents say: SimpleQ, _register_all, compress_observations, monitor,
lstm_use_prev_action_reward, shuffle_sequences, _fake_sampler, the phase timers."""

from __future__ import annotations

import json
import os
import pickle

import numpy as np
import pytest
import torch

import ray
from ray.rllib import _register_all
from ray.rllib.agents.dqn import SimpleQTrainer
from ray.rllib.agents.pg import PGTrainer
from ray.rllib.agents.ppo import PPOTrainer
from ray.rllib.agents.registry import get_agent_class
from ray.rllib.optimizers.rollout_ops import minibatch_sgd
from ray.rllib.policy.sample_batch import SampleBatch
from ray.tune import registry


def test_simple_q_is_dqn_without_rainbow_extensions():
    assert get_agent_class("SimpleQ") is SimpleQTrainer
    trainer = SimpleQTrainer(env="CartPole-v1", config={
        "num_workers": 0, "learning_starts": 0, "timesteps_per_iteration": 100,
        "min_iter_time_s": 0})
    try:
        cfg = trainer.get_policy().dqn_config
        assert (cfg.dueling, cfg.double_q, cfg.prioritized_replay, cfg.n_step,
                cfg.num_atoms) == (False, False, False, 1, 1)
        assert trainer.get_policy().model.value is None  # no dueling value stream
        result = trainer.train()
        assert result["info"]["num_steps_trained"] > 0
        assert "learn_time_ms" in result["timers"] and "replay_time_ms" in result["timers"]
    finally:
        trainer.stop()


def test_register_all_restores_the_algorithms_in_tune():
    registry._loaders.pop((registry.TRAINABLE_CLASS, "SimpleQ"), None)
    registry._registry.pop((registry.TRAINABLE_CLASS, "SimpleQ"), None)
    _register_all()
    assert registry.get_trainable_cls("SimpleQ") is SimpleQTrainer


def test_compressed_batches_unpickle_to_plain_arrays():
    obs = np.random.default_rng(0).integers(0, 255, (64, 84, 84, 4), dtype=np.uint8)
    batch = SampleBatch({"obs": obs, "new_obs": obs[::-1].copy(), "rewards": np.ones(64)})
    plain_size = len(pickle.dumps(batch))
    zeros = SampleBatch({"obs": np.zeros_like(obs), "rewards": np.ones(64)})
    zeros.compress(bulk=True)
    assert len(pickle.dumps(zeros)) < plain_size / 50  # frames compress well
    batch.compress(bulk=True)
    back = pickle.loads(pickle.dumps(batch))
    assert isinstance(back, SampleBatch) and list(back) == ["obs", "new_obs", "rewards"]
    np.testing.assert_array_equal(back["obs"], obs)
    assert back["obs"].dtype == np.uint8 and back["obs"].flags.writeable


def test_compress_observations_from_remote_workers(ray_start_2_cpus):
    trainer = PGTrainer(env="CartPole-v1", config={
        "num_workers": 1, "compress_observations": True, "train_batch_size": 200})
    try:
        batch = ray.get(trainer.workers.remote_workers()[0].sample.remote())
        assert batch["obs"].dtype == np.float32 and batch["obs"].shape[1:] == (4,)
        trainer.train()
    finally:
        trainer.stop()


def test_monitor_writes_episode_stats(tmp_path):
    trainer = PGTrainer(env="CartPole-v1", config={"num_workers": 0, "monitor": True,
                                                   "train_batch_size": 300})
    try:
        trainer.train()
        path = os.path.join(trainer.logdir, "monitor",
                            "openaigym.episode_batch.0.0.stats.json")
        with open(path) as f:
            stats = json.load(f)
        assert stats["episode_lengths"] and len(stats["episode_rewards"]) == \
            len(stats["episode_lengths"])
        assert stats["episode_rewards"][0] == stats["episode_lengths"][0]  # CartPole: 1/step
    finally:
        trainer.stop()


@pytest.mark.parametrize("keys", [{"lstm_use_prev_action_reward": True},
                                  {"lstm_use_prev_action": True},
                                  {"lstm_use_prev_reward": True}])
def test_lstm_sees_previous_action_and_reward(keys):
    trainer = PPOTrainer(env="CartPole-v1", config={
        "num_workers": 0, "train_batch_size": 200, "sgd_minibatch_size": 50,
        "num_sgd_iter": 1, "model": dict(keys, use_lstm=True, lstm_cell_size=16,
                                         fcnet_hiddens=[16])})
    try:
        model = trainer.get_policy().model
        extra = (2 if model.use_prev_action else 0) + (1 if model.use_prev_reward else 0)
        assert model.lstm.input_size == 16 + extra
        policy = trainer.get_policy()
        state = [np.zeros((1, 16), np.float32)] * 2
        obs = np.zeros((1, 4), np.float32)
        outs = [policy.compute_actions(obs, state, np.array([a]), np.array([r]),
                                       explore=False)[2]["action_dist_inputs"]
                for a, r in [(0, 0.0), (1, 0.0), (0, 1.0)]]
        if model.use_prev_action:
            assert not np.allclose(outs[0], outs[1])
        if model.use_prev_reward:
            assert not np.allclose(outs[0], outs[2])
        trainer.train()
    finally:
        trainer.stop()


def test_shuffle_sequences_false_keeps_sample_order():
    class Recorder:
        def __init__(self):
            self.firsts = []

        def to_tensors(self, batch):
            return {"x": torch.arange(batch.count)}

        def learn_on_tensors(self, tensors):
            self.firsts.append(int(tensors["x"][0]))
            return {"learner_stats": {"loss": 0.0}}

    batch = SampleBatch({"x": np.arange(40)})
    ordered, shuffled = Recorder(), Recorder()
    minibatch_sgd(ordered, batch, 2, 10, np.random.default_rng(0), shuffle=False)
    minibatch_sgd(shuffled, batch, 2, 10, np.random.default_rng(0), shuffle=True)
    assert ordered.firsts == [0, 10, 20, 30] * 2
    assert shuffled.firsts != ordered.firsts


def test_fake_sampler_returns_the_first_batch_again():
    from ray.rllib.agents.impala import ImpalaTrainer

    trainer = ImpalaTrainer(env="CartPole-v1", config={
        "num_workers": 0, "_fake_sampler": True, "train_batch_size": 100,
        "min_iter_time_s": 0})
    try:
        worker = trainer.workers.local_worker()
        assert worker.sample() is worker.sample()
    finally:
        trainer.stop()
