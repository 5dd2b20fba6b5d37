from ray.rllib.agents.ddpg import DDPGTrainer as DDPG
from ray.rllib.algorithms.off_policy_config import OffPolicyConfig


class DDPGConfig(OffPolicyConfig):
    """Builder for :class:`DDPG` (Ray 2.x API)."""

    algo_class = DDPG


__all__ = ["DDPG", "DDPGConfig"]
