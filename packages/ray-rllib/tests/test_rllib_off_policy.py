"""DQN/Rainbow, Ape-X, DDPG, TD3, SAC and the replay optimizers, driven through the public API."""

import gymnasium as gym
import numpy as np
import pytest
import torch

import ray
from ray.rllib.agents.ddpg import DDPGTrainer, TD3Trainer
from ray.rllib.agents.dqn import ApexTrainer, DQNTrainer
from ray.rllib.agents.pg import PGTrainer
from ray.rllib.agents.ppo.ppo import PPOTorchPolicy
from ray.rllib.agents.sac import SACTrainer
from ray.rllib.env import MultiAgentEnv
from ray.rllib.evaluation.worker_set import WorkerSet
from ray.rllib.models import ModelCatalog
from ray.rllib.models.pytorch.model import TorchModel
from ray.rllib.optimizers import (
    LocalMultiGPUOptimizer,
    SyncBatchReplayOptimizer,
    SyncReplayOptimizer,
)
from ray.rllib.utils.merge import UnknownConfigKeyError

TINY_DQN = {"num_workers": 0, "learning_starts": 100, "timesteps_per_iteration": 200,
            "min_iter_time_s": 0, "train_batch_size": 16, "hiddens": [16],
            "model": {"fcnet_hiddens": [16]}, "seed": 0}
TINY_CONTINUOUS = {"num_workers": 0, "learning_starts": 100, "timesteps_per_iteration": 200,
                   "min_iter_time_s": 0, "train_batch_size": 16, "seed": 0}
TINY_DDPG = dict(TINY_CONTINUOUS, actor_hiddens=[16], critic_hiddens=[16],
                 pure_exploration_steps=100)
TINY_SAC = dict(TINY_CONTINUOUS, Q_model={"fcnet_hiddens": [16]},
                policy_model={"fcnet_hiddens": [16]})


def _train(trainer, iterations=1):
    try:
        result = {}
        for _ in range(iterations):
            result = trainer.train()
        return result
    finally:
        trainer.stop()


def test_dqn_trains_and_reports_q_statistics():
    result = _train(DQNTrainer(env="CartPole-v1", config=TINY_DQN), 2)
    assert result["timesteps_total"] >= 400
    stats = result["info"]["learner"]["default_policy"]
    for key in ("mean_q", "min_q", "max_q", "mean_td_error", "cur_epsilon", "grad_gnorm"):
        assert np.isfinite(stats[key]), key
    assert stats["cur_epsilon"] < 1.0  # annealing has begun


def test_dqn_with_every_rainbow_option_trains():
    config = dict(TINY_DQN, num_atoms=11, v_min=0.0, v_max=50.0, noisy=True, n_step=3,
                  dueling=True, double_q=True, prioritized_replay=True)
    result = _train(DQNTrainer(env="CartPole-v1", config=config))
    stats = result["info"]["learner"]["default_policy"]
    assert np.isfinite(stats["mean_td_error"]) and stats["mean_td_error"] > 0  # cross-entropy


def test_dqn_save_restore_keeps_the_target_network(tmp_path):
    trainer = DQNTrainer(env="CartPole-v1", config=TINY_DQN)
    try:
        trainer.train()
        path = trainer.save(str(tmp_path))
        target = trainer.get_policy().get_state()["target_weights"]
        restored = DQNTrainer(env="CartPole-v1", config=TINY_DQN)
        try:
            restored.restore(path)
            again = restored.get_policy().get_state()["target_weights"]
            assert all(np.array_equal(target[k], again[k]) for k in target)
            obs = gym.make("CartPole-v1").reset(seed=0)[0]
            assert trainer.compute_action(obs, explore=False) == \
                restored.compute_action(obs, explore=False)
        finally:
            restored.stop()
    finally:
        trainer.stop()


class _MaskedQModel(TorchModel):
    """Q-values straight from the model, action 1 masked out (parametric-action style)."""

    def __init__(self, obs_space, num_outputs, options):
        super().__init__(obs_space, num_outputs, options)
        self.linear = torch.nn.Linear(int(np.prod(obs_space.shape)), num_outputs)

    def _forward(self, input_dict, hidden_state):
        scores = self.linear(input_dict["obs_flat"].float())
        mask = torch.tensor([0.0, torch.finfo(torch.float32).min])
        return scores + mask, None, scores[:, 0], hidden_state


