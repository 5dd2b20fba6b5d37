"""Trainers driven in-process (num_workers=0): the documented Python API."""

import os
import pickle

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

from ray.rllib.agents.a3c import A2CTrainer, A3CTrainer
from ray.rllib.agents.checkpoint import CheckpointError
from ray.rllib.agents.pg import PGTrainer
from ray.rllib.agents.ppo import DEFAULT_CONFIG, PPOTrainer
from ray.rllib.env import ExternalEnv, MultiAgentEnv
from ray.rllib.utils.merge import UnknownConfigKeyError
from ray.tune.registry import register_env

SMALL_PPO = {
    "num_workers": 0,
    "train_batch_size": 200,
    "sample_batch_size": 50,
    "sgd_minibatch_size": 64,
    "num_sgd_iter": 2,
    "model": {"fcnet_hiddens": [16]},
}


def test_unknown_config_key_is_rejected_with_a_suggestion():
    with pytest.raises(UnknownConfigKeyError, match="Did you mean 'num_workers'"):
        PPOTrainer(env="CartPole-v0", config={"num_worker": 0})


def test_default_config_holds_documented_ppo_and_common_keys():
    assert DEFAULT_CONFIG["lambda"] == 1.0 and DEFAULT_CONFIG["num_sgd_iter"] == 30
    assert DEFAULT_CONFIG["gamma"] == 0.99 and DEFAULT_CONFIG["num_workers"] == 2
    assert DEFAULT_CONFIG["model"]["fcnet_hiddens"] == [256, 256]


def test_train_returns_the_documented_result_dict():
    trainer = PPOTrainer(env="CartPole-v0", config=SMALL_PPO)
    try:
        result = trainer.train()
    finally:
        trainer.stop()
    for key in ("episode_reward_mean", "episode_reward_min", "episode_reward_max",
                "episode_len_mean", "episodes_this_iter", "timesteps_total",
                "training_iteration", "policy_reward_mean", "custom_metrics"):
        assert key in result, key
    assert result["timesteps_total"] >= 200
    stats = result["info"]["learner"]["default_policy"]
    for key in ("cur_lr", "entropy", "kl", "policy_loss", "total_loss", "vf_explained_var",
                "vf_loss"):
        assert key in stats, key


def _first_episode_returns(seed, n=5):
    returns = []
    config = dict(SMALL_PPO, seed=seed, callbacks={
        "on_episode_end": lambda info: returns.append(info["episode"].total_reward)})
    trainer = PPOTrainer(env="CartPole-v1", config=config)
    try:
        while len(returns) < n:
            trainer.train()
    finally:
        trainer.stop()
    return returns[:n]


def test_same_seed_gives_identical_first_episode_returns():
    first = _first_episode_returns(seed=3, n=15)
    assert first == _first_episode_returns(seed=3, n=15)
    assert first != _first_episode_returns(seed=4, n=15)


def test_save_and_restore_round_trip(tmp_path):
    trainer = PPOTrainer(env="CartPole-v0", config=SMALL_PPO)
    trainer.train()
    path = trainer.save(str(tmp_path))
    weights = trainer.get_policy().get_weights()
    obs = np.array([0.01, 0.02, 0.03, 0.04])
    action = trainer.compute_action(obs, explore=False)
    trainer.stop()

    kl_coeff = trainer.get_policy().kl_coeff
    restored = PPOTrainer(env="CartPole-v0", config=SMALL_PPO)
    restored.restore(path)
    try:
        assert restored.get_policy().kl_coeff == kl_coeff
        for key, value in restored.get_policy().get_weights().items():
            np.testing.assert_array_equal(value, weights[key])
        assert restored.compute_action(obs, explore=False) == action
        assert restored.iteration == 1
        assert restored.train()["timesteps_total"] >= 400
    finally:
        restored.stop()


