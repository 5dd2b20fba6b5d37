"""Inverted control: the env runs in its own thread and asks the policy for actions.

The user's ``run()`` loop calls ``start_episode``, ``get_action`` (or
``log_action`` for actions it chose itself), ``log_returns`` and
``end_episode``. Each episode hands its steps to the sampler through a queue;
the sampler answers ``get_action`` through a one-slot action queue.
"""

from __future__ import annotations

import queue
import threading
import uuid

from ray.rllib.env.base_env import _DUMMY_AGENT_ID, BaseEnv

_ACTION_TIMEOUT_S = 60.0
# Put in an episode's action queue when the sampler stops: the env thread exits quietly.
_STOPPED = object()


class ExternalEnv(threading.Thread):
    def __init__(self, action_space, observation_space, max_concurrent: int = 100):
        super().__init__(daemon=True)
        self.action_space = action_space
        self.observation_space = observation_space
        self._episodes: dict[str, _ExternalEnvEpisode] = {}
        self._finished: set[str] = set()
        self._results_avail = threading.Condition()
        self._max_concurrent = max_concurrent

    def run(self):
        raise NotImplementedError("ExternalEnv subclasses implement run()")

    def start_episode(self, episode_id: str | None = None, training_enabled: bool = True) -> str:
        episode_id = episode_id or uuid.uuid4().hex
        if episode_id in self._finished or episode_id in self._episodes:
            raise ValueError(f"episode {episode_id} has already been started")
        if len(self._episodes) >= self._max_concurrent:
            raise ValueError(
                f"too many concurrent episodes ({self._max_concurrent}); end some, or raise "
                "max_concurrent"
            )
        self._episodes[episode_id] = _ExternalEnvEpisode(
            episode_id, self._results_avail, training_enabled
        )
        return episode_id

    def get_action(self, episode_id: str, observation):
        return self._get(episode_id).wait_for_action(observation)

    def log_action(self, episode_id: str, observation, action) -> None:
        self._get(episode_id).log_action(observation, action)

    def log_returns(self, episode_id: str, reward: float, info=None) -> None:
        episode = self._get(episode_id)
        episode.cur_reward += reward
        if info:
            episode.cur_info = info

    def end_episode(self, episode_id: str, observation) -> None:
        episode = self._get(episode_id)
        self._finished.add(episode_id)
        episode.done(observation)

    def _get(self, episode_id: str) -> _ExternalEnvEpisode:
        if episode_id in self._finished:
            raise ValueError(f"episode {episode_id} has already finished")
        if episode_id not in self._episodes:
            raise ValueError(f"episode {episode_id} was never started (call start_episode)")
        return self._episodes[episode_id]


ServingEnv = ExternalEnv


class ExternalEnvStopped(Exception):
    """Raised inside ``run()`` once the sampler has stopped; ends the env thread quietly."""


class _ExternalEnvEpisode:
    def __init__(self, episode_id, results_avail, training_enabled):
        self.episode_id = episode_id
        self.results_avail = results_avail
        self.training_enabled = training_enabled
        self.data_queue: queue.Queue = queue.Queue()
        self.action_queue: queue.Queue = queue.Queue(maxsize=1)
        self.new_observation = None
        self.new_action = None
        self.cur_reward = 0.0
        self.cur_done = False
        self.cur_info = {}

    def get_data(self):
        return None if self.data_queue.empty() else self.data_queue.get_nowait()

    def log_action(self, observation, action):
        self.new_observation, self.new_action = observation, action
        self._send()
        self._next_action()

    def wait_for_action(self, observation):
        self.new_observation = observation
        self._send()
        return self._next_action()

    def _next_action(self):
        action = self.action_queue.get(True, timeout=_ACTION_TIMEOUT_S)
        if action is _STOPPED:
            raise ExternalEnvStopped()
        return action

    def done(self, observation):
        self.new_observation = observation
        self.cur_done = True
        self._send()

    def _send(self):
        item = {
            "obs": self.new_observation,
            "reward": self.cur_reward,
            "done": self.cur_done,
            "info": dict(self.cur_info, training_enabled=self.training_enabled),
        }
        if self.new_action is not None:
            item["off_policy_action"] = self.new_action
        self.new_observation, self.new_action = None, None
        self.cur_reward, self.cur_info = 0.0, {}
        with self.results_avail:
            self.data_queue.put_nowait(item)
            self.results_avail.notify()


class _ExternalEnvToBaseEnv(BaseEnv):
    def __init__(self, external_env: ExternalEnv):
        self.external_env = external_env
        self.action_space = external_env.action_space
        self.observation_space = external_env.observation_space
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name=f"{type(external_env).__name__}.run")
        self._thread.start()

    def _run(self):
        try:
            self.external_env.run()
        except ExternalEnvStopped:
            pass

    def poll(self):
        with self.external_env._results_avail:
            results = self._poll()
            while not results[0]:
                self.external_env._results_avail.wait(timeout=1.0)
                results = self._poll()
                if not self._thread.is_alive():
                    raise RuntimeError("the ExternalEnv's run() thread has exited")
        return results

    def _poll(self):
        obs, rewards, dones, infos, off_policy = {}, {}, {}, {}, {}
        for eid, episode in list(self.external_env._episodes.items()):
            data = episode.get_data()
            if data is None:
                continue
            if data["done"]:
                del self.external_env._episodes[eid]
            obs[eid] = {_DUMMY_AGENT_ID: data["obs"]}
            rewards[eid] = {_DUMMY_AGENT_ID: data["reward"]}
            dones[eid] = {_DUMMY_AGENT_ID: data["done"], "__all__": data["done"]}
            infos[eid] = {_DUMMY_AGENT_ID: data["info"]}
            if "off_policy_action" in data:
                off_policy[eid] = {_DUMMY_AGENT_ID: data["off_policy_action"]}
        return obs, rewards, dones, infos, off_policy

    def stop(self):
        for episode in list(self.external_env._episodes.values()):
            try:
                episode.action_queue.put_nowait(_STOPPED)
            except queue.Full:
                pass

    def send_actions(self, action_dict):
        for eid, actions in action_dict.items():
            self.external_env._episodes[eid].action_queue.put(
                actions[_DUMMY_AGENT_ID], timeout=_ACTION_TIMEOUT_S
            )
