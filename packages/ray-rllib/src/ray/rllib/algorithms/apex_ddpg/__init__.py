from ray.rllib.agents.ddpg import ApexDDPGTrainer as ApexDDPG
from ray.rllib.algorithms.off_policy_config import OffPolicyConfig


class ApexDDPGConfig(OffPolicyConfig):
    """Builder for :class:`ApexDDPG` (Ray 2.x API)."""

    algo_class = ApexDDPG


__all__ = ["ApexDDPG", "ApexDDPGConfig"]
