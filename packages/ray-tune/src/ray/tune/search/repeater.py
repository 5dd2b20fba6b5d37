"""`ray.tune.search.repeater` (Ray 2.x path) = `ray.tune.suggest.repeater`."""

from ray.tune.suggest.repeater import TRIAL_INDEX, Repeater

__all__ = ["Repeater", "TRIAL_INDEX"]
