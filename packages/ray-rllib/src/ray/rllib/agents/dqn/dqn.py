"""DQN (Mnih et al. 2015) with the Rainbow options (Hessel et al. 2018, arXiv:1710.02298).

The Q-network regresses on the n-step bootstrapped target

    y = sum_{k<n} gamma^k r_{t+k} + gamma^n (1 - done) Q_target(s_{t+n}, a*)
    a* = argmax_a Q(s_{t+n}, a)          with ``double_q`` (van Hasselt et al. 2016)
    a* = argmax_a Q_target(s_{t+n}, a)   otherwise

with the Huber loss on ``td = Q(s_t, a_t) - y``, weighted by the importance
weights of prioritized replay. Options:

* ``dueling``: Q = V(s) + A(s, a) - mean_a A(s, a) (Wang et al. 2016);
* ``num_atoms > 1``: distributional C51 (Bellemare et al. 2017): the network
  outputs a categorical distribution over ``num_atoms`` returns spaced evenly in
  ``[v_min, v_max]``; the target distribution is projected onto the support and
  the loss (and priority) is the cross-entropy;
* ``noisy``: factorised Gaussian noisy linear layers in the Q head (Fortunato et
  al. 2018), noise std initialised to ``sigma0 / sqrt(fan_in)``;
* ``n_step``, ``prioritized_replay``: see ``adjust_nstep`` and the replay buffers.

Exploration is epsilon-greedy with epsilon annealed linearly from 1 to
``exploration_final_eps`` over ``exploration_fraction * schedule_max_timesteps``
steps (or Boltzmann with ``soft_q``). With ``parameter_noise`` the policy instead
acts greedily through a copy of the Q network with perturbed weights (Plappert et
al. 2018; ``agents/param_noise.py``), the Q head gets layer normalisation, and
epsilon only sets the KL the perturbation aims for.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field

import numpy as np
import torch
from gymnasium import spaces
from torch import nn
from torch.nn import functional as F

from ray.rllib.agents.config import algorithm_defaults, typed_view, with_common_config
from ray.rllib.agents.param_noise import (
    ParameterNoise,
    ParameterNoiseMixin,
    broadcast_param_noise_sigma,
    epsilon_greedy_kl,
    report_param_noise_sigma,
    softmax_kl,
)
from ray.rllib.agents.trainer import Trainer
from ray.rllib.models.catalog import ModelCatalog
from ray.rllib.models.torch_models import _mlp
from ray.rllib.optimizers.sync_replay_optimizer import SyncReplayOptimizer
from ray.rllib.policy.sample_batch import SampleBatch
from ray.rllib.policy.torch_policy import TorchPolicy
from ray.rllib.utils.merge import merge_dicts
from ray.rllib.utils.schedules import PiecewiseSchedule
from ray.rllib.utils.torch_ops import make_adam


@dataclass(frozen=True)
class DQNConfig:
    """DQN's own settings (Ray 0.7 defaults), on top of COMMON_CONFIG."""

    # === Model ===
    num_atoms: int = 1  # > 1: distributional DQN over this many return atoms
    v_min: float = -10.0  # lowest return atom
    v_max: float = 10.0  # highest return atom
    noisy: bool = False  # noisy linear layers in the Q head
    sigma0: float = 0.5  # initial noise scale of the noisy layers
    dueling: bool = True  # separate state-value and advantage streams
    double_q: bool = True  # pick a* with the online net, value it with the target net
    hiddens: list = field(default_factory=lambda: [256])  # Q-head layers after the model
    n_step: int = 1  # n-step returns
    # === Exploration ===
    schedule_max_timesteps: int = 100000  # horizon of the epsilon and beta schedules
    timesteps_per_iteration: int = 1000  # minimum env steps per train() call
    exploration_fraction: float = 0.1  # fraction of the schedule spent annealing epsilon
    exploration_final_eps: float = 0.02  # epsilon after annealing
    target_network_update_freq: int = 500  # env steps between target-network copies
    soft_q: bool = False  # Boltzmann exploration instead of epsilon-greedy
    softmax_temp: float = 1.0  # temperature of soft_q
    parameter_noise: bool = False  # explore by perturbing the Q network's weights
    parameter_noise_initial_stddev: float = 0.1  # its sigma before adaptation
    # === Replay ===
    buffer_size: int = 50000  # transitions kept
    prioritized_replay: bool = True  # proportional prioritized replay
    prioritized_replay_alpha: float = 0.6  # priority exponent
    prioritized_replay_beta: float = 0.4  # initial importance-weight exponent
    beta_annealing_fraction: float = 0.2  # fraction of the schedule spent annealing beta
    final_prioritized_replay_beta: float = 0.4  # beta after annealing
    prioritized_replay_eps: float = 1e-6  # added to |td_error| for priorities
    compress_observations: bool = True  # compress obs in batches from remote workers
    # === Optimization ===
    lr: float = 5e-4  # Adam learning rate
    adam_epsilon: float = 1e-8  # Adam epsilon
    grad_norm_clipping: float | None = 40.0  # global gradient-norm clip
    learning_starts: int = 1000  # env steps sampled before learning starts
    sample_batch_size: int = 4  # steps per env per worker per optimizer step
    train_batch_size: int = 32  # replayed rows per SGD step
    # === Parallelism ===
    num_workers: int = 0  # sampling actors (0: sample in the driver)
    per_worker_exploration: bool = False  # worker i of N: eps = 0.4 ** (1 + 7 i / (N - 1))
    worker_side_prioritization: bool = False  # workers compute initial priorities
    min_iter_time_s: float = 1  # minimum seconds per train() call


