"""Acting in numpy computes what the torch path computes; the learner borrows idle CPUs.

``TorchPolicy.compute_actions`` runs the built-in fully connected network and the
Categorical / DiagGaussian distributions in numpy when it can (``models/
numpy_inference.py``, ``action_dist.numpy_sampler``). These tests hold it to the torch
path: the same outputs, values and log-probabilities, the same action distribution,
weights seen as soon as they change, and torch kept wherever numpy would differ.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch import nn

from ray.rllib.agents.impala import ImpalaTrainer
from ray.rllib.agents.ppo import PPOTrainer
from ray.rllib.models.action_dist import Categorical, DiagGaussian, numpy_sampler
from ray.rllib.models.numpy_inference import numpy_mlp
from ray.rllib.models.torch_models import FullyConnectedNetwork
from ray.rllib.policy.sample_batch import SampleBatch


def _fc(obs_dim=4, outputs=2, **options):
    space = gym.spaces.Box(-1.0, 1.0, (obs_dim,), np.float32)
    return FullyConnectedNetwork(space, outputs, options)


def _torch_forward(model, obs):
    with torch.no_grad():
        logits, _ = model({"obs": torch.as_tensor(obs), "obs_flat": torch.as_tensor(obs)}, [])
        return logits.numpy(), model.value_function().numpy()


@pytest.mark.parametrize("options", [
    {},
    {"fcnet_activation": "relu", "fcnet_hiddens": [32, 16]},
    {"fcnet_activation": "elu"},
    {"vf_share_layers": True},
    {"free_log_std": True},
    {"fcnet_hiddens": []},
])
def test_numpy_actor_matches_the_torch_forward(options):
    torch.manual_seed(0)
    outputs = 4 if options.get("free_log_std") else 2
    model = _fc(outputs=outputs, **options)
    with torch.no_grad():
        if options.get("free_log_std"):
            model.log_std.uniform_(-1.0, 1.0)
    obs = np.random.default_rng(0).normal(size=(7, 4)).astype(np.float32) * 3
    actor = model.numpy_actor()
    assert actor is not None
    logits, values = actor(obs)
    want_logits, want_values = _torch_forward(model, obs)
    assert logits.dtype == np.float32 and values.shape == (7,)
    np.testing.assert_allclose(logits, want_logits, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(values, want_values, rtol=1e-5, atol=1e-6)
    # float64 observations are cast as the torch path casts them
    np.testing.assert_allclose(actor(obs.astype(np.float64))[0], want_logits, rtol=1e-5,
                               atol=1e-6)


def test_numpy_actor_sees_weights_updated_in_place_and_replaced():
    torch.manual_seed(0)
    model, other = _fc(), _fc()
    actor = model.numpy_actor()
    obs = np.ones((2, 4), np.float32)
    model.load_state_dict(other.state_dict())  # in place: the views see it
    np.testing.assert_allclose(actor(obs)[0], _torch_forward(other, obs)[0], rtol=1e-5)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    model({"obs_flat": torch.as_tensor(obs)}, [])[0].sum().backward()
    optimizer.step()
    np.testing.assert_allclose(actor(obs)[0], _torch_forward(model, obs)[0], rtol=1e-5)
    model.logits[0].weight = nn.Parameter(torch.randn(256, 4))  # a new storage
    np.testing.assert_allclose(actor(obs)[0], _torch_forward(model, obs)[0], rtol=1e-5)
    model.logits[2].bias = nn.Parameter(torch.randn(256))  # a bias replaced alone
    np.testing.assert_allclose(actor(obs)[0], _torch_forward(model, obs)[0], rtol=1e-5)


def test_models_numpy_cannot_run_keep_torch():
    class Shifted(FullyConnectedNetwork):
        def _forward(self, input_dict, hidden_state):
            logits, features, value, state = super()._forward(input_dict, hidden_state)
            return logits + 1, features, value, state

    space = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
    assert Shifted(space, 2, {}).numpy_actor() is None
    assert numpy_mlp(nn.Sequential(nn.Linear(4, 4), nn.LayerNorm(4))) is None
    assert numpy_mlp(nn.Sequential(nn.Linear(4, 4), nn.Sigmoid())) is None
    assert numpy_mlp(nn.Sequential(nn.Linear(4, 4).double())) is None

    class Tempered(Categorical):
        def sample(self):
            return super().deterministic_sample()

    assert numpy_sampler(Categorical) is not None
    assert numpy_sampler(DiagGaussian) is not None
    assert numpy_sampler(Tempered) is None


def test_numpy_categorical_draws_the_distribution_and_its_logp():
    sampler = numpy_sampler(Categorical)
    logits = np.log(np.array([[0.1, 0.2, 0.7]], np.float32)).repeat(40_000, axis=0)
    actions, logp = sampler(logits, np.random.default_rng(0), True)
    assert actions.dtype == np.int64
    frequencies = np.bincount(actions, minlength=3) / len(actions)
    np.testing.assert_allclose(frequencies, [0.1, 0.2, 0.7], atol=0.01)
    want = Categorical(torch.as_tensor(logits)).logp(torch.as_tensor(actions)).numpy()
    np.testing.assert_allclose(logp, want, rtol=1e-5)
    greedy, _ = sampler(logits[:3], np.random.default_rng(0), False)
    assert greedy.tolist() == [2, 2, 2]


def test_numpy_diag_gaussian_draws_the_distribution_and_its_logp():
    sampler = numpy_sampler(DiagGaussian)
    inputs = np.array([[1.0, -2.0, np.log(0.5), np.log(2.0)]], np.float32).repeat(40_000, 0)
    actions, logp = sampler(inputs, np.random.default_rng(0), True)
    np.testing.assert_allclose(actions.mean(0), [1.0, -2.0], atol=0.03)
    np.testing.assert_allclose(actions.std(0), [0.5, 2.0], rtol=0.02)
    want = DiagGaussian(torch.as_tensor(inputs)).logp(torch.as_tensor(actions)).numpy()
    np.testing.assert_allclose(logp, want, rtol=1e-4, atol=1e-4)
    mean, _ = sampler(inputs[:2], np.random.default_rng(0), False)
    np.testing.assert_allclose(mean, [[1.0, -2.0]] * 2)


def _policy(env="CartPole-v1", **config):
    trainer = PPOTrainer(env=env, config=dict(config, num_workers=0, seed=0))
    return trainer, trainer.get_policy()


def test_compute_actions_in_numpy_returns_what_torch_returns(ray_start_2_cpus):
    trainer, policy = _policy()
    obs = np.random.default_rng(1).normal(size=(5, 4)).astype(np.float32)
    actions, state, extra = policy.compute_actions(obs)
    assert policy._fast is not None  # the numpy path ran
    assert state == [] and actions.shape == (5,) and actions.dtype == np.int64
    logits, values = _torch_forward(policy.model, obs)
    np.testing.assert_allclose(extra[SampleBatch.ACTION_DIST_INPUTS], logits, rtol=1e-5)
    np.testing.assert_allclose(extra[SampleBatch.VF_PREDS], values, rtol=1e-5, atol=1e-6)
    want_logp = Categorical(torch.as_tensor(logits)).logp(torch.as_tensor(actions)).numpy()
    np.testing.assert_allclose(extra[SampleBatch.ACTION_LOGP], want_logp, rtol=1e-5)
    greedy, _, _ = policy.compute_actions(obs, explore=False)
    assert greedy.tolist() == logits.argmax(-1).tolist()
    trainer.stop()


def test_seeded_sampling_stays_reproducible(ray_start_2_cpus):
    runs = []
    for _ in range(2):
        trainer, policy = _policy()
        runs.append(trainer.workers.local_worker().sample()[SampleBatch.ACTIONS].tolist())
        trainer.stop()
    assert runs[0] == runs[1]


def test_recurrent_and_custom_output_policies_keep_torch(ray_start_2_cpus):
    trainer, policy = _policy(model={"use_lstm": True, "lstm_cell_size": 8})
    obs = np.zeros((1, 4), np.float32)
    policy.compute_actions(obs, [s[None] for s in policy.get_initial_state()])
    assert policy._fast is None
    trainer.stop()


def test_ppo_learner_borrows_its_idle_workers_cpus(ray_start_2_cpus):
    trainer = PPOTrainer(env="CartPole-v1", config={"num_workers": 1})
    assert trainer._learner_threads() == 2  # its own CPU and its worker's, on this node
    trainer.stop()
    trainer = PPOTrainer(env="CartPole-v1", config={"num_workers": 1, "sample_async": True})
    assert trainer._learner_threads() == 1  # the worker samples on while it learns
    trainer.stop()
    trainer = ImpalaTrainer(env="CartPole-v1", config={"num_workers": 1})
    assert trainer._learner_threads() == 1
    trainer.stop()


@pytest.fixture(autouse=True)
def _restore_torch_threads():
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)
