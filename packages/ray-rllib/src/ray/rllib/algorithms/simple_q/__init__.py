from ray.rllib.agents.dqn import SimpleQTrainer as SimpleQ
from ray.rllib.algorithms.off_policy_config import OffPolicyConfig


class SimpleQConfig(OffPolicyConfig):
    """Builder for :class:`SimpleQ` (Ray 2.x API)."""

    algo_class = SimpleQ


__all__ = ["SimpleQ", "SimpleQConfig"]
