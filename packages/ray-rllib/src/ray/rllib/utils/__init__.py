from ray.rllib.utils.annotations import DeveloperAPI, PublicAPI, override
from ray.rllib.utils.filter import Filter, MeanStdFilter, NoFilter
from ray.rllib.utils.filter_manager import FilterManager
from ray.rllib.utils.merge import deep_update, merge_dicts


def __getattr__(name):
    # The serving classes pull in http.server and requests: import them on first use.
    if name == "PolicyServer":
        from ray.rllib.utils.policy_server import PolicyServer

        return PolicyServer
    if name == "PolicyClient":
        from ray.rllib.utils.policy_client import PolicyClient

        return PolicyClient
    raise AttributeError(f"module 'ray.rllib.utils' has no attribute {name!r}")


__all__ = [
    "DeveloperAPI",
    "Filter",
    "FilterManager",
    "MeanStdFilter",
    "NoFilter",
    "PolicyClient",
    "PolicyServer",
    "PublicAPI",
    "deep_update",
    "merge_dicts",
    "override",
]
