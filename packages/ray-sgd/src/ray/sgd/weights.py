"""A PyTorch model's weights as one flat numpy vector, or as a dict of arrays.

This is the PyTorch counterpart of Ray 0.7's ``TensorFlowVariables``: it lets
weights travel through the object store (``ray.put(get_flat(model))``) and be
loaded into another copy of the model (``set_flat(other, flat)``).

The flat vector holds the *parameters* (what an optimizer updates), in
``model.parameters()`` order, as float32 unless all parameters share another
floating dtype; it has the same layout as :func:`get_flat_grad`, so
``set_flat(model, get_flat(model) - lr * get_flat_grad(model))`` is one SGD step.
The dict form (:func:`get_weights`) is the whole ``state_dict``, buffers included
(batch-norm statistics), keyed by name.
"""

from __future__ import annotations

import numpy as np
import torch

__all__ = [
    "TorchVariables",
    "get_flat",
    "get_flat_grad",
    "get_flat_size",
    "get_weights",
    "set_flat",
    "set_flat_grad",
    "set_weights",
]


def _parameters(model: torch.nn.Module) -> list[torch.Tensor]:
    return list(model.parameters())


def _flat_dtype(params: list[torch.Tensor]) -> np.dtype:
    dtypes = {p.dtype for p in params}
    if len(dtypes) == 1:
        return torch.empty(0, dtype=dtypes.pop()).numpy().dtype
    return np.dtype(np.float32)


def get_flat_size(model: torch.nn.Module) -> int:
    """The number of elements of :func:`get_flat`'s vector."""
    return sum(p.numel() for p in _parameters(model))


def get_flat(model: torch.nn.Module) -> np.ndarray:
    """Return a copy of the model's parameters as one 1-D numpy array."""
    params = _parameters(model)
    if not params:
        return np.zeros(0, dtype=np.float32)
    with torch.no_grad():
        flat = torch.cat([p.detach().reshape(-1).cpu() for p in params])
    return flat.numpy().astype(_flat_dtype(params), copy=True)


def set_flat(model: torch.nn.Module, flat: np.ndarray) -> None:
    """Load :func:`get_flat`'s layout back into the model, in place."""
    _copy_into(_parameters(model), flat, what="weights", grads=False)


def get_flat_grad(model: torch.nn.Module) -> np.ndarray:
    """The parameters' gradients in :func:`get_flat`'s layout (zeros where none)."""
    params = _parameters(model)
    dtype = _flat_dtype(params)
    if not params:
        return np.zeros(0, dtype=dtype)
    parts = [
        (p.grad.detach() if p.grad is not None else torch.zeros_like(p)).reshape(-1).cpu()
        for p in params
    ]
    return torch.cat(parts).numpy().astype(dtype, copy=True)


def set_flat_grad(model: torch.nn.Module, flat: np.ndarray) -> None:
    """Overwrite every parameter's ``.grad`` from one flat vector."""
    _copy_into(_parameters(model), flat, what="gradients", grads=True)


def _copy_into(params: list[torch.Tensor], flat: np.ndarray, *, what: str, grads: bool) -> None:
    flat = np.asarray(flat)
    expected = sum(p.numel() for p in params)
    if flat.ndim != 1 or flat.size != expected:
        raise ValueError(
            f"cannot load {what} of shape {flat.shape} into a model with {expected} "
            f"parameter elements: pass the 1-D vector that get_flat() returns for "
            f"the same architecture"
        )
    source = torch.from_numpy(np.array(flat, copy=True))  # ray.get arrays are read-only
    offset = 0
    with torch.no_grad():
        for p in params:
            chunk = source[offset : offset + p.numel()].view(p.shape).to(p.device, p.dtype)
            offset += p.numel()
            if grads:
                if p.grad is None:
                    p.grad = chunk.clone()
                else:
                    p.grad.copy_(chunk)
            else:
                p.copy_(chunk)


def get_weights(model: torch.nn.Module) -> dict[str, np.ndarray]:
    """The whole ``state_dict`` (parameters and buffers) as numpy arrays."""
    return {
        name: tensor.detach().cpu().numpy().copy() for name, tensor in model.state_dict().items()
    }


def set_weights(model: torch.nn.Module, weights: dict[str, np.ndarray]) -> None:
    """Load :func:`get_weights`' dict; unknown or missing names raise ``KeyError``."""
    own = model.state_dict()
    missing = sorted(set(own) - set(weights))
    unknown = sorted(set(weights) - set(own))
    if missing or unknown:
        raise KeyError(
            f"weights do not match the model: missing {missing}, unknown {unknown}; "
            f"pass the dict get_weights() returns for the same architecture"
        )
    model.load_state_dict({name: torch.as_tensor(np.asarray(w)) for name, w in weights.items()})


class TorchVariables:
    """Ray 0.7's ``TensorFlowVariables`` interface over a PyTorch module.

    ``get_weights``/``set_weights`` use a dict of arrays (the whole state);
    ``get_flat``/``set_flat`` one vector of the parameters.
    """

    def __init__(self, model: torch.nn.Module):
        self.model = model

    @property
    def variables(self) -> dict[str, torch.Tensor]:
        return dict(self.model.named_parameters())

    def get_flat_size(self) -> int:
        return get_flat_size(self.model)

    def get_flat(self) -> np.ndarray:
        return get_flat(self.model)

    def set_flat(self, new_weights: np.ndarray) -> None:
        set_flat(self.model, new_weights)

    def get_weights(self) -> dict[str, np.ndarray]:
        return get_weights(self.model)

    def set_weights(self, new_weights: dict[str, np.ndarray]) -> None:
        set_weights(self.model, new_weights)
