"""No config key is silently ignored.

Every documented key -- COMMON_CONFIG, every algorithm's DEFAULT_CONFIG, MODEL_DEFAULTS --
is either read by the implementation (the source indexes it, ``config["key"]`` /
``config.get("key")``, or reads the field of the algorithm's typed config,
``cfg.key``), or rejected at trainer build with an error that names it. The rejected
ones are built here, one by one, with a value this PyTorch RLlib cannot honour.
"""

from __future__ import annotations

import ast
import os

import pytest
import torch

import ray.rllib
from ray.rllib.agents.config import COMMON_CONFIG
from ray.rllib.agents.registry import ALGORITHMS, get_agent_class
from ray.rllib.models.catalog import MODEL_DEFAULTS

RLLIB_DIR = os.path.dirname(ray.rllib.__file__)

# Keys that describe TensorFlow execution modes: PyTorch always runs eagerly, so any
# boolean is what happens (Ray 2.x ignores them for torch too); check_config type-checks
# them. Nothing else may be accepted without being read.
EAGER_KEYS = {"eager", "use_eager", "eager_tracing", "no_eager_on_workers"}

# key -> (algorithm, config overrides): the build must fail naming the key.
REJECTED = {
    "framework": ("PG", {"framework": "tf"}),
    "use_pytorch": ("PG", {"use_pytorch": False}),
    "tf_session_args": ("PG", {"tf_session_args": {"intra_op_parallelism_threads": 7}}),
    "local_tf_session_args": ("PG", {"local_tf_session_args": {
        "intra_op_parallelism_threads": 1}}),
    "remote_worker_envs": ("PG", {"remote_worker_envs": True}),
    "remote_env_batch_wait_ms": ("PG", {"remote_env_batch_wait_ms": 10}),
    "preprocessor_pref": ("PG", {"preprocessor_pref": "opencv"}),
    "squash_to_range": ("PG", {"model": {"squash_to_range": True}}),
    "straggler_mitigation": ("PPO", {"straggler_mitigation": True}),
    "straggler_mitigation (APPO)": ("APPO", {"straggler_mitigation": True}),
    "num_envs_per_worker (ES)": ("ES", {"num_envs_per_worker": 4}),
    "clip_rewards (ARS)": ("ARS", {"clip_rewards": True}),
    "compress_observations (ES)": ("ES", {"compress_observations": True}),
    "num_aggregation_workers": ("IMPALA", {"num_aggregation_workers": 1}),
    "num_data_loader_buffers": ("IMPALA", {"num_data_loader_buffers": 2}),
    "post_fcnet_hiddens": ("PG", {"model": {"post_fcnet_hiddens": [32]}}),
    "num_gpus": ("PG", {"num_gpus": 1}),  # no CUDA here: an error naming num_gpus
}


def _reads_in_source() -> tuple[set, set]:
    """(string keys indexed or .get()-ed anywhere, attribute names read anywhere)."""
    keys, attrs = set(), set()
    for root, _dirs, files in os.walk(RLLIB_DIR):
        for name in files:
            if not name.endswith(".py"):
                continue
            with open(os.path.join(root, name)) as f:
                tree = ast.parse(f.read())
            for node in ast.walk(tree):
                if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
                    keys.add(node.slice.value)
                elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                        and node.func.attr in ("get", "pop", "setdefault") and node.args \
                        and isinstance(node.args[0], ast.Constant):
                    keys.add(node.args[0].value)
                elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
                    attrs.add(node.attr)
                elif isinstance(node, ast.Tuple):
                    # key lists read in a loop: ``{k: config[k] for k in ("a", "b")}``
                    keys.update(e.value for e in node.elts
                                if isinstance(e, ast.Constant) and isinstance(e.value, str))
    return keys, attrs


def _documented_keys() -> dict:
    """key -> the algorithms whose default config documents it."""
    out: dict = {}
    for key in COMMON_CONFIG:
        out.setdefault(key, set()).add("common")
    for key in MODEL_DEFAULTS:
        out.setdefault(key, set()).add("model")
    for alg in sorted(ALGORITHMS):
        cls = get_agent_class(alg)
        for key in cls._default_config:
            out.setdefault(key, set()).add(alg)
    return out


def test_every_documented_key_is_read_or_rejected():
    keys, attrs = _reads_in_source()
    documented = _documented_keys()
    assert len(documented) > 150  # the enumeration really covers the algorithms
    unread = sorted(k for k in documented
                    if k not in keys and k.rstrip("_") not in attrs and k not in attrs
                    and k not in EAGER_KEYS and k not in REJECTED)
    assert unread == [], f"documented keys nothing reads: {unread}"


@pytest.mark.parametrize("key", sorted(REJECTED))
def test_unsupported_values_are_rejected_at_build_naming_the_key(key):
    if key == "num_gpus" and torch.cuda.is_available():
        pytest.skip("num_gpus works where CUDA is present (tests/test_rllib_gpu.py)")
    alg, overrides = REJECTED[key]
    config = dict(num_workers=0, **overrides)
    with pytest.raises((ValueError, TypeError)) as info:
        trainer = get_agent_class(alg)(env="CartPole-v1", config=config)
        trainer.stop()
    assert key.split(" (")[0] in str(info.value)


def test_eager_keys_accept_booleans_only():
    trainer = get_agent_class("PG")(env="CartPole-v1", config={
        "num_workers": 0, "eager": True, "eager_tracing": True, "use_eager": False})
    trainer.stop()
    with pytest.raises(TypeError, match="eager_tracing"):
        get_agent_class("PG")(env="CartPole-v1", config={"num_workers": 0,
                                                          "eager_tracing": "yes"})


def test_unknown_model_keys_get_a_suggestion_unless_a_custom_model_reads_them():
    with pytest.raises(ValueError, match="fcnet_hiddens"):
        get_agent_class("PG")(env="CartPole-v1", config={"num_workers": 0,
                                                          "model": {"fcnet_hidden": [8]}})
    # Ray 2.x keys at their defaults are accepted (configs written for 2.x pass them).
    trainer = get_agent_class("PG")(env="CartPole-v1", config={
        "num_workers": 0, "model": {"post_fcnet_hiddens": [], "use_attention": False,
                                    "lstm_use_prev_action_reward": -1}})
    trainer.stop()
