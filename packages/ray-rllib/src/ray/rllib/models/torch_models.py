"""Built-in networks: fully connected, vision (conv), and an LSTM wrapper."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from ray.rllib.models.numpy_inference import numpy_mlp
from ray.rllib.models.pytorch.model import TorchModel

_ACTIVATIONS = {"tanh": nn.Tanh, "relu": nn.ReLU, "elu": nn.ELU, "linear": nn.Identity}


def _activation(name):
    if name not in _ACTIVATIONS:
        raise ValueError(f"unknown activation {name!r}: use one of {sorted(_ACTIVATIONS)}")
    return _ACTIVATIONS[name]


def _mlp(in_size, hiddens, activation, out_size, out_gain, *,
         layer_norm: bool = False) -> nn.Sequential:
    layers, size = [], in_size
    for hidden in hiddens:
        linear = nn.Linear(size, hidden)
        nn.init.orthogonal_(linear.weight, np.sqrt(2))
        nn.init.zeros_(linear.bias)
        layers += [linear, nn.LayerNorm(hidden)] if layer_norm else [linear]
        layers.append(_activation(activation)())
        size = hidden
    if out_size is not None:
        out = nn.Linear(size, out_size)
        nn.init.orthogonal_(out.weight, out_gain)
        nn.init.zeros_(out.bias)
        layers.append(out)
    return nn.Sequential(*layers)


class FullyConnectedNetwork(TorchModel):
    """MLP policy head plus a value head, separate unless ``vf_share_layers``.

    With ``free_log_std`` the second half of the outputs (the log stds of a
    DiagGaussian) are free parameters rather than functions of the input.
    """

    def __init__(self, obs_space, num_outputs, options):
        super().__init__(obs_space, num_outputs, options)
        in_size = int(np.prod(obs_space.shape))
        hiddens = list(options.get("fcnet_hiddens", [256, 256]))
        activation = options.get("fcnet_activation", "tanh")
        self.free_log_std = options.get("free_log_std", False)
        self.vf_share_layers = options.get("vf_share_layers", False)
        policy_outputs = num_outputs // 2 if self.free_log_std else num_outputs
        if self.vf_share_layers:
            self.trunk = _mlp(in_size, hiddens, activation, None, 1.0)
            last = hiddens[-1] if hiddens else in_size
            self.logits = _mlp(last, [], activation, policy_outputs, 0.01)
            self.value = _mlp(last, [], activation, 1, 1.0)
        else:
            self.trunk = None
            self.logits = _mlp(in_size, hiddens, activation, policy_outputs, 0.01)
            self.value = _mlp(in_size, hiddens, activation, 1, 1.0)
        if self.free_log_std:
            self.log_std = nn.Parameter(torch.zeros(policy_outputs))

    def _forward(self, input_dict, hidden_state):
        x = input_dict["obs_flat"].float().reshape(input_dict["obs_flat"].shape[0], -1)
        features = self.trunk(x) if self.trunk is not None else x
        logits = self.logits(features)
        if self.free_log_std:
            logits = torch.cat([logits, self.log_std.expand_as(logits)], dim=-1)
        return logits, features, self.value(features).squeeze(-1), hidden_state

    def numpy_actor(self):
        if type(self)._forward is not FullyConnectedNetwork._forward:
            return None  # a subclass computes something else
        trunk = numpy_mlp(self.trunk) if self.trunk is not None else None
        logits, value = numpy_mlp(self.logits), numpy_mlp(self.value)
        if logits is None or value is None or (self.trunk is not None and trunk is None):
            return None
        log_std = self.log_std.detach().numpy() if self.free_log_std else None

        def act(obs: np.ndarray):
            x = obs.reshape(obs.shape[0], -1).astype(np.float32, copy=False)
            features = trunk(x) if trunk is not None else x
            outputs = logits(features)
            if log_std is not None:
                outputs = np.concatenate(
                    [outputs, np.broadcast_to(log_std, outputs.shape)], axis=-1)
            return outputs, value(features)[:, 0]

        return act


def _default_conv_filters(shape):
    size = shape[0]
    if size == 84:
        return [[16, [8, 8], 4], [32, [4, 4], 2], [256, [11, 11], 1]]
    if size == 42:
        return [[16, [4, 4], 2], [32, [4, 4], 2], [256, [11, 11], 1]]
    raise ValueError(
        f"no default conv_filters for {tuple(shape)} images (defaults exist for 84x84 and "
        "42x42: set model.dim, or use the Atari preprocessing): set model.conv_filters, "
        "e.g. [[16, [4, 4], 2], [32, [4, 4], 2], [256, [11, 11], 1]] for 42x42"
    )


class VisionNetwork(TorchModel):
    """Conv layers over ``[H, W, C]`` images, then linear logits and value heads.

    ``uint8`` image spaces (the DeepMind Atari frames) are scaled to [0, 1] inside the
    network, so batches can carry bytes.
    """

    def __init__(self, obs_space, num_outputs, options):
        super().__init__(obs_space, num_outputs, options)
        if len(obs_space.shape) != 3:
            raise ValueError(f"VisionNetwork needs [H, W, C] image observations, got shape "
                             f"{obs_space.shape}: use the fully connected network")
        self._input_scale = 1.0 / 255.0 if obs_space.dtype == np.uint8 else 1.0
        filters = options.get("conv_filters") or _default_conv_filters(obs_space.shape)
        activation = _activation(options.get("conv_activation", "relu"))
        layers, channels = [], obs_space.shape[-1]
        size = list(obs_space.shape[:2])
        for i, (out_channels, kernel, stride) in enumerate(filters):
            kernel = [kernel, kernel] if isinstance(kernel, int) else list(kernel)
            if i < len(filters) - 1:
                # TF-style "same" padding (as RLlib's vision net): out = ceil(in / stride).
                pads = [max((-(-n // stride) - 1) * stride + k - n, 0) for n, k in zip(size, kernel)]
                layers.append(nn.ZeroPad2d((pads[1] // 2, pads[1] - pads[1] // 2,
                                            pads[0] // 2, pads[0] - pads[0] // 2)))
                size = [-(-n // stride) for n in size]
            layers += [nn.Conv2d(channels, out_channels, kernel, stride), activation()]
            channels = out_channels
        layers.append(nn.Flatten())
        self.convs = nn.Sequential(*layers)
        with torch.no_grad():
            sample = torch.zeros((1,) + tuple(obs_space.shape)).permute(0, 3, 1, 2)
            feature_size = self.convs(sample).shape[-1]
        self.logits = nn.Linear(feature_size, num_outputs)
        self.value = nn.Linear(feature_size, 1)

    def _forward(self, input_dict, hidden_state):
        x = input_dict["obs_flat"].float()
        if self._input_scale != 1.0:
            x = x * self._input_scale
        features = self.convs(x.permute(0, 3, 1, 2))
        return self.logits(features), features, self.value(features).squeeze(-1), hidden_state


class LSTMWrapper(nn.Module):
    """Wrap a model's feature output with an LSTM (``use_lstm``).

    Inputs arrive as padded sequences: ``[B * T, ...]`` with ``seq_lens`` of
    length B; the state is ``[h, c]`` per sequence. With ``lstm_use_prev_action_reward``
    (or Ray 2.x's ``lstm_use_prev_action`` / ``lstm_use_prev_reward``) the LSTM also
    sees the previous action (one-hot for Discrete/MultiDiscrete spaces) and/or reward.
    """

    def __init__(self, obs_space, num_outputs, options, action_space=None):
        super().__init__()
        self.cell_size = options.get("lstm_cell_size", 256)
        hiddens = list(options.get("fcnet_hiddens", [256, 256]))
        in_size = int(np.prod(obs_space.shape))
        both = options.get("lstm_use_prev_action_reward") is True  # Ray 2.x's -1: unset
        self.use_prev_action = both or bool(options.get("lstm_use_prev_action"))
        self.use_prev_reward = both or bool(options.get("lstm_use_prev_reward"))
        self.action_sizes: list[int] = []
        self.discrete_actions = False
        if self.use_prev_action:
            self.action_sizes, self.discrete_actions = _action_input_sizes(action_space)
        extra = sum(self.action_sizes) + (1 if self.use_prev_reward else 0)
        self.encoder = _mlp(in_size, hiddens, options.get("fcnet_activation", "tanh"), None, 1.0)
        feature_size = hiddens[-1] if hiddens else in_size
        self.lstm = nn.LSTM(feature_size + extra, self.cell_size, batch_first=True)
        self.logits = _mlp(self.cell_size, [], "linear", num_outputs, 0.01)
        self.value = _mlp(self.cell_size, [], "linear", 1, 1.0)
        self._features = None

    def get_initial_state(self):
        return [np.zeros(self.cell_size, np.float32), np.zeros(self.cell_size, np.float32)]

    def _prev_inputs(self, input_dict, rows: int) -> list:
        parts = []
        if self.use_prev_action:
            prev = input_dict.get("prev_actions")
            width = len(self.action_sizes) if self.discrete_actions else self.action_sizes[0]
            if prev is None:
                prev = torch.zeros(rows, width)
            prev = torch.as_tensor(prev).reshape(rows, width)
            if self.discrete_actions:  # one one-hot block per component
                parts += [nn.functional.one_hot(prev[:, i].long().clamp(0, n - 1), n).float()
                          for i, n in enumerate(self.action_sizes)]
            else:
                parts.append(prev.float())
        if self.use_prev_reward:
            prev_r = input_dict.get("prev_rewards")
            if prev_r is None:
                prev_r = torch.zeros(rows)
            parts.append(torch.as_tensor(prev_r).float().reshape(rows, 1))
        return parts

    def forward(self, input_dict, state, seq_lens):
        obs = input_dict["obs_flat"].float()
        x = self.encoder(obs.reshape(obs.shape[0], -1))
        if self.use_prev_action or self.use_prev_reward:
            x = torch.cat([x] + self._prev_inputs(input_dict, x.shape[0]), dim=1)
        if seq_lens is None:
            seq_lens = torch.ones(x.shape[0], dtype=torch.int32)
        batch = len(seq_lens)
        x = x.reshape(batch, -1, x.shape[-1])
        h, c = state[0].unsqueeze(0), state[1].unsqueeze(0)
        out, (h, c) = self.lstm(x, (h, c))
        self._features = out.reshape(-1, self.cell_size)
        return self.logits(self._features), [h.squeeze(0), c.squeeze(0)]

    def value_function(self):
        return self.value(self._features).squeeze(-1)


def _action_input_sizes(action_space) -> tuple[list, bool]:
    """Sizes of the previous-action input: one one-hot block per discrete component, or
    the flat size of a Box (as one block, not one-hot)."""
    from gymnasium import spaces

    if action_space is None:
        raise ValueError("lstm_use_prev_action_reward needs the action space: build the "
                         "model with ModelCatalog.get_model_v2(obs_space, action_space, ...)")
    if isinstance(action_space, spaces.Discrete):
        return [int(action_space.n)], True
    if isinstance(action_space, spaces.MultiDiscrete):
        return [int(n) for n in action_space.nvec], True
    return [int(np.prod(action_space.shape))], False
