"""ModelCatalog: picks preprocessors, models and action distributions for spaces."""

from __future__ import annotations

import copy
import inspect
import logging

import numpy as np
from gymnasium import spaces
from torch import nn

from ray.rllib.models.action_dist import Categorical, DiagGaussian, MultiCategorical
from ray.rllib.models.preprocessors import Preprocessor, get_preprocessor
from ray.rllib.models.pytorch.model import TorchModel
from ray.rllib.models.torch_models import (
    FullyConnectedNetwork,
    LSTMWrapper,
    VisionNetwork,
    _mlp,
)
from ray.tune import registry as _tune_registry

logger = logging.getLogger(__name__)

# fmt: off
MODEL_DEFAULTS = {
    # === Built-in options ===
    # Filter config for the vision network: [out_channels, kernel, stride] per layer.
    "conv_filters": None,
    # Nonlinearity of the vision network.
    "conv_activation": "relu",
    # Nonlinearity of the fully connected network.
    "fcnet_activation": "tanh",
    # Hidden layer sizes of the fully connected network.
    "fcnet_hiddens": [256, 256],
    # Make the second half of the outputs (DiagGaussian log stds) free parameters.
    "free_log_std": False,
    # Deprecated in 0.7 and not implemented: True is an error (use clip_actions).
    "squash_to_range": False,
    # Share hidden layers between the policy and value heads (PPO sets this).
    "vf_share_layers": False,
    # === LSTM options ===
    "use_lstm": False,
    "max_seq_len": 20,
    "lstm_cell_size": 256,
    # Feed a_{t-1} (one-hot for discrete actions) and r_{t-1} to the LSTM too.
    "lstm_use_prev_action_reward": False,
    # Ray 2.x's split of the same switch: either one feeds that input.
    "lstm_use_prev_action": False,
    "lstm_use_prev_reward": False,
    # === Atari / image options (Atari envs only) ===
    "framestack": True,
    "dim": 84,
    "grayscale": False,
    "zero_mean": True,
    # === Custom models and preprocessors ===
    "custom_preprocessor": None,
    "custom_model": None,
    "custom_action_dist": None,
    "custom_options": {},
    "custom_model_config": {},
}
# fmt: on

# Ray 2.x model keys this implementation does not have: accepted at their 2.x default
# (configs written for Ray 2.x pass them), an error at any other value.
RAY2_ONLY_MODEL_DEFAULTS = {
    "fcnet_weights_initializer": None, "fcnet_weights_initializer_config": None,
    "fcnet_bias_initializer": None, "fcnet_bias_initializer_config": None,
    "conv_kernel_initializer": None, "conv_kernel_initializer_config": None,
    "conv_bias_initializer": None, "conv_bias_initializer_config": None,
    "conv_transpose_kernel_initializer": None,
    "conv_transpose_kernel_initializer_config": None,
    "conv_transpose_bias_initializer": None, "conv_transpose_bias_initializer_config": None,
    "post_fcnet_hiddens": [], "post_fcnet_activation": "relu",
    "post_fcnet_weights_initializer": None, "post_fcnet_weights_initializer_config": None,
    "post_fcnet_bias_initializer": None, "post_fcnet_bias_initializer_config": None,
    "log_std_clip_param": 20.0, "no_final_linear": False,
    "lstm_weights_initializer": None, "lstm_weights_initializer_config": None,
    "lstm_bias_initializer": None, "lstm_bias_initializer_config": None,
    "_time_major": False, "use_attention": False, "attention_num_transformer_units": 1,
    "attention_dim": 64, "attention_num_heads": 1, "attention_head_dim": 32,
    "attention_memory_inference": 50, "attention_memory_training": 50,
    "attention_position_wise_mlp_dim": 32, "attention_init_gru_gate_bias": 2.0,
    "attention_use_n_prev_actions": 0, "attention_use_n_prev_rewards": 0,
    "encoder_latent_dim": None, "always_check_shapes": False,
    "_use_default_native_models": -1, "_disable_preprocessor_api": False,
    "_disable_action_flattening": False,
}


