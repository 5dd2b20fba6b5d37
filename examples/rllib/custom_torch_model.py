"""A custom PyTorch model registered with the ModelCatalog (Ray 0.7 docs), trained with A2C."""

import argparse

import numpy as np
import torch
from torch import nn

import ray
from ray.rllib.agents import a3c
from ray.rllib.models import ModelCatalog
from ray.rllib.models.pytorch.model import TorchModel


class CustomTorchModel(TorchModel):
    def __init__(self, obs_space, num_outputs, options):
        TorchModel.__init__(self, obs_space, num_outputs, options)
        hidden = options.get("custom_options", {}).get("hidden", 32)
        in_size = int(np.prod(obs_space.shape))
        self.body = nn.Sequential(nn.Linear(in_size, hidden), nn.Tanh())
        self.logits = nn.Linear(hidden, num_outputs)
        self.value = nn.Linear(hidden, 1)

    def _forward(self, input_dict, hidden_state):
        features = self.body(input_dict["obs"].float())
        return self.logits(features), features, self.value(features).squeeze(-1), hidden_state


ModelCatalog.register_custom_model("my_model", CustomTorchModel)


def main(iterations: int = 2) -> dict:
    ray.init(num_cpus=2)
    try:
        trainer = a3c.A2CTrainer(env="CartPole-v0", config={
            "use_pytorch": True,
            "num_workers": 1,
            "min_iter_time_s": 0,
            "model": {
                "custom_model": "my_model",
                "custom_options": {"hidden": 32},  # extra options to pass to your model
            },
        })
        result = {}
        for _ in range(iterations):
            result = trainer.train()
            print(result["episode_reward_mean"])
        assert isinstance(trainer.get_policy().model, CustomTorchModel)
        assert torch.is_tensor(next(trainer.get_policy().model.parameters()))
        trainer.stop()
        return result
    finally:
        ray.shutdown()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=2)
    main(parser.parse_args().iterations)