def test_checkpoint_from_a_newer_version_is_refused(tmp_path):
    trainer = PPOTrainer(env="CartPole-v0", config=SMALL_PPO)
    try:
        path = trainer.save(str(tmp_path))
        with open(path, "rb") as f:
            data = pickle.load(f)
        assert data["format"] == "ray.rllib.checkpoint" and data["version"] == 1
        data["version"] = 99
        with open(path, "wb") as f:
            pickle.dump(data, f)
        with pytest.raises(CheckpointError, match="upgrade ray-rllib"):
            trainer.restore(path)
    finally:
        trainer.stop()


def test_export_policy_model_writes_a_loadable_torch_module(tmp_path):
    import torch

    trainer = PPOTrainer(env="CartPole-v0", config=SMALL_PPO)
    try:
        trainer.export_policy_model(str(tmp_path))
        state = torch.load(os.path.join(tmp_path, "weights.pt"))
        assert set(state) == set(trainer.get_policy().get_weights())
    finally:
        trainer.stop()


@pytest.mark.parametrize("trainer_cls,config", [
    (PGTrainer, {"train_batch_size": 200}),
    (A2CTrainer, {"num_workers": 0, "min_iter_time_s": 0, "train_batch_size": 100}),
    (A3CTrainer, {"num_workers": 0, "min_iter_time_s": 0, "sample_async": False}),
])
def test_pg_a2c_a3c_train_in_the_driver(trainer_cls, config):
    trainer = trainer_cls(env="CartPole-v0", config=dict(config, model={"fcnet_hiddens": [16]}))
    try:
        result = trainer.train()
        assert result["timesteps_total"] > 0
        assert "policy_loss" in result["info"]["learner"]["default_policy"]
    finally:
        trainer.stop()


def test_ppo_on_continuous_actions_and_lstm_models():
    for env, model in (("Pendulum-v0", {"fcnet_hiddens": [16], "free_log_std": True}),
                       ("CartPole-v1", {"use_lstm": True, "lstm_cell_size": 8,
                                        "fcnet_hiddens": [8], "max_seq_len": 10})):
        trainer = PPOTrainer(env=env, config=dict(SMALL_PPO, model=model))
        try:
            result = trainer.train()
            assert np.isfinite(result["info"]["learner"]["default_policy"]["total_loss"])
        finally:
            trainer.stop()


class OldGymCorridor(gym.Env):
    """An env with the old gym signatures (reset -> obs, step -> 4-tuple)."""

    def __init__(self, env_config):
        self.length = env_config["corridor_length"]
        self.action_space = spaces.Discrete(2)
        self.observation_space = spaces.Box(0.0, self.length, (1,), dtype=np.float32)

    def reset(self):
        self.pos = 0
        return np.array([self.pos], dtype=np.float32)

    def step(self, action):
        self.pos = max(0, self.pos + (1 if action == 1 else -1))
        done = self.pos >= self.length
        return np.array([self.pos], np.float32), 1.0 if done else -0.1, done, {}


def test_custom_env_class_with_old_gym_api_and_env_config():
    trainer = PGTrainer(env=OldGymCorridor, config={
        "env_config": {"corridor_length": 3}, "train_batch_size": 100, "horizon": 50})
    try:
        result = trainer.train()
        assert result["episodes_this_iter"] > 0
    finally:
        trainer.stop()


def test_registered_env_creator_receives_env_context():
    seen = []

    def creator(env_config):
        seen.append((env_config.worker_index, env_config.vector_index, dict(env_config)))
        return gym.make("CartPole-v1")

    register_env("rllib_test_ctx_env", creator)
    trainer = PPOTrainer(env="rllib_test_ctx_env", config=dict(
        SMALL_PPO, env_config={"k": 1}, num_envs_per_worker=2))
    try:
        trainer.train()
    finally:
        trainer.stop()
    assert (0, 1, {"k": 1}) in seen


