"""Small torch helpers shared by the policies."""

from __future__ import annotations

import torch


def make_adam(params, lr: float, eps: float = 1e-8, **kwargs) -> torch.optim.Adam:
    """Adam as one fused kernel per step (CPU and CUDA): the same update as the reference
    loop, 2x faster than ``foreach`` for RLlib's small MLPs, where the optimizer step is a
    third of a minibatch's time. Falls back to ``foreach`` where fused is not built."""
    params = list(params)
    try:
        return FusedAdam(params, lr=lr, eps=eps, fused=True, **kwargs)
    except (RuntimeError, ValueError, TypeError):  # fused unsupported for these params
        return torch.optim.Adam(params, lr=lr, eps=eps, foreach=True, **kwargs)


class FusedAdam(torch.optim.Adam):
    """``torch.optim.Adam(fused=True)`` whose ``step()`` calls the fused kernel directly
    once every parameter has its state: the same kernel on the same arguments as
    ``Adam.step`` (so the same update, bit for bit), without the ~0.1 ms of Python
    bookkeeping per step that is a tenth of a small MLP's minibatch on a CPU.

    The direct call is taken only in the plain case (no closure, amsgrad, maximize,
    tensor lr, capturable or differentiable; every parameter of a group has a gradient
    and an initialised state, on one device and dtype); anything else -- the first
    step, which creates the state, included -- goes through ``Adam.step``.
    """

    _kernel = getattr(torch, "_fused_adam_", None)

    def step(self, closure=None):
        if closure is not None or self._kernel is None:
            return super().step(closure)
        calls = []
        for group in self.param_groups:
            call = self._direct_call(group)
            if call is None:
                return super().step()
            calls.append(call)
        with torch.no_grad():
            for group, (params, grads, exp_avgs, exp_avg_sqs, steps) in zip(self.param_groups,
                                                                           calls):
                if not params:
                    continue
                beta1, beta2 = group["betas"]
                torch._foreach_add_(steps, 1)
                self._kernel(params, grads, exp_avgs, exp_avg_sqs, [], steps, amsgrad=False,
                             lr=group["lr"], beta1=beta1, beta2=beta2,
                             weight_decay=group["weight_decay"], eps=group["eps"],
                             maximize=False)
        return None

    def _direct_call(self, group):
        if (not group.get("fused") or group.get("amsgrad") or group.get("maximize")
                or group.get("capturable") or group.get("differentiable")
                or group.get("decoupled_weight_decay") or isinstance(group["lr"], torch.Tensor)
                or any(isinstance(b, torch.Tensor) for b in group["betas"])):
            return None
        params, grads, exp_avgs, exp_avg_sqs, steps = [], [], [], [], []
        device = dtype = None
        for param in group["params"]:
            grad = param.grad
            state = self.state.get(param)
            if grad is None or not state or grad.is_sparse:
                return None
            if device is None:
                device, dtype = param.device, param.dtype
            elif param.device != device or param.dtype != dtype:
                return None
            params.append(param)
            grads.append(grad)
            exp_avgs.append(state["exp_avg"])
            exp_avg_sqs.append(state["exp_avg_sq"])
            steps.append(state["step"])
        return params, grads, exp_avgs, exp_avg_sqs, steps


def policy_device(num_gpus: float, fake_gpus: bool = False, key: str = "num_gpus"):
    """The torch device of a policy given the GPUs its process has (``num_gpus`` for the
    learner in the driver, ``num_gpus_per_worker`` for sampling workers).

    No GPUs: the CPU. GPUs and CUDA: ``cuda:0`` (the first device Ray made visible to
    the process). GPUs asked for but no CUDA: the CPU with ``_fake_gpus`` (to exercise the
    GPU code paths on a CPU machine), otherwise an error naming ``key``.
    """
    if not num_gpus or num_gpus <= 0:
        return torch.device("cpu")
    if torch.cuda.is_available():
        return torch.device("cuda", 0)
    if fake_gpus:
        return torch.device("cpu")
    raise ValueError(
        f"{key}={num_gpus} but no CUDA device is visible to this process: set {key}=0 to "
        "run on the CPU (or _fake_gpus=True to simulate the GPUs with CPU devices)")


__all__ = ["FusedAdam", "make_adam", "policy_device"]
