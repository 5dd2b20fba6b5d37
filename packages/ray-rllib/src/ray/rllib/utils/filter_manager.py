"""Keep observation filters in sync between the driver and remote workers."""

from __future__ import annotations

import ray


class FilterManager:
    @staticmethod
    def synchronize(local_filters: dict, remotes: list, update_remote: bool = True) -> None:
        """Merge every remote worker's new statistics into ``local_filters``, then broadcast.

        Each remote returns (and clears) the statistics buffered since the last
        call, so no observation is counted twice.
        """
        remote_filters = ray.get([r.get_filters.remote(flush_after=True) for r in remotes])
        for filters in remote_filters:
            for policy_id, flt in filters.items():
                local_filters[policy_id].apply_changes(flt, with_buffer=False)
        if update_remote:
            copies = {k: v.as_serializable() for k, v in local_filters.items()}
            ref = ray.put(copies)
            ray.get([r.sync_filters.remote(ref) for r in remotes])
