"""Ape-X DQN (Horgan et al. 2018, arXiv:1803.00933): DQN on distributed prioritized replay.

Many rollout workers, each with its own fixed epsilon (``per_worker_exploration``:
worker i of N explores with ``0.4 ** (1 + 7 i / (N - 1))``), compute initial
priorities for their own samples (``worker_side_prioritization``) and feed
replay-buffer actors; one learner (a thread in the driver) trains on replayed
batches and sends new priorities back (``AsyncReplayOptimizer``). Workers pull
fresh weights every ``optimizer.max_weight_sync_delay`` of their own steps.
"""

from __future__ import annotations

from ray.rllib.agents.dqn.dqn import DEFAULT_CONFIG as DQN_CONFIG
from ray.rllib.agents.dqn.dqn import DQNTrainer
from ray.rllib.optimizers.async_replay_optimizer import AsyncReplayOptimizer
from ray.rllib.utils.merge import merge_dicts

# Ray 0.7's Ape-X defaults, except num_gpus (0: the learner runs on CPU unless asked).
# Shared by Ape-X DQN and Ape-X DDPG.
APEX_OVERRIDES = {
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
}
APEX_DEFAULT_CONFIG = merge_dicts(DQN_CONFIG, APEX_OVERRIDES)

# Global vars (the timestep driving schedules) go to remote workers this often.
_GLOBAL_VARS_EVERY_STEPS = 1000


def apex_optimizer_args(config: dict) -> dict:
    keys = ("learning_starts", "buffer_size", "prioritized_replay", "prioritized_replay_alpha",
            "prioritized_replay_beta", "prioritized_replay_eps", "train_batch_size",
            "sample_batch_size")
    return dict({k: config[k] for k in keys}, seed=config["seed"], **config["optimizer"])


class ApexTrainer(DQNTrainer):
    _workers_sample_while_learning = True
    _name = "APEX"
    _default_config = APEX_DEFAULT_CONFIG

    def _make_optimizer(self, config):
        self._last_global_vars_step = 0
        return AsyncReplayOptimizer(self.workers, **apex_optimizer_args(config))

    def training_step(self) -> dict:
        before = self.optimizer.num_steps_sampled
        stats = self.optimizer.step()
        self.steps_sampled += self.optimizer.num_steps_sampled - before
        self.steps_trained = self.optimizer.num_steps_trained
        self._maybe_update_target()
        if self.steps_sampled - self._last_global_vars_step >= _GLOBAL_VARS_EVERY_STEPS:
            self.set_global_vars()
            self._last_global_vars_step = self.steps_sampled
        return dict(stats)

    def update_target(self) -> None:
        super().update_target()
        if self.config["worker_side_prioritization"]:
            # Workers' td-errors (their initial priorities) use their own target nets.
            tau = self.config.get("tau")
            for worker in self.workers.remote_workers():
                worker.foreach_trainable_policy.remote(
                    lambda p, _pid: p.update_target(tau))

    def _collect_metrics(self) -> dict:
        result = super()._collect_metrics()
        self._optimizer_stats = self.optimizer.stats()
        return result

    def _train(self):
        result = super()._train()
        result["info"].update(self._optimizer_stats)
        return result


__all__ = ["APEX_DEFAULT_CONFIG", "ApexTrainer"]
