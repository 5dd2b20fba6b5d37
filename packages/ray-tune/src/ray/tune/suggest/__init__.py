"""Search algorithms: propose trials from results.

The optional ones import their library only when constructed, and say what to
`pip install` if it is missing.
"""

from ray.tune.suggest.basic_variant import BasicVariantGenerator
from ray.tune.suggest.search import SearchAlgorithm
from ray.tune.suggest.suggestion import ConcurrencyLimiter, SuggestionAlgorithm

__all__ = [
    "SearchAlgorithm",
    "BasicVariantGenerator",
    "SuggestionAlgorithm",
    "ConcurrencyLimiter",
    "HyperOptSearch",
    "BayesOptSearch",
    "SkOptSearch",
    "NevergradSearch",
    "AxSearch",
    "SigOptSearch",
    "GeneticSearch",
]

_LAZY = {
    "HyperOptSearch": "ray.tune.suggest.hyperopt",
    "BayesOptSearch": "ray.tune.suggest.bayesopt",
    "SkOptSearch": "ray.tune.suggest.skopt",
    "NevergradSearch": "ray.tune.suggest.nevergrad",
    "AxSearch": "ray.tune.suggest.ax",
    "SigOptSearch": "ray.tune.suggest.sigopt",
    "GeneticSearch": "ray.tune.automl",
}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'ray.tune.suggest' has no attribute {name!r}")
