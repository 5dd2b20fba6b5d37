"""COMMON_CONFIG: the settings every Trainer accepts (Ray 0.7's documented defaults).

Algorithms add their own keys through a typed dataclass (see e.g.
``agents/ppo/ppo.py``); ``Trainer`` merges a user's dict over
``DEFAULT_CONFIG`` and rejects unknown keys with a "did you mean" hint.
"""

from __future__ import annotations

import copy
import dataclasses

from ray.rllib.models.catalog import MODEL_DEFAULTS
from ray.rllib.utils.merge import merge_dicts

# fmt: off
COMMON_CONFIG = {
    # === Debugging ===
    # Whether to write episode stats and videos to the agent log dir.
    "monitor": False,
    # Log level of ray.rllib.* in the driver and workers: DEBUG, INFO, WARN or ERROR.
    "log_level": "INFO",
    # Callbacks run during training; each takes one "info" dict.
    "callbacks": {
        "on_episode_start": None,     # arg: {"env": .., "policy": .., "episode": ...}
        "on_episode_step": None,      # arg: {"env": .., "episode": ...}
        "on_episode_end": None,       # arg: {"env": .., "policy": .., "episode": ...}
        "on_sample_end": None,        # arg: {"samples": .., "worker": ...}
        "on_train_result": None,      # arg: {"trainer": ..., "result": ...}
        "on_postprocess_traj": None,  # arg: {"agent_id", "episode", "pre_batch",
                                      #       "post_batch", "all_pre_batches"}
    },
    # Whether to keep training if a worker crashes.
    "ignore_worker_failures": False,
    # With ignore_worker_failures: replace a rollout worker that died (with its node, say)
    # by a new one with the same index and the local worker's weights (Ray 1.x+ name).
    "recreate_failed_workers": False,
    # TF eager execution (0.7.0 spelled it use_eager, 0.7.4 eager). PyTorch policies
    # always execute eagerly, so either value is accepted: there is no graph mode to leave.
    "eager": False,
    "use_eager": False,
    # Trace eager functions (a TF2 feature; Ray 2.x ignores it for torch as well).
    "eager_tracing": False,
    "no_eager_on_workers": False,
    # Every policy here is PyTorch: use_pytorch=False or framework "tf"/"tf2" is an error.
    "use_pytorch": True,
    "framework": "torch",
    # === Policy ===
    # Model options, see ray.rllib.models.MODEL_DEFAULTS.
    "model": MODEL_DEFAULTS,
    # Arguments for the policy optimizer (vary by algorithm).
    "optimizer": {},
    # === Environment ===
    # Discount factor of the MDP.
    "gamma": 0.99,
    # Episodes end after this many steps (None: the env's own time limit).
    "horizon": None,
    # At the horizon, compute rewards but do not reset the env.
    "soft_horizon": False,
    # Passed to the env creator as an EnvContext.
    "env_config": {},
    # Env name or class, when given through the config.
    "env": None,
    # Clip rewards to their sign (None: not clipped).
    "clip_rewards": None,
    # np.clip actions to the bounds of the action space.
    "clip_actions": True,
    # Atari frames: "deepmind" (the DeepMind wrappers: 84x84 grayscale, 4 stacked, sign-
    # clipped rewards) or "rllib" (RLlib's pixel preprocessor: dim, grayscale, zero_mean).
    "preprocessor_pref": "deepmind",
    # Default learning rate.
    "lr": 0.0001,
    # Sample actions (True) or take the most likely action (False).
    "explore": True,
    # === Evaluation ===
    # Evaluate every N training iterations (None: never); results under "evaluation".
    "evaluation_interval": None,
    # Episodes per evaluation.
    "evaluation_num_episodes": 10,
    # Config overrides for evaluation, e.g. {"explore": False}.
    "evaluation_config": {},
    # === Resources ===
    # Rollout-worker actors (0: sample in the driver).
    "num_workers": 2,
    # GPUs for the driver: its policies (the learner) run on CUDA when > 0.
    "num_gpus": 0,
    # Simulate the GPUs of num_gpus / num_gpus_per_worker with CPU devices (debugging
    # the GPU code paths on a CPU machine).
    "_fake_gpus": False,
    # CPUs per worker.
    "num_cpus_per_worker": 1,
    # GPUs per worker: its policies sample on CUDA when > 0.
    "num_gpus_per_worker": 0,
    # Custom resources per worker.
    "custom_resources_per_worker": {},
    # CPUs for the driver (only used under Tune).
    "num_cpus_for_driver": 1,
    # === Execution ===
    # Vectorized envs per worker (batched inference).
    "num_envs_per_worker": 1,
    # Steps per env per sample call (rows per call: this times num_envs_per_worker).
    "sample_batch_size": 200,
    # Rows per training batch, built by concatenating samples.
    "train_batch_size": 200,
    # "truncate_episodes" or "complete_episodes".
    "batch_mode": "truncate_episodes",
    # Sample in a background thread (deprecated in 0.7).
    "sample_async": False,
    # "NoFilter" or "MeanStdFilter".
    "observation_filter": "NoFilter",
    # Synchronize filter statistics across workers.
    "synchronize_filters": True,
    # TF session settings: only their defaults are accepted (PyTorch has no session; the
    # driver runs num_cpus_for_driver intra-op threads, workers one).
    "tf_session_args": {
        "intra_op_parallelism_threads": 2,
        "inter_op_parallelism_threads": 2,
        "gpu_options": {"allow_growth": True},
        "log_device_placement": False,
        "device_count": {"CPU": 1},
        "allow_soft_placement": True,
    },
    "local_tf_session_args": {
        "intra_op_parallelism_threads": 8,
        "inter_op_parallelism_threads": 8,
    },
    # Compress obs/new_obs of the batches remote workers send (LZ4 if installed, else zlib).
    "compress_observations": False,
    # Drop metrics of workers that do not answer within this many seconds.
    "collect_metrics_timeout": 180,
    # Episodes averaged into the reported metrics.
    "metrics_smoothing_episodes": 100,
    # Step each vectorized env in its own actor: not supported (True is an error); envs
    # step in the worker process (use num_workers / num_envs_per_worker).
    "remote_worker_envs": False,
    "remote_env_batch_wait_ms": 0,
    # Minimum wall-clock time per train() call.
    "min_iter_time_s": 0,
    # Minimum env steps per train() call.
    "timesteps_per_iteration": 0,
    # Seed for torch, numpy, random and the envs (None: not seeded).
    "seed": None,
    # === Offline datasets ===
    # Where experiences come from: "sampler" (simulation), a directory or glob of JSON
    # files, a list of files, {source: probability} (e.g. {"sampler": 0.4, "/tmp/out": 0.6}),
    # or a function ioctx -> InputReader.
    "input": "sampler",
    # Off-policy estimates of the current policy on offline input: "is", "wis", and/or
    # "simulation" (sample in the background for metrics only).
    "input_evaluation": ["is", "wis"],
    # Run postprocess_trajectory() (with the current policy) on offline input.
    "postprocess_inputs": False,
    # Shuffle offline batches through a buffer of this many (0: no shuffling).
    "shuffle_buffer_size": 0,
    # Where experiences go: None, "logdir", a directory, or a function ioctx -> OutputWriter.
    "output": None,
    # Columns written LZ4-style compressed (here zlib + base64 of .npy bytes).
    "output_compress_columns": ["obs", "new_obs"],
    # Start a new output file at this size in bytes.
    "output_max_file_size": 64 * 1024 * 1024,
    # === Multi-agent ===
    "multiagent": {
        # policy id -> (policy class or None, obs_space, action_space, config)
        "policies": {},
        # agent id -> policy id, called when an agent first appears
        "policy_mapping_fn": None,
        # policies to train (None: all)
        "policies_to_train": None,
    },
}
# fmt: on

