"""Action distributions over model outputs (PyTorch).

Each is built from the model's output tensor ``inputs`` and offers
``sample()``, ``deterministic_sample()``, ``logp(x)``, ``entropy()`` and
``kl(other)``.
"""

from __future__ import annotations

import numpy as np
import torch


class ActionDistribution:
    def __init__(self, inputs: torch.Tensor, model=None):
        self.inputs = inputs
        self.model = model

    @staticmethod
    def required_model_output_shape(action_space, model_config) -> int:
        raise NotImplementedError

    def sample(self) -> torch.Tensor:
        raise NotImplementedError

    def deterministic_sample(self) -> torch.Tensor:
        raise NotImplementedError

    def logp(self, x: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def entropy(self) -> torch.Tensor:
        raise NotImplementedError

    def kl(self, other: ActionDistribution) -> torch.Tensor:
        raise NotImplementedError


class Categorical(ActionDistribution):
    def __init__(self, inputs, model=None):
        super().__init__(inputs, model)
        self.log_probs = torch.log_softmax(inputs, dim=-1)

    @staticmethod
    def required_model_output_shape(action_space, model_config):
        return int(action_space.n)

    def sample(self):
        # Gumbel-max: argmax(log p + G), G ~ Gumbel(0, 1), is a draw from p -- the same
        # distribution as torch.multinomial, at a fraction of its per-call cost.
        gumbel = torch.rand_like(self.log_probs).clamp_(min=1e-20).log_().neg_().log_()
        return (self.log_probs - gumbel).argmax(dim=-1)

    def deterministic_sample(self):
        return self.log_probs.argmax(dim=-1)

    def logp(self, x):
        return self.log_probs.gather(-1, x.long().unsqueeze(-1)).squeeze(-1)

    def entropy(self):
        return -(self.log_probs.exp() * self.log_probs).sum(-1)

    def kl(self, other):
        return (self.log_probs.exp() * (self.log_probs - other.log_probs)).sum(-1)


class DiagGaussian(ActionDistribution):
    """First half of ``inputs``: means; second half: log standard deviations."""

    def __init__(self, inputs, model=None):
        super().__init__(inputs, model)
        self.mean, self.log_std = torch.chunk(inputs, 2, dim=-1)
        self.std = self.log_std.exp()

    @staticmethod
    def required_model_output_shape(action_space, model_config):
        return int(np.prod(action_space.shape)) * 2

    def sample(self):
        return self.mean + self.std * torch.randn_like(self.mean)

    def deterministic_sample(self):
        return self.mean

    def logp(self, x):
        return (
            -0.5 * (((x - self.mean) / self.std) ** 2).sum(-1)
            - 0.5 * np.log(2.0 * np.pi) * x.shape[-1]
            - self.log_std.sum(-1)
        )

    def entropy(self):
        return (self.log_std + 0.5 * np.log(2.0 * np.pi * np.e)).sum(-1)

    def kl(self, other):
        return (
            other.log_std
            - self.log_std
            + (self.std**2 + (self.mean - other.mean) ** 2) / (2.0 * other.std**2)
            - 0.5
        ).sum(-1)


def _categorical_numpy(inputs: np.ndarray, rng: np.random.Generator, explore: bool):
    """``Categorical``'s sample (Gumbel-max, as there) and its log-probability, in numpy."""
    shifted = inputs - inputs.max(axis=-1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    if explore:
        uniform = np.maximum(rng.random(log_probs.shape, dtype=np.float32), 1e-20)
        actions = (log_probs - np.log(-np.log(uniform))).argmax(axis=-1)
    else:
        actions = log_probs.argmax(axis=-1)
    return actions, np.take_along_axis(log_probs, actions[:, None], axis=-1)[:, 0]


def _diag_gaussian_numpy(inputs: np.ndarray, rng: np.random.Generator, explore: bool):
    """``DiagGaussian``'s sample and its log-density, in numpy."""
    mean, log_std = np.split(inputs, 2, axis=-1)
    std = np.exp(log_std)
    actions = mean + std * rng.standard_normal(mean.shape, dtype=np.float32) if explore \
        else mean
    logp = (-0.5 * (((actions - mean) / std) ** 2).sum(-1)
            - np.float32(0.5 * np.log(2.0 * np.pi) * mean.shape[-1]) - log_std.sum(-1))
    return actions, logp


def numpy_sampler(dist_class):
    """``f(inputs, rng, explore) -> (actions, logp)`` on float32 numpy model outputs,
    drawing what ``dist_class(inputs).sample()`` (or ``deterministic_sample()``) would,
    or None where ``dist_class`` (or what a subclass overrides) has no numpy version."""
    for base, sampler in ((Categorical, _categorical_numpy),
                          (DiagGaussian, _diag_gaussian_numpy)):
        if isinstance(dist_class, type) and issubclass(dist_class, base) and all(
                getattr(dist_class, name) is getattr(base, name)
                for name in ("__init__", "sample", "deterministic_sample", "logp")):
            return sampler
    return None


class Deterministic(ActionDistribution):
    """Always the model output itself (DDPG-style policies)."""

    @staticmethod
    def required_model_output_shape(action_space, model_config):
        return int(np.prod(action_space.shape))

    def sample(self):
        return self.inputs

    def deterministic_sample(self):
        return self.inputs

    def logp(self, x):
        return torch.zeros(x.shape[0])

    def entropy(self):
        return torch.zeros(self.inputs.shape[0])

    def kl(self, other):
        return torch.zeros(self.inputs.shape[0])


class Dirichlet(ActionDistribution):
    """Actions on the simplex (e.g. portfolio weights); inputs are log concentrations."""

    def __init__(self, inputs, model=None):
        super().__init__(inputs, model)
        self.dist = torch.distributions.Dirichlet(torch.exp(inputs).clamp(1e-6, 1e6))

    @staticmethod
    def required_model_output_shape(action_space, model_config):
        return int(np.prod(action_space.shape))

    def sample(self):
        return self.dist.sample()

    def deterministic_sample(self):
        return self.dist.concentration / self.dist.concentration.sum(-1, keepdim=True)

    def logp(self, x):
        x = x.clamp(1e-6, 1.0)
        return self.dist.log_prob(x / x.sum(-1, keepdim=True))

    def entropy(self):
        return self.dist.entropy()

    def kl(self, other):
        return torch.distributions.kl_divergence(self.dist, other.dist)


class MultiCategorical(ActionDistribution):
    """Independent categoricals for a MultiDiscrete space."""

    def __init__(self, inputs, model=None, input_lens=()):
        super().__init__(inputs, model)
        self.cats = [Categorical(x) for x in torch.split(inputs, list(input_lens), dim=-1)]

    def sample(self):
        return torch.stack([c.sample() for c in self.cats], dim=-1)

    def deterministic_sample(self):
        return torch.stack([c.deterministic_sample() for c in self.cats], dim=-1)

    def logp(self, x):
        return sum(c.logp(x[..., i]) for i, c in enumerate(self.cats))

    def entropy(self):
        return sum(c.entropy() for c in self.cats)

    def kl(self, other):
        return sum(a.kl(b) for a, b in zip(self.cats, other.cats))
