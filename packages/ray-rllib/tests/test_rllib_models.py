import numpy as np
import pytest
import torch
from gymnasium import spaces
from torch import nn

from ray.rllib.models import (
    Categorical,
    DiagGaussian,
    Dirichlet,
    FullyConnectedNetwork,
    ModelCatalog,
    Preprocessor,
    TorchModel,
    VisionNetwork,
)
from ray.rllib.models.preprocessors import get_preprocessor, restore_original_dimensions


def test_discrete_observations_are_one_hot():
    prep = get_preprocessor(spaces.Discrete(4))(spaces.Discrete(4))
    assert prep.transform(2).tolist() == [0, 0, 1, 0]


def test_dict_and_tuple_observations_flatten_and_restore():
    space = spaces.Dict({
        "mask": spaces.Box(0, 1, (3,)),
        "pos": spaces.Tuple([spaces.Discrete(2), spaces.Box(-1, 1, (2,))]),
    })
    prep = ModelCatalog.get_preprocessor_for_space(space)
    obs = {"mask": np.array([1, 0, 1], np.float32), "pos": (1, np.array([0.5, -0.5]))}
    flat = prep.transform(obs)
    assert prep.shape == (7,)
    assert flat.tolist() == [1, 0, 1, 0, 1, 0.5, -0.5]
    restored = restore_original_dimensions(torch.as_tensor(flat[None]), prep.observation_space)
    assert restored["mask"].shape == (1, 3)
    assert restored["pos"][1].tolist() == [[0.5, -0.5]]


def test_catalog_picks_distribution_for_each_action_space():
    assert ModelCatalog.get_action_dist(spaces.Discrete(3)) == (Categorical, 3)
    assert ModelCatalog.get_action_dist(spaces.Box(-1, 1, (2,))) == (DiagGaussian, 4)


def test_catalog_picks_vision_network_for_images():
    model = ModelCatalog.get_model_v2(spaces.Box(0, 1, (42, 42, 3)), None, 4, {})
    assert isinstance(model, VisionNetwork)
    out, _ = model({"obs_flat": torch.zeros(2, 42, 42, 3)}, [], None)
    assert out.shape == (2, 4)
    assert model.value_function().shape == (2,)


def test_categorical_matches_torch_distributions():
    logits = torch.randn(5, 3)
    ours, ref = Categorical(logits), torch.distributions.Categorical(logits=logits)
    actions = torch.tensor([0, 1, 2, 1, 0])
    torch.testing.assert_close(ours.logp(actions), ref.log_prob(actions))
    torch.testing.assert_close(ours.entropy(), ref.entropy())
    other = Categorical(torch.randn(5, 3))
    ref_other = torch.distributions.Categorical(logits=other.inputs)
    torch.testing.assert_close(ours.kl(other), torch.distributions.kl_divergence(ref, ref_other))


def test_diag_gaussian_matches_torch_distributions():
    inputs = torch.randn(4, 6)
    ours = DiagGaussian(inputs)
    mean, log_std = inputs[:, :3], inputs[:, 3:]
    ref = torch.distributions.Normal(mean, log_std.exp())
    x = torch.randn(4, 3)
    torch.testing.assert_close(ours.logp(x), ref.log_prob(x).sum(-1))
    torch.testing.assert_close(ours.entropy(), ref.entropy().sum(-1))
    other = DiagGaussian(torch.randn(4, 6))
    ref_other = torch.distributions.Normal(other.mean, other.std)
    torch.testing.assert_close(
        ours.kl(other), torch.distributions.kl_divergence(ref, ref_other).sum(-1)
    )


def test_dirichlet_samples_lie_on_the_simplex():
    dist = Dirichlet(torch.zeros(3, 4))
    sample = dist.sample()
    torch.testing.assert_close(sample.sum(-1), torch.ones(3))
    assert torch.isfinite(dist.logp(sample)).all()


def test_fcnet_free_log_std_makes_second_half_state_independent():
    model = FullyConnectedNetwork(spaces.Box(-1, 1, (3,)), 4, {"fcnet_hiddens": [8],
                                                              "free_log_std": True})
    out, _ = model({"obs_flat": torch.randn(5, 3)}, [], None)
    assert out.shape == (5, 4)
    assert torch.allclose(out[:, 2:], out[0, 2:].expand(5, 2))


class _OldStyleModel(TorchModel):
    def __init__(self, obs_space, num_outputs, options):
        TorchModel.__init__(self, obs_space, num_outputs, options)
        self.fc = nn.Linear(obs_space.shape[0], num_outputs)
        self.vf = nn.Linear(obs_space.shape[0], 1)

    def _forward(self, input_dict, hidden_state):
        obs = input_dict["obs"]
        return self.fc(obs), obs, self.vf(obs).squeeze(-1), hidden_state


class _PlainModule(nn.Module):
    def __init__(self, obs_space, action_space, num_outputs, model_config, name):
        super().__init__()
        self.fc = nn.Linear(obs_space.shape[0], num_outputs)

    def forward(self, input_dict, state, seq_lens):
        return self.fc(input_dict["obs"]), state


@pytest.mark.parametrize("model_cls", [_OldStyleModel, _PlainModule])
def test_registered_custom_models_are_built_by_name(model_cls):
    ModelCatalog.register_custom_model("test_model", model_cls)
    model = ModelCatalog.get_model_v2(spaces.Box(-1, 1, (3,)), spaces.Discrete(2), 2,
                                      {"custom_model": "test_model"})
    logits, state = model({"obs": torch.zeros(4, 3), "obs_flat": torch.zeros(4, 3)}, [], None)
    assert logits.shape == (4, 2)
    assert model.value_function().shape == (4,)


def test_unregistered_custom_model_names_the_fix():
    with pytest.raises(ValueError, match="register_custom_model"):
        ModelCatalog.get_model_v2(spaces.Box(-1, 1, (3,)), None, 2, {"custom_model": "nope"})


def test_custom_preprocessor_is_used_by_name():
    class Doubler(Preprocessor):
        def _init_shape(self, obs_space, options):
            return (obs_space.shape[0] * 2,)

        def transform(self, observation):
            return np.concatenate([observation, observation])

    ModelCatalog.register_custom_preprocessor("doubler", Doubler)
    prep = ModelCatalog.get_preprocessor_for_space(spaces.Box(-1, 1, (2,)),
                                                   {"custom_preprocessor": "doubler"})
    assert prep.transform(np.array([1.0, 2.0])).tolist() == [1, 2, 1, 2]
