"""MARWIL: Monotonic Advantage Re-Weighted Imitation Learning (Wang et al. 2018, NeurIPS).

Learns a policy from logged experiences (the ``input`` config). Each logged
action is imitated with a weight that grows with its advantage:

    A_t = R_t - V(s_t)                  (R_t: discounted return-to-go of the log)
    L = -E[exp(beta * A_t / c) * log pi(a_t|s_t)] + vf_coeff * 0.5 * E[A_t^2]

with ``c`` the root of a slow moving average of E[A^2]. ``beta = 0`` is plain
behavioural cloning. Batches read from the input go to a replay buffer of
``replay_buffer_size`` rows; each step learns on ``train_batch_size`` rows
drawn from it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ray.rllib.agents.config import algorithm_defaults, typed_view, with_common_config
from ray.rllib.agents.trainer import Trainer
from ray.rllib.evaluation.postprocessing import Postprocessing, compute_advantages
from ray.rllib.optimizers.rollout_ops import collect_samples, policy_batches
from ray.rllib.policy.sample_batch import SampleBatch
from ray.rllib.policy.torch_policy import explained_variance
from ray.rllib.policy.torch_policy_template import build_torch_policy


@dataclass(frozen=True)
class MARWILConfig:
    """MARWIL's own settings (Ray 0.7 defaults), on top of COMMON_CONFIG."""

    input: object = "sampler"  # point this at an offline dataset
    input_evaluation: tuple = ("is", "wis")
    beta: float = 1.0  # advantage scaling in the exponent (0: imitation learning)
    vf_coeff: float = 1.0  # weight of the value loss
    postprocess_inputs: bool = True  # compute returns-to-go on the logged episodes
    batch_mode: str = "complete_episodes"
    lr: float = 1e-4
    train_batch_size: int = 2000  # rows per SGD step
    replay_buffer_size: int = 100000  # rows kept from the input
    learning_starts: int = 0  # rows to read before learning
    num_workers: int = 0
    moving_average_sqd_adv_norm_update_rate: float = 1e-2  # rate of c^2 average (Ray: 1e-8)
    moving_average_sqd_adv_norm_start: float = 100.0  # initial c^2


_defaults = algorithm_defaults(MARWILConfig)
_defaults["input_evaluation"] = list(_defaults["input_evaluation"])
DEFAULT_CONFIG = with_common_config(_defaults)


def _postprocess(policy, batch, other_agent_batches=None, episode=None):
    if batch[SampleBatch.DONES][-1]:
        last_r = 0.0
    else:
        last_r = policy.value(batch[SampleBatch.NEXT_OBS][-1])
    return compute_advantages(batch, last_r, policy.config["gamma"], use_gae=False)


def _loss(policy, batch):
    _logits, values, dist = policy.forward_train(batch)
    if Postprocessing.ADVANTAGES not in batch:
        raise ValueError("MARWIL needs returns-to-go in the input: keep "
                         "postprocess_inputs=True (or add an 'advantages' column)")
    advantages = batch[Postprocessing.ADVANTAGES] - values
    sq = float((advantages.detach() ** 2).mean())
    rate = policy.config["moving_average_sqd_adv_norm_update_rate"]
    policy.ma_adv_norm += rate * (sq - policy.ma_adv_norm)
    weights = torch.exp(policy.config["beta"] * advantages.detach()
                        / (1e-8 + policy.ma_adv_norm ** 0.5))
    logp = dist.logp(batch[SampleBatch.ACTIONS])
    policy_loss = -(weights * logp).mean()
    vf_loss = 0.5 * (advantages ** 2).mean()
    policy._stats = {"policy_loss": policy_loss, "vf_loss": vf_loss,
                     "vf_explained_var": explained_variance(batch[Postprocessing.ADVANTAGES],
                                                            values),
                     "mean_imitation_weight": weights.mean()}
    return policy_loss + policy.config["vf_coeff"] * vf_loss


def _after_init(policy, obs_space, action_space, config):
    policy.ma_adv_norm = config["moving_average_sqd_adv_norm_start"]


MARWILTorchPolicy = build_torch_policy(
    name="MARWILTorchPolicy",
    get_default_config=lambda: DEFAULT_CONFIG,
    loss_fn=_loss,
    stats_fn=lambda policy, batch: dict(
        {k: float(v.detach()) for k, v in policy._stats.items()},
        moving_average_sqd_adv_norm=policy.ma_adv_norm),
    postprocess_fn=_postprocess,
    after_init=_after_init,
)


class ReplayRows:
    """A ring buffer of rows (columns as numpy arrays); ``sample(n)`` draws uniformly."""

    def __init__(self, capacity: int, rng: np.random.Generator):
        self.capacity, self.rng = capacity, rng
        self.columns: dict = {}
        self.size = self.next = 0

    def add(self, batch: SampleBatch) -> None:
        keys = [k for k, v in batch.items() if v.dtype != object]
        if not self.columns:
            self.columns = {k: np.zeros((self.capacity, *batch[k].shape[1:]), batch[k].dtype)
                            for k in keys}
        idx = (self.next + np.arange(batch.count)) % self.capacity
        for key, column in self.columns.items():
            column[idx] = batch[key][-self.capacity:] if batch.count > self.capacity \
                else batch[key]
        self.next = int((self.next + batch.count) % self.capacity)
        self.size = min(self.capacity, self.size + batch.count)

    def sample(self, n: int) -> SampleBatch:
        idx = self.rng.integers(0, self.size, n)
        return SampleBatch({k: v[idx] for k, v in self.columns.items()})


class MARWILTrainer(Trainer):
    _name = "MARWIL"
    _default_config = DEFAULT_CONFIG
    _policy = MARWILTorchPolicy

    def _init(self, config, env_creator):
        self.marwil_config = typed_view(MARWILConfig, config)
        super()._init(config, env_creator)
        self.rng = np.random.default_rng(config["seed"])
        self.buffers: dict = {}

    def training_step(self) -> dict:
        cfg = self.marwil_config
        batch = collect_samples(self.workers, 1)
        self.steps_sampled += batch.count
        local = self.workers.local_worker()
        stats = {}
        for policy_id, policy_batch in policy_batches(batch).items():
            if policy_id not in local.policies_to_train:
                continue
            buffer = self.buffers.setdefault(
                policy_id, ReplayRows(min(cfg.replay_buffer_size, 10**7), self.rng))
            buffer.add(policy_batch)
            if buffer.size < max(1, cfg.learning_starts):
                continue
            train_batch = buffer.sample(cfg.train_batch_size)
            stats[policy_id] = local.get_policy(policy_id).learn_on_batch(
                train_batch)["learner_stats"]
            self.steps_trained += train_batch.count
        self.workers.sync_weights()
        return stats


__all__ = ["DEFAULT_CONFIG", "MARWILConfig", "MARWILTorchPolicy", "MARWILTrainer"]
