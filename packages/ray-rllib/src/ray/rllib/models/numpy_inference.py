"""Acting with small fully connected torch networks in numpy.

A sampling worker runs its policy on one observation (or a few) per env step. For the
default 256x256 MLPs, torch spends most of that call in per-operator dispatch, not in
arithmetic: both networks take about 75 us through ``nn.Module`` calls against about
20 us for the same float32 products in numpy. :class:`NumpyMLP` runs an
``nn.Sequential`` of ``Linear`` layers and elementwise activations on numpy *views* of
the layers' parameters, so weights that the optimizer or ``load_state_dict`` update in
place are seen at once, with no copy; a parameter replaced by a new tensor (a new
storage) is noticed and the views are taken again.

Only plain stacks are supported; :func:`numpy_mlp` returns None for anything else
(layer norm, other layer types, a model off the CPU), and the caller keeps torch.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn


def _tanh(x: np.ndarray) -> np.ndarray:
    return np.tanh(x, out=x)


def _relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, 0.0, out=x)


def _elu(x: np.ndarray) -> np.ndarray:
    negative = x < 0
    x[negative] = np.expm1(x[negative])
    return x


_ACTIVATIONS = {nn.Tanh: _tanh, nn.ReLU: _relu, nn.ELU: _elu, nn.Identity: None}


class NumpyMLP:
    """``forward(x)`` of an ``nn.Sequential`` MLP, computed in float32 numpy."""

    def __init__(self, layers: list[tuple[nn.Linear, object]]):
        self._layers = layers  # (Linear, activation or None) pairs, in order
        self._views: list = []
        self._pointers: list[int] = []
        self._take_views()

    def _take_views(self) -> None:
        params = [(linear.weight, linear.bias) for linear, _ in self._layers]
        self._views = [(w.detach().numpy().T, None if b is None else b.detach().numpy())
                       for w, b in params]
        self._pointers = self._storage()

    def _storage(self) -> list[int]:
        """Where each layer's weight and bias live now (a replaced tensor moves)."""
        return [p.data_ptr() if p is not None else 0
                for linear, _ in self._layers for p in (linear.weight, linear.bias)]

    def _current(self) -> bool:
        return self._storage() == self._pointers

    def __call__(self, x: np.ndarray) -> np.ndarray:
        if not self._current():
            self._take_views()
        for (weight_t, bias), (_, activation) in zip(self._views, self._layers):
            x = x @ weight_t
            if bias is not None:
                x += bias
            if activation is not None:
                x = activation(x)
        return x


def numpy_mlp(sequential: nn.Module) -> NumpyMLP | None:
    """A :class:`NumpyMLP` for ``sequential``, or None if it is not a plain float32 CPU
    stack of ``Linear`` layers and tanh/ReLU/ELU/identity activations."""
    if not isinstance(sequential, nn.Sequential):
        return None
    layers: list[tuple[nn.Linear, object]] = []
    for module in sequential:
        if type(module) is nn.Linear:
            if module.weight.device.type != "cpu" or module.weight.dtype != torch.float32:
                return None
            layers.append((module, None))
        elif type(module) in _ACTIVATIONS and layers and layers[-1][1] is None:
            layers[-1] = (layers[-1][0], _ACTIVATIONS[type(module)])
        else:
            return None
    return NumpyMLP(layers) if layers else None


__all__ = ["NumpyMLP", "numpy_mlp"]
