from ray.rllib.agents.ddpg import TD3Trainer as TD3
from ray.rllib.algorithms.off_policy_config import OffPolicyConfig


class TD3Config(OffPolicyConfig):
    """Builder for :class:`TD3` (Ray 2.x API)."""

    algo_class = TD3


__all__ = ["TD3", "TD3Config"]
