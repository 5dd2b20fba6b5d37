"""Parameter-space noise exploration (``parameter_noise: True``) for DQN and DDPG.

Pure tests of the perturbation and sigma adaptation (agents/param_noise.py), then the
policies' acting/adaptation rules, then short trainer runs through the public API.
The CartPole learning bar is in test_rllib_off_policy_learning.py (learning and slow).
"""

import math

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch import nn

import ray
from ray.rllib.agents.ddpg import DDPGTrainer, TD3Trainer
from ray.rllib.agents.ddpg.ddpg import DDPGTorchPolicy, param_noise_target_rms
from ray.rllib.agents.dqn import ApexTrainer, DQNTrainer
from ray.rllib.agents.dqn.dqn import DQNTorchPolicy
from ray.rllib.agents.param_noise import (
    ADAPTATION_WINDOW,
    ParameterNoise,
    adapt_sigma,
    epsilon_greedy_kl,
    rms_distance,
    softmax_kl,
)
from ray.rllib.policy.sample_batch import SampleBatch

TINY_DQN = {"num_workers": 0, "learning_starts": 100, "timesteps_per_iteration": 200,
            "min_iter_time_s": 0, "train_batch_size": 16, "hiddens": [16],
            "model": {"fcnet_hiddens": [16]}, "seed": 0, "parameter_noise": True}
TINY_DDPG = {"num_workers": 0, "learning_starts": 100, "timesteps_per_iteration": 200,
             "min_iter_time_s": 0, "train_batch_size": 16, "seed": 0, "actor_hiddens": [16],
             "critic_hiddens": [16], "pure_exploration_steps": 100, "parameter_noise": True}
CARTPOLE = gym.make("CartPole-v1")
PENDULUM = gym.make("Pendulum-v1")


class _Episode:
    def __init__(self, length):
        self.length = length


def _net():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 64), nn.LayerNorm(64), nn.ReLU(), nn.Linear(64, 4))


# --- the pure pieces ------------------------------------------------------------------------


def test_sigma_grows_by_one_percent_while_closer_than_the_target_and_shrinks_otherwise():
    assert adapt_sigma(0.1, distance=0.05, target=0.1) == pytest.approx(0.101)
    assert adapt_sigma(0.1, distance=0.1, target=0.1) == pytest.approx(0.101)
    assert adapt_sigma(0.1, distance=0.2, target=0.1) == pytest.approx(0.1 / 1.01)


def test_dqn_target_is_the_kl_of_epsilon_greedy_from_greedy():
    for eps, num_actions in ((0.0, 2), (0.1, 2), (0.5, 6), (1.0, 4)):
        greedy = np.eye(num_actions)[0]
        eps_greedy = np.full(num_actions, eps / num_actions)
        eps_greedy[0] += 1 - eps
        direct = float(np.sum(greedy[greedy > 0] * np.log(greedy[greedy > 0] /
                                                          eps_greedy[greedy > 0])))
        assert epsilon_greedy_kl(eps, num_actions) == pytest.approx(direct, abs=1e-12)
    assert epsilon_greedy_kl(1.0, 4) == pytest.approx(math.log(4))


def test_softmax_kl_and_rms_distance_follow_their_definitions():
    q = torch.tensor([[1.0, 2.0, 0.5], [0.0, 0.0, 3.0]])
    q_perturbed = torch.tensor([[1.5, 1.0, 0.5], [0.2, -1.0, 2.0]])
    p, r = torch.softmax(q, -1), torch.softmax(q_perturbed, -1)
    expected = float((p * (p.log() - r.log())).sum(-1).mean())
    assert softmax_kl(q, q_perturbed) == pytest.approx(expected, rel=1e-5)
    assert softmax_kl(q, q + 7.0) == pytest.approx(0.0, abs=1e-12)  # shift-invariant
    a = torch.tensor([[0.0, 1.0], [2.0, -1.0]])
    assert rms_distance(a, a + torch.tensor([[3.0, 4.0], [0.0, 0.0]])) == \
        pytest.approx(math.sqrt(25 / 4))


def test_perturbation_has_std_sigma_on_every_weight_but_leaves_layer_norm_alone():
    net = _net()
    before = {k: v.clone() for k, v in net.state_dict().items()}
    noise = ParameterNoise(net, sigma=0.3)
    perturbed = dict(noise.network().named_parameters())
    for name, param in net.named_parameters():
        delta = (perturbed[name] - param).detach()
        if name.startswith("1."):  # the LayerNorm's gain and bias
            assert torch.equal(delta, torch.zeros_like(delta)), name
        elif param.numel() >= 256:
            assert float(delta.std()) == pytest.approx(0.3, rel=0.1), name
        else:
            assert float(delta.abs().max()) > 0, name
    assert all(torch.equal(before[k], v) for k, v in net.state_dict().items())
    assert not any(p.requires_grad for p in noise.perturbed.parameters())


