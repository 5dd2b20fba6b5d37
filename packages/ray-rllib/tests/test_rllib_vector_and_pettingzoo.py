"""gymnasium vector envs as the sampler's batched path, and PettingZoo envs through the
MultiAgentEnv wrappers."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

from ray.rllib.agents.pg import PGTrainer
from ray.rllib.agents.pg.pg import PGTorchPolicy
from ray.rllib.agents.ppo import PPOTrainer
from ray.rllib.env.gym_vector_env import GymVectorEnv
from ray.rllib.env.wrappers.pettingzoo_env import ParallelPettingZooEnv, PettingZooEnv
from ray.rllib.evaluation.rollout_worker import RolloutWorker
from ray.tune.registry import register_env


def _vector_cartpole(mode, num_envs=4):
    if mode == "vector_entry_point":
        return gym.make_vec("CartPole-v1", num_envs=num_envs, vectorization_mode=mode)
    return gym.make_vec("CartPole-v1", num_envs=num_envs, vectorization_mode="sync",
                        vector_kwargs={"autoreset_mode": mode})


@pytest.mark.parametrize("mode", ["vector_entry_point", AutoresetMode.SAME_STEP,
                                  AutoresetMode.DISABLED])
def test_gym_vector_env_episodes_are_exact(mode):
    worker = RolloutWorker(lambda _ctx: _vector_cartpole(mode), PGTorchPolicy,
                           batch_steps=100, batch_mode="complete_episodes", seed=0)
    assert isinstance(worker.async_env, GymVectorEnv) and worker.async_env.num_envs == 4
    batch = worker.sample()
    episodes = batch.split_by_episode()
    assert episodes
    for episode in episodes:
        # Every episode starts at t=0, steps one at a time, and ends done (CartPole
        # terminates) or at the 500-step limit; no transition crosses a reset.
        np.testing.assert_array_equal(episode["t"], np.arange(episode.count))
        assert episode["dones"][-1] or episode.count == 500
        assert not episode["dones"][:-1].any()
        np.testing.assert_array_equal(episode["obs"][1:], episode["new_obs"][:-1])
    lengths = [m.episode_length for m in worker.get_metrics()]
    assert sorted(lengths) == sorted(e.count for e in episodes)


def test_ppo_learns_on_a_numpy_vectorized_cartpole():
    register_env("vec_cartpole", lambda _c: gym.make_vec(
        "CartPole-v1", num_envs=8, vectorization_mode="vector_entry_point"))
    trainer = PPOTrainer(env="vec_cartpole", config={
        "num_workers": 0, "sample_batch_size": 64, "train_batch_size": 512,
        "sgd_minibatch_size": 128, "num_sgd_iter": 10, "lr": 1e-3, "seed": 0,
        "model": {"fcnet_hiddens": [64, 64]}})
    try:
        first = trainer.train()
        assert first["timesteps_total"] >= 512
        result = first
        for _ in range(14):
            result = trainer.train()
        assert result["episode_reward_mean"] > first["episode_reward_mean"] + 20
    finally:
        trainer.stop()


def test_horizon_is_refused_for_self_resetting_vector_envs():
    with pytest.raises(ValueError, match="max_episode_steps"):
        RolloutWorker(lambda _ctx: _vector_cartpole("vector_entry_point"), PGTorchPolicy,
                      episode_horizon=50)


class ParallelCoinGame:
    """A PettingZoo-style parallel env: each agent is paid for matching a hidden coin
    it observes (so it is learnable); agent "b" leaves after 3 steps, the game ends at 6."""

    metadata = {"name": "coin_v0"}

    def __init__(self):
        self.possible_agents = ["a", "b"]
        self.agents = []
        self._spaces = {a: gym.spaces.Box(0.0, 1.0, (2,), np.float32) for a in "ab"}

    def observation_space(self, agent):
        return self._spaces[agent]

    def action_space(self, agent):
        return gym.spaces.Discrete(2)

    def reset(self, seed=None, options=None):
        self.rng = np.random.default_rng(seed)
        self.agents = list(self.possible_agents)
        self.t = 0
        self.coins = {a: int(self.rng.integers(2)) for a in self.agents}
        return {a: self._obs(a) for a in self.agents}, {a: {} for a in self.agents}

    def _obs(self, agent):
        return np.eye(2, dtype=np.float32)[self.coins[agent]]

    def step(self, actions):
        assert set(actions) == set(self.agents), (actions, self.agents)
        self.t += 1
        rewards = {a: float(actions[a] == self.coins[a]) for a in self.agents}
        self.coins = {a: int(self.rng.integers(2)) for a in self.agents}
        terminations = {a: self.t >= (3 if a == "b" else 6) for a in self.agents}
        truncations = {a: False for a in self.agents}
        obs = {a: self._obs(a) for a in self.agents}
        infos = {a: {} for a in self.agents}
        self.agents = [a for a in self.agents if not terminations[a]]
        return obs, rewards, terminations, truncations, infos

    def close(self):
        pass


class AECCoinGame:
    """The coin game, turn-based (PettingZoo's AEC API): "a" and "b" alternate, each is
    paid for matching its coin (the pay shows in ``last()`` at its next turn); six turns."""

    def __init__(self):
        self.possible_agents = ["a", "b"]
        self._space = gym.spaces.Box(0.0, 1.0, (2,), np.float32)

    def observation_space(self, agent):
        return self._space

    def action_space(self, agent):
        return gym.spaces.Discrete(2)

    def reset(self, seed=None, options=None):
        self.rng = np.random.default_rng(seed)
        self.agents = list(self.possible_agents)
        self.turns = 0
        self.coins = {a: int(self.rng.integers(2)) for a in self.agents}
        self.rewards = {a: 0.0 for a in self.agents}
        self.terms = {a: False for a in self.agents}
        self.agent_selection = "a"

    def observe(self, agent):
        return np.eye(2, dtype=np.float32)[self.coins[agent]]

    def last(self):
        agent = self.agent_selection
        return self.observe(agent), self.rewards[agent], self.terms[agent], False, {}

    def step(self, action):
        agent = self.agent_selection
        if self.terms[agent]:
            assert action is None  # done agents leave with None
            self.agents.remove(agent)
            if self.agents:
                self.agent_selection = self.agents[0]
            return
        self.rewards[agent] = float(action == self.coins[agent])
        self.coins[agent] = int(self.rng.integers(2))
        self.turns += 1
        if self.turns >= 6:
            self.terms = {a: True for a in self.agents}
        self.agent_selection = "b" if agent == "a" else "a"


def test_parallel_pettingzoo_env_steps_all_agents_and_ends_when_none_left():
    env = ParallelPettingZooEnv(ParallelCoinGame())
    assert env.observation_space.shape == (2,) and env.action_space.n == 2
    obs, _infos = env.reset(seed=0)
    assert set(obs) == {"a", "b"}
    for t in range(1, 7):
        actions = {agent: int(np.argmax(o)) for agent, o in obs.items()}
        obs, rewards, terms, truncs, _ = env.step(actions)
        assert all(r == 1.0 for r in rewards.values())
        assert terms["__all__"] == (t == 6)
        obs = {a: o for a, o in obs.items() if not terms.get(a)}


def test_pg_trains_shared_policy_on_parallel_pettingzoo():
    register_env("coin_parallel", lambda _c: ParallelPettingZooEnv(ParallelCoinGame()))
    trainer = PGTrainer(env="coin_parallel", config={
        "num_workers": 0, "train_batch_size": 300, "lr": 0.02, "seed": 0,
        "model": {"fcnet_hiddens": [16]}})
    try:
        first = trainer.train()
        result = first
        for _ in range(15):
            result = trainer.train()
        # Random play earns 4.5 a game (9 agent-steps at 1/2); matching the coin, 9.
        assert result["episode_reward_mean"] > max(first["episode_reward_mean"], 6.5)
    finally:
        trainer.stop()


def test_aec_pettingzoo_env_runs_turn_by_turn():
    env = PettingZooEnv(AECCoinGame())
    obs, _ = env.reset(seed=0)
    assert list(obs) == ["a"]
    seen, total, done = [], 0.0, False
    while not done:
        agent = next(iter(obs))
        seen.append(agent)
        obs, rewards, terms, truncs, _ = env.step({agent: int(np.argmax(obs[agent]))})
        total += sum(rewards.values())
        done = terms["__all__"] or truncs["__all__"]
    assert seen == ["a", "b", "a", "b", "a", "b"]
    assert total == 6.0  # every turn matched its coin, each paid at the agent's next turn
