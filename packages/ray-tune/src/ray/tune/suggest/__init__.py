"""Search algorithms: propose trials from results.

The optional ones import their library only when constructed, and say what to
`pip install` if it is missing.
"""

from ray.tune.suggest.basic_variant import BasicVariantGenerator
from ray.tune.suggest.concurrency_limiter import ConcurrencyLimiter
from ray.tune.suggest.repeater import Repeater
from ray.tune.suggest.search import SearchAlgorithm
from ray.tune.suggest.suggestion import SuggestionAlgorithm

__all__ = [
    "SearchAlgorithm",
    "BasicVariantGenerator",
    "SuggestionAlgorithm",
    "ConcurrencyLimiter",
    "Repeater",
    "HyperOptSearch",
    "BayesOptSearch",
    "SkOptSearch",
    "NevergradSearch",
    "AxSearch",
    "SigOptSearch",
    "GeneticSearch",
    "OptunaSearch",
    "TuneBOHB",
]

_LAZY = {
    "HyperOptSearch": "ray.tune.suggest.hyperopt",
    "BayesOptSearch": "ray.tune.suggest.bayesopt",
    "SkOptSearch": "ray.tune.suggest.skopt",
    "NevergradSearch": "ray.tune.suggest.nevergrad",
    "AxSearch": "ray.tune.suggest.ax",
    "SigOptSearch": "ray.tune.suggest.sigopt",
    "GeneticSearch": "ray.tune.automl",
    "OptunaSearch": "ray.tune.suggest.optuna",
    "TuneBOHB": "ray.tune.suggest.bohb",
}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'ray.tune.suggest' has no attribute {name!r}")
