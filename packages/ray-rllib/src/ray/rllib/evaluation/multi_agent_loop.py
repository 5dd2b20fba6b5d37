"""The general sampling loop over a BaseEnv: many envs, agents and policies.

Each iteration polls the env, records the finished step of every agent that
acted, asks each policy for the actions of the agents bound to it (one batch
per policy), and sends them back.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from ray.rllib.evaluation.episode import MultiAgentEpisode
from ray.rllib.evaluation.sample_batch_builder import MultiAgentSampleBatchBuilder
from ray.rllib.evaluation.sampler_options import SamplerOptions
from ray.rllib.policy.policy import clip_action
from ray.rllib.policy.sample_batch import MultiAgentBatch, SampleBatch


class MultiAgentLoop:
    def __init__(self, base_env, policy_map, policy_mapping_fn, preprocessors, obs_filters,
                 options: SamplerOptions):
        self.env = base_env
        self.policy_map = policy_map
        self.policy_mapping_fn = policy_mapping_fn
        self.preprocessors = preprocessors
        self.obs_filters = obs_filters
        self.options = options
        self.metrics: list = []
        self.episodes: dict = {}
        self.extra_batches: list = []
        self.pending_actions: dict = {}

    def _callback(self, name, **info):
        fn = self.options.callbacks.get(name)
        if fn:
            fn(info)

    def _new_episode(self) -> MultiAgentEpisode:
        def builder():
            return MultiAgentSampleBatchBuilder(
                self.policy_map, self.options.clip_rewards,
                lambda info: self._callback("on_postprocess_traj", **info),
            )

        episode = MultiAgentEpisode(self.policy_map, self.policy_mapping_fn, builder,
                                    self.extra_batches.append, rng=self.options.rng)
        self._callback("on_episode_start", env=self.env, policy=self.policy_map, episode=episode)
        return episode

    def sample(self):
        outputs, steps = [], 0
        complete = self.options.batch_mode == "complete_episodes"
        while True:
            to_eval, finished_rows, stepped = self._process_poll(outputs)
            steps += stepped if not complete else finished_rows
            if steps >= self.options.unroll_length and (not complete or outputs):
                if not complete:
                    for episode in self.episodes.values():
                        if episode.batch_builder.has_pending_agent_data() or \
                                episode.batch_builder.total():
                            outputs.append(episode.batch_builder.build_and_reset(episode))
                self._send(self._compute_actions(to_eval))
                break
            self._send(self._compute_actions(to_eval))
        outputs.extend(self.extra_batches)
        self.extra_batches = []
        return _concat(outputs)

    def _process_poll(self, outputs):
        obs, rewards, dones, infos, off_policy_actions = self.env.poll()
        to_eval = defaultdict(list)
        stepped, finished_rows = 0, 0
        for env_id, agent_obs in obs.items():
            episode = self.episodes.get(env_id)
            if episode is None:
                episode = self.episodes[env_id] = self._new_episode()
            elif env_id in self.pending_actions:
                episode.length += 1
                episode.batch_builder.count += 1
                stepped += 1
            episode._add_agent_rewards(rewards.get(env_id, {}))
            all_done = dones[env_id].get("__all__", False)
            if self.options.horizon and episode.length >= self.options.horizon:
                all_done = True
            self._record(env_id, episode, agent_obs, rewards, dones, infos,
                         off_policy_actions, all_done, to_eval)
            self._callback("on_episode_step", env=self.env, episode=episode)
            if all_done:
                finished = episode.batch_builder.build_and_reset(episode)
                finished_rows += finished.count
                outputs.append(finished)
                self._callback("on_episode_end", env=self.env, policy=self.policy_map,
                               episode=episode)
                self.metrics.append(episode.rollout_metrics())
                self.pending_actions.pop(env_id, None)
                reset_obs = self.env.try_reset(env_id)
                if reset_obs is None:
                    del self.episodes[env_id]
                    continue
                episode = self.episodes[env_id] = self._new_episode()
                self._record(env_id, episode, reset_obs, {}, {env_id: {}}, {}, {}, False,
                             to_eval)
        return to_eval, finished_rows, stepped

    def _record(self, env_id, episode, agent_obs, rewards, dones, infos, off_policy_actions,
                all_done, to_eval):
        for agent_id, raw_obs in agent_obs.items():
            policy_id = episode.policy_for(agent_id)
            obs = self.obs_filters[policy_id](self.preprocessors[policy_id].transform(raw_obs))
            agent_done = bool(dones.get(env_id, {}).get(agent_id, False) or all_done)
            info = infos.get(env_id, {}).get(agent_id, {})
            last_obs = episode.last_observation_for(agent_id)
            if last_obs is not None and agent_id in episode._agent_to_last_action:
                row = {
                    "t": episode.length - 1,
                    "eps_id": episode.episode_id,
                    "agent_index": episode._agent_index(agent_id),
                    "obs": last_obs,
                    "actions": episode.last_action_for(agent_id),
                    "rewards": float(rewards.get(env_id, {}).get(agent_id, 0.0)),
                    "prev_actions": episode.prev_action_for(agent_id),
                    "prev_rewards": episode.prev_reward_for(agent_id),
                    "dones": agent_done,
                    "infos": info,
                    "new_obs": obs,
                }
                row.update(episode.last_pi_info_for(agent_id))
                episode.batch_builder.add_values(agent_id, policy_id, **row)
            episode._set_last_observation(agent_id, obs, raw_obs, info)
            off_policy = off_policy_actions.get(env_id, {}).get(agent_id)
            if not agent_done:
                to_eval[policy_id].append((env_id, agent_id, obs, off_policy))

    def _compute_actions(self, to_eval) -> dict:
        actions = defaultdict(dict)
        for policy_id, items in to_eval.items():
            policy = self.policy_map[policy_id]
            episodes = [self.episodes[env_id] for env_id, *_ in items]
            states = [ep.rnn_state_for(agent_id) for ep, (_e, agent_id, *_r) in
                      zip(episodes, items)]
            state_batches = [np.stack([s[j] for s in states]) for j in range(len(states[0]))] \
                if states and states[0] else []
            chosen, state_out, extra = policy.compute_actions(
                np.stack([obs for _e, _a, obs, _o in items]), state_batches,
                np.asarray([ep.last_action_for(a) for ep, (_e, a, *_r) in zip(episodes, items)]),
                np.asarray([ep.prev_reward_for(a) for ep, (_e, a, *_r) in zip(episodes, items)],
                           dtype=np.float32),
                episodes=episodes,
            )
            for i, (env_id, agent_id, _obs, off_policy) in enumerate(items):
                episode = self.episodes[env_id]
                action = chosen[i] if off_policy is None else off_policy
                pi_info = {k: v[i] for k, v in extra.items()}
                for j, s in enumerate(episode.rnn_state_for(agent_id)):
                    pi_info[f"state_in_{j}"] = s
                    pi_info[f"state_out_{j}"] = state_out[j][i]
                episode._set_rnn_state(agent_id, [s[i] for s in state_out])
                episode._set_last_action(agent_id, action)
                episode._set_last_pi_info(agent_id, pi_info)
                if self.options.clip_actions:
                    action = clip_action(action, policy.action_space)
                actions[env_id][agent_id] = action
        return actions

    def _send(self, actions: dict) -> None:
        self.pending_actions = dict(actions)
        if actions:
            self.env.send_actions(actions)


def _concat(outputs):
    outputs = [o for o in outputs if o.count > 0 or isinstance(o, MultiAgentBatch)]
    if not outputs:
        return SampleBatch()
    if any(isinstance(o, MultiAgentBatch) for o in outputs):
        return MultiAgentBatch.concat_samples(outputs)
    return SampleBatch.concat_samples(outputs)
