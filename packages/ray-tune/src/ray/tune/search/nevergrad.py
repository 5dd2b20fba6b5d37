"""`ray.tune.search.nevergrad` (Ray 2.x path) = `ray.tune.suggest.nevergrad`."""

from ray.tune.suggest.nevergrad import NevergradSearch

__all__ = ["NevergradSearch"]