def test_parametric_dqn_takes_q_values_from_a_custom_model_with_hiddens_empty():
    ModelCatalog.register_custom_model("masked_q", _MaskedQModel)
    config = dict(TINY_DQN, hiddens=[], dueling=False, model={"custom_model": "masked_q"})
    trainer = DQNTrainer(env="CartPole-v1", config=config)
    try:
        trainer.train()
        obs = gym.make("CartPole-v1").reset(seed=0)[0]
        assert {int(trainer.compute_action(obs + i * 0.01, explore=False))
                for i in range(20)} == {0}
    finally:
        trainer.stop()
    with pytest.raises(ValueError, match="dueling=False"):
        DQNTrainer(env="CartPole-v1", config=dict(config, dueling=True))


def test_value_based_and_continuous_algorithms_refuse_the_wrong_action_space():
    with pytest.raises(ValueError, match="Discrete action space.*DDPG, TD3 or SAC"):
        DQNTrainer(env="Pendulum-v1", config=TINY_DQN)
    with pytest.raises(ValueError, match="Box.*DQN"):
        DDPGTrainer(env="CartPole-v1", config=TINY_DDPG)


def test_unknown_dqn_key_gets_a_suggestion():
    with pytest.raises(UnknownConfigKeyError, match="Did you mean 'double_q'"):
        DQNTrainer(env="CartPole-v1", config={"doubleq": True})


@pytest.mark.parametrize("trainer_cls, config", [
    (DDPGTrainer, TINY_DDPG), (TD3Trainer, TINY_DDPG), (SACTrainer, TINY_SAC)])
def test_continuous_control_trainers_learn_and_act_within_bounds(trainer_cls, config):
    trainer = trainer_cls(env="Pendulum-v1", config=config)
    try:
        result = trainer.train()
        stats = result["info"]["learner"]["default_policy"]
        assert np.isfinite(stats["critic_loss"]) and np.isfinite(stats["mean_q"])
        obs = gym.make("Pendulum-v1").reset(seed=0)[0]
        for explore in (True, False):
            action = trainer.compute_action(obs, explore=explore)
            assert action.shape == (1,) and -2.0 <= float(action[0]) <= 2.0
    finally:
        trainer.stop()


def test_td3_defaults_turn_the_tricks_on():
    from ray.rllib.agents.ddpg import DEFAULT_CONFIG, TD3_DEFAULT_CONFIG

    assert (DEFAULT_CONFIG["twin_q"], DEFAULT_CONFIG["policy_delay"]) == (False, 1)
    assert (TD3_DEFAULT_CONFIG["twin_q"], TD3_DEFAULT_CONFIG["policy_delay"],
            TD3_DEFAULT_CONFIG["smooth_target_policy"]) == (True, 2, True)


def test_sync_replay_optimizer_waits_for_learning_starts_then_trains():
    workers = WorkerSet(lambda ctx: gym.make("CartPole-v1"), DQNTrainer._policy,
                        dict(TINY_DQN, sample_batch_size=10), num_workers=0)
    try:
        optimizer = SyncReplayOptimizer(workers, learning_starts=30, buffer_size=100,
                                        train_batch_size=8)
        for _ in range(2):
            optimizer.step()
        assert (optimizer.num_steps_sampled, optimizer.num_steps_trained) == (20, 0)
        optimizer.step()
        assert optimizer.num_steps_trained == 8
        assert optimizer.stats()["replay_buffers"]["default_policy"]["num_entries"] == 30
    finally:
        workers.stop()


def test_sync_batch_replay_optimizer_keeps_whole_batches_up_to_buffer_size():
    workers = WorkerSet(lambda ctx: gym.make("CartPole-v1"), PGTrainer._policy,
                        {"sample_batch_size": 10, "model": {"fcnet_hiddens": [8]}},
                        num_workers=0)
    try:
        optimizer = SyncBatchReplayOptimizer(workers, learning_starts=20, buffer_size=30,
                                             train_batch_size=15)
        for _ in range(5):
            optimizer.step()
        stats = optimizer.stats()
        assert stats["num_rows_stored"] == 30 and stats["num_batches_stored"] == 3
        assert optimizer.num_steps_trained == 4 * 20  # steps 2..5, two 10-row batches each
    finally:
        workers.stop()