def test_noise_direction_stays_fixed_follows_current_weights_and_changes_on_resample():
    net = _net()
    noise = ParameterNoise(net, sigma=0.2)
    first = noise.network()[0].weight.clone()
    assert torch.equal(noise.network()[0].weight, first)
    with torch.no_grad():
        net[0].weight.add_(1.0)  # a learning step moves the weights
    assert torch.allclose(noise.network()[0].weight, first + 1.0)
    noise.sigma = 0.4  # adaptation rescales the same direction
    assert torch.allclose(noise.network()[0].weight - net[0].weight,
                          2 * (first + 1.0 - net[0].weight), atol=1e-6)
    noise.resample()
    assert not torch.allclose(noise.network()[0].weight, 2 * first + 1.0 - net[0].weight)


def test_noise_is_resampled_only_when_an_episode_starts():
    noise = ParameterNoise(_net())
    direction = [n.clone() for n in noise._noise]
    noise.resample_on_new_episodes([_Episode(5), _Episode(17)])
    noise.resample_on_new_episodes(None)
    assert all(torch.equal(a, b) for a, b in zip(direction, noise._noise))
    noise.resample_on_new_episodes([_Episode(5), _Episode(0)])
    assert not any(torch.equal(a, b) for a, b in zip(direction, noise._noise))


def test_adaptation_settles_sigma_where_the_distance_meets_the_target():
    torch.manual_seed(1)
    net = _net()
    noise = ParameterNoise(net, sigma=0.05)
    states = torch.randn(32, 8)
    with torch.no_grad():
        clean = net(states)
        for _ in range(200):
            noise.adapt(rms_distance(clean, noise.network()(states)), target=0.5)
        distance = rms_distance(clean, noise.network()(states))
    assert distance == pytest.approx(0.5, rel=0.03)


def test_distance_is_measured_on_the_last_64_states_sampled():
    noise = ParameterNoise(_net())
    first = noise.measurement_states(np.zeros((1, 8)))
    assert first.shape == (1, 8)
    for i in range(1, 100):
        window = noise.measurement_states(np.full((1, 8), float(i)))
    assert window.shape == (ADAPTATION_WINDOW, 8)
    assert np.array_equal(window[:, 0], np.arange(100 - ADAPTATION_WINDOW, 100))


def test_a_non_positive_initial_sigma_is_refused():
    with pytest.raises(ValueError, match="must be positive"):
        ParameterNoise(_net(), sigma=0.0)


# --- the policies ---------------------------------------------------------------------------


def _dqn_policy(**overrides):
    torch.manual_seed(0)
    return DQNTorchPolicy(CARTPOLE.observation_space, CARTPOLE.action_space,
                          dict(TINY_DQN, **overrides))


def _obs(space, rows, seed=0):
    space.seed(seed)
    return np.stack([space.sample() for _ in range(rows)]).astype(np.float32)


def test_dqn_acts_greedily_on_the_perturbed_network_and_not_epsilon_greedily():
    policy = _dqn_policy()
    assert policy.epsilon == 1.0  # eps-greedy alone would pick uniformly at random
    obs = _obs(CARTPOLE.observation_space, 256)
    input_dict = policy._input_dict(torch.as_tensor(obs), None, None)
    for _ in range(3):
        actions, _, _ = policy.compute_actions(obs, explore=True)
        with torch.no_grad():
            expected = policy.param_noise.perturbed(input_dict)[0].argmax(1).numpy()
        assert np.array_equal(actions, expected)
    greedy, _, _ = policy.compute_actions(obs, explore=False)
    with torch.no_grad():
        assert np.array_equal(greedy, policy.model(input_dict)[0].argmax(1).numpy())


def test_dqn_q_head_gets_layer_norm_only_with_parameter_noise():
    def norms(policy):
        return sum(isinstance(m, nn.LayerNorm) for m in policy.model.modules())

    assert norms(_dqn_policy()) == 2  # advantage and value heads, one hidden layer each
    assert norms(_dqn_policy(parameter_noise=False)) == 0


