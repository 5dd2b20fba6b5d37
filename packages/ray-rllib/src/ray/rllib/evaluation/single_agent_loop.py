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
        # gymnasium vector envs in NEXT_STEP autoreset mode reset a finished copy on the
        # next step (ignoring its action): that step starts the copy's next episode and
        # records no transition for it.
        self.autoreset = bool(getattr(vector_env, "autoreset_next_step", False))
        self.resetting = [False] * self.num_envs
        self._on_episode_step = options.callbacks.get("on_episode_step")
        # Only Box actions are clipped (clip_action passes other spaces through).
        space = policy.action_space
        self._clip_box_actions = bool(options.clip_actions) and \
            getattr(space, "low", None) is not None and space.dtype.kind == "f"
        if self.autoreset and options.horizon:
            raise ValueError("horizon cannot cut episodes of a gymnasium vector env that "
                             "resets its copies itself: set max_episode_steps when making "
                             "the vector env (and drop horizon)")

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
            finished, recorded = self._step()
            for builder_batch in finished:
                done_batches.append(builder_batch)
                if complete:
                    rows += builder_batch.count
            if not complete:
                rows += recorded
        if not complete:
            for i, builder in enumerate(self.builders):
                if builder.count:
                    done_batches.append(self._postprocess(i))
        batch = SampleBatch.concat_samples(done_batches)
        return batch

    def _step(self) -> tuple[list[SampleBatch], int]:
        """One batched step of every env copy: ``(finished trajectories, rows recorded)``.

        The hot loop of sampling (one call per env step): per-step work is kept to the
        row itself -- no per-step dicts of callbacks or keyword arguments."""
        opts = self.options
        episodes = self.episodes
        policy = self.policy
        prev_actions = [ep.last_action_for() for ep in episodes]
        prev_rewards = [ep.prev_reward_for() for ep in episodes]
        obs_batch = self.obs[0][None].copy() if self.num_envs == 1 else np.stack(self.obs)
        actions, state_out, extra = policy.compute_actions(
            obs_batch, _stack_states(self.states), np.asarray(prev_actions),
            np.asarray(prev_rewards, dtype=np.float32), episodes=episodes,
        )
        env_actions = [clip_action(a, policy.action_space) for a in actions] \
            if self._clip_box_actions else list(actions)
        out = self.env.vector_step(env_actions)
        if len(out) == 5:
            raw_obs, rewards, terminateds, truncateds, infos = out
        else:
            raw_obs, rewards, terminateds, infos = out
            truncateds = [False] * self.num_envs
        extra_items = list(extra.items())
        on_step = self._on_episode_step
        horizon = opts.horizon
        finished = []
        recorded = 0
        for i in range(self.num_envs):
            if self.resetting[i]:  # the env reset this copy; its action was ignored
                self.resetting[i] = False
                self._start_episode(i, raw_obs[i])
                continue
            recorded += 1
            episode = episodes[i]
            new_obs = self.obs_filter(self.preprocessor.transform(raw_obs[i]))
            reward = float(rewards[i])
            episode.length += 1
            episode._add_agent_rewards({_DUMMY_AGENT_ID: reward})
            horizon_hit = bool(horizon) and episode.length >= horizon
            action = actions[i]
            row = {
                "t": episode.length - 1,
                "eps_id": episode.episode_id,
                "agent_index": 0,
                "obs": self.obs[i],
                "actions": action,
                "rewards": np.sign(reward) if opts.clip_rewards else reward,
                "prev_actions": prev_actions[i],
                "prev_rewards": prev_rewards[i],
                "dones": bool(terminateds[i]),
                "new_obs": new_obs,
            }
            for key, column in extra_items:
                row[key] = column[i]
            states = self.states[i]
            if states:
                for j, s in enumerate(states):
                    row[f"state_in_{j}"] = s
                    row[f"state_out_{j}"] = state_out[j][i]
                self.states[i] = [s[i] for s in state_out]
            self.builders[i].add_row(row)
            episode._set_last_action(_DUMMY_AGENT_ID, action)
            episode._set_last_observation(_DUMMY_AGENT_ID, new_obs, raw_obs[i], infos[i])
            if on_step is not None:
                on_step({"env": self.env, "episode": episode})
            if terminateds[i] or truncateds[i] or (horizon_hit and not opts.soft_horizon):
                finished.append(self._postprocess(i))
                self._callback("on_episode_end", env=self.env, policy=self.policy_map,
                               episode=episode)
                self.metrics.append(episode.rollout_metrics())
                if self.autoreset:
                    self.resetting[i] = True
                    self.obs[i] = new_obs  # acted on once more; the env ignores it
                else:
                    self._start_episode(i, self.env.reset_at(i))
            else:
                if horizon_hit:
                    self.metrics.append(episode.rollout_metrics())
                    episode.soft_reset()
                self.obs[i] = new_obs
        return finished, recorded

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
