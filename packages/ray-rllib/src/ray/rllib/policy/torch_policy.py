"""A Policy around a torch model, a loss function and an action distribution."""

from __future__ import annotations

import os
import threading

import numpy as np
import torch

from ray.rllib.models.action_dist import numpy_sampler
from ray.rllib.models.catalog import model_initial_state
from ray.rllib.models.preprocessors import restore_original_dimensions
from ray.rllib.models.pytorch.model import TorchModel
from ray.rllib.policy.policy import Policy
from ray.rllib.policy.recurrent import chop_into_sequences
from ray.rllib.policy.sample_batch import SampleBatch
from ray.rllib.utils.torch_ops import make_adam

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
        # Where the model lives: the CPU until the RolloutWorker moves the policy with
        # to_device() (the learner to CUDA when num_gpus > 0, samplers when
        # num_gpus_per_worker > 0). Inputs are moved here; outputs come back as numpy.
        self.device = torch.device("cpu")
        self._optimizer = self.optimizer()
        self._initial_state = model_initial_state(model)
        self.global_timestep = 0
        # Sampling without torch (see _fast_actor), built on first use: (model it was
        # built for, model's numpy actor, distribution's numpy sampler) or None.
        self._fast: tuple | None = None
        self._fast_for = None
        self._np_rng: np.random.Generator | None = None

    def to_device(self, device) -> None:
        """Move the model (and any ``target_model``) to ``device``; the optimizer keeps
        its parameters (``Module.to`` moves them in place)."""
        device = torch.device(device)
        with self.lock:
            self.model.to(device)
            if isinstance(getattr(self, "target_model", None), torch.nn.Module):
                self.target_model.to(device)
            for state in self._optimizer.state.values():
                for key, value in state.items():
                    if isinstance(value, torch.Tensor) and value.dim() > 0:
                        state[key] = value.to(device)
            self.device = device
            self._fast_for = None  # decide again for the new device

    # --- acting -----------------------------------------------------------------------------

    def compute_actions(self, obs_batch, state_batches=None, prev_action_batch=None,
                        prev_reward_batch=None, info_batch=None, episodes=None, explore=None,
                        **kwargs):
        explore = self.config.get("explore", True) if explore is None else explore
        fast = self._fast if self._fast_for is self.model else self._fast_actor()
        if fast is not None and not state_batches:
            with self.lock:
                outputs, values = fast[0](np.asarray(obs_batch))
            actions, logp = fast[1](outputs, self._np_rng, explore)
            return actions, [], {SampleBatch.ACTION_DIST_INPUTS: outputs,
                                 SampleBatch.ACTION_LOGP: logp,
                                 SampleBatch.VF_PREDS: values}
        with self.lock, torch.no_grad():
            obs = torch.as_tensor(np.asarray(obs_batch), dtype=torch.float32, device=self.device)
            input_dict = self._input_dict(obs, prev_action_batch, prev_reward_batch)
            state = [torch.as_tensor(np.asarray(s), device=self.device)
                     for s in state_batches] if state_batches else []
            seq_lens = torch.ones(obs.shape[0], dtype=torch.int32) if state else None
            logits, state_out = self.model(input_dict, state, seq_lens)
            dist = self.dist_class(logits, self.model)
            actions = dist.sample() if explore else dist.deterministic_sample()
            extra = {
                SampleBatch.ACTION_DIST_INPUTS: _numpy(logits),
                SampleBatch.ACTION_LOGP: _numpy(dist.logp(actions)),
            }
            value = self.model.value_function()
            if value is not None:
                extra[SampleBatch.VF_PREDS] = _numpy(value)
            more = self.extra_action_out(input_dict, state, self.model)
            if more:
                extra.update(more)
            return _numpy(actions), [_numpy(s) for s in state_out], extra

    def extra_action_out(self, input_dict, state_batches, model) -> dict:
        return {}

    def _fast_actor(self) -> tuple | None:
        """Decide (once per model and device) whether actions can be computed in numpy:
        a model with a numpy actor (the built-in fully connected net) on the CPU, without
        recurrent state, a Categorical or DiagGaussian distribution, and no extra action
        outputs. It computes the same outputs, values, log-probabilities and the same
        distribution of actions as the torch path, without torch's per-operator cost
        (the random draws come from a generator seeded from torch's, so a seeded run
        stays reproducible)."""
        fast = None
        if (self.device.type == "cpu" and not self._initial_state
                and isinstance(self.model, TorchModel)
                and type(self).extra_action_out is TorchPolicy.extra_action_out):
            actor, sampler = self.model.numpy_actor(), numpy_sampler(self.dist_class)
            if actor is not None and sampler is not None:
                fast = (actor, sampler)
                if self._np_rng is None:
                    self._np_rng = np.random.default_rng(
                        int(torch.randint(0, 2**62, ()).item()))
        self._fast, self._fast_for = fast, self.model
        return fast

    def value(self, obs: np.ndarray, state=None) -> float:
        """V(obs) for one observation (used to bootstrap truncated trajectories)."""
        with self.lock, torch.no_grad():
            tensor = torch.as_tensor(np.asarray([obs]), dtype=torch.float32, device=self.device)
            state = [torch.as_tensor(np.asarray([s]), device=self.device) for s in (state or [])]
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
            input_dict["prev_actions"] = self._tensor(prev_actions)
        if prev_rewards is not None:
            input_dict["prev_rewards"] = self._tensor(prev_rewards)
        return input_dict

    def _tensor(self, value) -> torch.Tensor:
        """``value`` (a tensor, array or list) as a tensor on the policy's device."""
        if isinstance(value, torch.Tensor):
            return value.to(self.device)
        return torch.as_tensor(np.asarray(value), device=self.device)

    def get_initial_state(self):
        return list(self._initial_state)

    # --- learning ---------------------------------------------------------------------------

    def to_tensors(self, samples: SampleBatch) -> dict:
        """Numeric columns as tensors; recurrent models get padded sequences."""
        if self._initial_state:
            max_len = self.config.get("model", {}).get("max_seq_len", 20)
            tensors = chop_into_sequences(samples, max_len, len(self._initial_state))
            if self.device.type != "cpu":
                tensors = {k: v.to(self.device) for k, v in tensors.items()}
            return tensors
        # Batches fetched with ray.get are read-only views of shared memory; torch
        # wants writable arrays, so those (only those) are copied.
        return {
            key: torch.as_tensor(np.require(value, requirements="W"), device=self.device)
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

    def total_loss(self, tensors: dict) -> torch.Tensor:
        """The algorithm's loss on ``tensors``, passed through the model's ``custom_loss``
        hooks (Ray 0.7 ``Model.custom_loss(policy_loss, loss_inputs)``; models of the Ray
        2.x kind get and return a list of losses, as there)."""
        loss = self._loss(self, tensors)
        for module in self._custom_loss_modules():
            if _takes_loss_list(module):
                out = module.custom_loss([loss], tensors)
                loss = out[0] if isinstance(out, list | tuple) else out
            else:
                loss = module.custom_loss(loss, tensors)
            if not isinstance(loss, torch.Tensor) or loss.dim() != 0:
                raise TypeError(f"{type(module).__name__}.custom_loss must return the scalar "
                                f"loss tensor to minimise, got {type(loss).__name__}")
        return loss

    def _custom_loss_modules(self) -> list:
        if not hasattr(self, "_custom_loss_cache"):
            self._custom_loss_cache = [
                m for m in self.model.modules()
                if callable(getattr(m, "custom_loss", None)) and _overrides_custom_loss(m)]
        return self._custom_loss_cache

    def _model_stats(self) -> dict:
        """Custom model metrics (0.7 ``custom_stats()``, Ray 2.x ``metrics()``) of the
        policy's model and of the modules with a custom loss."""
        stats = {}
        for module in dict.fromkeys([self.model, *self._custom_loss_modules()]):
            for name in ("custom_stats", "metrics"):
                fn = getattr(module, name, None)
                values = fn() if callable(fn) else None
                if isinstance(values, dict):
                    stats.update({k: float(v.detach()) if isinstance(v, torch.Tensor) else v
                                  for k, v in values.items()})
        return stats

    @property
    def stats_wanted(self) -> bool:
        """False while ``sgd_step`` runs the loss: a loss function may then skip what only
        its reported stats need (their values are thrown away)."""
        return not getattr(self, "_quiet", False)

    def sgd_step(self, tensors) -> None:
        """One optimizer step on the loss over ``tensors`` (a mapping of column name to
        tensor), computing no stats: the same update as ``learn_on_tensors``, for the
        minibatches whose stats nobody reads (all but the last epoch of minibatch SGD)."""
        with self.lock:
            self._quiet = True
            try:
                self._optimizer.zero_grad()
                self.total_loss(tensors).backward()
                self.extra_grad_process()
                self._optimizer.step()
            finally:
                self._quiet = False

    def learn_on_tensors(self, tensors: dict) -> dict:
        with self.lock:
            self._optimizer.zero_grad()
            loss = self.total_loss(tensors)
            loss.backward()
            grad_info = self.extra_grad_process()
            self._optimizer.step()
            stats = dict(self.extra_grad_info(tensors))
            stats.update(grad_info)
            model_stats = self._model_stats()
            if model_stats:
                stats["model"] = model_stats
            return {"learner_stats": stats}

    def compute_gradients(self, postprocessed_batch):
        with self.lock:
            self._optimizer.zero_grad()
            loss = self.total_loss(self.to_tensors(postprocessed_batch))
            loss.backward()
            grad_info = self.extra_grad_process()
            grads = [
                None if p.grad is None else p.grad.detach().cpu().numpy().copy()
                for p in self.model.parameters()
            ]
            stats = dict(self.extra_grad_info({}))
            stats.update(grad_info)
            return grads, {"learner_stats": stats, "batch_count": postprocessed_batch.count}

    def apply_gradients(self, gradients) -> None:
        with self.lock:
            for grad, param in zip(gradients, self.model.parameters()):
                param.grad = None if grad is None else torch.tensor(grad, device=param.device)
            self._optimizer.step()

    def optimizer(self) -> torch.optim.Optimizer:
        return make_adam(self.model.parameters(), lr=self.config.get("lr", 1e-4))

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
                "optimizer": _to_cpu(self._optimizer.state_dict())}

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