def test_dqn_sigma_grows_at_high_epsilon_and_shrinks_at_zero_epsilon():
    policy = _dqn_policy()
    batch = SampleBatch({SampleBatch.CUR_OBS: _obs(CARTPOLE.observation_space, 32)})
    sigma = policy.param_noise.sigma
    policy.postprocess_trajectory(batch.copy())  # epsilon 1: target log(2), far away
    assert policy.param_noise.sigma == pytest.approx(sigma * 1.01)
    policy.set_epsilon(0.0)  # target KL 0: any perturbation is too much
    policy.postprocess_trajectory(batch.copy())
    policy.postprocess_trajectory(batch.copy())
    assert policy.param_noise.sigma == pytest.approx(sigma / 1.01)


def test_dqn_parameter_noise_and_noisy_layers_are_exclusive():
    with pytest.raises(ValueError, match="set only one of them"):
        _dqn_policy(noisy=True)


def test_policy_state_carries_sigma():
    policy = _dqn_policy()
    policy.param_noise.sigma = 0.37
    state = policy.get_state()
    assert state["param_noise"] == {"sigma": 0.37}
    other = _dqn_policy()
    other.set_state(state)
    assert other.param_noise.sigma == 0.37


def _ddpg_policy(**overrides):
    torch.manual_seed(0)
    return DDPGTorchPolicy(PENDULUM.observation_space, PENDULUM.action_space,
                           dict(TINY_DDPG, **overrides))


def test_ddpg_target_is_the_rms_of_the_action_noise_it_replaces():
    policy = _ddpg_policy(exploration_noise_type="gaussian", exploration_gaussian_sigma=0.3)
    assert policy.param_noise_target == pytest.approx(0.3)
    # Measured: the RMS of the OU noise compute_actions adds, on Pendulum's [-2, 2].
    cfg = _ddpg_policy().ddpg_config
    rng = np.random.default_rng(0)
    state, samples = 0.0, []
    for _ in range(200_000):
        state += cfg.exploration_ou_theta * -state + cfg.exploration_ou_sigma * \
            rng.standard_normal()
        samples.append(cfg.exploration_ou_noise_scale * state * 4.0)
    measured = float(np.sqrt(np.mean(np.square(samples))))
    assert param_noise_target_rms(cfg, PENDULUM.action_space) == pytest.approx(measured,
                                                                             rel=0.03)


def test_ddpg_acts_through_the_perturbed_actor_without_action_noise():
    policy = _ddpg_policy(pure_exploration_steps=0)
    assert sum(isinstance(m, nn.LayerNorm) for m in policy.model.actor.modules()) == 1
    policy.param_noise.sigma = 1.0
    obs = _obs(PENDULUM.observation_space, 64)
    actions, _, _ = policy.compute_actions(obs, explore=True)
    with torch.no_grad():
        features = policy.model.features(torch.as_tensor(obs))
        expected = policy.model.action(features, policy.param_noise.perturbed).numpy()
        clean = policy.model.action(features).numpy()
    assert np.allclose(actions, np.clip(expected, -2.0, 2.0), atol=1e-6)
    assert not np.allclose(actions, clean, atol=1e-3)
    again, _, _ = policy.compute_actions(obs, explore=True)
    assert np.array_equal(actions, again)  # no per-step noise within an episode
    greedy, _, _ = policy.compute_actions(obs, explore=False)
    assert np.allclose(greedy, clean, atol=1e-6)


def test_ddpg_sigma_follows_the_action_distance():
    policy = _ddpg_policy()
    batch = SampleBatch({SampleBatch.CUR_OBS: _obs(PENDULUM.observation_space, 32)})
    policy.param_noise.sigma = 1e-4  # a tiny perturbation: actions barely move
    policy.postprocess_trajectory(batch.copy())
    assert policy.param_noise.sigma == pytest.approx(1e-4 * 1.01)
    policy.param_noise.sigma = 50.0  # a huge one: actions jump across the range
    policy.postprocess_trajectory(batch.copy())
    assert policy.param_noise.sigma == pytest.approx(50.0 / 1.01)


# --- through the Trainer API ----------------------------------------------------------------


def _sigma(result):
    return result["info"]["learner"]["default_policy"]["param_noise_sigma"]


def test_dqn_with_parameter_noise_trains_on_cartpole_and_reports_sigma(tmp_path):
    trainer = DQNTrainer(env="CartPole-v1", config=TINY_DQN)
    try:
        first, second = trainer.train(), trainer.train()
        assert second["timesteps_total"] >= 400
        stats = second["info"]["learner"]["default_policy"]
        assert np.isfinite(stats["mean_td_error"]) and stats["cur_epsilon"] < 1.0
        # Epsilon is near 1, so the target KL (about log 2) is far off: sigma keeps growing.
        assert 0.1 < _sigma(first) < _sigma(second)
        path = trainer.save(str(tmp_path))
        restored = DQNTrainer(env="CartPole-v1", config=TINY_DQN)
        try:
            restored.restore(path)
            assert restored.get_policy().param_noise.sigma == \
                trainer.get_policy().param_noise.sigma
        finally:
            restored.stop()
    finally:
        trainer.stop()


