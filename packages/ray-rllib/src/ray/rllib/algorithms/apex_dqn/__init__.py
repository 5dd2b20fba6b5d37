from ray.rllib.agents.dqn import ApexTrainer as ApexDQN
from ray.rllib.algorithms.off_policy_config import OffPolicyConfig


class ApexDQNConfig(OffPolicyConfig):
    """Builder for :class:`ApexDQN` (Ray 2.x API)."""

    algo_class = ApexDQN


__all__ = ["ApexDQN", "ApexDQNConfig"]