def _numpy(tensor: torch.Tensor) -> np.ndarray:
    """A (detached) tensor as numpy, from whichever device it is on."""
    if tensor.is_cpu and not tensor.requires_grad:
        return tensor.numpy()
    return tensor.detach().cpu().numpy()


def _to_cpu(value):
    """Optimizer state with its tensors on the CPU (checkpoints load anywhere)."""
    if isinstance(value, torch.Tensor):
        return value.cpu()
    if isinstance(value, dict):
        return {k: _to_cpu(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_to_cpu(v) for v in value]
    return value


def _overrides_custom_loss(module) -> bool:
    from ray.rllib.models.pytorch.model import TorchModel

    method = getattr(type(module), "custom_loss", None)
    base = getattr(TorchModel, "custom_loss", None)
    try:
        from ray.rllib.models.torch.torch_modelv2 import TorchModelV2

        base_v2 = TorchModelV2.custom_loss
    except ImportError:  # the Ray 2.x names are optional
        base_v2 = None
    return method is not None and method is not base and method is not base_v2


def _takes_loss_list(module) -> bool:
    """Ray 2.x torch models get ``policy_loss`` as a list; 0.7 ``TorchModel``s a scalar."""
    from ray.rllib.models.pytorch.model import TorchModel

    return not isinstance(module, TorchModel)


@torch.no_grad()
def explained_variance(targets: torch.Tensor, predictions: torch.Tensor) -> torch.Tensor:
    """1 - Var[y - pred] / Var[y]: 1 is a perfect value function, 0 a constant one."""
    var_y = torch.var(targets)
    return torch.clamp(1 - torch.var(targets - predictions) / (var_y + 1e-8), min=-1.0)


__all__ = ["TorchPolicy", "explained_variance"]
