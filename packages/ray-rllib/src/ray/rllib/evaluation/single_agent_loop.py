"""The sampling loop for single-agent (vectorized) envs: the fast path.

One batched forward pass per step for all ``num_envs`` envs; each env's rows
go to its own trajectory buffer, which is postprocessed (advantages) when its
episode ends or when the batch is cut.
"""

from __future__ import annotations

import numpy as np

from ray.rllib.env.base_env import _DUMMY_AGENT_ID
from ray.rllib.evaluation.episode import MultiAgentEpisode
from ray.rllib.evaluation.sample_batch_builder import SampleBatchBuilder
from ray.rllib.evaluation.sampler_options import SamplerOptions
from ray.rllib.policy.policy import clip_action
from ray.rllib.policy.sample_batch import DEFAULT_POLICY_ID, SampleBatch


class SingleAgentLoop:
    def __init__(self, vector_env, policy, preprocessor, obs_filter, options: SamplerOptions):
        self.env = vector_env
        self.policy = policy
        self.policy_map = {DEFAULT_POLICY_ID: policy}
        self.preprocessor = preprocessor
        self.obs_filter = obs_filter
        self.options = options
        self.num_envs = vector_env.num_envs
        self.metrics: list = []
        self.obs: list = [None] * self.num_envs
        self.episodes: list[MultiAgentEpisode] = [None] * self.num_envs
        self.builders = [SampleBatchBuilder() for _ in range(self.num_envs)]
        self.states: list = [None] * self.num_envs
        self.started = False

    def _process_obs(self, raw):
        return self.obs_filter(self.preprocessor.transform(raw))

    def _start_episode(self, index: int, raw_obs) -> None:
        episode = MultiAgentEpisode(
            self.policy_map, lambda _agent: DEFAULT_POLICY_ID, rng=self.options.rng
        )
        obs = self._process_obs(raw_obs)
        episode._set_last_observation(_DUMMY_AGENT_ID, obs, raw_obs)
        self.episodes[index], self.obs[index] = episode, obs
        self.states[index] = self.policy.get_initial_state()
        self._callback("on_episode_start", env=self.env, policy=self.policy_map, episode=episode)

    def _callback(self, name: str, **info) -> None:
        fn = self.options.callbacks.get(name)
        if fn:
            fn(info)

    def sample(self) -> SampleBatch:
        if not self.started:
            for i, raw in enumerate(self.env.vector_reset()):
                self._start_episode(i, raw)
            self.started = True
        complete = self.options.batch_mode == "complete_episodes"
        target = self.options.unroll_length * (1 if complete else self.num_envs)
        done_batches, rows = [], 0
        while rows < target:
            finished = self._step()
            for builder_batch in finished:
                done_batches.append(builder_batch)
                if complete:
                    rows += builder_batch.count
            if not complete:
                rows += self.num_envs
        if not complete:
            for i, builder in enumerate(self.builders):
                if builder.count:
                    done_batches.append(self._postprocess(i))
        batch = SampleBatch.concat_samples(done_batches)
        return batch

    def _step(self) -> list[SampleBatch]:
        opts = self.options
        episodes = self.episodes
        state_batches = _stack_states(self.states)
        prev_actions = [ep.last_action_for() for ep in episodes]
        prev_rewards = [ep.prev_reward_for() for ep in episodes]
        actions, state_out, extra = self.policy.compute_actions(
            np.stack(self.obs), state_batches, np.asarray(prev_actions),
            np.asarray(prev_rewards, dtype=np.float32), episodes=episodes,
        )
        env_actions = [clip_action(a, self.policy.action_space) for a in actions] \
            if opts.clip_actions else list(actions)
        out = self.env.vector_step(env_actions)
        if len(out) == 5:
            raw_obs, rewards, terminateds, truncateds, infos = out
        else:
            raw_obs, rewards, terminateds, infos = out
            truncateds = [False] * self.num_envs
        finished = []
        for i in range(self.num_envs):
            episode = episodes[i]
            new_obs = self._process_obs(raw_obs[i])
            reward = float(rewards[i])
            episode.length += 1
            episode._add_agent_rewards({_DUMMY_AGENT_ID: reward})
            horizon_hit = bool(opts.horizon) and episode.length >= opts.horizon
            row = {
                "t": episode.length - 1,
                "eps_id": episode.episode_id,
                "agent_index": 0,
                "obs": self.obs[i],
                "actions": actions[i],
                "rewards": np.sign(reward) if opts.clip_rewards else reward,
                "prev_actions": prev_actions[i],
                "prev_rewards": prev_rewards[i],
                "dones": bool(terminateds[i]),
                "new_obs": new_obs,
            }
            for key, column in extra.items():
                row[key] = column[i]
            for j, s in enumerate(self.states[i]):
                row[f"state_in_{j}"] = s
                row[f"state_out_{j}"] = state_out[j][i]
            self.builders[i].add_values(**row)
            episode._set_last_action(_DUMMY_AGENT_ID, actions[i])
            episode._set_last_observation(_DUMMY_AGENT_ID, new_obs, raw_obs[i], infos[i])
            self.states[i] = [s[i] for s in state_out]
            self._callback("on_episode_step", env=self.env, episode=episode)
            if terminateds[i] or truncateds[i] or (horizon_hit and not opts.soft_horizon):
                finished.append(self._postprocess(i))
                self._callback("on_episode_end", env=self.env, policy=self.policy_map,
                               episode=episode)
                self.metrics.append(episode.rollout_metrics())
                self._start_episode(i, self.env.reset_at(i))
            else:
                if horizon_hit:
                    self.metrics.append(episode.rollout_metrics())
                    episode.soft_reset()
                self.obs[i] = new_obs
        return finished

    def _postprocess(self, index: int) -> SampleBatch:
        pre_batch = self.builders[index].build_and_reset()
        episode = self.episodes[index]
        post_batch = self.policy.postprocess_trajectory(pre_batch.copy(), None, episode)
        self._callback("on_postprocess_traj", agent_id=_DUMMY_AGENT_ID, episode=episode,
                       pre_batch=(self.policy, pre_batch), post_batch=post_batch,
                       all_pre_batches={_DUMMY_AGENT_ID: (self.policy, pre_batch)})
        return post_batch


def _stack_states(states: list) -> list:
    if not states or not states[0]:
        return []
    return [np.stack([s[j] for s in states]) for j in range(len(states[0]))]