DEFAULT_CONFIG = with_common_config(algorithm_defaults(DQNConfig))


# --- shared pieces (DDPG and SAC use these too) -------------------------------------------


def adjust_nstep(batch: SampleBatch, n_step: int, gamma: float) -> SampleBatch:
    """Rewrite one trajectory fragment for n-step returns, in place.

    Row t becomes ``(s_t, a_t, sum_{k<m} gamma^k r_{t+k}, s_{t+m}, done_{t+m-1})`` with
    ``m = min(n, rows left)``; the ``n_step_gamma`` column holds ``gamma^m``, the
    discount of the bootstrap value (shorter at the end of a fragment).
    """
    count = batch.count
    rewards = np.asarray(batch[SampleBatch.REWARDS], dtype=np.float64)
    steps = np.minimum(n_step, count - np.arange(count))
    returns = np.zeros(count)
    for k in range(n_step):
        idx = np.arange(count) + k
        valid = k < steps
        returns[valid] += gamma ** k * rewards[idx[valid]]
    last = np.arange(count) + steps - 1
    batch[SampleBatch.REWARDS] = returns.astype(np.float32)
    batch[SampleBatch.NEXT_OBS] = batch[SampleBatch.NEXT_OBS][last]
    batch[SampleBatch.DONES] = batch[SampleBatch.DONES][last]
    batch["n_step_gamma"] = (gamma ** steps).astype(np.float32)
    return batch


def bootstrap_discount(batch: dict, gamma: float, n_step: int) -> torch.Tensor:
    """``gamma^n`` per row (``n_step_gamma`` where postprocessing recorded it)."""
    if "n_step_gamma" in batch:
        return batch["n_step_gamma"].float()
    return torch.full_like(batch[SampleBatch.REWARDS].float(), gamma ** n_step)


def per_worker_epsilon(worker_index: int, num_workers: int) -> float:
    """Ape-X's fixed per-worker epsilons: 0.4 for the first worker down to 0.4^8."""
    if num_workers <= 1:
        return 0.4
    return 0.4 ** (1 + 7 * (worker_index - 1) / (num_workers - 1))


def polyak_update(target: nn.Module, source: nn.Module, tau: float) -> None:
    """``target <- tau * source + (1 - tau) * target``, parameter by parameter."""
    with torch.no_grad():
        target_params = list(target.parameters())
        torch._foreach_mul_(target_params, 1.0 - tau)
        torch._foreach_add_(target_params, list(source.parameters()), alpha=tau)


