"""ignore_worker_failures: a worker whose env raises is dropped (sync, A3C's async
gradients, IMPALA's async samples); with every worker failing, train() raises."""

from __future__ import annotations

import gymnasium as gym
import pytest

from ray.rllib.agents.registry import get_agent_class
from ray.tune.registry import register_env


class FaultyCartPole(gym.Env):
    def __init__(self, config):
        self.env = gym.make("CartPole-v1")
        self.observation_space = self.env.observation_space
        self.action_space = self.env.action_space
        self.bad = config.worker_index in config["bad_indices"]

    def reset(self, *, seed=None, options=None):
        return self.env.reset(seed=seed)

    def step(self, action):
        if self.bad:
            raise ValueError("simulated env failure")
        return self.env.step(action)


register_env("faulty_cartpole", FaultyCartPole)

CASES = {
    "PG": {"train_batch_size": 200},
    "A3C": {"grads_per_step": 4, "min_iter_time_s": 0},
    "IMPALA": {"train_batch_size": 100, "sample_batch_size": 50, "min_iter_time_s": 1},
}


@pytest.mark.parametrize("alg", sorted(CASES))
def test_a_failing_worker_is_dropped(ray_start_2_cpus, alg):
    trainer = get_agent_class(alg)(env="faulty_cartpole", config=dict(
        CASES[alg], num_workers=2, num_cpus_per_worker=0, ignore_worker_failures=True,
        env_config={"bad_indices": [1]}))
    try:
        # The async algorithms notice the failure when the bad worker's call is collected,
        # which may be after the good worker filled an iteration.
        result = trainer.train()
        for _ in range(8):
            if result["num_healthy_workers"] == 1 and result["timesteps_total"] > 0:
                break
            result = trainer.train()
        assert result["num_healthy_workers"] == 1
        assert result["timesteps_total"] > 0
    finally:
        trainer.stop()


def test_train_raises_when_every_worker_fails(ray_start_2_cpus):
    trainer = get_agent_class("PG")(env="faulty_cartpole", config={
        "num_workers": 2, "num_cpus_per_worker": 0, "ignore_worker_failures": True,
        "env_config": {"bad_indices": [1, 2]}, "train_batch_size": 200})
    try:
        with pytest.raises(RuntimeError, match="every rollout worker"):
            trainer.train()
    finally:
        trainer.stop()
