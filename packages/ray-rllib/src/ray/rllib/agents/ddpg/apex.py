"""Ape-X DDPG: DDPG's policy on Ape-X's distributed prioritized replay (see dqn/apex.py).

Per-worker exploration scales each worker's action noise by its Ape-X epsilon.
"""

from __future__ import annotations

from ray.rllib.agents.ddpg.ddpg import DEFAULT_CONFIG as DDPG_CONFIG
from ray.rllib.agents.ddpg.ddpg import DDPGTorchPolicy
from ray.rllib.agents.dqn.apex import ApexTrainer
from ray.rllib.utils.merge import merge_dicts

APEX_DDPG_DEFAULT_CONFIG = merge_dicts(DDPG_CONFIG, {
    "optimizer": {"max_weight_sync_delay": 400, "num_replay_buffer_shards": 4,
                  "debug": False},
    "n_step": 3,
    "num_gpus": 0,
    "num_workers": 32,
    "buffer_size": 2000000,
    "learning_starts": 50000,
    "train_batch_size": 512,
    "sample_batch_size": 50,
    "target_network_update_freq": 500000,
    "timesteps_per_iteration": 25000,
    "per_worker_exploration": True,
    "worker_side_prioritization": True,
    "min_iter_time_s": 30,
})


class ApexDDPGTrainer(ApexTrainer):
    _name = "APEX_DDPG"
    _default_config = APEX_DDPG_DEFAULT_CONFIG
    _policy = DDPGTorchPolicy

    def _maybe_update_target(self) -> None:
        if self.config["target_network_update_freq"] > 0:  # 0: the policy does it itself
            ApexTrainer._maybe_update_target(self)


__all__ = ["APEX_DDPG_DEFAULT_CONFIG", "ApexDDPGTrainer"]
