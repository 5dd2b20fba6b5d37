"""IMPALA: Importance Weighted Actor-Learner Architecture (Espeholt et al. 2018).

Workers sample with slightly stale weights while a learner thread in the
driver trains on their batches (see ``AsyncSamplesOptimizer``). The loss
corrects the lag with V-trace (``vtrace.py``):

    L = -E[log pi(a_t|x_t) * pg_advantage_t] + vf_loss_coeff * 0.5 * E[(v_t - V(x_t))^2]
        - entropy_coeff * H(pi)

With ``vtrace=False`` the advantages are plain GAE ones computed on the
worker (the A3C loss, no off-policy correction).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np
import torch

from ray.rllib.agents.a3c.a3c import actor_critic_loss
from ray.rllib.agents.config import algorithm_defaults, typed_view, with_common_config
from ray.rllib.agents.impala import vtrace
from ray.rllib.agents.trainer import Trainer
from ray.rllib.evaluation.postprocessing import compute_advantages
from ray.rllib.optimizers.async_samples_optimizer import AsyncSamplesOptimizer
from ray.rllib.policy.mixins import LearningRateSchedule
from ray.rllib.policy.sample_batch import SampleBatch
from ray.rllib.policy.torch_policy import explained_variance
from ray.rllib.policy.torch_policy_template import build_torch_policy
from ray.rllib.utils.torch_ops import make_adam

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ImpalaConfig:
    """IMPALA's own settings (Ray 0.7 defaults, except num_gpus: 0), on COMMON_CONFIG."""

    vtrace: bool = True  # V-trace off-policy correction (False: GAE advantages, A3C loss)
    vtrace_clip_rho_threshold: float = 1.0  # rho-bar of the value targets
    vtrace_clip_pg_rho_threshold: float = 1.0  # rho-bar of the policy-gradient advantages
    sample_batch_size: int = 50  # steps per env per worker sample call
    train_batch_size: int = 500  # rows per learner update
    min_iter_time_s: float = 10  # minimum seconds per train() call
    num_workers: int = 2
    num_gpus: int = 0  # learner GPUs (the 0.7 default of 1 needs a GPU)
    num_data_loader_buffers: int = 1  # only 1 (batches go to the learner device as used)
    minibatch_buffer_size: int = 1  # train batches the learner cycles through
    num_sgd_iter: int = 1  # passes over each train batch
    replay_proportion: float = 0.0  # replayed batches per new one (Poisson mean)
    replay_buffer_num_slots: int = 0  # sample batches kept for replay
    learner_queue_size: int = 16  # train batches queued for the learner thread
    max_sample_requests_in_flight_per_worker: int = 2  # sample() calls queued per worker
    broadcast_interval: int = 1  # workers that get one ray.put of the weights
    num_aggregation_workers: int = 0  # only 0: the driver aggregates
    grad_clip: float = 40.0  # global gradient-norm clip
    opt_type: str = "adam"  # "adam" or "rmsprop"
    lr: float = 0.0005
    lr_schedule: list | None = None
    decay: float = 0.99  # rmsprop alpha
    momentum: float = 0.0  # rmsprop momentum
    epsilon: float = 0.1  # rmsprop epsilon
    vf_loss_coeff: float = 0.5
    entropy_coeff: float = 0.01
    use_gae: bool = True  # only with vtrace=False
    lambda_: float = field(default=1.0, metadata={"key": "lambda"})  # GAE, vtrace=False
    _fake_sampler: bool = False  # debugging: workers return their first batch every time


DEFAULT_CONFIG = with_common_config(algorithm_defaults(ImpalaConfig))


def vtrace_targets(policy, batch: dict, logits, values):
    """V-trace value targets and advantages for a training batch (tensors out, detached)."""
    cfg = policy.config
    with torch.no_grad():
        dist = policy.dist_class(logits, policy.model)
        target_logp = dist.logp(batch[SampleBatch.ACTIONS])
        next_values = bootstrap_values(policy, batch)
        dones = _np(batch[SampleBatch.DONES])
        returns = vtrace.from_importance_weights(
            log_rhos=_np(target_logp - batch[SampleBatch.ACTION_LOGP]),
            discounts=cfg["gamma"] * (1.0 - dones),
            rewards=_np(batch[SampleBatch.REWARDS]),
            values=_np(values),
            next_values=next_values,
            segment_end=vtrace.segment_ends({
                k: batch[k].cpu().numpy() for k in (SampleBatch.REWARDS, SampleBatch.EPS_ID,
                                                    SampleBatch.T, SampleBatch.AGENT_INDEX)
                if k in batch}),
            clip_rho_threshold=cfg["vtrace_clip_rho_threshold"],
            clip_pg_rho_threshold=cfg["vtrace_clip_pg_rho_threshold"],
        )
    device = values.device
    return (torch.as_tensor(returns.vs, dtype=torch.float32, device=device),
            torch.as_tensor(returns.pg_advantages, dtype=torch.float32, device=device))


def _np(tensor) -> np.ndarray:
    """float64 numpy copy of a tensor on any device (V-trace runs in numpy)."""
    return tensor.detach().double().cpu().numpy()


