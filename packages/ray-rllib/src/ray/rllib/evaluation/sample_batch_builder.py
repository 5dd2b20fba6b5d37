"""Row-wise builders that turn steps into (postprocessed) SampleBatches."""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from ray.rllib.policy.sample_batch import MultiAgentBatch, SampleBatch


class SampleBatchBuilder:
    """Append rows with ``add_values(**row)``; ``build_and_reset()`` makes the batch."""

    def __init__(self):
        self.buffers: dict[str, list] = defaultdict(list)
        self.count = 0

    def add_values(self, **values) -> None:
        for key, value in values.items():
            self.buffers[key].append(value)
        self.count += 1

    def add_row(self, row: dict) -> None:
        """``add_values(**row)`` without building the keyword dict."""
        buffers = self.buffers
        for key, value in row.items():
            buffers[key].append(value)
        self.count += 1

    def add_batch(self, batch: SampleBatch) -> None:
        for key, column in batch.items():
            self.buffers[key].extend(column)
        self.count += batch.count

    def build_and_reset(self) -> SampleBatch:
        batch = SampleBatch({k: _stack(v) for k, v in self.buffers.items()})
        self.buffers.clear()
        self.count = 0
        return batch


def _stack(values: list) -> np.ndarray:
    first = values[0]
    if isinstance(first, np.ndarray):
        return np.stack(values)
    if isinstance(first, dict | str | type(None) | tuple):
        column = np.empty(len(values), dtype=object)
        column[:] = values
        return column
    return np.asarray(values)


class MultiAgentSampleBatchBuilder:
    """Collects each agent's rows, then postprocesses them with their policy.

    Agents map to policies M:N; at postprocessing every agent's trajectory is
    passed to its policy together with the other agents' batches (for
    centralized critics).
    """

    def __init__(self, policy_map: dict, clip_rewards, postp_callback=None):
        self.policy_map = policy_map
        self.clip_rewards = clip_rewards
        self.postp_callback = postp_callback
        self.agent_builders: dict = {}
        self.agent_to_policy: dict = {}
        self.policy_builders = {pid: SampleBatchBuilder() for pid in policy_map}
        self.count = 0

    def total(self) -> int:
        return sum(b.count for b in self.policy_builders.values())

    def has_pending_agent_data(self) -> bool:
        return bool(self.agent_builders)

    def add_values(self, agent_id, policy_id, **values) -> None:
        if agent_id not in self.agent_builders:
            self.agent_builders[agent_id] = SampleBatchBuilder()
            self.agent_to_policy[agent_id] = policy_id
        if self.clip_rewards and "rewards" in values:
            values["rewards"] = float(np.sign(values["rewards"]))
        self.agent_builders[agent_id].add_values(**values)

    def postprocess_batch_so_far(self, episode=None) -> None:
        pre_batches = {
            agent_id: (self.policy_map[self.agent_to_policy[agent_id]], b.build_and_reset())
            for agent_id, b in self.agent_builders.items()
            if b.count > 0
        }
        for agent_id, (policy, pre_batch) in pre_batches.items():
            others = {a: v for a, v in pre_batches.items() if a != agent_id}
            post_batch = policy.postprocess_trajectory(pre_batch.copy(), others, episode)
            if self.postp_callback:
                self.postp_callback({
                    "agent_id": agent_id, "episode": episode, "pre_batch": pre_batches[agent_id],
                    "post_batch": post_batch, "all_pre_batches": pre_batches,
                })
            self.policy_builders[self.agent_to_policy[agent_id]].add_batch(post_batch)
        self.agent_builders.clear()
        self.agent_to_policy.clear()

    def build_and_reset(self, episode=None):
        self.postprocess_batch_so_far(episode)
        batches = {
            pid: b.build_and_reset() for pid, b in self.policy_builders.items() if b.count > 0
        }
        count, self.count = self.count, 0
        return MultiAgentBatch.wrap_as_needed(batches, count)
