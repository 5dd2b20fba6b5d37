from ray.rllib.utils.annotations import DeveloperAPI, PublicAPI, override
from ray.rllib.utils.filter import Filter, MeanStdFilter, NoFilter
from ray.rllib.utils.filter_manager import FilterManager
from ray.rllib.utils.merge import deep_update, merge_dicts

__all__ = [
    "DeveloperAPI",
    "Filter",
    "FilterManager",
    "MeanStdFilter",
    "NoFilter",
    "PublicAPI",
    "deep_update",
    "merge_dicts",
    "override",
]
