"""Example of using custom_loss() with an imitation learning loss (Ray 0.7's
``examples/custom_loss.py``, with a PyTorch model).

The model adds ``10 * imitation_loss`` -- the negative log-likelihood of the actions in
an offline data set -- to the algorithm's own loss, and reports both through
``custom_stats()`` (under ``info/learner/default_policy/model``).

To generate experiences:
$ rllib train --run=PG --config='{"output": "/tmp/cartpole"}' --env=CartPole-v0

To train on experiences with joint PG + IL loss:
$ python custom_loss.py --input-files=/tmp/cartpole

Without ``--input-files`` the example first writes a small data set itself (a few PG
iterations with ``output`` set).
"""

import argparse
import os
import tempfile

import numpy as np
import torch
from torch import nn

import ray
from ray import tune
from ray.rllib.models import Categorical, ModelCatalog
from ray.rllib.models.pytorch.model import TorchModel
from ray.rllib.offline import JsonReader


class CustomLossModel(TorchModel):
    """Custom model that adds an imitation loss on top of the policy loss."""

    def __init__(self, obs_space, num_outputs, options):
        TorchModel.__init__(self, obs_space, num_outputs, options)
        in_size = int(np.prod(obs_space.shape))
        self.body = nn.Sequential(nn.Linear(in_size, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh())
        self.logits = nn.Linear(64, num_outputs)
        self.value = nn.Linear(64, 1)
        # A reader of the offline data, one per worker process.
        self.reader = JsonReader(options["custom_options"]["input_files"])
        self.policy_loss = self.imitation_loss = None

    def _forward(self, input_dict, hidden_state):
        features = self.body(input_dict["obs"].float())
        return self.logits(features), features, self.value(features).squeeze(-1), hidden_state

    def custom_loss(self, policy_loss, loss_inputs):
        batch = self.reader.next()
        obs = torch.as_tensor(np.asarray(batch["obs"]), dtype=torch.float32,
                              device=policy_loss.device)
        logits = self.logits(self.body(obs))
        # You can also add self-supervised losses easily by referencing loss_inputs
        # (the training batch: obs, actions, rewards, ...).
        action_dist = Categorical(logits)
        actions = torch.as_tensor(np.asarray(batch["actions"]), device=policy_loss.device)
        self.policy_loss = policy_loss.detach()
        self.imitation_loss = torch.mean(-action_dist.logp(actions))
        return policy_loss + 10 * self.imitation_loss

    def custom_stats(self):
        return {"policy_loss": self.policy_loss, "imitation_loss": self.imitation_loss}


def write_demo_data(path: str, iterations: int = 2) -> str:
    """A small CartPole data set from PG's own output."""
    from ray.rllib.agents.pg import PGTrainer

    trainer = PGTrainer(env="CartPole-v0", config={"num_workers": 0, "output": path})
    for _ in range(iterations):
        trainer.train()
    trainer.stop()
    return path


def main(iters: int = 200, input_files: str | None = None, run: str = "PG"):
    ray.init(num_cpus=2)
    try:
        if input_files is None:
            input_files = write_demo_data(tempfile.mkdtemp(prefix="cartpole-demo-"))
        ModelCatalog.register_custom_model("custom_loss", CustomLossModel)
        return tune.run(
            run,
            stop={"training_iteration": iters},
            config={
                "env": "CartPole-v0",
                "num_workers": 0,
                "model": {
                    "custom_model": "custom_loss",
                    "custom_options": {"input_files": input_files},
                },
            },
            verbose=0,
        )
    finally:
        ray.shutdown()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--iters", type=int, default=200)
    parser.add_argument("--input-files", type=str, default=None)
    parser.add_argument("--run", type=str, default="PG")
    args = parser.parse_args()
    main(args.iters, args.input_files and os.path.expanduser(args.input_files), args.run)
