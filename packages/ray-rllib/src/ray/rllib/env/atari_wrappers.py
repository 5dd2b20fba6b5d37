"""The DeepMind Atari preprocessing (Mnih et al. 2015), as RLlib's ``wrap_deepmind``.

``wrap_deepmind(env, dim=84, framestack=True)`` stacks, outermost last:

* :class:`NoopResetEnv` -- a random number (1..30) of no-ops after each reset;
* :class:`MaxAndSkipEnv` -- repeat each action 4 frames, return the pixel-wise max of
  the last two (only for ``NoFrameskip`` ids: the others skip frames themselves);
* :class:`EpisodicLifeEnv` -- a lost life ends the episode for the learner, while the
  game is reset only at real game over;
* :class:`FireResetEnv` -- press FIRE after a reset in games that need it;
* :class:`WarpFrame` -- grayscale, resized to ``dim x dim`` (pixel-area averaging, as
  OpenCV's ``INTER_AREA``), ``uint8`` of shape ``[dim, dim, 1]``;
* :class:`FrameStack` -- the last 4 frames along the channel axis, ``[dim, dim, 4]``.

Rewards are not clipped here: the sampler clips them to their sign (``clip_rewards``
defaults to on for Atari). Frames stay ``uint8`` end to end (4x less to move and store
than float32); the vision network scales them to [0, 1].

Episode statistics (``episode_reward_mean``) count whole games, not lives: the sampler
reads the game's own return from :class:`MonitorEnv`, the innermost wrapper.
"""

from __future__ import annotations

import collections

import gymnasium as gym
import numpy as np
import torch
from gymnasium import spaces


def is_atari(env) -> bool:
    """Whether ``env`` is an ALE game observed through its screen (not its RAM)."""
    space = getattr(env, "observation_space", None)
    shape = getattr(space, "shape", None)
    if shape is None or len(shape) != 3:
        return False
    unwrapped = getattr(env, "unwrapped", env)
    return type(unwrapped).__name__ == "AtariEnv" and hasattr(unwrapped, "ale")


def get_wrapper_by_cls(env, cls):
    """The wrapper of type ``cls`` in ``env``'s chain, or None."""
    current = env
    while True:
        if isinstance(current, cls):
            return current
        if not isinstance(current, gym.Wrapper):
            return None
        current = current.env


class MonitorEnv(gym.Wrapper):
    """Records the return and length of whole games (across lives)."""

    def __init__(self, env):
        super().__init__(env)
        self._current_reward = 0.0
        self._num_steps = 0
        self._episode_rewards: list[float] = []
        self._episode_lengths: list[int] = []

    def reset(self, **kwargs):
        self._current_reward = 0.0
        self._num_steps = 0
        return self.env.reset(**kwargs)

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._current_reward += reward
        self._num_steps += 1
        if terminated or truncated:
            self._episode_rewards.append(self._current_reward)
            self._episode_lengths.append(self._num_steps)
        return obs, reward, terminated, truncated, info

    def next_episode_results(self):
        """Yield ``(return, length)`` of games finished since the last call."""
        while self._episode_rewards:
            yield self._episode_rewards.pop(0), self._episode_lengths.pop(0)


class NoopResetEnv(gym.Wrapper):
    """Sample initial states by taking a random number (1..noop_max) of no-ops on reset."""

    def __init__(self, env, noop_max: int = 30):
        super().__init__(env)
        self.noop_max = noop_max
        if env.unwrapped.get_action_meanings()[0] != "NOOP":
            raise ValueError("NoopResetEnv needs action 0 to be NOOP")

    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        noops = int(self.unwrapped.np_random.integers(1, self.noop_max + 1))
        for _ in range(noops):
            obs, _reward, terminated, truncated, info = self.env.step(0)
            if terminated or truncated:
                obs, info = self.env.reset(**kwargs)
        return obs, info


class FireResetEnv(gym.Wrapper):
    """Press FIRE (then action 2) on reset, for games that wait for it."""

    def __init__(self, env):
        super().__init__(env)
        meanings = env.unwrapped.get_action_meanings()
        if meanings[1] != "FIRE" or len(meanings) < 3:
            raise ValueError("FireResetEnv needs action 1 to be FIRE")

    def reset(self, **kwargs):
        self.env.reset(**kwargs)
        obs, _reward, terminated, truncated, info = self.env.step(1)
        if terminated or truncated:
            self.env.reset(**kwargs)
        obs, _reward, terminated, truncated, info = self.env.step(2)
        if terminated or truncated:
            obs, info = self.env.reset(**kwargs)
        return obs, info


class EpisodicLifeEnv(gym.Wrapper):
    """A lost life ends the episode; the game itself resets only at game over."""

    def __init__(self, env):
        super().__init__(env)
        self.lives = 0
        self.was_real_done = True

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.was_real_done = terminated or truncated
        lives = self.env.unwrapped.ale.lives()
        if 0 < lives < self.lives:
            terminated = True
        self.lives = lives
        return obs, reward, terminated, truncated, info

    def reset(self, **kwargs):
        if self.was_real_done:
            obs, info = self.env.reset(**kwargs)
        else:
            # No-op step to advance from the lost-life state.
            obs, _reward, terminated, truncated, info = self.env.step(0)
            if terminated or truncated:
                obs, info = self.env.reset(**kwargs)
        self.lives = self.env.unwrapped.ale.lives()
        return obs, info


