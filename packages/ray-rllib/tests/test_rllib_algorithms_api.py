"""The Ray 2.x builder API (``ray.rllib.algorithms``) over the same Trainers."""

import gymnasium as gym
import pytest

from ray.rllib.algorithms.a2c import A2C, A2CConfig
from ray.rllib.algorithms.ppo import PPO, PPOConfig
from ray.rllib.env import MultiAgentEnv
from ray.rllib.utils.merge import UnknownConfigKeyError


def _small_ppo():
    return (PPOConfig().environment("CartPole-v1").framework("torch")
            .env_runners(num_env_runners=0, num_envs_per_env_runner=2,
                         rollout_fragment_length=50)
            .training(lr=1e-3, train_batch_size=200, minibatch_size=100, num_epochs=2,
                      lambda_=0.95, model={"fcnet_hiddens": [16]})
            .debugging(seed=1))


def test_ppo_config_builds_a_ppo_trainer_with_mapped_keys():
    config = _small_ppo()
    assert config.to_dict()["num_workers"] == 0
    assert config.to_dict()["lambda"] == 0.95
    algo = config.build()
    try:
        assert isinstance(algo, PPO)
        result = algo.train()
        assert result["env_runners"]["episode_return_mean"] == result["episode_reward_mean"]
        assert algo.compute_single_action(gym.make("CartPole-v1").reset()[0]) in (0, 1)
    finally:
        algo.stop()


def test_typos_in_builder_arguments_get_suggestions():
    with pytest.raises(UnknownConfigKeyError, match="Did you mean 'clip_param'"):
        PPOConfig().environment("CartPole-v1").training(clip_parm=0.2).build()


def test_non_torch_frameworks_are_refused():
    with pytest.raises(ValueError, match="PyTorch only"):
        A2CConfig().framework("tf2")


class _TwoAgents(MultiAgentEnv):
    def __init__(self, config=None):
        self.envs = {"a": gym.make("CartPole-v1"), "b": gym.make("CartPole-v1")}
        self.observation_space = self.envs["a"].observation_space
        self.action_space = self.envs["a"].action_space

    def reset(self, *, seed=None, options=None):
        self.done = set()
        return {k: e.reset()[0] for k, e in self.envs.items()}, {}

    def step(self, actions):
        obs, rew, term, trunc = {}, {}, {}, {}
        for k, a in actions.items():
            obs[k], rew[k], term[k], trunc[k], _ = self.envs[k].step(a)
            if term[k] or trunc[k]:
                self.done.add(k)
        term["__all__"] = len(self.done) == 2
        trunc["__all__"] = False
        return obs, rew, term, trunc, {}


def test_multi_agent_with_2x_mapping_signature_and_policy_ids_only():
    algo = (A2CConfig().environment(_TwoAgents)
            .env_runners(num_env_runners=0)
            .training(train_batch_size=100, min_iter_time_s=0)
            .multi_agent(policies={"pa", "pb"},
                         policy_mapping_fn=lambda agent_id, episode, worker, **kw: f"p{agent_id}")
            .build())
    try:
        assert isinstance(algo, A2C)
        result = algo.train()
        assert set(result["info"]["learner"]) == {"pa", "pb"}
    finally:
        algo.stop()
