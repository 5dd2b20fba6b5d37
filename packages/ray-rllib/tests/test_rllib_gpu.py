"""Device placement: the learner on CUDA with num_gpus, samplers with num_gpus_per_worker,
PPO's multi-GPU minibatch split, IMPALA's learner thread and the DQN family on the GPU.

Tests marked ``gpu`` need CUDA and skip cleanly without it; the rest check the placement
logic with CPU devices (``_fake_gpus``), which is what this machine can honestly run.
"""

from __future__ import annotations

import queue

import numpy as np
import pytest
import torch

import ray
from ray.rllib.agents.dqn import ApexTrainer, DQNTrainer
from ray.rllib.agents.impala import ImpalaTrainer
from ray.rllib.agents.ppo import PPOTrainer
from ray.rllib.optimizers.async_samples_optimizer import MinibatchBuffer
from ray.rllib.utils.torch_ops import policy_device

CUDA = torch.cuda.is_available()
needs_gpu = pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
TINY_PPO = {"num_workers": 0, "train_batch_size": 128, "sample_batch_size": 64,
            "sgd_minibatch_size": 64, "num_sgd_iter": 2, "seed": 0}


def _param_devices(policy) -> set:
    return {p.device.type for p in policy.model.parameters()}


def test_policy_device_rules(monkeypatch):
    assert policy_device(0) == torch.device("cpu")
    if not CUDA:
        with pytest.raises(ValueError, match="num_gpus_per_worker=1"):
            policy_device(1, key="num_gpus_per_worker")
        assert policy_device(2, fake_gpus=True) == torch.device("cpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert policy_device(0.5) == torch.device("cuda", 0)  # a GPU share is still a GPU


def test_fake_gpus_split_ppo_minibatches_across_devices():
    trainer = PPOTrainer(env="CartPole-v1", config=dict(TINY_PPO, num_gpus=2, _fake_gpus=True))
    try:
        assert trainer.multi_gpu is not None and len(trainer.multi_gpu.devices) == 2
        result = trainer.train()
        assert result["info"]["learner"]["default_policy"]["kl"] >= 0.0
    finally:
        trainer.stop()
    simple = PPOTrainer(env="CartPole-v1", config=dict(TINY_PPO, num_gpus=2, _fake_gpus=True,
                                                        simple_optimizer=True))
    try:
        assert simple.multi_gpu is None  # plain minibatch SGD on the learner's device
        simple.train()
    finally:
        simple.stop()


def test_to_device_keeps_acting_and_learning_consistent():
    trainer = PPOTrainer(env="CartPole-v1", config=TINY_PPO)
    try:
        policy = trainer.get_policy()
        before = trainer.compute_action(np.zeros(4, np.float32), explore=False)
        policy.to_device(torch.device("cpu"))
        assert trainer.compute_action(np.zeros(4, np.float32), explore=False) == before
        trainer.train()
        state = policy.get_state()
        assert all(v.device.type == "cpu" for group in state["optimizer"]["state"].values()
                   for v in group.values() if isinstance(v, torch.Tensor))
    finally:
        trainer.stop()


def test_minibatch_buffer_cycles_batches_num_passes_times():
    inqueue: queue.Queue = queue.Queue()
    for name in "abcd":
        inqueue.put(name)
    buffer = MinibatchBuffer(inqueue, size=2, num_passes=2)
    got = [buffer.get(timeout=0.1) for _ in range(6)]
    # Passes ramp up 1, 2: "a" once, then "b" and "c" twice each, interleaved.
    assert got == [("a", True), ("b", False), ("c", False), ("b", True), ("c", True),
                   ("d", False)]


def test_impala_minibatch_buffer_size_is_used():
    trainer = ImpalaTrainer(env="CartPole-v1", config={
        "num_workers": 0, "minibatch_buffer_size": 3, "num_sgd_iter": 2,
        "train_batch_size": 100, "sample_batch_size": 50, "min_iter_time_s": 0})
    try:
        assert len(trainer.optimizer.learner.minibatch_buffer.buffers) == 3
        trainer.train()
    finally:
        trainer.stop()


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("trainer_cls, config, num_cpus, samplers_checked, trained", [
    # PPO: the learner on CUDA, its sampler on the CPU
    pytest.param(PPOTrainer, dict(TINY_PPO, num_workers=1, num_gpus=1), 2, True,
                 lambda result: result["timesteps_total"] >= 128, id="ppo"),
    # IMPALA: the learner thread on CUDA
    pytest.param(ImpalaTrainer, {"num_workers": 1, "num_gpus": 1, "train_batch_size": 100,
                                 "sample_batch_size": 50, "min_iter_time_s": 1}, 3, False,
                 lambda result: result["info"]["num_steps_trained"] > 0, id="impala"),
    # APEX: the learner on CUDA with two samplers and a replay shard
    pytest.param(ApexTrainer, {"num_workers": 2, "num_gpus": 1, "learning_starts": 200,
                               "timesteps_per_iteration": 500, "min_iter_time_s": 1,
                               "train_batch_size": 64,
                               "optimizer": {"num_replay_buffer_shards": 1}}, 3, False,
                 lambda result: True, id="apex"),  # checked: train() runs
])
def test_learner_trains_on_cuda(trainer_cls, config, num_cpus, samplers_checked, trained):
    ray.init(num_cpus=num_cpus, num_gpus=1)
    try:
        trainer = trainer_cls(env="CartPole-v1", config=config)
        policy = trainer.get_policy()
        assert policy.device.type == "cuda"
        if samplers_checked:
            assert _param_devices(policy) == {"cuda"}
            remote = trainer.workers.remote_workers()[0]
            assert ray.get(remote.for_policy.remote(lambda p: p.device.type)) == "cpu"
        assert trained(trainer.train())
        trainer.stop()
    finally:
        ray.shutdown()


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA or torch.cuda.device_count() < 2, reason="needs 2 CUDA devices")
def test_ppo_multi_gpu_towers():
    trainer = PPOTrainer(env="CartPole-v1", config=dict(TINY_PPO, num_gpus=2))
    try:
        assert [d.type for d in trainer.multi_gpu.devices] == ["cuda", "cuda"]
        trainer.train()
    finally:
        trainer.stop()


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("extra", [{}, {"num_atoms": 11, "noisy": True},
                                   {"parameter_noise": True}])
def test_dqn_family_on_cuda(extra):
    trainer = DQNTrainer(env="CartPole-v1", config=dict(
        extra, num_workers=0, num_gpus=1, learning_starts=64, timesteps_per_iteration=256,
        min_iter_time_s=0))
    try:
        policy = trainer.get_policy()
        assert _param_devices(policy) == {"cuda"}
        assert {p.device.type for p in policy.target_model.parameters()} == {"cuda"}
        result = trainer.train()
        assert result["info"]["num_steps_trained"] > 0
        assert trainer.save()
    finally:
        trainer.stop()
