"""Turn raw observations into flat float arrays the models consume.

Discrete -> one-hot, Tuple/Dict -> concatenation of their parts (restored to
their structure again for custom models, see ``restore_original_dimensions``),
Box -> as is (images keep their shape).
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
from gymnasium import spaces


class Preprocessor:
    """Subclass and implement ``_init_shape(obs_space, options)`` and ``transform(obs)``."""

    def __init__(self, obs_space, options=None):
        self._obs_space = obs_space
        self._options = options or {}
        self.shape = tuple(self._init_shape(obs_space, self._options))
        self._size = int(np.prod(self.shape))

    def _init_shape(self, obs_space, options):
        raise NotImplementedError

    def transform(self, observation) -> np.ndarray:
        raise NotImplementedError

    def write(self, observation, array, offset):
        array[offset : offset + self._size] = np.asarray(self.transform(observation)).ravel()

    @property
    def size(self) -> int:
        return self._size

    @property
    def observation_space(self):
        space = spaces.Box(-1.0, 1.0, self.shape, dtype=np.float32)
        space.original_space = self._obs_space
        return space


class NoPreprocessor(Preprocessor):
    """Observations as they are: float32, except ``uint8`` images (e.g. the DeepMind
    Atari frames), which stay ``uint8`` (4x less to move and store); the vision network
    scales them to [0, 1]."""

    def _init_shape(self, obs_space, options):
        keep_bytes = (getattr(obs_space, "dtype", None) == np.uint8
                      and len(obs_space.shape or ()) == 3)
        self._dtype = np.uint8 if keep_bytes else np.float32
        return obs_space.shape

    def transform(self, observation):
        return np.asarray(observation, dtype=self._dtype)

    @property
    def observation_space(self):
        return self._obs_space


class OneHotPreprocessor(Preprocessor):
    def _init_shape(self, obs_space, options):
        return (obs_space.n,)

    def transform(self, observation):
        out = np.zeros(self.shape, dtype=np.float32)
        out[int(observation)] = 1.0
        return out


class MultiDiscretePreprocessor(Preprocessor):
    def _init_shape(self, obs_space, options):
        return (int(np.sum(obs_space.nvec)),)

    def transform(self, observation):
        out = np.zeros(self.shape, dtype=np.float32)
        offset = 0
        for value, n in zip(observation, self._obs_space.nvec):
            out[offset + int(value)] = 1.0
            offset += int(n)
        return out


class _FlatteningPreprocessor(Preprocessor):
    def _children(self, obs_space):
        raise NotImplementedError

    def _init_shape(self, obs_space, options):
        self.preprocessors = [get_preprocessor(s)(s, options) for s in self._children(obs_space)]
        return (sum(p.size for p in self.preprocessors),)

    def _parts(self, observation):
        raise NotImplementedError

    def transform(self, observation):
        out = np.zeros(self.shape, dtype=np.float32)
        self.write(observation, out, 0)
        return out

    def write(self, observation, array, offset):
        for part, prep in zip(self._parts(observation), self.preprocessors):
            prep.write(part, array, offset)
            offset += prep.size


class TupleFlatteningPreprocessor(_FlatteningPreprocessor):
    def _children(self, obs_space):
        return obs_space.spaces

    def _parts(self, observation):
        return observation


class DictFlatteningPreprocessor(_FlatteningPreprocessor):
    def _children(self, obs_space):
        return list(obs_space.spaces.values())

    def _parts(self, observation):
        return [observation[k] for k in self._obs_space.spaces]


ATARI_OBS_SHAPE = (210, 160, 3)
ATARI_RAM_OBS_SHAPE = (128,)


class GenericPixelPreprocessor(Preprocessor):
    """RLlib's own Atari frame preprocessing (``preprocessor_pref: "rllib"``).

    Crops the 25 rows above and below the playing field, resizes to ``dim x dim``
    (through 84x84 first when ``dim < 84``: mipmapping, so thin objects survive),
    averages the colour channels when ``grayscale``, and scales to [-1, 1]
    (``zero_mean``) or [0, 1]. Output ``[dim, dim, 1 or 3]`` float32. Frames are not
    stacked on this path (``framestack`` belongs to the DeepMind wrappers).
    """

    def _init_shape(self, obs_space, options):
        from ray.rllib.env.atari_wrappers import FrameResizer

        self._grayscale = bool(options.get("grayscale", False))
        self._zero_mean = bool(options.get("zero_mean", True))
        self._dim = int(options.get("dim", 84))
        if self._dim < 1:
            raise ValueError(f"model.dim must be a positive frame size, got {self._dim}")
        height, width = obs_space.shape[0] - 50, obs_space.shape[1]
        if self._dim < 84:
            self._resizers = [FrameResizer(height, width, 84), FrameResizer(84, 84, self._dim)]
        else:
            self._resizers = [FrameResizer(height, width, self._dim)]
        return (self._dim, self._dim, 1 if self._grayscale else obs_space.shape[2])

    def transform(self, observation):
        import torch

        scaled = torch.from_numpy(np.asarray(observation)[25:-25, :, :]).float()
        for resizer in self._resizers:
            scaled = resizer.resize(scaled)
        if self._grayscale:
            scaled = scaled.mean(dim=2, keepdim=True)
        if self._zero_mean:
            scaled = (scaled - 128.0) / 128.0
        else:
            scaled = scaled * (1.0 / 255.0)
        return scaled.numpy()


class AtariRamPreprocessor(Preprocessor):
    """The 128 bytes of Atari RAM, scaled to [-1, 1)."""

    def _init_shape(self, obs_space, options):
        return (128,)

    def transform(self, observation):
        return (np.asarray(observation, dtype=np.float32) - 128.0) / 128.0


def get_preprocessor(space) -> type[Preprocessor]:
    """The preprocessor class for ``space``: ``get_preprocessor(space)(space)``."""
    if isinstance(space, spaces.Discrete):
        return OneHotPreprocessor
    shape = tuple(getattr(space, "shape", None) or ())
    if isinstance(space, spaces.Box) and shape == ATARI_OBS_SHAPE:
        return GenericPixelPreprocessor
    if isinstance(space, spaces.Box) and shape == ATARI_RAM_OBS_SHAPE \
            and space.dtype == np.uint8:
        return AtariRamPreprocessor
    if isinstance(space, spaces.MultiDiscrete):
        return MultiDiscretePreprocessor
    if isinstance(space, spaces.Tuple):
        return TupleFlatteningPreprocessor
    if isinstance(space, spaces.Dict):
        return DictFlatteningPreprocessor
    return NoPreprocessor


def restore_original_dimensions(obs_flat, obs_space):
    """Split flat (torch) observations back into the Tuple/Dict structure of ``obs_space``."""
    original = getattr(obs_space, "original_space", None)
    if original is None or not isinstance(original, spaces.Tuple | spaces.Dict):
        return obs_flat
    return _unflatten(obs_flat, original)


def _unflatten(flat, space):
    if isinstance(space, spaces.Tuple | spaces.Dict):
        children = space.spaces if isinstance(space, spaces.Tuple) else space.spaces.values()
        parts, offset = [], 0
        for child in children:
            size = get_preprocessor(child)(child).size
            parts.append(_unflatten(flat[:, offset : offset + size], child))
            offset += size
        if isinstance(space, spaces.Dict):
            return OrderedDict(zip(space.spaces.keys(), parts))
        return tuple(parts)
    if isinstance(space, spaces.Box):
        return flat.reshape((flat.shape[0],) + space.shape)
    return flat
