"""Built-in networks: fully connected, vision (conv), and an LSTM wrapper."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

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


def _default_conv_filters(shape):
    size = shape[0]
    if size == 84:
        return [[16, [8, 8], 4], [32, [4, 4], 2], [256, [11, 11], 1]]
    if size == 42:
        return [[16, [4, 4], 2], [32, [4, 4], 2], [256, [11, 11], 1]]
    raise ValueError(
        f"no default conv_filters for {shape} images: set model.conv_filters, e.g. "
        "[[16, [4, 4], 2], [32, [4, 4], 2], [512, [11, 11], 1]] for 42x42"
    )


class VisionNetwork(TorchModel):
    """Conv layers over ``[H, W, C]`` images, then linear logits and value heads."""

    def __init__(self, obs_space, num_outputs, options):
        super().__init__(obs_space, num_outputs, options)
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
        features = self.convs(x.permute(0, 3, 1, 2))
        return self.logits(features), features, self.value(features).squeeze(-1), hidden_state


class LSTMWrapper(nn.Module):
    """Wrap a model's feature output with an LSTM (``use_lstm``).

    Inputs arrive as padded sequences: ``[B * T, ...]`` with ``seq_lens`` of
    length B; the state is ``[h, c]`` per sequence.
    """

    def __init__(self, obs_space, num_outputs, options):
        super().__init__()
        self.cell_size = options.get("lstm_cell_size", 256)
        hiddens = list(options.get("fcnet_hiddens", [256, 256]))
        in_size = int(np.prod(obs_space.shape))
        self.encoder = _mlp(in_size, hiddens, options.get("fcnet_activation", "tanh"), None, 1.0)
        self.lstm = nn.LSTM(hiddens[-1] if hiddens else in_size, self.cell_size, batch_first=True)
        self.logits = _mlp(self.cell_size, [], "linear", num_outputs, 0.01)
        self.value = _mlp(self.cell_size, [], "linear", 1, 1.0)
        self._features = None

    def get_initial_state(self):
        return [np.zeros(self.cell_size, np.float32), np.zeros(self.cell_size, np.float32)]

    def forward(self, input_dict, state, seq_lens):
        x = self.encoder(input_dict["obs_flat"].float().reshape(input_dict["obs_flat"].shape[0], -1))
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