def bootstrap_values(policy, batch: dict) -> np.ndarray:
    """V(new_obs) of every row (only segment ends use it; inside a fragment it is V(x_t+1))."""
    new_obs = batch[SampleBatch.NEXT_OBS].float()
    policy.model(policy._input_dict(new_obs, None, None), [], None)
    return _np(policy.model.value_function())


def _forward(policy, batch):
    if policy.get_initial_state():
        raise ValueError("IMPALA/APPO here train feed-forward models: set "
                         "model={'use_lstm': False} (or use PPO/A2C for recurrent policies)")
    logits, values, dist = policy.forward_train(batch)
    return logits, values, dist


def _loss(policy, batch):
    logits, values, dist = _forward(policy, batch)
    if not policy.config["vtrace"]:
        loss, policy._stats = actor_critic_loss(dist, values, batch,
                                                policy.config["vf_loss_coeff"],
                                                policy.config["entropy_coeff"])
        return loss
    vs, pg_advantages = vtrace_targets(policy, batch, logits.detach(), values.detach())
    pi_loss = -(dist.logp(batch[SampleBatch.ACTIONS]) * pg_advantages).mean()
    vf_loss = 0.5 * ((vs - values) ** 2).mean()
    entropy = dist.entropy().mean()
    total = pi_loss + policy.config["vf_loss_coeff"] * vf_loss \
        - policy.config["entropy_coeff"] * entropy
    policy._stats = {"policy_loss": pi_loss, "vf_loss": vf_loss, "entropy": entropy,
                     "vf_explained_var": explained_variance(vs, values)}
    return total


def _postprocess(policy, batch, other_agent_batches=None, episode=None):
    if policy.config["vtrace"]:
        return batch
    if batch[SampleBatch.DONES][-1]:
        last_r = 0.0
    else:
        last_r = policy.value(batch[SampleBatch.NEXT_OBS][-1])
    return compute_advantages(batch, last_r, policy.config["gamma"], policy.config["lambda"],
                              policy.config["use_gae"])


def make_optimizer(policy, config):
    params = policy.model.parameters()
    if config["opt_type"] == "adam":
        return make_adam(params, lr=config["lr"])
    if config["opt_type"] == "rmsprop":
        return torch.optim.RMSprop(params, lr=config["lr"], alpha=config["decay"],
                                   momentum=config["momentum"], eps=config["epsilon"])
    raise ValueError(f"opt_type must be 'adam' or 'rmsprop', not {config['opt_type']!r}")


def _stats(policy, batch):
    return dict({k: float(v.detach()) for k, v in policy._stats.items()}, cur_lr=policy.cur_lr)


VTraceTorchPolicy = build_torch_policy(
    name="VTraceTorchPolicy",
    get_default_config=lambda: DEFAULT_CONFIG,
    loss_fn=_loss,
    stats_fn=_stats,
    postprocess_fn=_postprocess,
    optimizer_fn=make_optimizer,
    mixins=[LearningRateSchedule],
)


def make_async_optimizer(workers, config: dict) -> AsyncSamplesOptimizer:
    return AsyncSamplesOptimizer(
        workers,
        train_batch_size=config["train_batch_size"],
        sample_batch_size=config["sample_batch_size"],
        num_envs_per_worker=config["num_envs_per_worker"],
        num_gpus=config["num_gpus"],
        replay_buffer_num_slots=config["replay_buffer_num_slots"],
        replay_proportion=config["replay_proportion"],
        max_sample_requests_in_flight_per_worker=config[
            "max_sample_requests_in_flight_per_worker"],
        broadcast_interval=config["broadcast_interval"],
        num_sgd_iter=config["num_sgd_iter"],
        learner_queue_size=config["learner_queue_size"],
        minibatch_buffer_size=config["minibatch_buffer_size"],
        num_data_loader_buffers=config["num_data_loader_buffers"],
        num_aggregation_workers=config["num_aggregation_workers"],
        seed=config["seed"],
    )


class ImpalaTrainer(Trainer):
    _workers_sample_while_learning = True
    _name = "IMPALA"
    _default_config = DEFAULT_CONFIG
    _policy = VTraceTorchPolicy

    def _init(self, config, env_creator):
        self.impala_config = typed_view(ImpalaConfig, config)
        super()._init(config, env_creator)
        self.optimizer = make_async_optimizer(self.workers, config)

    def training_step(self) -> dict:
        sampled, trained = self.optimizer.num_steps_sampled, self.optimizer.num_steps_trained
        stats = self.optimizer.step()
        self.steps_sampled += self.optimizer.num_steps_sampled - sampled
        self.steps_trained += self.optimizer.num_steps_trained - trained
        self.set_global_vars()
        return stats

    def _train(self) -> dict:
        result = super()._train()
        result["info"].update({k: v for k, v in self.optimizer.stats().items()
                               if k != "learner"})
        return result

    def _stop(self):
        if getattr(self, "optimizer", None) is not None:
            self.optimizer.stop()
        super()._stop()


__all__ = ["DEFAULT_CONFIG", "ImpalaConfig", "ImpalaTrainer", "VTraceTorchPolicy",
           "make_async_optimizer", "make_optimizer"]