class MaxAndSkipEnv(gym.Wrapper):
    """Repeat the action ``skip`` frames; observe the max over the last two frames."""

    def __init__(self, env, skip: int = 4):
        super().__init__(env)
        self._obs_buffer = np.zeros((2,) + env.observation_space.shape,
                                    dtype=env.observation_space.dtype)
        self._skip = skip

    def step(self, action):
        total_reward = 0.0
        terminated = truncated = False
        info = {}
        for i in range(self._skip):
            obs, reward, terminated, truncated, info = self.env.step(action)
            if i == self._skip - 2:
                self._obs_buffer[0] = obs
            if i == self._skip - 1:
                self._obs_buffer[1] = obs
            total_reward += reward
            if terminated or truncated:
                break
        # On an early end the buffer may mix frames: the observation is not used then.
        max_frame = self._obs_buffer.max(axis=0)
        return max_frame, total_reward, terminated, truncated, info


def area_resize_matrix(in_size: int, out_size: int) -> np.ndarray:
    """``[out, in]`` weights that average the input pixels each output pixel covers
    (OpenCV's INTER_AREA when shrinking): row i spreads over input ``[i*s, (i+1)*s)``
    with ``s = in/out``, partial pixels weighted by their overlap."""
    scale = in_size / out_size
    weights = np.zeros((out_size, in_size), dtype=np.float64)
    for i in range(out_size):
        start, end = i * scale, (i + 1) * scale
        first, last = int(np.floor(start)), int(np.ceil(end))
        for j in range(first, min(last, in_size)):
            weights[i, j] = min(end, j + 1) - max(start, j)
    weights /= weights.sum(axis=1, keepdims=True)
    return weights.astype(np.float32)


class FrameResizer:
    """Resize ``[H, W]`` or ``[H, W, C]`` frames to ``[dim, dim(, C)]`` by area averaging,
    as two small matrix products (no OpenCV needed).

    The products run in torch, which the workers limit to one intra-op thread: numpy's
    BLAS would start a thread per core and, on a busy machine, spin them (measured: 0.1 ms
    a frame with one thread, 1-7 ms with the default pool at load 4).
    """

    def __init__(self, height: int, width: int, dim: int):
        self.rows = torch.from_numpy(area_resize_matrix(height, dim))
        self.cols_t = torch.from_numpy(np.ascontiguousarray(area_resize_matrix(width, dim).T))

    def resize(self, frame: torch.Tensor) -> torch.Tensor:
        """``[H, W]`` or ``[H, W, C]`` float tensor -> ``[dim, dim(, C)]``."""
        if frame.dim() == 2:
            return self.rows @ frame @ self.cols_t
        channels_first = frame.permute(2, 0, 1)
        return (self.rows @ channels_first @ self.cols_t).permute(1, 2, 0)

    def __call__(self, frame: np.ndarray) -> np.ndarray:
        return self.resize(torch.from_numpy(np.asarray(frame, dtype=np.float32))).numpy()


# ITU-R 601 luma, as OpenCV's RGB2GRAY.
_GRAY = torch.tensor([0.299, 0.587, 0.114], dtype=torch.float32)


class WarpFrame(gym.ObservationWrapper):
    """Grayscale and resize to ``dim x dim`` (``uint8``, shape ``[dim, dim, 1]``)."""

    def __init__(self, env, dim: int = 84):
        super().__init__(env)
        height, width = env.observation_space.shape[:2]
        self.dim = dim
        self._resize = FrameResizer(height, width, dim)
        self.observation_space = spaces.Box(0, 255, (dim, dim, 1), dtype=np.uint8)

    def observation(self, frame):
        pixels = torch.from_numpy(np.asarray(frame)).float()
        gray = pixels @ _GRAY if pixels.dim() == 3 else pixels
        small = self._resize.resize(gray).add_(0.5).clamp_(0, 255)
        return small.to(torch.uint8).numpy()[:, :, None]


class FrameStack(gym.Wrapper):
    """The last ``k`` frames, concatenated along the channel axis."""

    def __init__(self, env, k: int):
        super().__init__(env)
        self.k = k
        self.frames: collections.deque = collections.deque([], maxlen=k)
        shp = env.observation_space.shape
        self.observation_space = spaces.Box(0, 255, (shp[0], shp[1], shp[2] * k),
                                            dtype=env.observation_space.dtype)

    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        for _ in range(self.k):
            self.frames.append(obs)
        return self._get_obs(), info

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.frames.append(obs)
        return self._get_obs(), reward, terminated, truncated, info

    def _get_obs(self):
        return np.concatenate(self.frames, axis=2)


class ClipRewardEnv(gym.RewardWrapper):
    """Rewards clipped to their sign (-1, 0, 1)."""

    def reward(self, reward):
        return float(np.sign(reward))


def wrap_deepmind(env, dim: int = 84, framestack: bool = True):
    """The DeepMind preprocessing of an ALE env (see the module docstring)."""
    env = MonitorEnv(env)
    env = NoopResetEnv(env, noop_max=30)
    spec = getattr(env.unwrapped, "spec", None) or getattr(env, "spec", None)
    if spec is not None and "NoFrameskip" in spec.id:
        env = MaxAndSkipEnv(env, skip=4)
    env = EpisodicLifeEnv(env)
    if "FIRE" in env.unwrapped.get_action_meanings():
        env = FireResetEnv(env)
    env = WarpFrame(env, dim)
    if framestack:
        env = FrameStack(env, 4)
    return env


__all__ = ["ClipRewardEnv", "EpisodicLifeEnv", "FireResetEnv", "FrameResizer", "FrameStack",
           "MaxAndSkipEnv", "MonitorEnv", "NoopResetEnv", "WarpFrame", "area_resize_matrix",
           "get_wrapper_by_cls", "is_atari", "wrap_deepmind"]
