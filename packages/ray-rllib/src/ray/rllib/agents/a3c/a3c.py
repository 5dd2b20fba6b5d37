"""Advantage actor-critic: A3C (Mnih et al. 2016) and its synchronous variant A2C.

Loss per batch (advantages from GAE):

    L = -E[log pi(a|s) A] + vf_loss_coeff * 0.5 * E[(V(s) - V_targ)^2] - entropy_coeff * H(pi)

A2C gathers ``train_batch_size`` steps from all workers and takes one step.
A3C keeps every worker busy computing gradients on its own samples; the
driver applies each gradient as it arrives and sends that worker the new
weights (asynchronous, so gradients may be a few updates stale).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import ray
from ray.exceptions import RayError
from ray.rllib.agents.config import algorithm_defaults, with_common_config
from ray.rllib.agents.pg.pg import _per_policy_stats
from ray.rllib.agents.trainer import Trainer
from ray.rllib.evaluation.postprocessing import Postprocessing, compute_advantages
from ray.rllib.optimizers.rollout_ops import collect_samples
from ray.rllib.policy.mixins import LearningRateSchedule
from ray.rllib.policy.sample_batch import SampleBatch
from ray.rllib.policy.torch_policy import explained_variance
from ray.rllib.policy.torch_policy_template import build_torch_policy


@dataclass(frozen=True)
class A3CConfig:
    """A3C's own settings (Ray 0.7 defaults), on top of COMMON_CONFIG."""

    sample_async: bool = True  # sample in a background thread on each worker
    sample_batch_size: int = 10  # steps per env per worker sample call
    use_pytorch: bool = True  # PyTorch is the only backend here
    use_gae: bool = True  # GAE advantages
    lambda_: float = field(default=1.0, metadata={"key": "lambda"})  # GAE lambda
    grad_clip: float = 40.0  # global gradient-norm clip
    lr: float = 0.0001  # learning rate
    lr_schedule: list | None = None  # [[timestep, lr], ...]
    vf_loss_coeff: float = 0.5  # weight of the value loss
    entropy_coeff: float = 0.01  # weight of the entropy bonus
    min_iter_time_s: float = 5  # minimum seconds per train() call
    grads_per_step: int = 100  # A3C: gradients applied per training step


DEFAULT_CONFIG = with_common_config(algorithm_defaults(A3CConfig))
A2C_DEFAULT_CONFIG = dict(
    DEFAULT_CONFIG, sample_batch_size=20, min_iter_time_s=10, sample_async=False
)


def actor_critic_loss(dist, values, batch: dict, vf_loss_coeff: float, entropy_coeff: float,
                      mask=None):
    """The A2C/A3C loss; returns ``(total, stats)``. Pure."""

    def mean(x):
        return x.mean() if mask is None else x[mask].mean()

    pi_loss = -mean(dist.logp(batch[SampleBatch.ACTIONS]) * batch[Postprocessing.ADVANTAGES])
    targets = batch[Postprocessing.VALUE_TARGETS]
    vf_loss = 0.5 * mean((values - targets) ** 2)
    entropy = mean(dist.entropy())
    total = pi_loss + vf_loss_coeff * vf_loss - entropy_coeff * entropy
    stats = {"policy_loss": pi_loss, "vf_loss": vf_loss, "policy_entropy": entropy,
             "vf_explained_var": explained_variance(targets, values)}
    return total, stats


def _loss(policy, batch):
    _logits, values, dist = policy.forward_train(batch)
    loss, policy._stats = actor_critic_loss(
        dist, values, batch, policy.config["vf_loss_coeff"], policy.config["entropy_coeff"],
        batch.get("seq_mask"),
    )
    return loss


def _postprocess(policy, batch, other_agent_batches=None, episode=None):
    if batch[SampleBatch.DONES][-1]:
        last_r = 0.0
    else:
        state = [batch[f"state_out_{i}"][-1] for i in range(policy.num_state_tensors())]
        last_r = policy.value(batch[SampleBatch.NEXT_OBS][-1], state)
    return compute_advantages(batch, last_r, policy.config["gamma"], policy.config["lambda"],
                              policy.config["use_gae"])


A3CTorchPolicy = build_torch_policy(
    name="A3CTorchPolicy",
    get_default_config=lambda: DEFAULT_CONFIG,
    loss_fn=_loss,
    stats_fn=lambda policy, batch: dict(
        {k: float(v.detach()) for k, v in policy._stats.items()}, cur_lr=policy.cur_lr
    ),
    postprocess_fn=_postprocess,
    mixins=[LearningRateSchedule],
)


class A2CTrainer(Trainer):
    _name = "A2C"
    _default_config = A2C_DEFAULT_CONFIG
    _policy = A3CTorchPolicy

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


class A3CTrainer(Trainer):
    _workers_sample_while_learning = True
    _name = "A3C"
    _default_config = DEFAULT_CONFIG
    _policy = A3CTorchPolicy

    def _init(self, config, env_creator):
        super()._init(config, env_creator)
        self._in_flight: dict = {}

    def training_step(self) -> dict:
        local = self.workers.local_worker()
        remotes = self.workers.remote_workers()
        if not remotes:  # no actors: compute and apply gradients in the driver
            batch = local.sample()
            grads, info = local.compute_gradients(batch)
            local.apply_gradients(grads)
            self.steps_sampled += batch.count
            self.steps_trained += batch.count
            self.set_global_vars()
            return _per_policy_stats(info)
        busy = set(self._in_flight.values())
        for worker in remotes:
            if worker not in busy:
                self._in_flight[worker.compute_gradients.remote(worker.sample.remote())] = worker
        info = {}
        for _ in range(self.config["grads_per_step"]):
            [ready], _ = ray.wait(list(self._in_flight))
            worker = self._in_flight.pop(ready)
            try:
                grads, info = ray.get(ready)
            except RayError as error:  # ignore_worker_failures: drop or replace it
                worker = self.workers.handle_failure(worker, error)
                if worker is not None:
                    worker.set_weights.remote(local.get_weights())
                    self._in_flight[worker.compute_gradients.remote(
                        worker.sample.remote())] = worker
                continue
            local.apply_gradients(grads)
            count = _batch_count(info)
            self.steps_sampled += count
            self.steps_trained += count
            worker.set_weights.remote(local.get_weights())
            self._in_flight[worker.compute_gradients.remote(worker.sample.remote())] = worker
        self.set_global_vars()
        return _per_policy_stats(info)


def _batch_count(info: dict) -> int:
    if "batch_count" in info:
        return info["batch_count"]
    return max((v.get("batch_count", 0) for v in info.values() if isinstance(v, dict)),
               default=0)


__all__ = ["A2CTrainer", "A3CConfig", "A3CTorchPolicy", "A3CTrainer", "DEFAULT_CONFIG"]
