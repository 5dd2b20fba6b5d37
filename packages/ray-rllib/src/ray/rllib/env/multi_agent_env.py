"""Environments with several agents acting per step, addressed by agent id."""

from __future__ import annotations


class MultiAgentEnv:
    """``reset() -> {agent_id: obs}``; ``step({agent_id: action})`` returns dicts.

    ``step`` returns ``(obs, rewards, dones, infos)`` (0.7) or
    ``(obs, rewards, terminateds, truncateds, infos)`` (gymnasium style);
    ``dones["__all__"]`` ends the episode. ``reset`` may also return
    ``(obs, infos)``. Agents may appear and disappear between steps.
    """

    observation_space = None
    action_space = None

    def reset(self):
        raise NotImplementedError

    def step(self, action_dict):
        raise NotImplementedError

    def with_agent_groups(self, groups: dict, obs_space=None, act_space=None):
        """Group agents into single logical agents with Tuple obs/actions and summed rewards."""
        from ray.rllib.env.group_agents_wrapper import GroupAgentsWrapper

        return GroupAgentsWrapper(self, groups, obs_space, act_space)


def normalize_reset(out):
    if isinstance(out, tuple) and len(out) == 2 and isinstance(out[0], dict):
        return out[0]
    return out


def normalize_step(out):
    """Return ``(obs, rewards, dones, infos)`` where a truncation counts as done."""
    if len(out) == 5:
        obs, rewards, terminateds, truncateds, infos = out
        dones = dict(terminateds)
        for key, value in truncateds.items():
            dones[key] = dones.get(key, False) or value
        dones.setdefault("__all__", False)
        return obs, rewards, dones, infos
    return out
