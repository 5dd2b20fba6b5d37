"""Building blocks of training steps (Ray 0.7 called the loops "policy optimizers")."""

from ray.rllib.optimizers.policy_optimizer import PolicyOptimizer
from ray.rllib.optimizers.rollout_ops import (
    collect_samples,
    minibatch_sgd,
    policy_batches,
    standardized,
)

__all__ = ["PolicyOptimizer", "collect_samples", "minibatch_sgd", "policy_batches", "standardized"]
