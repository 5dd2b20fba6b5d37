"""``monitor: True``: episode statistics (and videos, where possible) in the trial's logdir.

Each env copy writes ``<logdir>/monitor/openaigym.episode_batch.<worker>.<vector>.stats.json``
in the format of gym's old ``Monitor`` (``initial_reset_timestamp``, ``timestamps``,
``episode_lengths``, ``episode_rewards``, ``episode_types``), rewritten after every episode.
Videos are recorded by gymnasium's ``RecordVideo`` (on gym's cubic schedule: episodes 0,
1, 8, 27, ... 1000, 2000, ...) when the env was made with ``render_mode="rgb_array"`` and
``moviepy`` is installed; otherwise a warning says which of the two is missing.
"""

from __future__ import annotations

import json
import logging
import os
import time

import gymnasium as gym

logger = logging.getLogger(__name__)


class EpisodeStatsRecorder(gym.Wrapper):
    def __init__(self, env, path: str):
        super().__init__(env)
        self.path = path
        self._stats = {"initial_reset_timestamp": None, "timestamps": [],
                       "episode_lengths": [], "episode_rewards": [], "episode_types": []}
        self._reward = 0.0
        self._length = 0

    def reset(self, **kwargs):
        if self._stats["initial_reset_timestamp"] is None:
            self._stats["initial_reset_timestamp"] = time.time()
        self._reward, self._length = 0.0, 0
        return self.env.reset(**kwargs)

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._reward += float(reward)
        self._length += 1
        if terminated or truncated:
            self._stats["timestamps"].append(time.time())
            self._stats["episode_lengths"].append(self._length)
            self._stats["episode_rewards"].append(self._reward)
            self._stats["episode_types"].append("t")
            tmp = self.path + ".tmp"
            with open(tmp, "w") as f:
                json.dump(self._stats, f)
            os.replace(tmp, self.path)
        return obs, reward, terminated, truncated, info


def _capped_cubic(episode_id: int) -> bool:
    if episode_id < 1000:
        return round(episode_id ** (1.0 / 3)) ** 3 == episode_id
    return episode_id % 1000 == 0


def monitor_env(env, logdir: str, worker_index: int, vector_index: int):
    """Wrap ``env`` to record its episodes under ``<logdir>/monitor``."""
    from ray.rllib.env.gym_compat import ensure_new_api

    env = ensure_new_api(env)
    folder = os.path.join(logdir, "monitor")
    os.makedirs(folder, exist_ok=True)
    if getattr(env, "render_mode", None) == "rgb_array":
        try:
            import moviepy  # noqa: F401

            env = gym.wrappers.RecordVideo(
                env, os.path.join(folder, "videos"), episode_trigger=_capped_cubic,
                name_prefix=f"worker{worker_index}_env{vector_index}", disable_logger=True)
        except ImportError:
            logger.warning("monitor: recording episode stats only; videos need moviepy "
                           "(pip install moviepy)")
    elif worker_index <= 1 and vector_index == 0:
        logger.warning("monitor: recording episode stats only; videos need an env made with "
                       "render_mode='rgb_array' (got %r)", getattr(env, "render_mode", None))
    path = os.path.join(folder,
                        f"openaigym.episode_batch.{worker_index}.{vector_index}.stats.json")
    return EpisodeStatsRecorder(env, path)


__all__ = ["EpisodeStatsRecorder", "monitor_env"]
