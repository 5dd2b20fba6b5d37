"""AutoML searchers (Ray 0.7's `ray.tune.automl`): `GeneticSearch` over a finite
`SearchSpace` of `DiscreteSpace` and `ContinuousSpace` parameters.

    from ray.tune.automl import ContinuousSpace, DiscreteSpace, GeneticSearch, SearchSpace
"""

from ray.tune.automl.genetic_searcher import GeneticSearch
from ray.tune.automl.search_space import ContinuousSpace, DiscreteSpace, ParameterSpace, SearchSpace

__all__ = ["GeneticSearch", "SearchSpace", "ParameterSpace", "DiscreteSpace", "ContinuousSpace"]