class TargetNetworkMixin:
    """For policies with a target copy of ``self.model`` (DQN, DDPG/TD3, SAC): target
    updates, and the target weights plus the optimizers named in ``extra_optimizers``
    (besides the main one) in ``get_state``/``set_state``."""

    extra_optimizers: tuple[str, ...] = ()

    def update_target(self, tau: float | None = None) -> None:
        """Copy the online network into the target (Polyak-average it with ``tau``)."""
        with self.lock:
            if tau is None:
                self.target_model.load_state_dict(self.model.state_dict())
            else:
                polyak_update(self.target_model, self.model, tau)

    def get_state(self) -> dict:
        state = super().get_state()
        state["target_weights"] = {k: v.detach().cpu().numpy().copy()
                                   for k, v in self.target_model.state_dict().items()}
        for name in self.extra_optimizers:
            state[name] = getattr(self, name).state_dict()
        return state

    def set_state(self, state) -> None:
        super().set_state(state)
        if "target_weights" in state:
            self.target_model.load_state_dict(
                {k: torch.tensor(v) for k, v in state["target_weights"].items()})
        for name in self.extra_optimizers:
            if state.get(name):
                getattr(self, name).load_state_dict(state[name])


# --- the network ----------------------------------------------------------------------------


class NoisyLinear(nn.Module):
    """``y = (mu_w + sigma_w * eps_w) x + mu_b + sigma_b * eps_b``, factorised noise."""

    def __init__(self, in_features: int, out_features: int, sigma0: float):
        super().__init__()
        bound = 1.0 / math.sqrt(in_features)
        self.weight_mu = nn.Parameter(torch.empty(out_features, in_features).uniform_(-bound,
                                                                                      bound))
        self.bias_mu = nn.Parameter(torch.empty(out_features).uniform_(-bound, bound))
        self.weight_sigma = nn.Parameter(torch.full((out_features, in_features), sigma0 * bound))
        self.bias_sigma = nn.Parameter(torch.full((out_features,), sigma0 * bound))
        self.noise_on = True

    @staticmethod
    def _f(x):
        return x.sign() * x.abs().sqrt()

    def forward(self, x):
        if not self.noise_on:
            return F.linear(x, self.weight_mu, self.bias_mu)
        device = self.weight_mu.device
        eps_in = self._f(torch.randn(self.weight_mu.shape[1], device=device))
        eps_out = self._f(torch.randn(self.weight_mu.shape[0], device=device))
        weight = self.weight_mu + self.weight_sigma * torch.outer(eps_out, eps_in)
        return F.linear(x, weight, self.bias_mu + self.bias_sigma * eps_out)


def _head(in_size: int, hiddens: list, out_size: int, noisy: bool, sigma0: float,
          layer_norm: bool = False) -> nn.Module:
    layers, size = [], in_size
    for hidden in hiddens:
        layers.append(NoisyLinear(size, hidden, sigma0) if noisy else nn.Linear(size, hidden))
        if layer_norm:  # parameter noise: one sigma then suits every layer
            layers.append(nn.LayerNorm(hidden))
        layers.append(nn.ReLU())
        size = hidden
    layers.append(NoisyLinear(size, out_size, sigma0) if noisy else nn.Linear(size, out_size))
    return nn.Sequential(*layers)


