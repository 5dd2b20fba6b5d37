"""The model's custom_loss hook (Ray 0.7's ``Model.custom_loss``) in PPO, PG, A2C and DQN."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from ray.rllib.agents.a3c import A2CTrainer
from ray.rllib.agents.dqn import DQNTrainer
from ray.rllib.agents.pg import PGTrainer
from ray.rllib.agents.ppo import PPOTrainer
from ray.rllib.models import ModelCatalog
from ray.rllib.models.pytorch.model import TorchModel


class MarkerLossModel(TorchModel):
    """A small MLP plus a parameter that only the custom loss moves (towards 5)."""

    def __init__(self, obs_space, num_outputs, options):
        TorchModel.__init__(self, obs_space, num_outputs, options)
        in_size = int(np.prod(obs_space.shape))
        self.body = nn.Sequential(nn.Linear(in_size, 16), nn.Tanh())
        self.logits = nn.Linear(16, num_outputs)
        self.value = nn.Linear(16, 1)
        self.marker = nn.Parameter(torch.zeros(()))
        self.calls = 0
        self.seen_columns: set = set()

    def _forward(self, input_dict, hidden_state):
        features = self.body(input_dict["obs"].float())
        return self.logits(features), features, self.value(features).squeeze(-1), hidden_state

    def custom_loss(self, policy_loss, loss_inputs):
        assert policy_loss.dim() == 0  # 0.7 models get the scalar loss
        self.calls += 1
        self.seen_columns |= set(loss_inputs)
        self.marker_loss = (self.marker - 5.0) ** 2
        return policy_loss + self.marker_loss

    def custom_stats(self):
        return {"marker_loss": self.marker_loss}


class ListLossModel(nn.Module):
    """A Ray 2.x-style model: custom_loss gets and returns a list of losses; metrics()."""

    def __init__(self, obs_space, action_space, num_outputs, model_config, name):
        super().__init__()
        in_size = int(np.prod(obs_space.shape))
        self.net = nn.Linear(in_size, num_outputs)
        self.v = nn.Linear(in_size, 1)
        self.marker = nn.Parameter(torch.zeros(()))
        self._value = None

    def forward(self, input_dict, state, seq_lens):
        obs = input_dict["obs"].float()
        self._value = self.v(obs).squeeze(-1)
        return self.net(obs), state

    def value_function(self):
        return self._value

    def custom_loss(self, policy_loss, loss_inputs):
        assert isinstance(policy_loss, list) and len(policy_loss) == 1
        self.extra = (self.marker + 3.0) ** 2
        return [loss + self.extra for loss in policy_loss]

    def metrics(self):
        return {"extra": float(self.extra)}


ModelCatalog.register_custom_model("marker_loss_model", MarkerLossModel)
ModelCatalog.register_custom_model("list_loss_model", ListLossModel)

CASES = {
    "PPO": (PPOTrainer, {"train_batch_size": 200, "sgd_minibatch_size": 50, "num_sgd_iter": 2}),
    "PG": (PGTrainer, {"train_batch_size": 200, "lr": 0.05}),
    "A2C": (A2CTrainer, {"train_batch_size": 200, "min_iter_time_s": 0, "lr": 0.05}),
    "DQN": (DQNTrainer, {"learning_starts": 0, "timesteps_per_iteration": 200,
                         "min_iter_time_s": 0, "lr": 0.05}),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_custom_loss_takes_part_in_every_update(name):
    cls, extra = CASES[name]
    config = dict(extra, num_workers=0, seed=0, model={"custom_model": "marker_loss_model"})
    if name == "PPO":
        config["lr"] = 0.05
    trainer = cls(env="CartPole-v1", config=config)
    try:
        result = trainer.train()
        model = next(m for m in trainer.get_policy().model.modules()
                     if isinstance(m, MarkerLossModel))
        assert model.calls > 0
        assert {"obs", "actions", "rewards"} <= model.seen_columns
        assert float(model.marker.detach()) > 0.0  # only the custom loss pulls it towards 5
        stats = result["info"]["learner"]["default_policy"]["model"]
        assert stats["marker_loss"] <= 25.0
    finally:
        trainer.stop()


def test_ray2_style_custom_loss_gets_a_list_and_metrics_are_reported():
    trainer = PGTrainer(env="CartPole-v1", config={
        "num_workers": 0, "train_batch_size": 200, "lr": 0.05, "seed": 0,
        "model": {"custom_model": "list_loss_model"}})
    try:
        result = trainer.train()
        model = trainer.get_policy().model
        assert float(model.marker.detach()) < 0.0  # pulled towards -3
        assert result["info"]["learner"]["default_policy"]["model"]["extra"] <= 9.0
    finally:
        trainer.stop()


def test_custom_loss_must_return_a_scalar():
    class Bad(MarkerLossModel):
        def custom_loss(self, policy_loss, loss_inputs):
            return torch.stack([policy_loss, policy_loss])

    ModelCatalog.register_custom_model("bad_loss_model", Bad)
    trainer = PGTrainer(env="CartPole-v1", config={
        "num_workers": 0, "train_batch_size": 100, "model": {"custom_model": "bad_loss_model"}})
    try:
        with pytest.raises(TypeError, match="custom_loss must return the scalar"):
            trainer.train()
    finally:
        trainer.stop()
