"""Env interfaces (VectorEnv, hierarchical multi-agent, grouping, parametric actions),
batch modes, the async sampler, and custom policies/trainers built from templates."""

import gymnasium as gym
import numpy as np
import torch
from gymnasium import spaces
from torch import nn

from ray.rllib.agents import build_trainer, with_common_config
from ray.rllib.agents.a3c import A3CTrainer
from ray.rllib.agents.pg import PGTrainer
from ray.rllib.agents.ppo import PPOTrainer
from ray.rllib.env import MultiAgentEnv, VectorEnv
from ray.rllib.env.gym_compat import OldGymAdapter, resolve_env_id
from ray.rllib.evaluation.postprocessing import Postprocessing, compute_advantages
from ray.rllib.models import ModelCatalog
from ray.rllib.policy import build_torch_policy
from ray.rllib.policy.sample_batch import SampleBatch
from ray.tune.registry import register_env


def test_old_env_ids_map_to_gymnasium_versions():
    assert resolve_env_id("Pendulum-v0") == "Pendulum-v1"
    assert resolve_env_id("CartPole-v0") == "CartPole-v0"


def test_old_gym_adapter_splits_done_into_terminated_and_truncated():
    class Old:
        observation_space = spaces.Discrete(2)
        action_space = spaces.Discrete(2)

        def reset(self):
            return 0

        def step(self, action):
            return 1, 1.0, True, {"TimeLimit.truncated": action == 1}

    env = OldGymAdapter(Old())
    assert env.reset() == (0, {})
    assert env.step(0)[2:4] == (True, False)
    assert env.step(1)[2:4] == (False, True)


def test_complete_episodes_batches_end_every_trajectory_at_a_done():
    trainer = PGTrainer(env="CartPole-v1", config={"batch_mode": "complete_episodes",
                                                   "train_batch_size": 100, "seed": 0})
    try:
        batch = trainer.workers.local_worker().sample()
        for episode in batch.split_by_episode():
            assert episode["dones"][-1]
    finally:
        trainer.stop()


def test_async_sampler_feeds_a3c_from_a_background_thread():
    trainer = A3CTrainer(env="CartPole-v0", config={
        "num_workers": 0, "min_iter_time_s": 0, "sample_async": True,
        "model": {"fcnet_hiddens": [8]}})
    try:
        assert trainer.train()["timesteps_total"] > 0
        sampler = trainer.workers.local_worker().sampler
        assert sampler.is_alive()
    finally:
        trainer.stop()
    assert not sampler.is_alive()


class CountingVectorEnv(VectorEnv):
    """A custom VectorEnv (0.7 four-tuple API): reward 1 per step, episodes of 5 steps."""

    def __init__(self, num_envs=3):
        self.num_envs = num_envs
        self.observation_space = spaces.Box(0, 10, (1,), dtype=np.float32)
        self.action_space = spaces.Discrete(2)
        self.t = [0] * num_envs

    def vector_reset(self):
        self.t = [0] * self.num_envs
        return [np.zeros(1, np.float32) for _ in range(self.num_envs)]

    def reset_at(self, index):
        self.t[index] = 0
        return np.zeros(1, np.float32)

    def vector_step(self, actions):
        self.t = [t + 1 for t in self.t]
        obs = [np.array([t], np.float32) for t in self.t]
        return obs, [1.0] * self.num_envs, [t >= 5 for t in self.t], [{}] * self.num_envs


def test_custom_vector_env_is_sampled_as_is():
    register_env("rllib_test_vector_env", lambda _: CountingVectorEnv())
    trainer = PGTrainer(env="rllib_test_vector_env", config={"train_batch_size": 60})
    try:
        result = trainer.train()
        assert result["episode_len_mean"] == 5 and result["episode_reward_mean"] == 5
    finally:
        trainer.stop()


class HierarchicalCorridor(MultiAgentEnv):
    """A manager picks a goal every 3 steps; each goal spawns a new worker agent id."""

    def __init__(self, env_config=None):
        self.observation_space = spaces.Box(-10, 10, (2,), dtype=np.float32)
        self.action_space = spaces.Discrete(2)

    def reset(self):
        self.pos, self.steps, self.goal, self.worker = 0, 0, 1, 0
        return {"manager": self._obs()}

    def _obs(self):
        return np.array([self.pos, self.goal], np.float32)

    def step(self, action_dict):
        if "manager" in action_dict:
            self.goal = 1 if action_dict["manager"] == 1 else -1
            self.worker += 1
            return {f"worker_{self.worker}": self._obs()}, {"manager": 0.0}, \
                {"__all__": False}, {}
        (agent, action), = action_dict.items()
        self.pos += 1 if action == 1 else -1
        self.steps += 1
        done = self.steps >= 12
        reward = 1.0 if np.sign(self.pos) == self.goal else 0.0
        if self.steps % 3 == 0 and not done:
            return {"manager": self._obs()}, {agent: reward, "manager": reward}, \
                {agent: True, "__all__": False}, {}
        return {agent: self._obs()}, {agent: reward}, {agent: done, "__all__": done}, {}


def test_hierarchical_agents_that_come_and_go_are_trained():
    env = HierarchicalCorridor()
    trainer = PGTrainer(env=HierarchicalCorridor, config={
        "train_batch_size": 100,
        "multiagent": {
            "policies": {"high": (None, env.observation_space, env.action_space, {}),
                         "low": (None, env.observation_space, env.action_space, {})},
            "policy_mapping_fn": lambda agent: "high" if agent == "manager" else "low",
        }})
    try:
        result = trainer.train()
        assert set(result["info"]["learner"]) == {"high", "low"}
        assert result["episode_len_mean"] == 16  # 12 low-level + 4 manager steps
    finally:
        trainer.stop()


