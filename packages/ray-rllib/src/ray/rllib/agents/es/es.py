"""Evolution Strategies (Salimans et al. 2017, arXiv:1703.03864).

Each iteration perturbs the flat policy parameters ``theta`` with antithetic
Gaussian noise, ``theta +/- sigma * eps_i``, and runs one episode with each on
the remote workers. The update follows the estimated gradient

    g = 1 / (2 n) * sum_i (F(theta + sigma eps_i) - F(theta - sigma eps_i)) eps_i

of the (centered-rank transformed) returns F, with Adam and L2 decay. The
noise ``eps`` is never sent: one large table of N(0, 1) samples is made once
by a remote task and shared through the object store (every worker maps the
same buffer); a perturbation is just an offset into it.

ARS (``agents/ars/ars.py``) reuses the workers and noise table defined here.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import NamedTuple

import gymnasium as gym
import numpy as np

import ray
from ray.rllib.agents import checkpoint
from ray.rllib.agents.config import (
    COMMON_CONFIG,
    algorithm_defaults,
    typed_view,
    with_common_config,
)
from ray.rllib.agents.trainer import Trainer
from ray.rllib.env.env_context import EnvContext
from ray.rllib.env.gym_compat import ensure_new_api
from ray.rllib.models.catalog import ModelCatalog
from ray.rllib.utils.filter import get_filter

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ESConfig:
    """ES settings (Ray 0.7 defaults except noise_size, see below), on COMMON_CONFIG."""

    l2_coeff: float = 0.005  # L2 weight decay added to the gradient
    noise_stdev: float = 0.02  # sigma of the parameter noise
    episodes_per_batch: int = 1000  # minimum perturbed episodes per iteration
    train_batch_size: int = 10000  # minimum env steps per iteration
    eval_prob: float = 0.003  # chance a worker runs an unperturbed evaluation episode
    return_proc_mode: str = "centered_rank"  # "centered_rank" or "raw"
    num_workers: int = 10
    stepsize: float = 0.01  # Adam step size
    observation_filter: str = "MeanStdFilter"
    noise_size: int = 25_000_000  # floats in the shared table (0.7: 250M = 1 GB)
    report_length: int = 10  # iterations averaged into episode_reward_mean
    episode_horizon: int | None = None  # cap on episode length (None: the env's limit)


DEFAULT_CONFIG = with_common_config(algorithm_defaults(ESConfig))


# --- the shared noise table -----------------------------------------------------------------


@ray.remote
def create_shared_noise(count: int, seed: int = 123) -> np.ndarray:
    """``count`` float32 N(0, 1) samples; returned once, then read from the object store."""
    return np.random.default_rng(seed).standard_normal(count, dtype=np.float32)


class SharedNoiseTable:
    def __init__(self, noise: np.ndarray):
        self.noise = noise

    def get(self, index: int, dim: int) -> np.ndarray:
        return self.noise[index:index + dim]

    def sample_index(self, rng: np.random.Generator, dim: int) -> int:
        if dim > len(self.noise):
            raise ValueError(f"the policy has {dim} parameters but noise_size is "
                             f"{len(self.noise)}: raise noise_size")
        return int(rng.integers(0, len(self.noise) - dim + 1))


# --- the policy: a deterministic MLP on flat parameters ------------------------------------


class FlatMLPPolicy:
    """obs -> (filter) -> MLP -> action. ``hiddens=[]`` is a linear policy (ARS)."""

    def __init__(self, observation_space, action_space, hiddens, activation="tanh",
                 observation_filter="MeanStdFilter", seed=None):
        self.preprocessor = ModelCatalog.get_preprocessor_for_space(observation_space)
        self.observation_space = observation_space
        self.action_space = action_space
        self.observation_filter = get_filter(observation_filter, self.preprocessor.shape)
        if isinstance(action_space, gym.spaces.Discrete):
            self.discrete, out = True, int(action_space.n)
        elif isinstance(action_space, gym.spaces.Box):
            self.discrete, out = False, int(np.prod(action_space.shape))
        else:
            raise ValueError(f"ES/ARS support Discrete and Box action spaces, not {action_space}")
        sizes = [int(np.prod(self.preprocessor.shape)), *hiddens, out]
        self.shapes = [(a, b) for a, b in zip(sizes[:-1], sizes[1:])]
        self.activation = {"tanh": np.tanh, "relu": lambda x: np.maximum(x, 0),
                           "linear": lambda x: x}[activation]
        self.num_params = sum(a * b + b for a, b in self.shapes)
        rng = np.random.default_rng(seed)
        flat = []
        for i, (a, b) in enumerate(self.shapes):
            # Normalized-columns init; a linear (ARS) policy starts at zero, as in the paper.
            if hiddens:
                w = rng.standard_normal((a, b)).astype(np.float32)
                w *= (1.0 if i < len(self.shapes) - 1 else 0.01) / np.sqrt(
                    np.square(w).sum(axis=0, keepdims=True))
            else:
                w = np.zeros((a, b), np.float32)
            flat.extend([w.ravel(), np.zeros(b, np.float32)])
        self.set_flat_weights(np.concatenate(flat))

    def set_flat_weights(self, flat: np.ndarray) -> None:
        self.flat = np.asarray(flat, dtype=np.float32)
        self.layers, i = [], 0
        for a, b in self.shapes:
            w = self.flat[i:i + a * b].reshape(a, b)
            i += a * b
            self.layers.append((w, self.flat[i:i + b]))
            i += b

    def get_flat_weights(self) -> np.ndarray:
        return self.flat

    def compute(self, observation, update_filter: bool = True):
        x = self.observation_filter(self.preprocessor.transform(observation),
                                    update=update_filter).astype(np.float32).ravel()
        for j, (w, b) in enumerate(self.layers):
            x = x @ w + b
            if j < len(self.layers) - 1:
                x = self.activation(x)
        if self.discrete:
            return int(np.argmax(x))
        return np.clip(x.reshape(self.action_space.shape), self.action_space.low,
                       self.action_space.high)


def rollout(policy: FlatMLPPolicy, env, horizon=None, update_filter=True, seed=None):
    """One episode; returns ``(total reward, length)``."""
    obs, _ = env.reset(seed=seed)
    total, length, done = 0.0, 0, False
    while not done:
        obs, reward, terminated, truncated, _ = env.step(policy.compute(obs, update_filter))
        total += float(reward)
        length += 1
        done = terminated or truncated or (horizon is not None and length >= horizon)
    return total, length


# --- workers ------------------------------------------------------------------------------


class Result(NamedTuple):
    noise_indices: list
    noisy_returns: list  # [(return of theta + sigma eps, return of theta - sigma eps)]
    noisy_lengths: list
    eval_returns: list
    eval_lengths: list
    filter: object  # observation statistics gathered by this call


class Worker:
    """Runs perturbed episodes; a Ray actor in ES/ARS (or a local object with 0 workers)."""

    def __init__(self, config: dict, env_creator, noise, worker_index: int = 1,
                 min_task_runtime: float = 0.2):
        self.config = config
        self.min_task_runtime = min_task_runtime
        self.noise = SharedNoiseTable(noise)
        self.env = ensure_new_api(env_creator(EnvContext(config["env_config"], worker_index)))
        self.policy = make_policy(config, self.env.observation_space, self.env.action_space)
        seed = config.get("seed")
        self.rng = np.random.default_rng(None if seed is None else seed + 7919 * worker_index)
        self._episode_seed = None if seed is None else seed * 100_003 + worker_index

    def _next_seed(self):
        if self._episode_seed is None:
            return None
        self._episode_seed += 1
        return self._episode_seed

    def do_rollouts(self, params, filter_state=None, num_perturbations: int = 0) -> Result:
        """Antithetic pairs for at least ``min_task_runtime`` seconds (or exactly
        ``num_perturbations`` pairs when that is set), plus the odd evaluation."""
        if filter_state is not None:
            self.policy.observation_filter.sync(filter_state)
        self.policy.observation_filter.clear_buffer()
        cfg, dim = self.config, self.policy.num_params
        horizon = cfg.get("episode_horizon")
        result = Result([], [], [], [], [], None)
        start = time.time()
        while True:
            if num_perturbations and len(result.noise_indices) >= num_perturbations:
                break
            if not num_perturbations and result.noise_indices and \
                    time.time() - start >= self.min_task_runtime:
                break
            if self.rng.random() < cfg["eval_prob"]:
                self.policy.set_flat_weights(params)
                ret, length = rollout(self.policy, self.env, horizon, update_filter=False,
                                      seed=self._next_seed())
                result.eval_returns.append(ret)
                result.eval_lengths.append(length)
                continue
            index = self.noise.sample_index(self.rng, dim)
            perturbation = cfg["noise_stdev"] * self.noise.get(index, dim)
            seed = self._next_seed()  # both halves of a pair see the same episode start
            self.policy.set_flat_weights(params + perturbation)
            pos, pos_len = rollout(self.policy, self.env, horizon, seed=seed)
            self.policy.set_flat_weights(params - perturbation)
            neg, neg_len = rollout(self.policy, self.env, horizon, seed=seed)
            result.noise_indices.append(index)
            result.noisy_returns.append((pos, neg))
            result.noisy_lengths.append((pos_len, neg_len))
        return result._replace(filter=self.policy.observation_filter.copy())


def make_policy(config, observation_space, action_space) -> FlatMLPPolicy:
    model = config.get("model") or {}
    return FlatMLPPolicy(observation_space, action_space,
                         list(model.get("fcnet_hiddens", [256, 256])),
                         model.get("fcnet_activation", "tanh"),
                         config["observation_filter"], config.get("seed"))


# --- return processing and the optimizer ----------------------------------------------------


def compute_centered_ranks(x: np.ndarray) -> np.ndarray:
    """Ranks of ``x`` scaled to [-0.5, 0.5] (robust to the scale of returns)."""
    ranks = np.empty(x.size, dtype=np.float64)
    ranks[x.ravel().argsort()] = np.arange(x.size)
    return (ranks.reshape(x.shape) / (x.size - 1) - 0.5) if x.size > 1 else np.zeros(x.shape)


def batched_weighted_sum(weights: np.ndarray, noise: SharedNoiseTable, indices, dim: int,
                         batch_size: int = 500) -> np.ndarray:
    total = np.zeros(dim, dtype=np.float64)
    for start in range(0, len(indices), batch_size):
        rows = np.stack([noise.get(i, dim) for i in indices[start:start + batch_size]])
        total += weights[start:start + batch_size] @ rows.astype(np.float64)
    return total


class Adam:
    def __init__(self, dim: int, stepsize: float, beta1=0.9, beta2=0.999, epsilon=1e-8):
        self.stepsize, self.beta1, self.beta2, self.epsilon = stepsize, beta1, beta2, epsilon
        self.m = np.zeros(dim, dtype=np.float64)
        self.v = np.zeros(dim, dtype=np.float64)
        self.t = 0

    def step(self, gradient: np.ndarray) -> np.ndarray:
        """The update to *add* to theta for a gradient to descend."""
        self.t += 1
        a = self.stepsize * np.sqrt(1 - self.beta2 ** self.t) / (1 - self.beta1 ** self.t)
        self.m = self.beta1 * self.m + (1 - self.beta1) * gradient
        self.v = self.beta2 * self.v + (1 - self.beta2) * gradient * gradient
        return -a * self.m / (np.sqrt(self.v) + self.epsilon)


# --- the trainer ----------------------------------------------------------------------------


class ESTrainer(Trainer):
    """Derivative-free: no RolloutWorkers, no SGD; workers are ES ``Worker`` actors."""
    _workers_sample_while_learning = True

    _name = "ES"
    _default_config = DEFAULT_CONFIG

    # Common keys for RolloutWorkers, SGD and env wrapping: ES/ARS workers step one plain
    # env with a numpy policy on the CPU, so a non-default value could not take effect.
    _NOT_APPLICABLE = ("num_gpus", "monitor", "compress_observations",
                       "num_envs_per_worker", "clip_rewards", "preprocessor_pref")

    def _init(self, config, env_creator):
        if config.get("evaluation_interval"):
            raise ValueError(f"{self._name} reports unperturbed evaluation episodes itself "
                             "(eval_prob): leave evaluation_interval unset")
        for key in self._NOT_APPLICABLE:
            if config.get(key) != COMMON_CONFIG[key]:
                raise ValueError(
                    f"{key}={config.get(key)!r} does not apply to {self._name}: its workers "
                    "step one plain env each with a numpy policy on the CPU (no "
                    "RolloutWorkers, no SGD, no env wrappers); drop the key, or use "
                    "num_workers for more parallel rollouts")
        env = ensure_new_api(env_creator(EnvContext(config["env_config"], 0)))
        self.policy = make_policy(config, env.observation_space, env.action_space)
        self.env = env
        if not ray.is_initialized():
            ray.init()
        self.noise_ref = create_shared_noise.remote(config["noise_size"],
                                                    config["seed"] if config["seed"] is not None
                                                    else 123)
        self.noise = SharedNoiseTable(ray.get(self.noise_ref))
        self.theta = self.policy.get_flat_weights().astype(np.float64)
        self.optimizer = Adam(self.policy.num_params, config["stepsize"]) \
            if "stepsize" in config else None
        self.local_worker = None
        self.remote_workers = []
        if config["num_workers"] > 0:
            remote_cls = ray.remote(num_cpus=config["num_cpus_per_worker"])(Worker)
            self.remote_workers = [
                remote_cls.remote(config, env_creator, self.noise_ref, i + 1)
                for i in range(config["num_workers"])
            ]
        else:
            self.local_worker = Worker(config, env_creator, self.noise.noise, 1)
        self.reward_history: list = []
        self.episodes_total = 0

    # One iteration: rollouts until enough episodes and steps, then one update.
    def _collect(self, min_episodes: int, min_steps: int, num_perturbations: int = 0) -> list:
        params = self.theta.astype(np.float32)
        filter_state = self.policy.observation_filter.copy()
        results, episodes, steps = [], 0, 0
        if self.local_worker is not None:
            while episodes < min_episodes or steps < min_steps:
                res = self.local_worker.do_rollouts(params, filter_state, num_perturbations)
                results.append(res)
                episodes += 2 * len(res.noise_indices)
                steps += int(np.sum(res.noisy_lengths))
            return results
        params_ref, filter_ref = ray.put(params), ray.put(filter_state)
        pending = {w.do_rollouts.remote(params_ref, filter_ref, num_perturbations): w
                   for w in self.remote_workers}
        while pending:
            [ready], _ = ray.wait(list(pending))
            worker = pending.pop(ready)
            res = ray.get(ready)
            results.append(res)
            episodes += 2 * len(res.noise_indices)
            steps += int(np.sum(res.noisy_lengths)) if res.noisy_lengths else 0
            if episodes < min_episodes or steps < min_steps:
                pending[worker.do_rollouts.remote(params_ref, filter_ref,
                                                  num_perturbations)] = worker
        return results

    def _merge_filters(self, results: list) -> None:
        for res in results:
            self.policy.observation_filter.apply_changes(res.filter, with_buffer=False)

    def training_step(self) -> dict:
        cfg = typed_view(ESConfig, self.config)
        results = self._collect(cfg.episodes_per_batch, cfg.train_batch_size)
        indices = np.array([i for r in results for i in r.noise_indices])
        returns = np.array([x for r in results for x in r.noisy_returns], dtype=np.float64)
        lengths = np.array([x for r in results for x in r.noisy_lengths])
        self._merge_filters(results)
        if cfg.return_proc_mode == "centered_rank":
            proc = compute_centered_ranks(returns)
        elif cfg.return_proc_mode == "raw":
            proc = returns
        else:
            raise ValueError(f"return_proc_mode must be 'centered_rank' or 'raw', "
                             f"not {cfg.return_proc_mode!r}")
        g = batched_weighted_sum(proc[:, 0] - proc[:, 1], self.noise, indices,
                                 self.policy.num_params) / returns.size
        update = self.optimizer.step(-g + cfg.l2_coeff * self.theta)
        self.theta = self.theta + update
        self.policy.set_flat_weights(self.theta.astype(np.float32))
        return self._record(results, returns, lengths, {
            "weights_norm": float(np.square(self.theta).sum()),
            "grad_norm": float(np.square(g).sum()),
            "update_ratio": float(np.linalg.norm(update) / np.linalg.norm(self.theta)),
        })

    def _record(self, results, returns, lengths, stats) -> dict:
        eval_returns = [x for r in results for x in r.eval_returns]
        eval_lengths = [x for r in results for x in r.eval_lengths]
        steps = int(lengths.sum()) + int(np.sum(eval_lengths))
        self.steps_sampled += steps
        self.steps_trained += steps
        self.episodes_total += returns.size + len(eval_returns)
        # Episode returns of the unperturbed policy when some were evaluated this
        # iteration, else the mean of the perturbed ones (a slight underestimate).
        self.reward_history.append(float(np.mean(eval_returns)) if eval_returns
                                   else float(returns.mean()))
        self._iter_info = {
            "episodes_this_iter": int(returns.size + len(eval_returns)),
            "noisy_return_mean": float(returns.mean()),
            "eval_returns": eval_returns,
            "episode_len_mean": float(lengths.mean()),
        }
        stats.update(episodes_so_far=self.episodes_total, num_perturbations=len(returns))
        return {"default_policy": stats}

    def _train(self) -> dict:
        start, before = time.time(), self.steps_sampled
        while True:
            learner = self.training_step()
            if time.time() - start >= self.config["min_iter_time_s"] and \
                    self.steps_sampled - before >= self.config["timesteps_per_iteration"]:
                break
        recent = self.reward_history[-self.config["report_length"]:]
        info = self._iter_info
        eval_returns = info["eval_returns"]
        result = {
            "episode_reward_mean": float(np.mean(recent)),
            "episode_reward_max": float(np.max(eval_returns)) if eval_returns else float("nan"),
            "episode_reward_min": float(np.min(eval_returns)) if eval_returns else float("nan"),
            "episode_len_mean": info["episode_len_mean"],
            "episodes_this_iter": info["episodes_this_iter"],
            "episodes_total": self.episodes_total,
            "noisy_return_mean": info["noisy_return_mean"],
            "timesteps_this_iter": self.steps_sampled - before,
            "timesteps_total": self.steps_sampled,
            "num_healthy_workers": len(self.remote_workers),
            "policy_reward_mean": {}, "custom_metrics": {}, "sampler_perf": {},
            "off_policy_estimator": {},
            "info": dict(learner, learner=learner, num_steps_sampled=self.steps_sampled,
                         num_steps_trained=self.steps_trained),
        }
        result["env_runners"] = {
            "episode_return_mean": result["episode_reward_mean"],
            "episode_reward_mean": result["episode_reward_mean"],
            "episode_len_mean": result["episode_len_mean"],
            "num_episodes": result["episodes_this_iter"],
        }
        if self.config["callbacks"].get("on_train_result"):
            self.config["callbacks"]["on_train_result"]({"trainer": self, "result": result})
        return result

    # --- acting, state ------------------------------------------------------------------------

    def compute_action(self, observation, *args, **kwargs):
        return self.policy.compute(observation, update_filter=False)

    def get_policy(self, policy_id="default_policy"):
        return self.policy

    def get_weights(self, policies=None) -> dict:
        return {"default_policy": self.policy.get_flat_weights()}

    def set_weights(self, weights: dict) -> None:
        self.theta = np.asarray(weights["default_policy"], dtype=np.float64)
        self.policy.set_flat_weights(self.theta.astype(np.float32))

    def _save(self, checkpoint_dir):
        import os

        path = os.path.join(checkpoint_dir, f"checkpoint-{self.iteration}")
        state = {"theta": self.theta, "filter": self.policy.observation_filter.copy(),
                 "optimizer": vars(self.optimizer).copy() if self.optimizer else None,
                 "reward_history": self.reward_history, "episodes_total": self.episodes_total}
        checkpoint.write_checkpoint(path, self._name, self.config, state,
                                    {"steps_sampled": self.steps_sampled,
                                     "steps_trained": self.steps_trained})
        return path

    def _restore(self, checkpoint_path):
        data = checkpoint.load_checkpoint(checkpoint_path)
        if data["algorithm"] != self._name:
            raise checkpoint.CheckpointError(
                f"this checkpoint was written by {data['algorithm']}, not {self._name}: restore "
                f"it with --run {data['algorithm']}")
        state = data["worker"]
        self.set_weights({"default_policy": state["theta"]})
        self.policy.observation_filter.sync(state["filter"])
        if state["optimizer"] and self.optimizer:
            vars(self.optimizer).update(state["optimizer"])
        self.reward_history = list(state["reward_history"])
        self.episodes_total = state["episodes_total"]
        self.steps_sampled = data["trainer_state"]["steps_sampled"]
        self.steps_trained = data["trainer_state"]["steps_trained"]

    def _stop(self):
        for worker in self.remote_workers:
            try:
                ray.kill(worker)
            except Exception:  # noqa: BLE001 - a dead actor is already stopped
                pass
        self.remote_workers = []
        self.noise_ref = self.noise = None  # the table is freed once nothing refers to it
        if hasattr(self, "env"):
            self.env.close()


__all__ = ["DEFAULT_CONFIG", "ESConfig", "ESTrainer", "FlatMLPPolicy", "SharedNoiseTable",
           "Worker", "compute_centered_ranks", "create_shared_noise"]
