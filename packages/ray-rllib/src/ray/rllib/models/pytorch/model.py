"""The PyTorch model interface.

Every model RLlib runs is an ``nn.Module`` with::

    forward(input_dict, state, seq_lens) -> (outputs, state_out)
    value_function() -> [B] tensor for the last forward pass
    get_initial_state() -> list of numpy arrays (empty if not recurrent)

``input_dict`` holds ``obs`` (restored to the Tuple/Dict structure of the
original space), ``obs_flat``, ``prev_actions``, ``prev_rewards`` and
``is_training``. :class:`TorchModel` is the 0.7 base class whose subclasses
implement ``_forward(input_dict, hidden_state) -> (logits, features, value, state)``.
"""

from __future__ import annotations

import torch
from torch import nn


class TorchModel(nn.Module):
    def __init__(self, obs_space, num_outputs, options):
        nn.Module.__init__(self)
        self.obs_space = obs_space
        self.num_outputs = num_outputs
        self.options = options or {}
        self._value = None

    def forward(self, input_dict, state=None, seq_lens=None):
        logits, _features, value, state_out = self._forward(input_dict, list(state or []))
        self._value = value.reshape(-1)
        return logits, list(state_out or [])

    def _forward(self, input_dict, hidden_state):
        raise NotImplementedError

    def value_function(self) -> torch.Tensor:
        return self._value

    def get_initial_state(self) -> list:
        return []

    def numpy_actor(self):
        """A function ``obs_flat -> (outputs, values)`` on float32 numpy batches that
        computes what ``forward`` and ``value_function`` would, for sampling without
        torch's per-operator overhead; None (the default) where the model has none.
        Only asked for models on the CPU without recurrent state."""
        return None

    def custom_loss(self, policy_loss, loss_inputs):
        """Override to add losses of the model's own (Ray 0.7's documented hook).

        ``policy_loss`` is the algorithm's scalar loss tensor, ``loss_inputs`` the training
        batch as tensors (``obs``, ``actions``, ``rewards``, ...); return the scalar to
        minimise instead, e.g. ``policy_loss + 10 * imitation_loss`` (see
        ``examples/rllib/custom_loss.py``).
        """
        return policy_loss

    def custom_stats(self) -> dict:
        """Scalars reported under ``info/learner/<policy>/model`` (e.g. a custom loss)."""
        return {}
