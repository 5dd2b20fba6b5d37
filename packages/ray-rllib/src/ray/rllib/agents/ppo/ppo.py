"""Proximal Policy Optimization (Schulman et al. 2017, arXiv:1707.06347).

Each iteration: sample ``train_batch_size`` steps with the current policy,
estimate advantages with GAE, then run ``num_sgd_iter`` epochs of minibatch
SGD on the clipped surrogate objective

    L = -E[min(r_t A_t, clip(r_t, 1 - eps, 1 + eps) A_t)]
        + vf_loss_coeff * E[max((V - V_targ)^2, (V_clipped - V_targ)^2)]
        + kl_coeff * KL(pi_old || pi) - entropy_coeff * H(pi)

with ``r_t = pi(a_t|s_t) / pi_old(a_t|s_t)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from ray.rllib.agents.config import algorithm_defaults, typed_view, with_common_config
from ray.rllib.agents.trainer import Trainer
from ray.rllib.evaluation.postprocessing import Postprocessing, compute_advantages
from ray.rllib.optimizers.multi_gpu_optimizer import LocalMultiGPUOptimizer
from ray.rllib.optimizers.rollout_ops import (
    collect_samples,
    minibatch_sgd,
    policy_batches,
    standardized,
)
from ray.rllib.policy.mixins import KLCoeffMixin, LearningRateSchedule
from ray.rllib.policy.sample_batch import SampleBatch
from ray.rllib.policy.torch_policy import explained_variance
from ray.rllib.policy.torch_policy_template import build_torch_policy


@dataclass(frozen=True)
class PPOConfig:
    """PPO's own settings (Ray 0.7 defaults), on top of COMMON_CONFIG."""

    use_gae: bool = True  # GAE(lambda) advantages; False: discounted returns
    lambda_: float = field(default=1.0, metadata={"key": "lambda"})  # GAE lambda
    kl_coeff: float = 0.2  # initial coefficient of the KL penalty
    sample_batch_size: int = 200  # steps per env per worker sample call
    train_batch_size: int = 4000  # env steps per training iteration
    sgd_minibatch_size: int = 128  # rows per SGD minibatch
    shuffle_sequences: bool = True  # shuffle minibatches each epoch
    num_sgd_iter: int = 30  # SGD epochs over each train batch
    lr: float = 5e-5  # Adam learning rate
    lr_schedule: list | None = None  # [[timestep, lr], ...], piecewise linear
    vf_share_layers: bool = False  # share the policy and value networks' hidden layers
    vf_loss_coeff: float = 1.0  # weight of the value loss
    entropy_coeff: float = 0.0  # weight of the entropy bonus
    clip_param: float = 0.3  # surrogate clip epsilon
    vf_clip_param: float = 10.0  # clip of the value-function update
    grad_clip: float | None = None  # global gradient-norm clip
    kl_target: float = 0.01  # KL the penalty coefficient adapts towards
    batch_mode: str = "truncate_episodes"
    observation_filter: str = "NoFilter"
    # False: with num_gpus > 1, split each minibatch across the GPUs (LocalMultiGPUOptimizer);
    # True, or one device: plain minibatch SGD on the learner's device.
    simple_optimizer: bool = False
    straggler_mitigation: bool = False  # removed in 0.7: True is an error


DEFAULT_CONFIG = with_common_config(algorithm_defaults(PPOConfig))


def ppo_surrogate_loss(dist, prev_dist, values, batch, cfg: PPOConfig, kl_coeff: float,
                       mask=None, with_stats: bool = True):
    """The PPO loss for one minibatch; returns ``(total_loss, stats)``. Pure: no side effects.

    ``with_stats=False`` returns no stats and leaves out of the graph the terms whose
    coefficient is 0 (the entropy bonus by default): the loss and its gradient are the
    same, only cheaper.
    """

    def mean(x):
        return x.mean() if mask is None else x[mask].mean()

    actions = batch[SampleBatch.ACTIONS]
    ratio = torch.exp(dist.logp(actions) - batch[SampleBatch.ACTION_LOGP])
    advantages = batch[Postprocessing.ADVANTAGES]
    surrogate = torch.min(
        advantages * ratio,
        advantages * torch.clamp(ratio, 1 - cfg.clip_param, 1 + cfg.clip_param),
    )
    if cfg.use_gae:
        targets, old_values = batch[Postprocessing.VALUE_TARGETS], batch[SampleBatch.VF_PREDS]
        clipped = old_values + torch.clamp(values - old_values, -cfg.vf_clip_param,
                                           cfg.vf_clip_param)
        vf_loss = mean(torch.max((values - targets) ** 2, (clipped - targets) ** 2))
    else:
        targets, vf_loss = batch[Postprocessing.VALUE_TARGETS], torch.tensor(0.0)
    policy_loss = -mean(surrogate)
    total = policy_loss + cfg.vf_loss_coeff * vf_loss
    kl = entropy = None
    if with_stats or kl_coeff != 0.0:
        kl = mean(prev_dist.kl(dist))
        total = total + kl_coeff * kl
    if with_stats or cfg.entropy_coeff != 0.0:
        entropy = mean(dist.entropy())
        total = total - cfg.entropy_coeff * entropy
    if not with_stats:
        return total, {}
    stats = {
        "total_loss": total, "policy_loss": policy_loss, "vf_loss": vf_loss, "kl": kl,
        "entropy": entropy, "vf_explained_var": explained_variance(targets, values),
    }
    return total, stats