def _multi_gpu_weights(num_gpus):
    import torch

    torch.manual_seed(0)
    np.random.seed(0)
    config = {"sample_batch_size": 64, "model": {"fcnet_hiddens": [8]}, "seed": 0,
              "num_sgd_iter": 2, "sgd_minibatch_size": 32, "train_batch_size": 64}
    workers = WorkerSet(lambda ctx: gym.make("CartPole-v1"), PPOTorchPolicy, config,
                        num_workers=0)
    try:
        optimizer = LocalMultiGPUOptimizer(workers, sgd_batch_size=32, num_sgd_iter=2,
                                           train_batch_size=64, num_gpus=num_gpus, seed=0)
        assert len(optimizer.devices) == max(1, num_gpus)
        stats = optimizer.step()
        assert "total_loss" in stats["default_policy"]
        return workers.local_worker().get_weights()["default_policy"]
    finally:
        workers.stop()


def test_multi_gpu_optimizer_on_logical_cpu_devices_matches_one_device():
    one, three = _multi_gpu_weights(0), _multi_gpu_weights(3)
    for key in one:
        np.testing.assert_allclose(one[key], three[key], rtol=1e-4, atol=1e-6)


def test_apex_dqn_trains_from_remote_workers_through_replay_actors(ray_start_2_cpus):
    config = dict(TINY_DQN, num_workers=2, sample_batch_size=20, learning_starts=100,
                  buffer_size=5000, timesteps_per_iteration=200, target_network_update_freq=100,
                  optimizer={"num_replay_buffer_shards": 1, "max_weight_sync_delay": 40,
                             "debug": True})
    trainer = ApexTrainer(env="CartPole-v1", config=config)
    shards = list(trainer.optimizer.replay_actors)
    try:
        result = {}
        while not result or result["info"]["num_steps_trained"] == 0:
            result = trainer.train()
        info = result["info"]
        assert info["num_weight_syncs"] > 2 and info["replay_shard_0"]["num_added"] > 0
        assert np.isfinite(info["learner"]["default_policy"]["mean_q"])
        epsilons = ray.get([w.for_policy.remote(lambda p: p.epsilon)
                            for w in trainer.workers.remote_workers()])
        assert epsilons == pytest.approx([0.4, 0.4 ** 8])
    finally:
        trainer.stop()
    with pytest.raises(ray.exceptions.RayActorError):
        ray.get(shards[0].stats.remote(), timeout=30)


class _TwoCartPoles(MultiAgentEnv):
    def __init__(self, config=None):
        self.envs = {"a": gym.make("CartPole-v1"), "b": gym.make("CartPole-v1")}
        self.observation_space = self.envs["a"].observation_space
        self.action_space = self.envs["a"].action_space

    def reset(self, *, seed=None, options=None):
        self.done = set()
        return {k: e.reset(seed=seed)[0] for k, e in self.envs.items()}, {}

    def step(self, actions):
        obs, rew, term, trunc = {}, {}, {}, {}
        for k, a in actions.items():
            obs[k], rew[k], term[k], trunc[k], _ = self.envs[k].step(a)
            if term[k] or trunc[k]:
                self.done.add(k)
        term["__all__"] = len(self.done) == 2
        trunc["__all__"] = False
        return obs, rew, term, trunc, {}


def test_multi_agent_dqn_replays_per_policy_from_a_remote_worker(ray_start_2_cpus):
    space = gym.make("CartPole-v1")
    policies = {pid: (None, space.observation_space, space.action_space, {})
                for pid in ("pa", "pb")}
    config = dict(TINY_DQN, num_workers=1, sample_batch_size=20,
                  multiagent={"policies": policies,
                              "policy_mapping_fn": lambda agent_id: f"p{agent_id}"})
    trainer = DQNTrainer(env=_TwoCartPoles, config=config)
    try:
        result = trainer.train()
        assert set(result["info"]["learner"]) == {"pa", "pb"}
        assert set(trainer.optimizer.replay_buffers) == {"pa", "pb"}
        local = trainer.get_policy("pa").get_weights()
        remote = ray.get(trainer.workers.remote_workers()[0].get_weights.remote())["pa"]
        assert any(not np.array_equal(local[k], remote[k]) for k in local) or \
            result["info"]["num_steps_trained"] == 0  # weights go out before each sample
    finally:
        trainer.stop()


