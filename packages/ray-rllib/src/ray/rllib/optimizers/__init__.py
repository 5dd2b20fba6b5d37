"""Building blocks of training steps (Ray 0.7 called the loops "policy optimizers")."""

from ray.rllib.optimizers.async_gradients_optimizer import AsyncGradientsOptimizer
from ray.rllib.optimizers.async_replay_optimizer import AsyncReplayOptimizer
from ray.rllib.optimizers.async_samples_optimizer import AsyncSamplesOptimizer
from ray.rllib.optimizers.multi_gpu_optimizer import LocalMultiGPUOptimizer
from ray.rllib.optimizers.policy_optimizer import PolicyOptimizer
from ray.rllib.optimizers.replay_buffer import PrioritizedReplayBuffer, ReplayBuffer
from ray.rllib.optimizers.rollout_ops import (
    collect_samples,
    minibatch_sgd,
    policy_batches,
    standardized,
)
from ray.rllib.optimizers.sync_batch_replay_optimizer import SyncBatchReplayOptimizer
from ray.rllib.optimizers.sync_replay_optimizer import SyncReplayOptimizer
from ray.rllib.optimizers.sync_samples_optimizer import SyncSamplesOptimizer

__all__ = [
    "AsyncGradientsOptimizer",
    "AsyncReplayOptimizer",
    "AsyncSamplesOptimizer",
    "LocalMultiGPUOptimizer",
    "PolicyOptimizer",
    "PrioritizedReplayBuffer",
    "ReplayBuffer",
    "SyncBatchReplayOptimizer",
    "SyncReplayOptimizer",
    "SyncSamplesOptimizer",
    "collect_samples",
    "minibatch_sgd",
    "policy_batches",
    "standardized",
]
