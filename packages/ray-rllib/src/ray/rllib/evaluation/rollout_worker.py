"""RolloutWorker: env copies plus policies; produces experience batches.

The driver holds one *local* worker (its policies are the ones trained);
``num_workers`` more run as Ray actors (see ``WorkerSet``).
"""

from __future__ import annotations

import logging
import pickle
import random
import socket

import gymnasium as gym
import numpy as np
import torch

from ray.rllib.env.atari_wrappers import MonitorEnv, get_wrapper_by_cls, is_atari, wrap_deepmind
from ray.rllib.env.base_env import BaseEnv
from ray.rllib.env.env_context import EnvContext
from ray.rllib.env.external_env import ExternalEnv
from ray.rllib.env.gym_vector_env import GymVectorEnv
from ray.rllib.env.multi_agent_env import MultiAgentEnv
from ray.rllib.env.vector_env import VectorEnv
from ray.rllib.evaluation.sampler import AsyncSampler, SyncSampler
from ray.rllib.models.catalog import MODEL_DEFAULTS, ModelCatalog
from ray.rllib.offline.io_context import IOContext
from ray.rllib.policy.sample_batch import DEFAULT_POLICY_ID, MultiAgentBatch, SampleBatch
from ray.rllib.utils.filter import get_filter
from ray.rllib.utils.merge import merge_dicts
from ray.rllib.utils.torch_ops import policy_device

logger = logging.getLogger(__name__)


class EvaluatorInterface:
    """What optimizers need from a worker."""

    def sample(self):
        raise NotImplementedError

    def learn_on_batch(self, samples):
        raise NotImplementedError

    def compute_gradients(self, samples):
        raise NotImplementedError

    def apply_gradients(self, grads):
        raise NotImplementedError

    def get_weights(self):
        raise NotImplementedError

    def set_weights(self, weights):
        raise NotImplementedError