class TwoCartPoles(MultiAgentEnv):
    def __init__(self, env_config=None):
        self.envs = [gym.make("CartPole-v1") for _ in range(2)]
        self.observation_space = self.envs[0].observation_space
        self.action_space = self.envs[0].action_space

    def reset(self):
        self.dones = set()
        return {i: env.reset()[0] for i, env in enumerate(self.envs)}

    def step(self, action_dict):
        obs, rewards, dones, infos = {}, {}, {}, {}
        for i, action in action_dict.items():
            obs[i], rewards[i], term, trunc, infos[i] = self.envs[i].step(action)
            dones[i] = term or trunc
            if dones[i]:
                self.dones.add(i)
        dones["__all__"] = len(self.dones) == len(self.envs)
        return obs, rewards, dones, infos


def test_multi_agent_training_reports_each_policy():
    register_env("rllib_test_two_cartpoles", lambda _: TwoCartPoles())
    env = TwoCartPoles()
    trainer = PPOTrainer(env="rllib_test_two_cartpoles", config=dict(
        SMALL_PPO, num_envs_per_worker=2, multiagent={
        "policies": {f"policy_{i}": (None, env.observation_space, env.action_space,
                                     {"gamma": 0.95 if i else 0.99}) for i in range(2)},
        "policy_mapping_fn": lambda agent_id: f"policy_{agent_id}",
    }))
    try:
        result = trainer.train()
        assert set(result["policy_reward_mean"]) == {"policy_0", "policy_1"}
        assert set(result["info"]["learner"]) == {"policy_0", "policy_1"}
        assert trainer.get_policy("policy_1").config["gamma"] == 0.95
    finally:
        trainer.stop()


def test_callbacks_and_custom_metrics_reach_the_result():
    calls = {"start": 0, "step": 0, "sample_end": 0, "train_result": 0}

    def on_episode_start(info):
        calls["start"] += 1
        info["episode"].user_data["pole_angles"] = []

    def on_episode_step(info):
        calls["step"] += 1
        episode = info["episode"]
        episode.user_data["pole_angles"].append(abs(episode.last_observation_for()[2]))

    def on_episode_end(info):
        episode = info["episode"]
        episode.custom_metrics["pole_angle"] = np.mean(episode.user_data["pole_angles"])

    def on_sample_end(info):
        calls["sample_end"] += 1
        assert info["samples"].count > 0

    def on_train_result(info):
        calls["train_result"] += 1
        info["result"]["callback_ok"] = True

    trainer = PGTrainer(env="CartPole-v0", config={"train_batch_size": 400, "callbacks": {
        "on_episode_start": on_episode_start, "on_episode_step": on_episode_step,
        "on_episode_end": on_episode_end, "on_sample_end": on_sample_end,
        "on_train_result": on_train_result}})
    try:
        result = trainer.train()
    finally:
        trainer.stop()
    assert "pole_angle_mean" in result["custom_metrics"]
    assert result["callback_ok"]
    assert calls["start"] > 0 and calls["step"] >= 400 and calls["sample_end"] > 0


def test_evaluation_runs_every_interval_without_exploration():
    trainer = PPOTrainer(env="CartPole-v0", config=dict(
        SMALL_PPO, evaluation_interval=2, evaluation_num_episodes=3,
        evaluation_config={"explore": False}))
    try:
        assert "evaluation" not in trainer.train()
        evaluation = trainer.train()["evaluation"]
        assert evaluation["episodes_this_iter"] == 3
    finally:
        trainer.stop()


def test_mean_std_filter_applies_in_compute_action():
    trainer = PPOTrainer(env="CartPole-v0", config=dict(SMALL_PPO,
                                                        observation_filter="MeanStdFilter"))
    try:
        trainer.train()
        flt = trainer.workers.local_worker().filters["default_policy"]
        assert flt.rs.n >= 200
        assert trainer.compute_action(np.zeros(4)) in (0, 1)
    finally:
        trainer.stop()