# Sub-dicts whose keys are free-form (user data or nested options).
FREE_FORM_SUBKEYS = frozenset(
    {"tf_session_args", "local_tf_session_args", "env_config", "model", "optimizer",
     "multiagent", "custom_resources_per_worker", "evaluation_config", "callbacks"}
)


_TF_SESSION_DEFAULTS = {"tf_session_args": COMMON_CONFIG["tf_session_args"],
                        "local_tf_session_args": COMMON_CONFIG["local_tf_session_args"]}


def check_config(config: dict) -> None:
    """Reject, at trainer build, settings this PyTorch RLlib cannot honour; each error names
    the key and what to use instead. (Unknown keys are rejected by the merge itself.)"""
    from ray.rllib.models.catalog import check_model_config

    framework = config.get("framework", "torch")
    if framework != "torch":
        raise ValueError(f"framework={framework!r}: this RLlib runs PyTorch policies only; "
                         "set framework='torch' (or drop the key)")
    if config.get("use_pytorch") is False:
        raise ValueError("use_pytorch=False asks for TensorFlow policies: this RLlib runs "
                         "PyTorch policies only; drop the key (or set it to True)")
    for key in ("eager", "use_eager", "eager_tracing", "no_eager_on_workers"):
        if not isinstance(config.get(key, False), bool):
            raise TypeError(f"{key} must be True or False, got {config[key]!r}")
    for key, default in _TF_SESSION_DEFAULTS.items():
        value = config.get(key, default)
        if value != default:
            raise ValueError(
                f"{key}={value!r}: TensorFlow session settings do not apply to PyTorch "
                "policies; the driver runs num_cpus_for_driver torch threads and each "
                f"worker one. Drop {key} (set num_cpus_for_driver to change the driver's)")
    if config.get("remote_worker_envs"):
        raise ValueError(
            "remote_worker_envs=True (each env copy in its own actor) is not supported: "
            "envs step in the worker process; use num_workers for parallel envs, or "
            "num_envs_per_worker to batch inference over several copies")
    if config.get("remote_env_batch_wait_ms", 0):
        raise ValueError("remote_env_batch_wait_ms only applies to remote_worker_envs, which "
                         "is not supported: drop the key")
    if config.get("preprocessor_pref") not in ("deepmind", "rllib", None):
        raise ValueError(f"preprocessor_pref must be 'deepmind' or 'rllib', not "
                         f"{config.get('preprocessor_pref')!r}")
    check_model_config(config.get("model") or {})


def with_common_config(extra_config: dict) -> dict:
    """COMMON_CONFIG plus an algorithm's own keys (a deep copy)."""
    return merge_dicts(COMMON_CONFIG, extra_config)


def algorithm_defaults(config_cls) -> dict:
    """An algorithm's typed config as the dict of its defaults."""
    return {_key(f): copy.deepcopy(_default(f)) for f in dataclasses.fields(config_cls)}


def typed_view(config_cls, config: dict):
    """The algorithm's typed config read from a merged config dict."""
    fields = dataclasses.fields(config_cls)
    return config_cls(**{f.name: config[_key(f)] for f in fields if _key(f) in config})


def _key(field) -> str:
    """The config key of a field (``lambda_`` is spelled ``lambda`` in configs)."""
    return field.metadata.get("key", field.name)


def _default(field):
    if field.default is not dataclasses.MISSING:
        return field.default
    return field.default_factory()
