"""Augmented Random Search (Mania et al. 2018, arXiv:1803.07055), version V2-t.

A linear policy on normalized observations (``MeanStdFilter``). Each iteration
evaluates ``num_rollouts`` antithetic perturbations ``theta +/- nu * delta_k``
(one episode each), keeps the ``rollouts_used`` directions with the best
``max(r+, r-)`` and steps

    theta += alpha / (b * sigma_R) * sum_k (r+_k - r-_k) delta_k

where ``sigma_R`` is the standard deviation of the kept returns. The workers,
policy and shared noise table are ES's (``agents/es/es.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ray.rllib.agents.config import algorithm_defaults, typed_view, with_common_config
from ray.rllib.agents.es.es import ESTrainer, batched_weighted_sum


@dataclass(frozen=True)
class ARSConfig:
    """ARS settings (Ray 0.7 defaults except noise_size), on COMMON_CONFIG."""

    noise_stdev: float = 0.02  # nu: std deviation of the parameter noise
    num_rollouts: int = 32  # perturbation directions per iteration
    rollouts_used: int = 32  # best directions kept in the update (b)
    num_workers: int = 2
    sgd_stepsize: float = 0.01  # alpha
    observation_filter: str = "MeanStdFilter"
    noise_size: int = 25_000_000  # floats in the shared table (0.7: 250M = 1 GB)
    eval_prob: float = 0.03  # chance a worker runs an unperturbed evaluation episode
    report_length: int = 10  # iterations averaged into episode_reward_mean
    offset: float = 0.0  # subtracted from every step's reward (ARS's survival-bonus shift)
    episode_horizon: int | None = None
    # A linear policy by default, as in the paper.
    model: dict = field(default_factory=lambda: {"fcnet_hiddens": []})


DEFAULT_CONFIG = with_common_config(algorithm_defaults(ARSConfig))


class ARSTrainer(ESTrainer):
    _name = "ARS"
    _default_config = DEFAULT_CONFIG

    def _init(self, config, env_creator):
        cfg = typed_view(ARSConfig, config)
        if not 0 < cfg.rollouts_used <= cfg.num_rollouts:
            raise ValueError(f"rollouts_used ({cfg.rollouts_used}) must be in "
                             f"1..num_rollouts ({cfg.num_rollouts})")
        super()._init(config, env_creator)
        self.optimizer = None  # plain SGD steps

    def training_step(self) -> dict:
        cfg = typed_view(ARSConfig, self.config)
        workers = max(1, len(self.remote_workers))
        per_call = max(1, -(-cfg.num_rollouts // workers))  # ceil: one call per worker
        results = self._collect(2 * cfg.num_rollouts, 0, num_perturbations=per_call)
        indices = np.array([i for r in results for i in r.noise_indices])[:cfg.num_rollouts]
        returns = np.array([x for r in results for x in r.noisy_returns],
                           dtype=np.float64)[:cfg.num_rollouts]
        lengths = np.array([x for r in results for x in r.noisy_lengths])[:cfg.num_rollouts]
        self._merge_filters(results)
        shifted = returns - cfg.offset * lengths
        keep = np.argsort(-np.max(shifted, axis=1))[:cfg.rollouts_used]
        kept = shifted[keep]
        sigma_r = max(float(kept.std()), 1e-8)
        g = batched_weighted_sum(kept[:, 0] - kept[:, 1], self.noise, indices[keep],
                                 self.policy.num_params) / (cfg.rollouts_used * sigma_r)
        update = cfg.sgd_stepsize * g
        self.theta = self.theta + update
        self.policy.set_flat_weights(self.theta.astype(np.float32))
        return self._record(results, returns, lengths, {
            "weights_norm": float(np.square(self.theta).sum()),
            "grad_norm": float(np.square(g).sum()),
            "return_std": sigma_r,
        })


__all__ = ["ARSConfig", "ARSTrainer", "DEFAULT_CONFIG"]
