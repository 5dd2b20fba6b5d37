"""`ray.tune.search` (Ray 2.x name of `ray.tune.suggest`): searchers and `ConcurrencyLimiter`.

    from ray.tune.search import BasicVariantGenerator, ConcurrencyLimiter, Repeater, Searcher
    from ray.tune.search.hyperopt import HyperOptSearch     # also bayesopt, skopt, nevergrad, ax

`Searcher` is the 2.x base class for custom searchers: implement `suggest(trial_id)`
(a config dict, None for "not now", or `Searcher.FINISHED`) and `on_trial_complete`.
"""

from ray.tune.search.searcher import Searcher
from ray.tune.suggest import BasicVariantGenerator, ConcurrencyLimiter, Repeater, SearchAlgorithm
from ray.tune.suggest.suggestion import SuggestionAlgorithm

__all__ = [
    "BasicVariantGenerator",
    "ConcurrencyLimiter",
    "Repeater",
    "SearchAlgorithm",
    "Searcher",
    "SuggestionAlgorithm",
]
