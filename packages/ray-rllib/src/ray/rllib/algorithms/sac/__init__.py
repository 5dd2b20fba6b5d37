from ray.rllib.agents.sac import SACTrainer as SAC
from ray.rllib.algorithms.off_policy_config import OffPolicyConfig


class SACConfig(OffPolicyConfig):
    """Builder for :class:`SAC` (Ray 2.x API)."""

    algo_class = SAC


__all__ = ["SAC", "SACConfig"]
