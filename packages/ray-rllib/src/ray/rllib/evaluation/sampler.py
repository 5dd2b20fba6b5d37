"""Samplers: collect batches from an env with the current policies.

``SyncSampler`` samples when asked; ``AsyncSampler`` keeps sampling in a
background thread and queues the batches (``sample_async``).
"""

from __future__ import annotations

import queue
import threading

from ray.rllib.env.base_env import BaseEnv
from ray.rllib.env.vector_env import VectorEnv
from ray.rllib.evaluation.multi_agent_loop import MultiAgentLoop
from ray.rllib.evaluation.sampler_options import SamplerOptions
from ray.rllib.evaluation.single_agent_loop import SingleAgentLoop
from ray.rllib.policy.sample_batch import DEFAULT_POLICY_ID


def _make_loop(env, policies, policy_mapping_fn, preprocessors, obs_filters, options):
    single_agent = (
        isinstance(env, VectorEnv) and len(policies) == 1 and DEFAULT_POLICY_ID in policies
    )
    if single_agent:
        return SingleAgentLoop(env, policies[DEFAULT_POLICY_ID],
                               preprocessors[DEFAULT_POLICY_ID], obs_filters[DEFAULT_POLICY_ID],
                               options)
    return MultiAgentLoop(BaseEnv.to_base_env(env), policies, policy_mapping_fn,
                          preprocessors, obs_filters, options)


class SyncSampler:
    def __init__(self, env, policies, policy_mapping_fn, preprocessors, obs_filters,
                 clip_rewards, unroll_length, callbacks, horizon=None, pack=False,
                 tf_sess=None, clip_actions=True, soft_horizon=False, batch_mode=None,
                 rng=None):
        options = SamplerOptions(
            unroll_length=unroll_length,
            batch_mode=batch_mode or ("truncate_episodes" if not pack else "complete_episodes"),
            horizon=horizon, soft_horizon=soft_horizon, clip_rewards=bool(clip_rewards),
            clip_actions=clip_actions, callbacks=callbacks or {},
        )
        if rng is not None:
            options.rng = rng
        self.loop = _make_loop(env, policies, policy_mapping_fn, preprocessors, obs_filters,
                               options)

    def get_data(self):
        return self.loop.sample()

    def get_metrics(self) -> list:
        metrics, self.loop.metrics = self.loop.metrics, []
        return metrics

    def get_extra_batches(self) -> list:
        return []

    def stop(self) -> None:
        pass


class AsyncSampler(threading.Thread):
    """Samples in a background thread; ``get_data()`` returns the next queued batch."""

    def __init__(self, env, policies, policy_mapping_fn, preprocessors, obs_filters,
                 clip_rewards, unroll_length, callbacks, horizon=None, pack=False,
                 tf_sess=None, clip_actions=True, blackhole_outputs=False, soft_horizon=False,
                 batch_mode=None, rng=None):
        super().__init__(daemon=True)
        self.sync = SyncSampler(env, policies, policy_mapping_fn, preprocessors, obs_filters,
                                clip_rewards, unroll_length, callbacks, horizon, pack,
                                tf_sess, clip_actions, soft_horizon, batch_mode, rng)
        self.queue: queue.Queue = queue.Queue(maxsize=5)
        self.blackhole_outputs = blackhole_outputs
        self._stop_event = threading.Event()
        self._error: BaseException | None = None
        self._metrics_lock = threading.Lock()
        self._metrics: list = []

    def run(self):
        try:
            while not self._stop_event.is_set():
                batch = self.sync.get_data()
                with self._metrics_lock:
                    self._metrics.extend(self.sync.get_metrics())
                if not self.blackhole_outputs:
                    while not self._stop_event.is_set():
                        try:
                            self.queue.put(batch, timeout=0.1)
                            break
                        except queue.Full:
                            continue
        except BaseException as error:  # surfaced to the caller of get_data()
            self._error = error

    def get_data(self):
        if not self.is_alive() and self._error is None:
            self.start()
        while True:
            if self._error is not None:
                raise RuntimeError("the background sampler thread failed") from self._error
            try:
                return self.queue.get(timeout=0.5)
            except queue.Empty:
                continue

    def get_metrics(self) -> list:
        with self._metrics_lock:
            metrics, self._metrics = self._metrics, []
        return metrics

    def get_extra_batches(self) -> list:
        return []

    def stop(self) -> None:
        self._stop_event.set()
        if self.is_alive():
            self.join(timeout=5)