def check_model_config(model: dict) -> None:
    """Every ``model`` key is one of MODEL_DEFAULTS, or a Ray 2.x key at its default;
    custom models may read keys of their own (use custom_model_config for those)."""
    import difflib

    if model.get("squash_to_range"):
        raise ValueError("model.squash_to_range was deprecated in Ray 0.7 and is not "
                         "implemented: actions are clipped to the action space "
                         "(clip_actions=True, the default); drop the key")
    for key, value in model.items():
        if key in MODEL_DEFAULTS:
            continue
        if key in RAY2_ONLY_MODEL_DEFAULTS:
            if value == RAY2_ONLY_MODEL_DEFAULTS[key]:
                continue
            raise ValueError(
                f"model.{key}={value!r} is a Ray 2.x model option this RLlib does not "
                f"implement (only its default {RAY2_ONLY_MODEL_DEFAULTS[key]!r} is "
                "accepted): use the built-in options (fcnet_hiddens, conv_filters, "
                "use_lstm, ...) or a custom_model")
        if model.get("custom_model") or model.get("custom_preprocessor"):
            continue  # custom classes get the whole dict and may read their own keys
        close = difflib.get_close_matches(key, list(MODEL_DEFAULTS), n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise ValueError(f"Unknown model config key {key!r}.{hint} Model options of your "
                         "own go in custom_model_config (or custom_options) of a custom_model")


_custom_models: dict[str, type] = {}
_custom_preprocessors: dict[str, type] = {}
_custom_action_dists: dict[str, type] = {}


class ModelCatalog:
    """Registry of custom models and preprocessors, and the defaults for each space."""

    @staticmethod
    def register_custom_model(model_name: str, model_class) -> None:
        """Register a ``torch.nn.Module`` (a ``TorchModel`` subclass or any module); it is
        also published through Tune's registry, so trainers that Tune runs in other
        processes find it."""
        _custom_models[model_name] = model_class
        _publish(_tune_registry.RLLIB_MODEL, model_name, model_class)

    @staticmethod
    def register_custom_preprocessor(preprocessor_name: str, preprocessor_class) -> None:
        _custom_preprocessors[preprocessor_name] = preprocessor_class
        _publish(_tune_registry.RLLIB_PREPROCESSOR, preprocessor_name, preprocessor_class)

    @staticmethod
    def register_custom_action_dist(name: str, dist_class) -> None:
        _custom_action_dists[name] = dist_class
        _publish(_tune_registry.RLLIB_ACTION_DIST, name, dist_class)

    @staticmethod
    def export_registry() -> dict:
        """The custom registrations, to re-register them in worker processes."""
        return {"models": dict(_custom_models), "preprocessors": dict(_custom_preprocessors),
                "action_dists": dict(_custom_action_dists)}

    @staticmethod
    def import_registry(registry: dict) -> None:
        _custom_models.update(registry["models"])
        _custom_preprocessors.update(registry["preprocessors"])
        _custom_action_dists.update(registry["action_dists"])

    @staticmethod
    def get_action_dist(action_space, config=None, dist_type=None, torch=True):
        """Return ``(dist_class, num_model_outputs)`` for ``action_space``."""
        config = config or MODEL_DEFAULTS
        custom = config.get("custom_action_dist")
        if custom:
            dist = _lookup(_custom_action_dists, custom, "action distribution")
            return dist, dist.required_model_output_shape(action_space, config)
        if dist_type is not None:
            return dist_type, dist_type.required_model_output_shape(action_space, config)
        if isinstance(action_space, spaces.Discrete):
            return Categorical, int(action_space.n)
        if isinstance(action_space, spaces.MultiDiscrete):
            lens = [int(n) for n in action_space.nvec]
            return _partial_multi_categorical(lens), int(sum(lens))
        if isinstance(action_space, spaces.Box):
            if len(action_space.shape) > 1:
                raise ValueError(
                    f"Box action spaces must be 1-D for DiagGaussian, got {action_space.shape}: "
                    "flatten the action space or register a custom_action_dist"
                )
            return DiagGaussian, int(action_space.shape[0]) * 2
        raise NotImplementedError(
            f"no default action distribution for {action_space}: set model.custom_action_dist"
        )

    @staticmethod
    def get_preprocessor(env, options=None) -> Preprocessor:
        return ModelCatalog.get_preprocessor_for_space(env.observation_space, options)

    @staticmethod
    def get_preprocessor_for_space(observation_space, options=None) -> Preprocessor:
        options = options or MODEL_DEFAULTS
        name = options.get("custom_preprocessor")
        if name:
            cls = _lookup(_custom_preprocessors, name, "preprocessor")
        else:
            cls = get_preprocessor(observation_space)
        return cls(observation_space, options)

    @staticmethod
    def get_torch_model(obs_space, num_outputs, options=None, default_model_cls=None):
        """0.7 signature; see :meth:`get_model_v2`."""
        return ModelCatalog.get_model_v2(
            obs_space, None, num_outputs, options or {}, default_model_cls=default_model_cls
        )

    @staticmethod
    def get_model_v2(obs_space, action_space, num_outputs, model_config, framework="torch",
                     name="model", default_model_cls=None):
        options = copy.deepcopy(MODEL_DEFAULTS)
        options.update(model_config or {})
        custom = options.get("custom_model")
        if custom:
            cls = _lookup(_custom_models, custom, "model") if isinstance(custom, str) else custom
            return _build_custom(cls, obs_space, action_space, num_outputs, options, name)
        if default_model_cls is not None:
            return default_model_cls(obs_space, num_outputs, options)
        if options.get("use_lstm"):
            return LSTMWrapper(obs_space, num_outputs, options, action_space=action_space)
        if len(obs_space.shape) == 3:
            return VisionNetwork(obs_space, num_outputs, options)
        return FullyConnectedNetwork(obs_space, num_outputs, options)


def _publish(category: str, name: str, value) -> None:
    try:
        _tune_registry.register(category, name, value)
    except Exception:  # noqa: BLE001 - unpicklable or no cluster: usable in this process only
        logger.debug("custom %s %r not published to the cluster", category, name,
                     exc_info=True)


_REGISTRY_CATEGORY = {"model": "rllib_model", "preprocessor": "rllib_preprocessor",
                      "action distribution": "rllib_action_dist"}


def _lookup(registry, name, what):
    category = _REGISTRY_CATEGORY[what]
    if name not in registry and _tune_registry.contains(category, name):
        registry[name] = _tune_registry.get(category, name)
    if name not in registry:
        raise ValueError(
            f"custom {what} {name!r} is not registered: call "
            f"ModelCatalog.register_custom_{what.replace(' ', '_')}({name!r}, ...) first "
            f"(registered: {sorted(registry)})"
        )
    return registry[name]


def _partial_multi_categorical(lens):
    class _MultiCategorical(MultiCategorical):
        def __init__(self, inputs, model=None):
            super().__init__(inputs, model, lens)

    return _MultiCategorical


def _build_custom(cls, obs_space, action_space, num_outputs, options, name):
    """0.7 models get ``(obs_space, num_outputs, options)`` (their own settings in
    ``options["custom_options"]``); Ray 2.x models ``(obs_space, action_space,
    num_outputs, model_config, name, **custom_model_config)``."""
    for key in ("custom_options", "custom_model_config"):
        if not isinstance(options.get(key) or {}, dict):
            raise TypeError(f"model.{key} must be a dict of the custom model's settings, "
                            f"got {options[key]!r}")
    if isinstance(cls, type) and issubclass(cls, TorchModel):
        return cls(obs_space, num_outputs, options)
    params = [p for p in inspect.signature(cls).parameters.values() if p.name != "self"]
    if len(params) >= 5:
        extra = options.get("custom_model_config") or {}
        model = cls(obs_space, action_space, num_outputs, options, name, **extra)
    else:
        model = cls(obs_space, num_outputs, options)
    if not isinstance(model, nn.Module):
        raise TypeError(f"custom model {cls.__name__} must be a torch.nn.Module")
    if hasattr(model, "value_function"):
        return model
    return _PlainModuleAdapter(model, obs_space, options)


class _PlainModuleAdapter(nn.Module):
    """Lets a plain ``nn.Module`` (no ``value_function``) act as a policy model.

    Its ``forward(input_dict, state, seq_lens)`` may return logits or
    ``(logits, state)``; a separate small value network is added alongside.
    """

    def __init__(self, module, obs_space, options):
        super().__init__()
        self.module = module
        in_size = int(np.prod(obs_space.shape))
        self.value_net = _mlp(in_size, [64, 64], "tanh", 1, 1.0)
        self._obs = None

    def forward(self, input_dict, state, seq_lens):
        self._obs = input_dict["obs_flat"].float().reshape(input_dict["obs_flat"].shape[0], -1)
        try:
            out = self.module(input_dict, state, seq_lens)
        except TypeError:
            out = self.module(input_dict["obs"])
        if isinstance(out, tuple):
            return out[0], list(out[1]) if len(out) > 1 else []
        return out, []

    def value_function(self):
        return self.value_net(self._obs).squeeze(-1)

    def get_initial_state(self):
        getter = getattr(self.module, "get_initial_state", None)
        return getter() if getter else []


def model_initial_state(model) -> list:
    getter = getattr(model, "get_initial_state", None)
    return [np.asarray(s, np.float32) for s in getter()] if getter else []


__all__ = ["MODEL_DEFAULTS", "ModelCatalog", "model_initial_state"]
