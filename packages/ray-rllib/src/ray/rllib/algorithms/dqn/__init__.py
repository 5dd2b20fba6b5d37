from ray.rllib.agents.dqn import DQNTrainer as DQN
from ray.rllib.algorithms.off_policy_config import OffPolicyConfig


class DQNConfig(OffPolicyConfig):
    """Builder for :class:`DQN` (Ray 2.x API)."""

    algo_class = DQN


__all__ = ["DQN", "DQNConfig"]