@pytest.mark.parametrize("trainer_cls", [DDPGTrainer, TD3Trainer])
def test_ddpg_and_td3_with_parameter_noise_train_on_pendulum(trainer_cls):
    trainer = trainer_cls(env="Pendulum-v1", config=dict(TINY_DDPG, learning_starts=100))
    try:
        result = trainer.train()
        stats = result["info"]["learner"]["default_policy"]
        assert np.isfinite(stats["critic_loss"]) and np.isfinite(stats["mean_q"])
        assert _sigma(result) > 0 and _sigma(result) != 0.1  # it adapted
        action = trainer.compute_action(PENDULUM.reset(seed=0)[0], explore=True)
        assert action.shape == (1,) and -2.0 <= float(action[0]) <= 2.0
    finally:
        trainer.stop()


def test_ray_2x_parameter_noise_exploration_config_maps_onto_the_0_7_keys():
    from ray.rllib.algorithms.ddpg import DDPGConfig
    from ray.rllib.algorithms.dqn import DQNConfig

    dqn = DQNConfig().exploration(explore=True, exploration_config={
        "type": "ParameterNoise", "initial_stddev": 0.5,
        "sub_exploration": {"type": "EpsilonGreedy", "final_epsilon": 0.05,
                            "epsilon_timesteps": 5000}}).to_dict()
    assert (dqn["parameter_noise"], dqn["parameter_noise_initial_stddev"],
            dqn["exploration_final_eps"], dqn["exploration_fraction"]) == (True, 0.5, 0.05, 0.05)
    ddpg = DDPGConfig().training(exploration_config={
        "type": "ParameterNoise", "random_timesteps": 300,
        "sub_exploration": {"type": "GaussianNoise", "stddev": 0.2}}).to_dict()
    assert (ddpg["parameter_noise"], ddpg["pure_exploration_steps"],
            ddpg["exploration_noise_type"], ddpg["exploration_gaussian_sigma"]) == \
        (True, 300, "gaussian", 0.2)
    with pytest.raises(ValueError, match="drop random_timesteps"):
        DQNConfig().exploration(exploration_config={"type": "ParameterNoise",
                                                    "random_timesteps": 100})
    with pytest.raises(ValueError, match="unknown ParameterNoise.*initial_stdev"):
        DQNConfig().training(exploration_config={"type": "ParameterNoise",
                                                 "initial_stdev": 1.0})


def _remote_sigma(trainer):
    remote = trainer.workers.remote_workers()[0]
    return ray.get(remote.for_policy.remote(lambda p: p.param_noise.sigma))


def test_remote_workers_sigma_is_reported_checkpointed_and_restored(ray_start_2_cpus, tmp_path):
    config = dict(TINY_DQN, num_workers=1)
    trainer = DQNTrainer(env="CartPole-v1", config=config)
    try:
        result = trainer.train()
        sigma = _remote_sigma(trainer)
        assert _sigma(result) == sigma and sigma > 0.1  # the worker sampled and adapted
        assert trainer.get_policy().param_noise.sigma == sigma  # so checkpoints carry it
        path = trainer.save(str(tmp_path))
    finally:
        trainer.stop()
    restored = DQNTrainer(env="CartPole-v1", config=config)
    try:
        assert _remote_sigma(restored) == 0.1
        restored.restore(path)
        assert _remote_sigma(restored) == sigma
    finally:
        restored.stop()


def test_ape_x_workers_adapt_sigma_to_their_own_epsilon(ray_start_2_cpus):
    config = dict(TINY_DQN, num_workers=2, sample_batch_size=20, buffer_size=5000,
                  optimizer={"num_replay_buffer_shards": 1})
    trainer = ApexTrainer(env="CartPole-v1", config=config)
    try:
        result = trainer.train()
        sigmas = ray.get([w.for_policy.remote(lambda p: (p.epsilon, p.param_noise.sigma))
                          for w in trainer.workers.remote_workers()])
        (eps_1, sigma_1), (eps_2, sigma_2) = sigmas
        assert (eps_1, eps_2) == pytest.approx((0.4, 0.4 ** 8))
        # Worker 1 aims at eps-greedy's KL for eps 0.4 (0.22), worker 2 at 0.0003.
        assert sigma_1 > 0.1 > sigma_2
        # The report is their mean when train() returned; they kept sampling since (Ape-X
        # samples asynchronously), moving further apart.
        assert sigma_2 < _sigma(result) < sigma_1
    finally:
        trainer.stop()
