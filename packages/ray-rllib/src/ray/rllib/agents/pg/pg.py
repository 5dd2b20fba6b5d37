"""Vanilla policy gradient (REINFORCE; Williams 1992).

Maximize E[log pi(a_t|s_t) * G_t], where G_t is the discounted return from
step t. Each iteration samples ``train_batch_size`` steps and takes one
gradient step.
"""

from __future__ import annotations

from dataclasses import dataclass

from ray.rllib.agents.config import algorithm_defaults, with_common_config
from ray.rllib.agents.trainer import Trainer
from ray.rllib.evaluation.postprocessing import Postprocessing, compute_advantages
from ray.rllib.optimizers.rollout_ops import collect_samples
from ray.rllib.policy.mixins import LearningRateSchedule
from ray.rllib.policy.sample_batch import SampleBatch
from ray.rllib.policy.torch_policy_template import build_torch_policy


@dataclass(frozen=True)
class PGConfig:
    """PG's own settings (Ray 0.7 defaults), on top of COMMON_CONFIG."""

    num_workers: int = 0  # sample in the driver
    lr: float = 0.0004  # Adam learning rate
    lr_schedule: list | None = None  # [[timestep, lr], ...]
    use_pytorch: bool = True  # PyTorch is the only backend here


DEFAULT_CONFIG = with_common_config(algorithm_defaults(PGConfig))


def pg_loss(dist, actions, advantages, mask=None):
    """-E[log pi(a|s) * A]. Pure."""
    objective = dist.logp(actions) * advantages
    return -(objective.mean() if mask is None else objective[mask].mean())


def _loss(policy, batch):
    _logits, _values, dist = policy.forward_train(batch)
    policy._pg_loss = pg_loss(dist, batch[SampleBatch.ACTIONS],
                              batch[Postprocessing.ADVANTAGES], batch.get("seq_mask"))
    return policy._pg_loss


def _postprocess(policy, batch, other_agent_batches=None, episode=None):
    return compute_advantages(batch, 0.0, policy.config["gamma"], use_gae=False)


PGTorchPolicy = build_torch_policy(
    name="PGTorchPolicy",
    get_default_config=lambda: DEFAULT_CONFIG,
    loss_fn=_loss,
    stats_fn=lambda policy, batch: {"policy_loss": float(policy._pg_loss.detach()),
                                    "cur_lr": policy.cur_lr},
    postprocess_fn=_postprocess,
    mixins=[LearningRateSchedule],
)


class PGTrainer(Trainer):
    _name = "PG"
    _default_config = DEFAULT_CONFIG
    _policy = PGTorchPolicy

    def training_step(self) -> dict:
        batch = collect_samples(self.workers, self.config["train_batch_size"],
                                self._timers["sample"])
        self.steps_sampled += batch.count
        with self._timers["learn"]:
            stats = self.workers.local_worker().learn_on_batch(batch)
        self._timers["learn"].push_units_processed(batch.count)
        self.steps_trained += batch.count
        with self._timers["synch_weights"]:
            self.workers.sync_weights()
        self.set_global_vars()
        return _per_policy_stats(stats)


def _per_policy_stats(stats: dict) -> dict:
    if "learner_stats" in stats:
        return {"default_policy": stats["learner_stats"]}
    return {pid: s["learner_stats"] for pid, s in stats.items()}


__all__ = ["DEFAULT_CONFIG", "PGConfig", "PGTorchPolicy", "PGTrainer", "pg_loss"]
