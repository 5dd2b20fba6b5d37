"""`ray.tune.search.sigopt` (Ray 2.x path) = `ray.tune.suggest.sigopt`."""

from ray.tune.suggest.sigopt import SigOptSearch

__all__ = ["SigOptSearch"]
