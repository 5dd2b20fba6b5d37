"""APPO: asynchronous PPO on the IMPALA architecture.

Sampling and learning as in IMPALA (``AsyncSamplesOptimizer``: workers sample
continuously, a learner thread trains); the loss is PPO's clipped surrogate

    L = -E[min(r_t A_t, clip(r_t, 1 - clip_param, 1 + clip_param) A_t)]
        + vf_loss_coeff * 0.5 * E[(V(x_t) - V_targ_t)^2] - entropy_coeff * H(pi)

with ``r_t = pi(a_t|x_t) / mu(a_t|x_t)`` against the (slightly stale)
behaviour policy that sampled the batch. ``vtrace=False`` (the default) takes
A and V_targ from GAE computed on the worker; ``vtrace=True`` from V-trace.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from ray.rllib.agents.config import algorithm_defaults
from ray.rllib.agents.impala import impala
from ray.rllib.agents.impala.impala import ImpalaConfig, ImpalaTrainer
from ray.rllib.evaluation.postprocessing import Postprocessing, compute_advantages
from ray.rllib.policy.mixins import LearningRateSchedule
from ray.rllib.policy.sample_batch import SampleBatch
from ray.rllib.policy.torch_policy import explained_variance
from ray.rllib.policy.torch_policy_template import build_torch_policy
from ray.rllib.utils.merge import merge_dicts


@dataclass(frozen=True)
class APPOConfig(ImpalaConfig):
    """APPO's settings: IMPALA's, with these changed or added (Ray 0.7 defaults)."""

    vtrace: bool = False  # False: PPO-style GAE advantages
    use_gae: bool = True
    lambda_: float = field(default=1.0, metadata={"key": "lambda"})
    clip_param: float = 0.4  # surrogate clip epsilon
    replay_buffer_num_slots: int = 100
    standardize_advantages: bool = True  # per train batch (helps small problems)
    straggler_mitigation: bool = False  # removed in 0.7: True is an error (see _init)


DEFAULT_CONFIG = merge_dicts(impala.DEFAULT_CONFIG, algorithm_defaults(APPOConfig))


def _loss(policy, batch):
    cfg = policy.config
    logits, values, dist = impala._forward(policy, batch)
    if cfg["vtrace"]:
        targets, advantages = impala.vtrace_targets(policy, batch, logits.detach(),
                                                    values.detach())
    else:
        targets = batch[Postprocessing.VALUE_TARGETS]
        advantages = batch[Postprocessing.ADVANTAGES]
    if cfg["standardize_advantages"] and advantages.numel() > 1:
        advantages = (advantages - advantages.mean()) / advantages.std().clamp(min=1e-4)
    logp = dist.logp(batch[SampleBatch.ACTIONS])
    ratio = torch.exp(logp - batch[SampleBatch.ACTION_LOGP])
    surrogate = torch.min(advantages * ratio,
                          advantages * torch.clamp(ratio, 1 - cfg["clip_param"],
                                                   1 + cfg["clip_param"]))
    pi_loss = -surrogate.mean()
    vf_loss = 0.5 * ((values - targets) ** 2).mean()
    entropy = dist.entropy().mean()
    behaviour = policy.dist_class(batch[SampleBatch.ACTION_DIST_INPUTS], policy.model)
    policy._stats = {
        "policy_loss": pi_loss, "vf_loss": vf_loss, "entropy": entropy,
        "mean_kl": behaviour.kl(dist).mean(), "mean_ratio": ratio.mean(),
        "vf_explained_var": explained_variance(targets, values),
    }
    return pi_loss + cfg["vf_loss_coeff"] * vf_loss - cfg["entropy_coeff"] * entropy


def _postprocess(policy, batch, other_agent_batches=None, episode=None):
    if policy.config["vtrace"]:
        return batch
    if batch[SampleBatch.DONES][-1]:
        last_r = 0.0
    else:
        last_r = policy.value(batch[SampleBatch.NEXT_OBS][-1])
    return compute_advantages(batch, last_r, policy.config["gamma"], policy.config["lambda"],
                              policy.config["use_gae"])


AsyncPPOTorchPolicy = build_torch_policy(
    name="AsyncPPOTorchPolicy",
    get_default_config=lambda: DEFAULT_CONFIG,
    loss_fn=_loss,
    stats_fn=lambda policy, batch: dict(
        {k: float(v.detach()) for k, v in policy._stats.items()}, cur_lr=policy.cur_lr),
    postprocess_fn=_postprocess,
    optimizer_fn=impala.make_optimizer,
    mixins=[LearningRateSchedule],
)


class APPOTrainer(ImpalaTrainer):
    _name = "APPO"
    _default_config = DEFAULT_CONFIG
    _policy = AsyncPPOTorchPolicy

    def _init(self, config, env_creator):
        if config.get("straggler_mitigation"):
            raise ValueError("straggler_mitigation was removed in Ray 0.7 (it dropped slow "
                             "workers' samples from TF's multi-GPU loader): drop the key")
        super()._init(config, env_creator)


__all__ = ["APPOConfig", "APPOTrainer", "AsyncPPOTorchPolicy", "DEFAULT_CONFIG"]