class CartPoleServing(ExternalEnv):
    """ExternalEnv: the env loop runs in its own thread and asks for actions."""

    def __init__(self, env_config=None):
        self.env = gym.make("CartPole-v1")
        super().__init__(self.env.action_space, self.env.observation_space)

    def run(self):
        while True:
            episode_id = self.start_episode()
            obs, _ = self.env.reset()
            done = False
            while not done:
                action = self.get_action(episode_id, obs)
                obs, reward, term, trunc, _ = self.env.step(action)
                self.log_returns(episode_id, reward)
                done = term or trunc
            self.end_episode(episode_id, obs)


def test_external_env_drives_training():
    trainer = PGTrainer(env=CartPoleServing, config={"train_batch_size": 200})
    try:
        result = trainer.train()
        assert result["episodes_this_iter"] > 0
        assert result["episode_reward_mean"] > 0
    finally:
        trainer.stop()


def test_unknown_env_name_suggests_close_matches():
    with pytest.raises(ValueError, match="CartPole"):
        PPOTrainer(env="CartPol-v1", config=SMALL_PPO)


def test_contributed_random_agent_by_name():
    from ray.rllib.agents.registry import get_agent_class

    trainer = get_agent_class("contrib/RandomAgent")(env="CartPole-v0",
                                                       config={"rollouts_per_iteration": 3})
    try:
        result = trainer.train()
        assert result["episodes_this_iter"] == 3 and result["timesteps_total"] > 0
    finally:
        trainer.stop()


def test_unknown_algorithm_name_suggests_the_closest():
    from ray.rllib.agents.registry import get_agent_class

    with pytest.raises(ValueError, match="Did you mean 'PPO'"):
        get_agent_class("PPOO")


def test_standalone_trainer_keeps_checkpoints_in_its_results_dir(tmp_path):
    trainer = PPOTrainer(env="CartPole-v0", config=SMALL_PPO)
    path = trainer.save()
    trainer.stop()
    assert path.startswith(str(tmp_path / "ray_results" / "PPO_CartPole-v0_"))
    assert os.path.exists(path)


def test_deprecated_names_resolve_with_a_warning():
    import ray.rllib.evaluation as evaluation
    import ray.rllib.policy as policy

    with pytest.warns(DeprecationWarning, match="use ray.rllib.policy.Policy"):
        assert policy.PolicyGraph is policy.Policy
    with pytest.warns(DeprecationWarning, match="RolloutWorker"):
        assert evaluation.PolicyEvaluator is evaluation.RolloutWorker


def test_output_api_writes_episode_traces_that_read_back(tmp_path):
    from ray.rllib.offline import JsonReader

    out = tmp_path / "traces"
    trainer = PGTrainer(env="CartPole-v0", config={
        "train_batch_size": 200, "output": str(out), "output_compress_columns": []})
    try:
        trainer.train()
    finally:
        trainer.stop()
    files = list(out.glob("output-*_worker-0_0.json"))
    assert len(files) == 1
    first_line = files[0].read_text().splitlines()[0]
    assert '"obs": [[' in first_line  # uncompressed columns are plain JSON
    batches = JsonReader(str(out)).read_all()
    assert sum(b.count for b in batches) >= 200
    assert batches[0]["obs"].shape[1] == 4


def test_compressed_output_columns_round_trip(tmp_path):
    from ray.rllib.offline import JsonReader, JsonWriter
    from ray.rllib.policy.sample_batch import SampleBatch

    writer = JsonWriter(str(tmp_path), compress_columns=["obs"])
    batch = SampleBatch(obs=np.arange(6, dtype=np.float32).reshape(3, 2), rewards=[1.0, 0, 2])
    writer.write(batch)
    writer.close()
    [back] = JsonReader(str(tmp_path)).read_all()
    np.testing.assert_array_equal(back["obs"], batch["obs"])
    assert back["rewards"].tolist() == [1.0, 0.0, 2.0]
