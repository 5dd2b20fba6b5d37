"""PettingZoo environments as RLlib MultiAgentEnvs (Ray 2.x's wrappers, same names).

* :class:`ParallelPettingZooEnv` wraps a *parallel* env (``reset() -> (obs, infos)``,
  ``step(actions) -> (obs, rewards, terminations, truncations, infos)``, all dicts keyed
  by agent, ``agents``, ``possible_agents``, ``observation_space(agent)``,
  ``action_space(agent)``): every live agent acts every step.
* :class:`PettingZooEnv` wraps an *AEC* (turn-based) env (``agent_selection``,
  ``last()``, ``step(action)``, ``observe(agent)``): one agent acts per step; agents
  that are done are stepped with ``None`` as PettingZoo requires.

The episode ends (``"__all__"``) when no agent is left. Nothing here imports
``pettingzoo``: any object with that API works. When every agent has the same spaces
they become the env's ``observation_space``/``action_space`` (so policy specs may leave
theirs out); otherwise give each policy its spaces (``env.observation_space_for(agent)``).
"""

from __future__ import annotations

from ray.rllib.env.multi_agent_env import MultiAgentEnv


def _common_spaces(env, agents) -> tuple:
    obs_spaces = [env.observation_space(a) for a in agents]
    act_spaces = [env.action_space(a) for a in agents]
    same = all(s == obs_spaces[0] for s in obs_spaces) and \
        all(s == act_spaces[0] for s in act_spaces)
    return (obs_spaces[0], act_spaces[0]) if same else (None, None)


class ParallelPettingZooEnv(MultiAgentEnv):
    def __init__(self, env):
        self.par_env = env
        self._agent_ids = set(env.possible_agents)
        self.observation_space, self.action_space = _common_spaces(env, env.possible_agents)

    def observation_space_for(self, agent_id):
        return self.par_env.observation_space(agent_id)

    def action_space_for(self, agent_id):
        return self.par_env.action_space(agent_id)

    def reset(self, *, seed=None, options=None):
        out = self.par_env.reset(seed=seed, options=options)
        obs, infos = out if isinstance(out, tuple) else (out, {})
        return obs, infos

    def step(self, action_dict):
        obs, rewards, terminateds, truncateds, infos = self.par_env.step(action_dict)
        terminateds = dict(terminateds)
        truncateds = dict(truncateds)
        no_agents_left = not self.par_env.agents
        terminateds["__all__"] = no_agents_left or all(terminateds.values())
        truncateds["__all__"] = not terminateds["__all__"] and bool(truncateds) and \
            all(truncateds.values())
        return obs, rewards, terminateds, truncateds, infos

    def render(self):
        return self.par_env.render()

    def close(self):
        self.par_env.close()

    def get_sub_environments(self):
        return self.par_env.unwrapped if hasattr(self.par_env, "unwrapped") else self.par_env


class PettingZooEnv(MultiAgentEnv):
    def __init__(self, env):
        self.env = env
        self._agent_ids = set(env.possible_agents)
        self.observation_space, self.action_space = _common_spaces(env, env.possible_agents)

    def observation_space_for(self, agent_id):
        return self.env.observation_space(agent_id)

    def action_space_for(self, agent_id):
        return self.env.action_space(agent_id)

    def reset(self, *, seed=None, options=None):
        self.env.reset(seed=seed, options=options)
        agent = self.env.agent_selection
        obs, _reward, _term, _trunc, info = self.env.last()
        return {agent: obs}, {agent: info}

    def step(self, action_dict):
        self.env.step(action_dict[self.env.agent_selection])
        obs_d, rew_d, term_d, trunc_d, info_d = {}, {}, {}, {}, {}
        while self.env.agents:
            obs, reward, terminated, truncated, info = self.env.last()
            agent = self.env.agent_selection
            obs_d[agent], rew_d[agent] = obs, reward
            term_d[agent], trunc_d[agent], info_d[agent] = terminated, truncated, info
            if terminated or truncated:
                self.env.step(None)  # done agents leave with a None action
            else:
                break
        all_gone = not self.env.agents
        term_d["__all__"] = all_gone and all(v for k, v in term_d.items() if k != "__all__")
        trunc_d["__all__"] = all_gone and not term_d["__all__"]
        return obs_d, rew_d, term_d, trunc_d, info_d

    def render(self):
        return self.env.render()

    def close(self):
        self.env.close()

    def get_sub_environments(self):
        return self.env.unwrapped if hasattr(self.env, "unwrapped") else self.env


__all__ = ["ParallelPettingZooEnv", "PettingZooEnv"]
