"""Parameter-space noise for exploration (Plappert et al. 2018, arXiv:1706.01905).

Shared by DQN and DDPG/TD3 (``parameter_noise: True``). Instead of randomising
actions, the policy acts through a perturbed copy of its network

    theta~ = theta + sigma * eps,    eps ~ N(0, I) drawn at the start of every episode,

rebuilt from the *current* weights at every action, so the acting network follows
learning within an episode while its noise direction ``eps`` stays fixed (the
episode explores consistently). Layer-norm gains and biases are left alone (the
method relies on layer normalisation to make one ``sigma`` fit every layer).

``sigma`` adapts after every sampled fragment, measured on the last 64 states sampled
(a fragment can be a single state, and a one-state distance would make sigma settle
where the *median* state's distance meets the target, not the typical distance):

    sigma <- sigma * 1.01   if d(pi, pi~) <= delta
    sigma <- sigma / 1.01   otherwise

* DQN: ``d`` is the mean KL between ``softmax(Q)`` and ``softmax(Q~)``, and
  ``delta = -log(1 - eps + eps / |A|)``, the KL of an eps-greedy policy from the
  greedy one (eps still follows its schedule; it only sets the target);
* DDPG: ``d`` is the RMS distance between the perturbed and unperturbed actions,
  ``delta`` the RMS of the action noise it replaces (see ``ddpg.py``).
"""

from __future__ import annotations

import copy
import math

import numpy as np
import torch
from torch import nn

import ray

INITIAL_SIGMA = 0.1  # sigma before any adaptation (it moves by 1% per sampled fragment)
ADAPTATION_FACTOR = 1.01  # Plappert et al.'s alpha
ADAPTATION_WINDOW = 64  # the distance is measured on this many recent states


def adapt_sigma(sigma: float, distance: float, target: float,
                factor: float = ADAPTATION_FACTOR) -> float:
    """One adaptation step: grow ``sigma`` while the policies are closer than ``target``."""
    return sigma * factor if distance <= target else sigma / factor


def epsilon_greedy_kl(epsilon: float, num_actions: int) -> float:
    """``KL(greedy || eps-greedy) = -log(1 - eps + eps / |A|)``: DQN's distance target."""
    return -math.log(1.0 - epsilon + epsilon / num_actions)


def softmax_kl(q: torch.Tensor, q_perturbed: torch.Tensor) -> float:
    """Mean over the batch of ``KL(softmax(q) || softmax(q_perturbed))`` (rows = states)."""
    log_p = torch.log_softmax(q.double(), dim=-1)
    log_p_perturbed = torch.log_softmax(q_perturbed.double(), dim=-1)
    return float((log_p.exp() * (log_p - log_p_perturbed)).sum(-1).mean())


def rms_distance(actions: torch.Tensor, perturbed_actions: torch.Tensor) -> float:
    """``sqrt(mean((a - a~)^2))`` over every state and action dimension."""
    return float((actions.double() - perturbed_actions.double()).pow(2).mean().sqrt())


class ParameterNoise:
    """A perturbed copy of ``module``, its noise direction and the adaptive ``sigma``.

    ``network()`` returns the copy with ``theta + sigma * eps`` written into it (from
    ``module``'s current weights); ``resample()`` draws a new ``eps``; ``adapt()`` moves
    ``sigma``. Only ``sigma`` is state worth checkpointing (``eps`` is redrawn per episode).
    """

    def __init__(self, module: nn.Module, sigma: float = INITIAL_SIGMA):
        if not sigma > 0:
            raise ValueError(f"the initial parameter-noise sigma must be positive, got {sigma}")
        self.sigma = float(sigma)
        self.module = module
        self.perturbed = copy.deepcopy(module).requires_grad_(False)
        self._source = list(module.parameters())
        self._copy = list(self.perturbed.parameters())
        self._source_buffers = list(module.buffers())
        self._copy_buffers = list(self.perturbed.buffers())
        fixed = {id(p) for m in module.modules() if isinstance(m, nn.LayerNorm)
                 for p in m.parameters()}
        noisy = [i for i, p in enumerate(self._source) if id(p) not in fixed]
        self._noisy_source = [self._source[i] for i in noisy]
        self._noisy_copy = [self._copy[i] for i in noisy]
        self._noise: list[torch.Tensor] = []
        self._recent_states: np.ndarray | None = None
        self.resample()

    def resample(self) -> None:
        """Draw a new noise direction ``eps ~ N(0, I)`` (at the start of an episode)."""
        with torch.no_grad():
            self._noise = [torch.randn_like(p) for p in self._noisy_source]

    def resample_on_new_episodes(self, episodes) -> None:
        """Resample when any of ``episodes`` (the sampler's, per row) is at its first step."""
        if episodes and any(getattr(ep, "length", None) == 0 for ep in episodes):
            self.resample()

    def network(self) -> nn.Module:
        """The perturbed network for the module's current weights (no gradients)."""
        with torch.no_grad():
            torch._foreach_copy_(self._copy, self._source)
            if self._source_buffers:
                torch._foreach_copy_(self._copy_buffers, self._source_buffers)
            torch._foreach_add_(self._noisy_copy, self._noise, alpha=self.sigma)
        return self.perturbed

    def measurement_states(self, states) -> np.ndarray:
        """``states`` appended to the recent ones: the last ``ADAPTATION_WINDOW`` rows."""
        states = np.asarray(states)
        recent = self._recent_states
        if recent is not None and recent.shape[1:] == states.shape[1:]:
            states = np.concatenate([recent, states])
        self._recent_states = states[-ADAPTATION_WINDOW:]
        return self._recent_states

    def adapt(self, distance: float, target: float) -> None:
        self.sigma = adapt_sigma(self.sigma, distance, target)

    def get_state(self) -> dict:
        return {"sigma": self.sigma}

    def set_state(self, state: dict) -> None:
        self.sigma = float(state["sigma"])


