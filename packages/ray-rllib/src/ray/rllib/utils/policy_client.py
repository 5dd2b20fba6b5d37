"""``PolicyClient``: talk to a ``PolicyServer`` over HTTP (requests), e.g. from an app."""

from __future__ import annotations

import numpy as np
import requests

from ray.rllib.utils import policy_server as protocol


class PolicyClient:
    """``PolicyClient("localhost:8900")``; every call is one JSON POST to the server."""

    def __init__(self, address: str, timeout_s: float = 120.0):
        self.address = address if address.startswith("http") else f"http://{address}"
        self.timeout_s = timeout_s
        self._session = requests.Session()

    def start_episode(self, episode_id: str | None = None, training_enabled: bool = True) -> str:
        """Record the start of an episode; returns its id (generated unless given)."""
        return self._send({"command": protocol.START_EPISODE, "episode_id": episode_id,
                           "training_enabled": training_enabled})["episode_id"]

    def get_action(self, episode_id: str, observation):
        """Record an observation and return the policy's action for it."""
        return self._send({"command": protocol.GET_ACTION, "episode_id": episode_id,
                           "observation": _jsonable(observation)})["action"]

    def log_action(self, episode_id: str, observation, action) -> None:
        """Record an observation and the (off-policy) action that was taken."""
        self._send({"command": protocol.LOG_ACTION, "episode_id": episode_id,
                    "observation": _jsonable(observation), "action": _jsonable(action)})

    def log_returns(self, episode_id: str, reward: float, info=None) -> None:
        """Record a reward; it is credited to the episode's last action."""
        self._send({"command": protocol.LOG_RETURNS, "episode_id": episode_id,
                    "reward": float(reward), "info": info})

    def end_episode(self, episode_id: str, observation) -> None:
        """Record the end of an episode with its last observation."""
        self._send({"command": protocol.END_EPISODE, "episode_id": episode_id,
                    "observation": _jsonable(observation)})

    def _send(self, request: dict) -> dict:
        try:
            response = self._session.post(self.address, json=request, timeout=self.timeout_s)
        except requests.ConnectionError as error:
            raise ConnectionError(
                f"no policy server at {self.address}: start one (PolicyServer inside an "
                f"ExternalEnv's run()) or fix the address ({error})") from None
        if response.status_code != 200:
            try:
                message = response.json().get("error", response.text)
            except ValueError:
                message = response.text
            raise ValueError(f"policy server {self.address} rejected "
                             f"{request['command']}: {message}")
        return response.json()

    def close(self) -> None:
        self._session.close()


def _jsonable(value):
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, tuple | list):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    return value


__all__ = ["PolicyClient"]
