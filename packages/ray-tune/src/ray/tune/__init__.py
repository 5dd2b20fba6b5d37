"""Tune: scalable hyperparameter search on Ray.

    from ray import tune
    tune.run(train_fn, config={"lr": tune.grid_search([0.1, 0.01])}, stop={"mean_accuracy": 0.99})
    tune.Tuner(train_fn, param_space={...}, tune_config=tune.TuneConfig(...)).fit()   # Ray 2.x

Layers: `tune.run` (tune.py, the I/O shell) drives the pure `TrialController`
(controller.py) and the `RayTrialExecutor` (one actor per trial). Schedulers
(`ray.tune.schedulers`) and search algorithms (`ray.tune.suggest`) are plug-ins that
see read-only trial views and return decisions.
"""

from ray.tune import _require_core  # noqa: F401, I001

# The public names load on first use (PEP 562): a trial's actor process unpickles its
# trainable, which imports `ray.tune` first; it needs the Trainable and the function
# runner, not the driver's loop, schedulers, loggers and reporters.
_LAZY = {
    "track": ("ray.tune.track", None),
    "Analysis": ("ray.tune.analysis", "Analysis"),
    "ExperimentAnalysis": ("ray.tune.analysis", "ExperimentAnalysis"),
    "Callback": ("ray.tune.callback", "Callback"),
    "Checkpoint": ("ray.tune.checkpoint", "Checkpoint"),
    "TuneError": ("ray.tune.error", "TuneError"),
    "PlacementGroupFactory": ("ray.tune.execution.placement_groups", "PlacementGroupFactory"),
    "Experiment": ("ray.tune.experiment", "Experiment"),
    "report": ("ray.tune.function_runner", "report"),
    "register_env": ("ray.tune.registry", "register_env"),
    "register_trainable": ("ray.tune.registry", "register_trainable"),
    "Result": ("ray.tune.result_grid", "Result"),
    "ResultGrid": ("ray.tune.result_grid", "ResultGrid"),
    "ProgressReporter": ("ray.tune.progress_reporter", "ProgressReporter"),
    "CLIReporter": ("ray.tune.progress_reporter", "CLIReporter"),
    "JupyterNotebookReporter": ("ray.tune.progress_reporter", "JupyterNotebookReporter"),
    "TrialScheduler": ("ray.tune.schedulers", "TrialScheduler"),
    "SearchAlgorithm": ("ray.tune.suggest", "SearchAlgorithm"),
    "get_checkpoint": ("ray.tune.session", "get_checkpoint"),
    "get_context": ("ray.tune.session", "get_context"),
    "Trainable": ("ray.tune.trainable", "Trainable"),
    "run": ("ray.tune.tune", "run"),
    "run_experiments": ("ray.tune.tune", "run_experiments"),
    "Tuner": ("ray.tune.tuner", "Tuner"),
    "with_parameters": ("ray.tune.tuner", "with_parameters"),
    "with_resources": ("ray.tune.tuner", "with_resources"),
}
for _name in ("CheckpointConfig", "FailureConfig", "RunConfig", "ScalingConfig", "SyncConfig",
              "TuneConfig"):
    _LAZY[_name] = ("ray.tune.config", _name)
for _name in ("choice", "function", "grid_search", "lograndint", "loguniform", "qloguniform",
              "qlograndint", "qrandint", "qrandn", "quniform", "randint", "randn", "sample_from",
              "uniform"):
    _LAZY[_name] = ("ray.tune.sample", _name)


def __getattr__(name: str):
    import importlib

    if name in _LAZY:
        module_name, attr = _LAZY[name]
        module = importlib.import_module(module_name)
        value = module if attr is None else getattr(module, attr)
        globals()[name] = value  # later lookups skip __getattr__
        return value
    try:  # a subpackage used as an attribute: tune.schedulers, tune.search, ...
        return importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError as exc:
        if exc.name != f"{__name__}.{name}":
            raise
    raise AttributeError(f"module 'ray.tune' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "Trainable",
    "TuneError",
    "grid_search",
    "register_env",
    "register_trainable",
    "run",
    "run_experiments",
    "Experiment",
    "PlacementGroupFactory",
    "function",
    "sample_from",
    "track",
    "uniform",
    "loguniform",
    "choice",
    "randint",
    "randn",
    "quniform",
    "qloguniform",
    "qrandint",
    "lograndint",
    "qlograndint",
    "qrandn",
    "report",
    "ProgressReporter",
    "CLIReporter",
    "JupyterNotebookReporter",
    "ExperimentAnalysis",
    "Analysis",
    "TrialScheduler",
    "SearchAlgorithm",
    # Ray 2.x
    "Callback",
    "Tuner",
    "TuneConfig",
    "RunConfig",
    "CheckpointConfig",
    "FailureConfig",
    "ScalingConfig",
    "SyncConfig",
    "ResultGrid",
    "Result",
    "Checkpoint",
    "with_parameters",
    "with_resources",
    "get_checkpoint",
    "get_context",
]