class QNetwork(nn.Module):
    """Model trunk (``model`` config) + Q head (``hiddens``, dueling, atoms, noise).

    ``forward(input_dict) -> (q [B, A], support_logits [B, A, atoms] or None)``.
    """

    def __init__(self, obs_space, action_space, model_config: dict, cfg: DQNConfig):
        super().__init__()
        self.num_actions = int(action_space.n)
        self.num_atoms = cfg.num_atoms
        self.dueling = cfg.dueling
        head_outputs = self.num_actions * self.num_atoms
        self.value = None
        if _uses_catalog_model(obs_space, model_config) and not cfg.hiddens:
            # Parametric actions (Ray 0.7 docs): with hiddens=[] a custom model's outputs
            # are the action scores themselves, so it can mask unavailable actions.
            if cfg.dueling:
                raise ValueError("with hiddens=[] the custom model's outputs are the Q-values "
                                 "and there is no separate value stream: set dueling=False")
            self.trunk = _CatalogTrunk(ModelCatalog.get_model_v2(
                obs_space, action_space, head_outputs, model_config))
            self.advantage = nn.Identity()
        else:
            self.trunk, feature_size = _trunk(obs_space, action_space, model_config)
            self.advantage = _head(feature_size, cfg.hiddens, head_outputs, cfg.noisy,
                                   cfg.sigma0, cfg.parameter_noise)
        if cfg.dueling:
            self.value = _head(feature_size, cfg.hiddens, self.num_atoms, cfg.noisy, cfg.sigma0,
                               cfg.parameter_noise)
        atoms = torch.linspace(cfg.v_min, cfg.v_max, max(2, cfg.num_atoms))
        self.register_buffer("support", atoms)

    def set_noise(self, on: bool) -> None:
        if not hasattr(self, "_noisy_layers"):  # built lazily: a copy must find its own
            self._noisy_layers = [m for m in self.modules() if isinstance(m, NoisyLinear)]
        for module in self._noisy_layers:
            module.noise_on = on

    def forward(self, input_dict):
        features = self.trunk(input_dict)
        adv = self.advantage(features)
        if self.num_atoms == 1:
            if self.dueling:
                adv = self.value(features) + adv - adv.mean(dim=1, keepdim=True)
            return adv, None
        logits = adv.reshape(-1, self.num_actions, self.num_atoms)
        if self.dueling:
            logits = self.value(features).unsqueeze(1) + logits - logits.mean(dim=1, keepdim=True)
        q = (torch.softmax(logits, dim=-1) * self.support).sum(-1)
        return q, logits


class _MLPTrunk(nn.Module):
    def __init__(self, in_size, hiddens, activation):
        super().__init__()
        self.net = _mlp(in_size, hiddens, activation, None, 1.0)

    def forward(self, input_dict):
        x = input_dict["obs_flat"].float()
        return self.net(x.reshape(x.shape[0], -1))


