"""Name -> trainable / env-creator registry (`tune.register_trainable`, `register_env`).

The registry lives in the driver and, once ray is initialized, is also published
(cloudpickled) in the GCS's internal key-value store, so trial actors and RLlib
workers in other processes resolve the same names.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from ray.tune.error import TuneError

TRAINABLE_CLASS = "trainable_class"
ENV_CREATOR = "env_creator"
RLLIB_MODEL = "rllib_model"
RLLIB_PREPROCESSOR = "rllib_preprocessor"
RLLIB_ACTION_DIST = "rllib_action_dist"
KNOWN_CATEGORIES = [TRAINABLE_CLASS, ENV_CREATOR, RLLIB_MODEL, RLLIB_PREPROCESSOR, RLLIB_ACTION_DIST]

_registry: dict[tuple[str, str], Any] = {}
# Lazily registered names (RLlib algorithms register a loader, not a class).
_loaders: dict[tuple[str, str], Callable[[], Any]] = {}


def register_trainable(name: str, trainable: Any) -> None:
    """Registers a Trainable subclass or a `f(config, reporter)` function under `name`."""
    from ray.tune.function_runner import wrap_function
    from ray.tune.trainable import Trainable

    if isinstance(trainable, type) and issubclass(trainable, Trainable):
        cls = trainable
    elif callable(trainable) and not isinstance(trainable, type):
        cls = wrap_function(trainable)
    else:
        raise TypeError(
            f"register_trainable({name!r}, ...) needs a Trainable subclass or a function "
            f"f(config, reporter), got {trainable!r}"
        )
    _register(TRAINABLE_CLASS, name, cls)


def register_env(name: str, env_creator: Callable[[dict], Any]) -> None:
    """Registers `env_creator(env_config) -> env` for RLlib under `name`."""
    if not callable(env_creator):
        raise TypeError(f"register_env({name!r}, ...) needs a callable, got {env_creator!r}")
    _register(ENV_CREATOR, name, env_creator)


def register(category: str, name: str, value: Any) -> None:
    """Registers ``value`` under ``(category, name)`` for every process of the cluster
    (RLlib's ModelCatalog keeps custom models, preprocessors and action distributions in
    the RLLIB_* categories, as Ray's does)."""
    _register(category, name, value)


def register_lazy(category: str, name: str, loader: Callable[[], Any]) -> None:
    """Registers a loader called on first use (keeps imports of big libraries lazy)."""
    _loaders[(category, name)] = loader


def _register(category: str, name: str, value: Any) -> None:
    if category not in KNOWN_CATEGORIES:
        raise TuneError(f"unknown registry category {category!r}; known: {KNOWN_CATEGORIES}")
    _registry[(category, name)] = value
    _published.discard((category, name))
    _publish_all()


# Names already in the GCS (re-published after a later ray.init: a new cluster).
_published: set[tuple[str, str]] = set()
_published_to: list = [None]


def _kv_key(category: str, name: str) -> str:
    return f"tune_registry:{category}:{name}"


def _publish_all() -> None:
    """Copy what this process registered into the cluster's KV (when ray is up)."""
    import ray
    from ray.experimental import internal_kv

    if not ray.is_initialized():
        return
    # A new ray.init() (a new cluster, or a new driver) has a KV of its own.
    context = ray.get_runtime_context()
    current = (context.get_node_id(), context.get_job_id())
    if _published_to[0] != current:
        _published.clear()
        _published_to[0] = current
    import cloudpickle

    for key, value in list(_registry.items()):
        if key in _published:
            continue
        try:
            internal_kv._internal_kv_put(_kv_key(*key), cloudpickle.dumps(value))
        except Exception:  # unpicklable: it stays usable in this process only
            continue
        _published.add(key)


def _fetch(category: str, name: str) -> bool:
    """Look a name up in the cluster's KV (registered by another process)."""
    import ray

    if not ray.is_initialized():
        return False
    import cloudpickle

    from ray.experimental import internal_kv

    raw = internal_kv._internal_kv_get(_kv_key(category, name))
    if raw is None:
        return False
    _registry[(category, name)] = cloudpickle.loads(raw)
    return True


def contains(category: str, name: str) -> bool:
    return ((category, name) in _registry or (category, name) in _loaders
            or _fetch(category, name))


def get(category: str, name: str) -> Any:
    key = (category, name)
    if key not in _registry and key not in _loaders:
        _fetch(category, name)
    if key not in _registry and key not in _loaders and category == TRAINABLE_CLASS:
        _register_rllib()
    if key not in _registry and key in _loaders:
        value = _loaders[key]()
        if category == TRAINABLE_CLASS:
            register_trainable(name, value)
        else:
            _register(category, name, value)
    try:
        return _registry[key]
    except KeyError:
        known = sorted(n for c, n in list(_registry) + list(_loaders) if c == category)
        raise TuneError(
            f"unknown {category} {name!r}: register it first with "
            f"tune.register_trainable/register_env; registered: {known}"
        ) from None


def _register_rllib() -> None:
    """`tune.run("PPO")` works without importing ray.rllib first (as in Ray 0.7)."""
    try:
        import ray.rllib  # noqa: F401 - registers its algorithms lazily
    except ImportError:
        pass


def get_trainable_cls(name: str) -> type:
    return get(TRAINABLE_CLASS, name)


def trainable_name(run: Any) -> str:
    """Registers `run` if needed and returns the name it is known by."""
    if isinstance(run, str):
        get_trainable_cls(run)  # fail early with the list of known names
        return run
    if inspect.isclass(run) or callable(run):
        name = getattr(run, "__name__", None)
        if not name or name == "<lambda>":
            raise TuneError(
                "a lambda trainable needs a name: tune.register_trainable('my_fn', lambda ...) "
                "then run 'my_fn'"
            )
        register_trainable(name, run)
        return name
    raise TuneError(f"cannot run {run!r}: give a function, a Trainable class or a registered name")