def test_apex_needs_remote_workers():
    with pytest.raises(ValueError, match="num_workers >= 1"):
        ApexTrainer(env="CartPole-v1", config=dict(TINY_DQN, num_workers=0))


_BY_NAME = {
    "DQN": ("CartPole-v1", TINY_DQN),
    "APEX": ("CartPole-v1", dict(TINY_DQN, num_workers=1, sample_batch_size=20,
                                 optimizer={"num_replay_buffer_shards": 1})),
    "DDPG": ("Pendulum-v1", TINY_DDPG),
    "TD3": ("Pendulum-v1", TINY_DDPG),
    "APEX_DDPG": ("Pendulum-v1", dict(TINY_DDPG, num_workers=1, sample_batch_size=20,
                                      target_network_update_freq=0,
                                      optimizer={"num_replay_buffer_shards": 1})),
    "SAC": ("Pendulum-v1", TINY_SAC),
}


# DQN and SAC by name in the default run; the rest (about 25 s together) are extended.
@pytest.mark.parametrize("name", [
    n if n in ("DQN", "SAC") else pytest.param(n, marks=pytest.mark.extended) for n in _BY_NAME
])
def test_tune_runs_every_off_policy_algorithm_by_name(name, ray_start_2_cpus, tmp_path):
    from ray import tune

    env_id, config = _BY_NAME[name]
    analysis = tune.run(name, config=dict(config, env=env_id),
                        stop={"timesteps_total": 300}, local_dir=str(tmp_path), verbose=0)
    result = analysis.trials[0].last_result
    assert result["timesteps_total"] >= 300, name
    if not name.startswith("APEX"):  # Ape-X's learner thread may not have started yet
        assert result["info"]["num_steps_trained"] > 0, name


@pytest.mark.timeout(300)
def test_rllib_train_cli_runs_dqn(tmp_path):
    import json
    import os
    import shutil
    import subprocess
    import sys

    rllib = shutil.which("rllib") or os.path.join(os.path.dirname(sys.executable), "rllib")
    out = subprocess.run(
        [rllib, "train", "--run", "DQN", "--env", "CartPole-v1", "--ray-num-cpus", "2",
         "--stop", json.dumps({"training_iteration": 1}), "--config", json.dumps(TINY_DQN),
         "--local-dir", str(tmp_path / "results")],
        capture_output=True, text=True, timeout=280, env=dict(os.environ, HOME=str(tmp_path)),
        cwd=tmp_path)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    results = [os.path.join(root, "result.json") for root, _d, files in
               os.walk(tmp_path / "results") if "result.json" in files]
    assert results and os.path.getsize(results[0]) > 0


def test_ray_2x_configs_map_replay_and_exploration_settings():
    from ray.rllib.algorithms.dqn import DQN, DQNConfig
    from ray.rllib.algorithms.sac import SACConfig

    config = (DQNConfig().environment("CartPole-v1").env_runners(num_env_runners=0)
              .training(replay_buffer_config={"type": "MultiAgentReplayBuffer", "capacity": 500},
                        num_steps_sampled_before_learning_starts=50,
                        epsilon=[[0, 1.0], [5000, 0.05]], hiddens=[8], train_batch_size=8,
                        model={"fcnet_hiddens": [8]}, timesteps_per_iteration=100,
                        min_iter_time_s=0))
    as_dict = config.to_dict()
    assert (as_dict["buffer_size"], as_dict["prioritized_replay"], as_dict["learning_starts"],
            as_dict["exploration_final_eps"], as_dict["exploration_fraction"]) == \
        (500, False, 50, 0.05, 0.05)
    algo = config.build()
    try:
        assert isinstance(algo, DQN)
        assert algo.train()["timesteps_total"] >= 100
    finally:
        algo.stop()
    sac = SACConfig().training(q_model_config={"fcnet_hiddens": [8]}).to_dict()
    assert sac["Q_model"] == {"fcnet_hiddens": [8]}
