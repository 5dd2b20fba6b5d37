"""RLlib: scalable reinforcement learning on Ray (PyTorch, gymnasium).

The public surface, mirroring Ray 0.7's documented import paths::

    ray.rllib.agents.{pg, a3c, ppo}     Trainers (each a ray.tune Trainable)
    ray.rllib.evaluation                RolloutWorker, SampleBatch, compute_advantages, ...
    ray.rllib.policy                    Policy, TorchPolicy, build_torch_policy
    ray.rllib.models                    ModelCatalog, preprocessors, action distributions
    ray.rllib.env                       BaseEnv, VectorEnv, MultiAgentEnv, ExternalEnv, EnvContext
"""

from ray.rllib import _require_core  # noqa: F401
from ray.rllib.env.base_env import BaseEnv
from ray.rllib.env.env_context import EnvContext
from ray.rllib.env.external_env import ExternalEnv
from ray.rllib.env.multi_agent_env import MultiAgentEnv
from ray.rllib.env.vector_env import VectorEnv
from ray.rllib.evaluation.rollout_worker import RolloutWorker
from ray.rllib.policy.policy import Policy
from ray.rllib.policy.sample_batch import MultiAgentBatch, SampleBatch
from ray.rllib.policy.torch_policy import TorchPolicy


def _register_with_tune():
    """Make ``tune.run("PPO")`` and ``rllib train --run PPO`` find the Trainers."""
    from ray.rllib.agents.registry import register_with_tune

    register_with_tune()


def _register_all():
    """(Re-)register every algorithm with Tune, e.g. after ``ray.shutdown()`` (0.7 API)."""
    from ray.rllib.agents.registry import _all_algorithms
    from ray.tune import registry

    for name, loader in _all_algorithms().items():
        registry.register_lazy(registry.TRAINABLE_CLASS, name, loader)


_register_with_tune()

__all__ = [
    "BaseEnv",
    "EnvContext",
    "ExternalEnv",
    "MultiAgentBatch",
    "MultiAgentEnv",
    "Policy",
    "RolloutWorker",
    "SampleBatch",
    "TorchPolicy",
    "VectorEnv",
]