class RolloutWorker(EvaluatorInterface):
    def __init__(self, env_creator, policy, policy_mapping_fn=None, policies_to_train=None,
                 tf_session_creator=None, batch_steps=100, batch_mode="truncate_episodes",
                 episode_horizon=None, preprocessor_pref="deepmind", sample_async=False,
                 compress_observations=False, num_envs=1, observation_filter="NoFilter",
                 clip_rewards=None, clip_actions=True, env_config=None, model_config=None,
                 policy_config=None, worker_index=0, monitor_path=None, log_dir=None,
                 log_level=None, callbacks=None, input_creator=None,
                 input_evaluation=frozenset(), output_creator=None, remote_worker_envs=False,
                 remote_env_batch_wait_ms=0, soft_horizon=False, _fake_sampler=False,
                 seed=None):
        if batch_mode not in ("truncate_episodes", "complete_episodes"):
            raise ValueError(
                f"batch_mode must be 'truncate_episodes' or 'complete_episodes', not {batch_mode!r}"
            )
        if log_level:
            logging.getLogger("ray.rllib").setLevel(log_level)
        self.worker_index = worker_index
        if worker_index > 0:
            # Remote workers share the machine's cores with each other and the
            # driver: intra-op threads would only contend.
            torch.set_num_threads(1)
        self.callbacks = dict(callbacks or {})
        self.compress_observations = bool(compress_observations)
        # Debugging aid (0.7): every sample() returns the first batch again.
        self.fake_sampler = bool(_fake_sampler)
        self._fake_batch = None
        self.policy_config = policy_config or {}
        self.batch_mode = batch_mode
        model_config = model_config or MODEL_DEFAULTS
        rng = random.Random(seed)
        if seed is not None:
            worker_seed = seed + 1000 * worker_index
            random.seed(worker_seed)
            np.random.seed(worker_seed)
            torch.manual_seed(worker_seed)
            rng = random.Random(worker_seed)

        if preprocessor_pref not in ("deepmind", "rllib", None):
            raise ValueError(f"preprocessor_pref must be 'deepmind' (the DeepMind Atari "
                             f"wrappers) or 'rllib' (RLlib's pixel preprocessor), not "
                             f"{preprocessor_pref!r}")
        self.env_context = EnvContext(env_config or {}, worker_index)
        self.env = env_creator(self.env_context)
        wrap = _identity
        self.atari_monitored = False
        if is_atari(self.env) and not model_config.get("custom_preprocessor") \
                and preprocessor_pref == "deepmind":
            # The DeepMind wrappers do all the preprocessing; rewards are clipped to
            # their sign unless clip_rewards says otherwise.
            if clip_rewards is None:
                clip_rewards = True
            dim, framestack = model_config.get("dim", 84), model_config.get("framestack", True)

            def wrap(env):
                return wrap_deepmind(env, dim=dim, framestack=framestack)

            self.env = wrap(self.env)
            self.atari_monitored = True
        if monitor_path:
            from ray.rllib.env.monitor import monitor_env

            inner_wrap = wrap

            def wrap(env, vector_index=0):
                return monitor_env(inner_wrap(env), monitor_path, worker_index, vector_index)

            self.env = monitor_env(self.env, monitor_path, worker_index, 0)
        if remote_worker_envs:
            raise ValueError(
                "remote_worker_envs=True (each env copy in its own actor) is not supported: "
                "envs step in the worker process; use num_workers for parallel envs, or "
                "num_envs_per_worker to batch inference over several copies")

        def make_env(vector_index):
            env = env_creator(self.env_context.copy_with_overrides(vector_index=vector_index))
            if monitor_path:
                return wrap(env, vector_index)
            return wrap(env)

        if isinstance(self.env, gym.vector.VectorEnv):
            # A gymnasium vector env steps its copies as one batch: the fast path.
            self.env = GymVectorEnv(
                self.env, seed=None if seed is None else seed + 1000 * worker_index)
        policy_specs = _policy_specs(policy, self.env)
        self.policy_map, self.preprocessors, self.filters = {}, {}, {}
        for policy_id, (cls, obs_space, act_space, conf) in policy_specs.items():
            merged = merge_dicts(self.policy_config, conf or {})
            prep = ModelCatalog.get_preprocessor_for_space(obs_space, merged.get("model",
                                                                                 model_config))
            self.preprocessors[policy_id] = prep
            self.policy_map[policy_id] = cls(prep.observation_space, act_space, merged)
            self.filters[policy_id] = get_filter(observation_filter, prep.shape)
        # The learner (the driver's worker, index 0) runs on a GPU when num_gpus > 0;
        # sampling workers only with num_gpus_per_worker > 0.
        key = "num_gpus" if worker_index == 0 else "num_gpus_per_worker"
        self.device = policy_device(self.policy_config.get(key, 0),
                                    self.policy_config.get("_fake_gpus", False), key)
        for policy in self.policy_map.values():
            if self.device.type != "cpu" and hasattr(policy, "to_device"):
                policy.to_device(self.device)
        self.policy_mapping_fn = policy_mapping_fn or (lambda _agent: DEFAULT_POLICY_ID)
        self.policies_to_train = list(policies_to_train or self.policy_map.keys())

        env_seed = None if seed is None else seed + 1000 * worker_index
        if isinstance(self.env, MultiAgentEnv | BaseEnv | ExternalEnv) or len(policy_specs) > 1:
            self.async_env = BaseEnv.to_base_env(self.env, make_env=make_env, num_envs=num_envs)
        elif isinstance(self.env, VectorEnv):
            self.async_env = self.env
        else:
            self.async_env = VectorEnv.wrap(make_env, [self.env], num_envs, seed=env_seed)
        io_context = IOContext(log_dir, self.policy_config, worker_index, self)
        self.output_writer = output_creator(io_context) if output_creator else None
        input_evaluation = set(input_evaluation or ())
        unknown = input_evaluation - {"is", "wis", "simulation"}
        if unknown:
            raise ValueError(f"unknown input_evaluation {sorted(unknown)}: use any of "
                             "'is', 'wis', 'simulation'")
        # "simulation": sample in the background for metrics only; the data is dropped.
        simulate = input_creator is not None and "simulation" in input_evaluation
        sampler_cls = AsyncSampler if sample_async or simulate else SyncSampler
        sampler_kwargs = dict(horizon=episode_horizon, clip_actions=clip_actions,
                              soft_horizon=soft_horizon, batch_mode=batch_mode, rng=rng)
        if simulate:
            sampler_kwargs["blackhole_outputs"] = True
        self.sampler = sampler_cls(
            self.async_env, self.policy_map, self.policy_mapping_fn, self.preprocessors,
            self.filters, clip_rewards, batch_steps, self.callbacks, **sampler_kwargs,
        )
        if simulate:
            self.sampler.start()
        # Offline input (the ``input`` config): an InputReader replaces the sampler.
        self.input_reader = input_creator(io_context) if input_creator else None
        self.postprocess_inputs = bool(self.policy_config.get("postprocess_inputs"))
        self.reward_estimators = []
        if self.input_reader is not None:
            from ray.rllib.offline.off_policy_estimator import ESTIMATORS

            self.reward_estimators = [ESTIMATORS[name].create(io_context)
                                      for name in sorted(input_evaluation & set(ESTIMATORS))]

    # --- sampling ---------------------------------------------------------------------------

    def sample(self):
        if self.fake_sampler and self._fake_batch is not None:
            return self._fake_batch
        if self.input_reader is None:
            batch = self.sampler.get_data()
        else:
            batch = self._read_input()
        if self.fake_sampler:
            self._fake_batch = batch
        if self.compress_observations and self.worker_index > 0:
            # Only what travels to the driver is worth compressing.
            for part in _policy_parts(batch):
                part.compress(bulk=True)
        if self.callbacks.get("on_sample_end"):
            self.callbacks["on_sample_end"]({"worker": self, "samples": batch})
        if self.output_writer is not None:
            self.output_writer.write(batch)
        return batch

    def _read_input(self):
        batch = self.input_reader.next()
        if self.postprocess_inputs and isinstance(batch, SampleBatch) and batch.count:
            policy = self.policy_map[DEFAULT_POLICY_ID]
            batch = SampleBatch.concat_samples([
                policy.postprocess_trajectory(episode)
                for episode in _split_trajectories(batch)
            ])
        if isinstance(batch, SampleBatch):
            for estimator in self.reward_estimators:
                estimator.process(batch)
        return batch

    def sample_with_count(self):
        batch = self.sample()
        return batch, batch.count

    def get_metrics(self) -> list:
        metrics = list(self.sampler.get_metrics())
        if self.atari_monitored:
            # Whole games (all lives), as the DeepMind wrappers' MonitorEnv saw them,
            # rather than the per-life episodes the learner sees.
            metrics = _atari_metrics(self.async_env)
        for estimator in self.reward_estimators:
            metrics.extend(estimator.get_metrics())
        return metrics

    # --- learning ---------------------------------------------------------------------------

    def learn_on_batch(self, samples) -> dict:
        if isinstance(samples, MultiAgentBatch):
            return {
                pid: self.policy_map[pid].learn_on_batch(batch)
                for pid, batch in samples.policy_batches.items()
                if pid in self.policies_to_train
            }
        return self.policy_map[DEFAULT_POLICY_ID].learn_on_batch(samples)

    def compute_gradients(self, samples):
        if isinstance(samples, MultiAgentBatch):
            grads, infos = {}, {}
            for pid, batch in samples.policy_batches.items():
                if pid in self.policies_to_train:
                    grads[pid], infos[pid] = self.policy_map[pid].compute_gradients(batch)
            return grads, infos
        return self.policy_map[DEFAULT_POLICY_ID].compute_gradients(samples)

    def apply_gradients(self, grads) -> None:
        if isinstance(grads, dict):
            for pid, g in grads.items():
                self.policy_map[pid].apply_gradients(g)
        else:
            self.policy_map[DEFAULT_POLICY_ID].apply_gradients(grads)

    # --- weights, filters, state ------------------------------------------------------------

    def get_weights(self, policies=None) -> dict:
        policies = policies or list(self.policy_map)
        return {pid: self.policy_map[pid].get_weights() for pid in policies}

    def set_weights(self, weights: dict) -> None:
        for pid, w in weights.items():
            self.policy_map[pid].set_weights(w)

    def get_filters(self, flush_after: bool = False) -> dict:
        out = {pid: f.as_serializable() for pid, f in self.filters.items()}
        if flush_after:
            for f in self.filters.values():
                f.clear_buffer()
        return out

    def sync_filters(self, new_filters: dict) -> None:
        for pid, f in new_filters.items():
            self.filters[pid].sync(f)

    def save(self) -> bytes:
        return pickle.dumps(self.get_state())

    def restore(self, objs: bytes) -> None:
        self.set_state(pickle.loads(objs))

    def get_state(self) -> dict:
        return {
            "policies": {pid: p.get_state() for pid, p in self.policy_map.items()},
            "filters": self.get_filters(),
        }

    def set_state(self, state: dict) -> None:
        for pid, policy_state in state["policies"].items():
            if pid in self.policy_map:
                self.policy_map[pid].set_state(policy_state)
        self.sync_filters({k: v for k, v in state["filters"].items() if k in self.filters})

    def set_global_vars(self, global_vars: dict) -> None:
        for policy in self.policy_map.values():
            policy.on_global_var_update(global_vars)

    # --- access -----------------------------------------------------------------------------

    def get_policy(self, policy_id=DEFAULT_POLICY_ID):
        return self.policy_map.get(policy_id)

    def for_policy(self, func, policy_id=DEFAULT_POLICY_ID):
        return func(self.policy_map[policy_id])

    def foreach_policy(self, func) -> list:
        return [func(policy, pid) for pid, policy in self.policy_map.items()]

    def foreach_trainable_policy(self, func) -> list:
        return [func(self.policy_map[pid], pid) for pid in self.policies_to_train]

    def foreach_env(self, func) -> list:
        envs = self.async_env.get_unwrapped() if hasattr(self.async_env, "get_unwrapped") else []
        return [func(env) for env in (envs or [self.env])]

    def apply(self, func, *args):
        return func(self, *args)

    def get_host(self) -> str:
        return socket.gethostname()

    def stop(self) -> None:
        self.sampler.stop()
        if self.output_writer is not None and hasattr(self.output_writer, "close"):
            self.output_writer.close()
        if hasattr(self.async_env, "close"):
            self.async_env.close()
        if hasattr(self.async_env, "stop"):
            self.async_env.stop()