class ParameterNoiseMixin:
    """For policies with ``self.param_noise`` (a ParameterNoise or None): ``sigma`` in
    ``get_state``/``set_state`` (so checkpoints carry it) and in ``param_noise_sigma()``."""

    param_noise: ParameterNoise | None = None

    def param_noise_sigma(self) -> float | None:
        return None if self.param_noise is None else self.param_noise.sigma

    def get_state(self) -> dict:
        state = super().get_state()
        if self.param_noise is not None:
            state["param_noise"] = self.param_noise.get_state()
        return state

    def set_state(self, state) -> None:
        super().set_state(state)
        if self.param_noise is not None and state.get("param_noise"):
            self.param_noise.set_state(state["param_noise"])


def report_param_noise_sigma(workers, learner_stats: dict) -> None:
    """Put each policy's ``param_noise_sigma`` into ``learner_stats[policy_id]``.

    Sampling workers adapt their own sigma. With remote workers the figure is their
    mean, which is also written into the driver's policies (which do not sample), so
    that checkpoints carry it; ``broadcast_param_noise_sigma`` hands it back on restore.
    """
    remotes = workers.remote_workers()
    if not remotes:
        per_worker = [workers.local_worker().foreach_policy(_policy_sigma)]
    else:
        per_worker = ray.get([w.foreach_policy.remote(_policy_sigma) for w in remotes])
    sigmas: dict = {}
    for worker_sigmas in per_worker:
        for policy_id, sigma in worker_sigmas:
            if sigma is not None:
                sigmas.setdefault(policy_id, []).append(sigma)
    means = {pid: sum(values) / len(values) for pid, values in sigmas.items()}
    for policy_id, sigma in means.items():
        learner_stats.setdefault(policy_id, {})["param_noise_sigma"] = sigma
    if remotes:
        workers.local_worker().foreach_policy(
            lambda p, pid: _set_sigma(p, means[pid]) if pid in means else None)


def broadcast_param_noise_sigma(workers) -> None:
    """Give every remote worker the driver's sigmas (after restoring a checkpoint)."""
    sigmas = dict(workers.local_worker().foreach_policy(_policy_sigma))
    sigmas = {pid: sigma for pid, sigma in sigmas.items() if sigma is not None}
    if sigmas and workers.remote_workers():
        ray.get([w.foreach_policy.remote(
            lambda p, pid: _set_sigma(p, sigmas[pid]) if pid in sigmas else None)
            for w in workers.remote_workers()])


def _policy_sigma(policy, policy_id):
    sigma = getattr(policy, "param_noise_sigma", None)
    return policy_id, (sigma() if sigma else None)


def _set_sigma(policy, sigma: float) -> None:
    with policy.lock:
        policy.param_noise.sigma = sigma


__all__ = ["ADAPTATION_FACTOR", "ADAPTATION_WINDOW", "INITIAL_SIGMA", "ParameterNoise", "ParameterNoiseMixin",
           "adapt_sigma", "broadcast_param_noise_sigma", "epsilon_greedy_kl",
           "report_param_noise_sigma", "rms_distance", "softmax_kl"]
