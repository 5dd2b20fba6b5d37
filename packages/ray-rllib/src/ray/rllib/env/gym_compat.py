"""Gymnasium is the env interface; old gym envs and ids are adapted here.

* Old-style envs (``reset() -> obs``, ``step() -> (obs, reward, done, info)``)
  are wrapped by :class:`OldGymAdapter`, detected from what they return.
* Old ids map to the newest registered gymnasium version of the same env,
  e.g. ``Pendulum-v0`` -> ``Pendulum-v1`` (``CartPole-v0`` exists as is).
"""

from __future__ import annotations

import re
import warnings

import gymnasium as gym


def resolve_env_id(env_id: str) -> str:
    """The gymnasium id to make for ``env_id`` (the newest version if it is gone)."""
    registry = gym.envs.registry
    if env_id in registry:
        return env_id
    if register_atari_envs() and env_id in registry:
        return env_id
    match = re.fullmatch(r"(.+)-v(\d+)", env_id)
    if match:
        name = match.group(1)
        versions = [
            int(m.group(1))
            for key in registry
            if (m := re.fullmatch(re.escape(name) + r"-v(\d+)", key))
        ]
        if versions:
            return f"{name}-v{max(versions)}"
    known = [k for k in registry if "/" not in k]
    import difflib

    close = difflib.get_close_matches(env_id, known, n=3)
    hint = f" Did you mean one of {close}?" if close else ""
    if not _atari_registered and re.search(r"NoFrameskip|Deterministic|^ALE/", env_id):
        hint += " Atari games need ale-py: pip install ale-py."
    raise ValueError(
        f"Unknown environment {env_id!r}: not registered with gymnasium nor with "
        f"ray.tune.register_env.{hint}"
    )


_atari_registered = False


def register_atari_envs() -> bool:
    """Register ale-py's Atari games (``PongNoFrameskip-v4``, ``ALE/Pong-v5``, ...) with
    gymnasium; False when ale-py is not installed (``pip install ale-py``)."""
    global _atari_registered
    if _atari_registered:
        return True
    try:
        import ale_py
    except ImportError:
        return False
    gym.register_envs(ale_py)
    _atari_registered = True
    return True


def make_gym_env(env_id: str, **kwargs) -> gym.Env:
    # Old ids such as CartPole-v0 are what the 0.7 docs use: do not warn about them
    # at every env copy of every worker.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*is out of date", category=DeprecationWarning)
        return gym.make(resolve_env_id(env_id), **kwargs)


class OldGymAdapter(gym.Env):
    """Gives an env with the old gym signatures the gymnasium ones.

    ``done`` from the old ``step`` becomes ``terminated`` unless the info dict
    marks a time limit (``TimeLimit.truncated``).
    """

    def __init__(self, env):
        self.env = env
        self.observation_space = env.observation_space
        self.action_space = env.action_space
        self.metadata = getattr(env, "metadata", {})

    def reset(self, *, seed=None, options=None):
        if seed is not None and hasattr(self.env, "seed"):
            self.env.seed(seed)
        return self.env.reset(), {}

    def step(self, action):
        obs, reward, done, info = self.env.step(action)
        truncated = bool(info.get("TimeLimit.truncated", False)) if info else False
        return obs, reward, bool(done) and not truncated, truncated, info or {}

    def render(self):
        return self.env.render()

    def close(self):
        if hasattr(self.env, "close"):
            self.env.close()

    def __getattr__(self, name):
        if name == "env":
            raise AttributeError(name)
        return getattr(self.env, name)


class _SniffingAdapter(gym.Env):
    """Decides on the first ``reset``/``step`` whether the env speaks old or new gym."""

    def __init__(self, env):
        self.env = env
        self.observation_space = env.observation_space
        self.action_space = env.action_space
        self.metadata = getattr(env, "metadata", {})
        self.spec = getattr(env, "spec", None)

    def reset(self, *, seed=None, options=None):
        try:
            out = self.env.reset(seed=seed, options=options)
        except TypeError:
            if seed is not None and hasattr(self.env, "seed"):
                self.env.seed(seed)
            out = self.env.reset()
        if isinstance(out, tuple) and len(out) == 2 and isinstance(out[1], dict):
            return out
        return out, {}

    def step(self, action):
        out = self.env.step(action)
        if len(out) == 5:
            return out
        obs, reward, done, info = out
        truncated = bool(info.get("TimeLimit.truncated", False)) if info else False
        return obs, reward, bool(done) and not truncated, truncated, info or {}

    def render(self):
        return self.env.render()

    def close(self):
        if hasattr(self.env, "close"):
            self.env.close()

    def __getattr__(self, name):
        if name == "env":
            raise AttributeError(name)
        return getattr(self.env, name)


def ensure_new_api(env):
    """Wrap ``env`` so that it follows the gymnasium reset/step signatures."""
    if isinstance(env, gym.Env) and type(env).__module__.startswith("gymnasium"):
        return env
    if isinstance(env, gym.Wrapper):
        return env
    return _SniffingAdapter(env)