class _CatalogTrunk(nn.Module):
    """A catalog model (custom or vision) whose outputs are the Q head's features."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_dict):
        return self.model(input_dict, [], None)[0]


def _uses_catalog_model(obs_space, model_config: dict) -> bool:
    return bool(model_config.get("custom_model")) or len(obs_space.shape) == 3


def _trunk(obs_space, action_space, model_config: dict):
    hiddens = list(model_config.get("fcnet_hiddens", [256, 256]))
    if _uses_catalog_model(obs_space, model_config):
        size = hiddens[-1] if hiddens else 256
        model = ModelCatalog.get_model_v2(obs_space, action_space, size, model_config)
        return _CatalogTrunk(model), size
    in_size = int(np.prod(obs_space.shape))
    trunk = _MLPTrunk(in_size, hiddens, model_config.get("fcnet_activation", "tanh"))
    return trunk, hiddens[-1] if hiddens else in_size


# --- the loss -------------------------------------------------------------------------------


def dqn_loss(q_t, logits_t, q_tp1_target, logits_tp1_target, q_tp1_online, batch: dict,
             cfg: DQNConfig, discount: torch.Tensor, support: torch.Tensor):
    """The (n-step, double, distributional) DQN loss: ``(loss, td_error, stats)``. Pure."""
    actions = batch[SampleBatch.ACTIONS].long()
    rewards = batch[SampleBatch.REWARDS].float()
    not_done = 1.0 - batch[SampleBatch.DONES].float()
    weights = batch["weights"].float() if "weights" in batch else torch.ones_like(rewards)
    selector = q_tp1_online if cfg.double_q else q_tp1_target
    best = selector.argmax(dim=1)
    rows = torch.arange(len(actions))
    if cfg.num_atoms == 1:
        q_selected = q_t[rows, actions]
        target = rewards + discount * not_done * q_tp1_target[rows, best]
        td_error = q_selected - target.detach()
        loss = (weights * F.smooth_l1_loss(q_selected, target.detach(), reduction="none")).mean()
    else:
        probs_tp1 = torch.softmax(logits_tp1_target[rows, best], dim=-1)
        target_dist = project_distribution(probs_tp1, rewards, discount * not_done, support,
                                           cfg.v_min, cfg.v_max)
        log_p = torch.log_softmax(logits_t[rows, actions], dim=-1)
        td_error = -(target_dist * log_p).sum(-1)  # cross-entropy, also the priority
        loss = (weights * td_error).mean()
        q_selected = q_t[rows, actions]
    q_selected = q_selected.detach()
    stats = {"mean_q": q_selected.mean(), "min_q": q_selected.min(), "max_q": q_selected.max(),
             "mean_td_error": td_error.detach().mean()}
    return loss, td_error.detach(), stats


def project_distribution(probs, rewards, discounts, support, v_min, v_max):
    """Project ``r + discount * z`` (probabilities ``probs``) back onto ``support`` (C51)."""
    num_atoms = support.shape[0]
    delta_z = (v_max - v_min) / (num_atoms - 1)
    tz = (rewards.unsqueeze(1) + discounts.unsqueeze(1) * support.unsqueeze(0)).clamp(v_min,
                                                                                      v_max)
    b = (tz - v_min) / delta_z
    lower, upper = b.floor().long(), b.ceil().long()
    # When b lands exactly on an atom, lower == upper and both shares below would be 0.
    lower[(upper > 0) & (lower == upper)] -= 1
    upper[(lower < num_atoms - 1) & (lower == upper)] += 1
    out = torch.zeros_like(probs)
    out.scatter_add_(1, lower, probs * (upper.float() - b))
    out.scatter_add_(1, upper, probs * (b - lower.float()))
    return out


# --- the policy -----------------------------------------------------------------------------


class DQNTorchPolicy(ParameterNoiseMixin, TargetNetworkMixin, TorchPolicy):
    """Epsilon-greedy, Boltzmann or parameter-noise acting on a QNetwork; learns with
    ``dqn_loss``."""

    def __init__(self, observation_space, action_space, config):
        config = merge_dicts(DEFAULT_CONFIG, config)
        if not isinstance(action_space, spaces.Discrete):
            raise ValueError(f"DQN needs a Discrete action space, got {action_space}: use "
                             "DDPG, TD3 or SAC for continuous (Box) actions")
        cfg = typed_view(DQNConfig, config)
        if cfg.parameter_noise and cfg.noisy:
            raise ValueError("parameter_noise and noisy are two alternative kinds of "
                             "exploration noise (perturbed weights vs. learned noisy layers): "
                             "set only one of them")
        if cfg.num_atoms > 1 and cfg.v_min >= cfg.v_max:
            raise ValueError(f"v_min ({cfg.v_min}) must be below v_max ({cfg.v_max})")
        self.config = config
        self.dqn_config = cfg
        model = QNetwork(observation_space, action_space, config["model"], cfg)
        self.target_model = copy.deepcopy(model)
        self.target_model.requires_grad_(False)
        super().__init__(observation_space, action_space, model, _loss, None, config)
        self.param_noise = ParameterNoise(model, cfg.parameter_noise_initial_stddev) \
            if cfg.parameter_noise else None
        steps = max(1, int(cfg.exploration_fraction * cfg.schedule_max_timesteps))
        self.exploration = PiecewiseSchedule([[0, 1.0], [steps, cfg.exploration_final_eps]])
        self.epsilon = 1.0
        self.fixed_epsilon = None
        self._td_error = None
        self._stats: dict = {}

    def to_device(self, device) -> None:
        super().to_device(device)
        if self.param_noise is not None:
            with self.lock:
                self.param_noise.perturbed.to(self.device)
                self.param_noise.resample()

    def optimizer(self):
        return make_adam(self.model.parameters(), lr=self.config["lr"],
                         eps=self.config["adam_epsilon"])

    def compute_actions(self, obs_batch, state_batches=None, prev_action_batch=None,
                        prev_reward_batch=None, info_batch=None, episodes=None, explore=None,
                        **kwargs):
        explore = self.config.get("explore", True) if explore is None else explore
        with self.lock, torch.no_grad():
            obs = torch.as_tensor(np.asarray(obs_batch), dtype=torch.float32,
                                  device=self.device)
            network = self.model
            if explore and self.param_noise is not None:
                self.param_noise.resample_on_new_episodes(episodes)
                network = self.param_noise.network()
            self.model.set_noise(explore)
            q, _ = network(self._input_dict(obs, None, None))
            self.model.set_noise(True)
            if explore and self.dqn_config.soft_q:
                probs = torch.softmax(q / self.dqn_config.softmax_temp, dim=1)
                actions = torch.multinomial(probs, 1).squeeze(1)
            else:
                actions = q.argmax(dim=1)
            if explore and self.epsilon > 0 and self.param_noise is None:
                random_actions = torch.randint(0, q.shape[1], actions.shape, device=q.device)
                pick = torch.rand(actions.shape, device=q.device) < self.epsilon
                actions = torch.where(pick, random_actions, actions)
            return actions.cpu().numpy(), [], {}

    def on_global_var_update(self, global_vars):
        super().on_global_var_update(global_vars)
        if self.fixed_epsilon is None:
            self.epsilon = self.exploration.value(global_vars["timestep"])

    def set_epsilon(self, epsilon: float) -> None:
        """Pin epsilon (Ape-X's per-worker exploration); the schedule no longer applies."""
        self.fixed_epsilon = self.epsilon = epsilon

    def postprocess_trajectory(self, sample_batch, other_agent_batches=None, episode=None):
        if self.param_noise is not None and sample_batch.count:
            self._adapt_param_noise(sample_batch[SampleBatch.CUR_OBS])
        if self.dqn_config.n_step > 1:
            adjust_nstep(sample_batch, self.dqn_config.n_step, self.config["gamma"])
        if self.dqn_config.worker_side_prioritization and sample_batch.count:
            td_error = self.compute_td_error(sample_batch)
            sample_batch["weights"] = (np.abs(td_error) +
                                       self.dqn_config.prioritized_replay_eps).astype(np.float32)
        return sample_batch

    def _adapt_param_noise(self, obs) -> None:
        """Move sigma so KL(softmax Q || softmax Q~) on the recent states (``obs`` and the
        ones before) tracks eps-greedy's KL."""
        with self.lock, torch.no_grad():
            states = self.param_noise.measurement_states(obs)
            input_dict = self._input_dict(torch.as_tensor(states, dtype=torch.float32,
                                                          device=self.device),
                                          None, None)
            q, _ = self.model(input_dict)
            q_perturbed, _ = self.param_noise.network()(input_dict)
            self.param_noise.adapt(softmax_kl(q, q_perturbed),
                                   epsilon_greedy_kl(self.epsilon, q.shape[1]))

    def compute_td_error(self, batch) -> np.ndarray:
        with self.lock, torch.no_grad():
            _loss(self, self.to_tensors(batch))
            return self._td_error.cpu().numpy()

    def learn_on_tensors(self, tensors: dict) -> dict:
        out = super().learn_on_tensors(tensors)
        out["td_error"] = self._td_error.cpu().numpy()
        return out

    def extra_grad_process(self) -> dict:
        clip = self.dqn_config.grad_norm_clipping
        if clip:
            norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), clip)
            return {"grad_gnorm": float(norm)}
        return {}

    def extra_grad_info(self, tensors) -> dict:
        stats = {k: float(v) for k, v in self._stats.items()}
        stats.update(cur_lr=self.config["lr"], cur_epsilon=self.epsilon)
        return stats

    def get_state(self) -> dict:
        state = super().get_state()
        state["epsilon"] = self.epsilon
        return state

    def set_state(self, state) -> None:
        super().set_state(state)
        self.epsilon = state.get("epsilon", self.epsilon)


