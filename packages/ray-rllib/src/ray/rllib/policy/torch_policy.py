"""A Policy around a torch model, a loss function and an action distribution."""

from __future__ import annotations

import os
import threading

import numpy as np
import torch

from ray.rllib.models.catalog import model_initial_state
from ray.rllib.models.preprocessors import restore_original_dimensions
from ray.rllib.policy.policy import Policy
from ray.rllib.policy.recurrent import chop_into_sequences
from ray.rllib.policy.sample_batch import SampleBatch

_NON_TENSOR_DTYPES = "OUS"


class TorchPolicy(Policy):
    """Template for PyTorch policies.

    ``loss(policy, batch_tensors) -> scalar`` is the algorithm's loss; the policy
    runs the optimizer, holds a lock around model use (workers may sample from a
    background thread) and offers ``extra_grad_process()`` (e.g. gradient clipping).
    """

    def __init__(self, observation_space, action_space, model, loss, action_distribution_cls,
                 config=None):
        super().__init__(observation_space, action_space, config or getattr(self, "config", {}))
        self.model = model
        self._loss = loss
        self.dist_class = action_distribution_cls
        self.lock = threading.RLock()
        self._optimizer = self.optimizer()
        self._initial_state = model_initial_state(model)
        self.global_timestep = 0

    # --- acting -----------------------------------------------------------------------------

    def compute_actions(self, obs_batch, state_batches=None, prev_action_batch=None,
                        prev_reward_batch=None, info_batch=None, episodes=None, explore=None,
                        **kwargs):
        explore = self.config.get("explore", True) if explore is None else explore
        with self.lock, torch.no_grad():
            obs = torch.as_tensor(np.asarray(obs_batch), dtype=torch.float32)
            input_dict = self._input_dict(obs, prev_action_batch, prev_reward_batch)
            state = [torch.as_tensor(np.asarray(s)) for s in (state_batches or [])]
            seq_lens = torch.ones(obs.shape[0], dtype=torch.int32) if state else None
            logits, state_out = self.model(input_dict, state, seq_lens)
            dist = self.dist_class(logits, self.model)
            actions = dist.sample() if explore else dist.deterministic_sample()
            extra = {
                SampleBatch.ACTION_DIST_INPUTS: logits.numpy(),
                SampleBatch.ACTION_LOGP: dist.logp(actions).numpy(),
            }
            value = self.model.value_function()
            if value is not None:
                extra[SampleBatch.VF_PREDS] = value.numpy()
            extra.update(self.extra_action_out(input_dict, state, self.model))
            return actions.numpy(), [s.numpy() for s in state_out], extra

    def extra_action_out(self, input_dict, state_batches, model) -> dict:
        return {}

    def value(self, obs: np.ndarray, state=None) -> float:
        """V(obs) for one observation (used to bootstrap truncated trajectories)."""
        with self.lock, torch.no_grad():
            tensor = torch.as_tensor(np.asarray([obs]), dtype=torch.float32)
            state = [torch.as_tensor(np.asarray([s])) for s in (state or [])]
            seq_lens = torch.ones(1, dtype=torch.int32) if state else None
            self.model(self._input_dict(tensor, None, None), state, seq_lens)
            return float(self.model.value_function()[0])

    def _input_dict(self, obs, prev_actions, prev_rewards, is_training=False) -> dict:
        input_dict = {
            "obs": restore_original_dimensions(obs, self.observation_space),
            "obs_flat": obs,
            "is_training": is_training,
        }
        if prev_actions is not None:
            input_dict["prev_actions"] = torch.as_tensor(np.asarray(prev_actions))
        if prev_rewards is not None:
            input_dict["prev_rewards"] = torch.as_tensor(np.asarray(prev_rewards))
        return input_dict

    def get_initial_state(self):
        return list(self._initial_state)

    # --- learning ---------------------------------------------------------------------------

    def to_tensors(self, samples: SampleBatch) -> dict:
        """Numeric columns as tensors; recurrent models get padded sequences."""
        if self._initial_state:
            max_len = self.config.get("model", {}).get("max_seq_len", 20)
            return chop_into_sequences(samples, max_len, len(self._initial_state))
        # Batches fetched with ray.get are read-only views of shared memory; torch
        # wants writable arrays, so those (only those) are copied.
        return {
            key: torch.as_tensor(np.require(value, requirements="W"))
            for key, value in samples.items()
            if value.dtype.kind not in _NON_TENSOR_DTYPES
        }

    def forward_train(self, tensors: dict):
        """Run the model on a training batch: ``(logits, values, dist)``."""
        input_dict = self._input_dict(
            tensors[SampleBatch.CUR_OBS].float(),
            tensors.get(SampleBatch.PREV_ACTIONS),
            tensors.get(SampleBatch.PREV_REWARDS),
            is_training=True,
        )
        state = [tensors[f"state_in_{i}"] for i in range(len(self._initial_state))]
        logits, _ = self.model(input_dict, state, tensors.get("seq_lens"))
        return logits, self.model.value_function(), self.dist_class(logits, self.model)

    def learn_on_batch(self, samples) -> dict:
        return self.learn_on_tensors(self.to_tensors(samples))

    def learn_on_tensors(self, tensors: dict) -> dict:
        with self.lock:
            self._optimizer.zero_grad()
            loss = self._loss(self, tensors)
            loss.backward()
            grad_info = self.extra_grad_process()
            self._optimizer.step()
            stats = dict(self.extra_grad_info(tensors))
            stats.update(grad_info)
            return {"learner_stats": stats}

    def compute_gradients(self, postprocessed_batch):
        with self.lock:
            self._optimizer.zero_grad()
            loss = self._loss(self, self.to_tensors(postprocessed_batch))
            loss.backward()
            grad_info = self.extra_grad_process()
            grads = [
                None if p.grad is None else p.grad.detach().numpy().copy()
                for p in self.model.parameters()
            ]
            stats = dict(self.extra_grad_info({}))
            stats.update(grad_info)
            return grads, {"learner_stats": stats, "batch_count": postprocessed_batch.count}

    def apply_gradients(self, gradients) -> None:
        with self.lock:
            for grad, param in zip(gradients, self.model.parameters()):
                param.grad = None if grad is None else torch.tensor(grad)
            self._optimizer.step()

    def optimizer(self) -> torch.optim.Optimizer:
        # foreach: one fused update over all parameters (small models are overhead-bound).
        return torch.optim.Adam(self.model.parameters(), lr=self.config.get("lr", 1e-4),
                                foreach=True)

    def extra_grad_process(self) -> dict:
        clip = self.config.get("grad_clip")
        if clip:
            norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), clip)
            return {"grad_gnorm": float(norm)}
        return {}

    def extra_grad_info(self, tensors) -> dict:
        return {}

    # --- state ------------------------------------------------------------------------------

    def get_weights(self) -> dict:
        with self.lock:
            return {k: v.detach().cpu().numpy().copy() for k, v in self.model.state_dict().items()}

    def set_weights(self, weights: dict) -> None:
        with self.lock:
            self.model.load_state_dict({k: torch.tensor(v) for k, v in weights.items()})

    def get_state(self) -> dict:
        return {"weights": self.get_weights(), "global_timestep": self.global_timestep,
                "optimizer": self._optimizer.state_dict()}

    def set_state(self, state) -> None:
        self.set_weights(state["weights"])
        self.global_timestep = state.get("global_timestep", 0)
        if state.get("optimizer"):
            self._optimizer.load_state_dict(state["optimizer"])

    def export_model(self, export_dir: str) -> None:
        """Save the torch model (``model.pt``, the whole module, and ``weights.pt``)."""
        os.makedirs(export_dir, exist_ok=True)
        torch.save(self.model, os.path.join(export_dir, "model.pt"))
        torch.save(self.model.state_dict(), os.path.join(export_dir, "weights.pt"))

    def export_checkpoint(self, export_dir: str) -> None:
        os.makedirs(export_dir, exist_ok=True)
        torch.save(self.get_state(), os.path.join(export_dir, "policy_state.pt"))


def explained_variance(targets: torch.Tensor, predictions: torch.Tensor) -> torch.Tensor:
    """1 - Var[y - pred] / Var[y]: 1 is a perfect value function, 0 a constant one."""
    var_y = torch.var(targets)
    return torch.clamp(1 - torch.var(targets - predictions) / (var_y + 1e-8), min=-1.0)


__all__ = ["TorchPolicy", "explained_variance"]
