"""Ape-X DDPG: DDPG's policy on Ape-X's distributed prioritized replay (see dqn/apex.py).

Per-worker exploration scales each worker's action noise by its Ape-X epsilon.
"""

from __future__ import annotations

from ray.rllib.agents.ddpg.ddpg import DEFAULT_CONFIG as DDPG_CONFIG
from ray.rllib.agents.ddpg.ddpg import DDPGTorchPolicy
from ray.rllib.agents.dqn.apex import APEX_OVERRIDES, ApexTrainer
from ray.rllib.utils.merge import merge_dicts

APEX_DDPG_DEFAULT_CONFIG = merge_dicts(DDPG_CONFIG, APEX_OVERRIDES)


class ApexDDPGTrainer(ApexTrainer):
    _name = "APEX_DDPG"
    _default_config = APEX_DDPG_DEFAULT_CONFIG
    _policy = DDPGTorchPolicy

    def _maybe_update_target(self) -> None:
        if self.config["target_network_update_freq"] > 0:  # 0: the policy does it itself
            ApexTrainer._maybe_update_target(self)


__all__ = ["APEX_DDPG_DEFAULT_CONFIG", "ApexDDPGTrainer"]