def _policy_parts(batch) -> list:
    if isinstance(batch, MultiAgentBatch):
        return list(batch.policy_batches.values())
    return [batch]


def _identity(env):
    return env


def _atari_metrics(vector_env) -> list:
    from ray.rllib.evaluation.episode import RolloutMetrics

    out = []
    envs = vector_env.get_unwrapped() if hasattr(vector_env, "get_unwrapped") else []
    for env in envs:
        monitor = get_wrapper_by_cls(env, MonitorEnv)
        if monitor is None:
            continue
        for reward, length in monitor.next_episode_results():
            out.append(RolloutMetrics(length, reward, {}, {}, {}))
    return out


def _split_trajectories(batch: SampleBatch) -> list:
    """Contiguous rows of one episode (and agent) each; batches without ids stay whole."""
    if SampleBatch.EPS_ID not in batch:
        return [batch]
    return batch.split_by_episode()


def _policy_specs(policy, env) -> dict:
    if isinstance(policy, dict):
        # A spec may leave the spaces out (Ray 2.x style): take the env's.
        return {
            pid: (cls, obs or env.observation_space, act or env.action_space, conf)
            for pid, (cls, obs, act, conf) in policy.items()
        }
    if not hasattr(env, "observation_space") or env.observation_space is None:
        raise ValueError(
            "the env has no observation_space/action_space: multi-agent envs need "
            "config['multiagent']['policies'] with explicit spaces"
        )
    return {DEFAULT_POLICY_ID: (policy, env.observation_space, env.action_space, {})}


__all__ = ["EvaluatorInterface", "RolloutWorker", "SampleBatch"]