def _loss(policy, batch):
    _logits, values, dist = policy.forward_train(batch)
    prev_dist = policy.dist_class(batch[SampleBatch.ACTION_DIST_INPUTS], policy.model)
    loss, policy._stats = ppo_surrogate_loss(
        dist, prev_dist, values, batch, policy.ppo_config, policy.kl_coeff,
        batch.get("seq_mask"), with_stats=policy.stats_wanted,
    )
    return loss


def _stats(policy, batch):
    stats = {k: float(v.detach()) for k, v in policy._stats.items()}
    stats.update(cur_lr=policy.cur_lr, cur_kl_coeff=policy.kl_coeff)
    return stats


def _postprocess(policy, batch, other_agent_batches=None, episode=None):
    """GAE advantages; an unfinished trajectory is bootstrapped with V(last new_obs)."""
    if batch[SampleBatch.DONES][-1]:
        last_r = 0.0
    else:
        state = [batch[f"state_out_{i}"][-1] for i in range(policy.num_state_tensors())]
        last_r = policy.value(batch[SampleBatch.NEXT_OBS][-1], state)
    cfg = policy.ppo_config
    return compute_advantages(batch, last_r, policy.config["gamma"], cfg.lambda_, cfg.use_gae)


def _before_init(policy, obs_space, action_space, config):
    policy.ppo_config = typed_view(PPOConfig, config)
    config["model"] = dict(config["model"], vf_share_layers=config["vf_share_layers"])


PPOTorchPolicy = build_torch_policy(
    name="PPOTorchPolicy",
    get_default_config=lambda: DEFAULT_CONFIG,
    loss_fn=_loss,
    stats_fn=_stats,
    postprocess_fn=_postprocess,
    before_init=_before_init,
    mixins=[LearningRateSchedule, KLCoeffMixin],
)


class PPOTrainer(Trainer):
    _name = "PPO"
    _default_config = DEFAULT_CONFIG
    _policy = PPOTorchPolicy

    def _init(self, config, env_creator):
        self.ppo_config = typed_view(PPOConfig, config)
        if self.ppo_config.sgd_minibatch_size > self.ppo_config.train_batch_size:
            raise ValueError(
                f"sgd_minibatch_size ({self.ppo_config.sgd_minibatch_size}) must be <= "
                f"train_batch_size ({self.ppo_config.train_batch_size})"
            )
        if self.ppo_config.straggler_mitigation:
            raise ValueError("straggler_mitigation was removed in Ray 0.7 (it dropped slow "
                             "workers' samples from TF's multi-GPU loader): drop the key")
        self.rng = np.random.default_rng(config["seed"])
        super()._init(config, env_creator)
        self.multi_gpu = None
        if not self.ppo_config.simple_optimizer and config["num_gpus"] > 1:
            self.multi_gpu = LocalMultiGPUOptimizer(
                self.workers, sgd_batch_size=self.ppo_config.sgd_minibatch_size,
                num_sgd_iter=self.ppo_config.num_sgd_iter,
                train_batch_size=self.ppo_config.train_batch_size,
                num_gpus=config["num_gpus"], seed=config["seed"])

    def training_step(self) -> dict:
        cfg = self.ppo_config
        batch = collect_samples(self.workers, cfg.train_batch_size, self._timers["sample"])
        self.steps_sampled += batch.count
        stats = {}
        local = self.workers.local_worker()
        with self._timers["learn"]:
            for policy_id, policy_batch in policy_batches(batch).items():
                if policy_id not in local.policies_to_train:
                    continue
                policy = local.get_policy(policy_id)
                policy_batch[Postprocessing.ADVANTAGES] = standardized(
                    policy_batch[Postprocessing.ADVANTAGES]
                )
                if self.multi_gpu is not None:
                    stats[policy_id] = self.multi_gpu.sgd_on_batch(policy_id, policy,
                                                                   policy_batch)
                else:
                    stats[policy_id] = minibatch_sgd(
                        policy, policy_batch, cfg.num_sgd_iter, cfg.sgd_minibatch_size,
                        self.rng, shuffle=cfg.shuffle_sequences)
                policy.update_kl(stats[policy_id]["kl"])
                self.steps_trained += policy_batch.count
        self._timers["learn"].push_units_processed(batch.count)
        with self._timers["synch_weights"]:
            self.workers.sync_weights()
        self.set_global_vars()
        return stats


__all__ = ["DEFAULT_CONFIG", "PPOConfig", "PPOTorchPolicy", "PPOTrainer"]