def _loss(policy: DQNTorchPolicy, batch: dict):
    cfg = policy.dqn_config
    obs = policy._input_dict(batch[SampleBatch.CUR_OBS].float(), None, None, is_training=True)
    next_obs = policy._input_dict(batch[SampleBatch.NEXT_OBS].float(), None, None,
                                  is_training=True)
    q_t, logits_t = policy.model(obs)
    with torch.no_grad():
        q_tp1_target, logits_tp1_target = policy.target_model(next_obs)
        q_tp1_online = policy.model(next_obs)[0] if cfg.double_q else None
    discount = bootstrap_discount(batch, policy.config["gamma"], cfg.n_step)
    loss, policy._td_error, policy._stats = dqn_loss(
        q_t, logits_t, q_tp1_target, logits_tp1_target, q_tp1_online, batch, cfg, discount,
        policy.model.support)
    return loss


# --- the trainer ----------------------------------------------------------------------------


def replay_optimizer_args(config: dict) -> dict:
    """The SyncReplayOptimizer arguments of an off-policy algorithm's config."""
    keys = ("learning_starts", "buffer_size", "prioritized_replay", "prioritized_replay_alpha",
            "prioritized_replay_beta", "schedule_max_timesteps", "beta_annealing_fraction",
            "final_prioritized_replay_beta", "prioritized_replay_eps", "train_batch_size",
            "sample_batch_size")
    return dict({k: config[k] for k in keys}, seed=config["seed"], **config["optimizer"])