def test_agent_grouping_merges_observations_rewards_and_actions():
    class Pair(MultiAgentEnv):
        def reset(self):
            return {"a": 1, "b": 2, "c": 3}

        def step(self, action_dict):
            self.last = action_dict
            return {"a": 1, "b": 2, "c": 3}, {"a": 1.0, "b": 2.0, "c": 5.0}, \
                {"a": False, "b": False, "c": False, "__all__": False}, {}

    env = Pair().with_agent_groups({"group": ["a", "b"]})
    assert env.reset() == {"group": [1, 2], "c": 3}
    obs, rewards, dones, infos = env.step({"group": [0, 1], "c": 1})
    assert env.env.last == {"a": 0, "b": 1, "c": 1}
    assert rewards == {"group": 3.0, "c": 5.0}
    assert infos["group"]["individual_rewards"] == [1.0, 2.0]


class MaskedActionsEnv(gym.Env):
    """Parametric actions: only actions 2 and 3 are valid; the obs says so."""

    def __init__(self, env_config=None):
        self.action_space = spaces.Discrete(4)
        self.observation_space = spaces.Dict({
            "action_mask": spaces.Box(0, 1, (4,), dtype=np.float32),
            "real_obs": spaces.Box(-1, 1, (2,), dtype=np.float32)})

    def _obs(self):
        return {"action_mask": np.array([0, 0, 1, 1], np.float32),
                "real_obs": np.zeros(2, np.float32)}

    def reset(self, *, seed=None, options=None):
        self.t = 0
        return self._obs(), {}

    def step(self, action):
        assert action in (2, 3), f"masked action {action} was taken"
        self.t += 1
        return self._obs(), 1.0, self.t >= 10, False, {}


class MaskingModel(nn.Module):
    def __init__(self, obs_space, action_space, num_outputs, model_config, name):
        super().__init__()
        self.logits = nn.Linear(2, num_outputs)
        self.vf = nn.Linear(2, 1)
        self._value = None

    def forward(self, input_dict, state, seq_lens):
        obs = input_dict["obs"]
        self._value = self.vf(obs["real_obs"]).squeeze(-1)
        inf_mask = torch.clamp(torch.log(obs["action_mask"]), min=torch.finfo(torch.float32).min)
        return self.logits(obs["real_obs"]) + inf_mask, state

    def value_function(self):
        return self._value


def test_parametric_action_masking_through_a_custom_model():
    ModelCatalog.register_custom_model("rllib_test_masking", MaskingModel)
    trainer = PPOTrainer(env=MaskedActionsEnv, config={
        "num_workers": 0, "train_batch_size": 200, "sgd_minibatch_size": 100,
        "num_sgd_iter": 2, "model": {"custom_model": "rllib_test_masking"}})
    try:
        assert trainer.train()["episode_reward_mean"] == 10.0
    finally:
        trainer.stop()


def test_build_trainer_with_a_custom_torch_policy():
    def loss(policy, batch):
        _logits, _values, dist = policy.forward_train(batch)
        return -(dist.logp(batch[SampleBatch.ACTIONS]) * batch[Postprocessing.ADVANTAGES]).mean()

    def postprocess(policy, batch, other_agent_batches=None, episode=None):
        return compute_advantages(batch, 0.0, 0.9, use_gae=False)

    MyTorchPolicy = build_torch_policy(name="MyTorchPolicy", loss_fn=loss,
                                       postprocess_fn=postprocess)
    MyTrainer = build_trainer(name="MyCustomTrainer", default_policy=MyTorchPolicy,
                              default_config=with_common_config({"num_workers": 0}))
    trainer = MyTrainer(env="CartPole-v0", config={"train_batch_size": 100})
    try:
        before = trainer.get_policy().get_weights()["logits.0.weight"].copy()
        result = trainer.train()
        assert result["timesteps_total"] >= 100
        assert type(trainer.get_policy()).__name__ == "MyTorchPolicy"
        assert not np.array_equal(before, trainer.get_policy().get_weights()["logits.0.weight"])
    finally:
        trainer.stop()


def test_horizon_cuts_episodes_and_clip_rewards_takes_the_sign():
    trainer = PGTrainer(env="Pendulum-v1", config={
        "horizon": 10, "clip_rewards": True, "train_batch_size": 100})
    try:
        batch = trainer.workers.local_worker().sample()
        assert set(np.unique(batch["rewards"])) <= {-1.0, 0.0, 1.0}
        result = trainer.train()
        assert result["episode_len_mean"] == 10
        assert result["episode_reward_mean"] < -10  # metrics report the unclipped rewards
    finally:
        trainer.stop()


def test_soft_horizon_reports_episodes_without_resetting_the_env():
    trainer = PGTrainer(env="CartPole-v1", config={
        "horizon": 5, "soft_horizon": True, "train_batch_size": 50, "seed": 0})
    try:
        batch = trainer.workers.local_worker().sample()
        metrics = trainer.workers.local_worker().get_metrics()
        assert metrics and all(m.episode_length <= 5 for m in metrics)
        # The env was not reset at the horizon: every non-terminal step continues from
        # where the previous one ended, also across the soft horizons.
        for i in range(batch.count - 1):
            if not batch["dones"][i]:
                np.testing.assert_array_equal(batch["new_obs"][i], batch["obs"][i + 1])
    finally:
        trainer.stop()
