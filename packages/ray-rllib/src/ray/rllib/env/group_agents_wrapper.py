"""Agent grouping: several agents act as one with Tuple spaces (needed by QMIX)."""

from __future__ import annotations

from ray.rllib.env.multi_agent_env import MultiAgentEnv, normalize_reset, normalize_step


class GroupAgentsWrapper(MultiAgentEnv):
    def __init__(self, env, groups: dict, obs_space=None, act_space=None):
        self.env = env
        self.groups = groups
        self.agent_to_group = {a: g for g, agents in groups.items() for a in agents}
        if obs_space is not None:
            self.observation_space = obs_space
        if act_space is not None:
            self.action_space = act_space

    def reset(self):
        return self._group_items(normalize_reset(self.env.reset()))

    def step(self, action_dict):
        actions = {}
        for agent_id, value in action_dict.items():
            if agent_id in self.groups:
                actions.update(zip(self.groups[agent_id], value))
            else:
                actions[agent_id] = value
        obs, rewards, dones, infos = normalize_step(self.env.step(actions))
        grouped_rewards = {}
        for agent_id, reward in rewards.items():
            group = self.agent_to_group.get(agent_id, agent_id)
            grouped_rewards[group] = grouped_rewards.get(group, 0.0) + reward
        grouped_infos = self._group_items(infos, agg=lambda g: {"_group_info": g})
        for group, agents in self.groups.items():
            if group in grouped_rewards:
                grouped_infos.setdefault(group, {})["individual_rewards"] = [
                    rewards.get(a, 0.0) for a in agents
                ]
        grouped_dones = {"__all__": dones.get("__all__", False)}
        for agent_id, done in dones.items():
            if agent_id == "__all__":
                continue
            group = self.agent_to_group.get(agent_id, agent_id)
            grouped_dones[group] = grouped_dones.get(group, True) and done
        return self._group_items(obs), grouped_rewards, grouped_dones, grouped_infos

    def _group_items(self, items: dict, agg=list) -> dict:
        grouped = {}
        for group, agents in self.groups.items():
            values = [items[a] for a in agents if a in items]
            if values:
                grouped[group] = agg(values)
        for agent_id, value in items.items():
            if agent_id not in self.agent_to_group:
                grouped[agent_id] = value
        return grouped