class DQNTrainer(Trainer):
    """DQN/Rainbow on the SyncReplayOptimizer; the target network is copied every
    ``target_network_update_freq`` sampled steps."""

    _name = "DQN"
    _default_config = DEFAULT_CONFIG
    _policy = DQNTorchPolicy

    def _init(self, config, env_creator):
        self.workers = self._make_workers(env_creator, self._policy, config,
                                          config["num_workers"])
        self.optimizer = self._make_optimizer(config)
        self.last_target_update = 0
        if config["per_worker_exploration"]:
            num = len(self.workers.remote_workers())
            self.workers.foreach_worker_with_index(
                lambda w, i: w.foreach_policy(
                    lambda p, _pid: p.set_epsilon(per_worker_epsilon(i, num)) if i else None))

    def _make_optimizer(self, config):
        return SyncReplayOptimizer(self.workers, **replay_optimizer_args(config))

    def training_step(self) -> dict:
        before = self.optimizer.num_steps_sampled
        stats = self.optimizer.step()
        self.steps_sampled += self.optimizer.num_steps_sampled - before
        self.steps_trained = self.optimizer.num_steps_trained
        self._maybe_update_target()
        self.set_global_vars()
        return dict(stats)

    def _maybe_update_target(self) -> None:
        if self.steps_sampled - self.last_target_update >= \
                self.config["target_network_update_freq"]:
            self.update_target()

    def update_target(self) -> None:
        tau = self.config.get("tau")  # DDPG/SAC move targets by tau; DQN copies them
        self.workers.local_worker().foreach_trainable_policy(lambda p, _pid: p.update_target(tau))
        self.last_target_update = self.steps_sampled

    def _train(self) -> dict:
        result = super()._train()
        if self.config.get("parameter_noise"):  # SAC shares this trainer, without it
            report_param_noise_sigma(self.workers, result["info"]["learner"])
        return result

    def _restore(self, checkpoint_path):
        super()._restore(checkpoint_path)
        if self.config.get("parameter_noise"):
            broadcast_param_noise_sigma(self.workers)

    def _stop(self):
        if hasattr(self, "optimizer"):
            self.optimizer.stop()
        super()._stop()


SIMPLE_Q_DEFAULT_CONFIG = merge_dicts(DEFAULT_CONFIG, {
    "dueling": False, "double_q": False, "prioritized_replay": False, "n_step": 1,
    "num_atoms": 1, "noisy": False,
})


class SimpleQTrainer(DQNTrainer):
    """Ray 0.7's SimpleQ: DQN without the Rainbow extensions (no dueling streams, no
    double Q, uniform replay, 1-step targets): a Q network, its target copy, the Huber
    loss on ``r + gamma * max_a Q_target(s', a)`` and epsilon-greedy exploration. It takes
    DQN's keys, so any extension can still be switched back on."""

    _name = "SimpleQ"
    _default_config = SIMPLE_Q_DEFAULT_CONFIG


__all__ = ["DEFAULT_CONFIG", "DQNConfig", "DQNTorchPolicy", "DQNTrainer", "NoisyLinear",
           "SIMPLE_Q_DEFAULT_CONFIG", "SimpleQTrainer",
           "QNetwork", "TargetNetworkMixin", "adjust_nstep", "dqn_loss", "polyak_update",
           "project_distribution"]
