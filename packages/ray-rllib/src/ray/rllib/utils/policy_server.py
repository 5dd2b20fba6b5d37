"""``PolicyServer``: serve an ``ExternalEnv``'s policy over HTTP (the client is ``PolicyClient``).

Each request is a JSON POST ``{"command": ..., ...}``; the reply is JSON:

    START_EPISODE {episode_id?, training_enabled}  -> {"episode_id": str}
    GET_ACTION    {episode_id, observation}         -> {"action": ...}
    LOG_ACTION    {episode_id, observation, action} -> {}
    LOG_RETURNS   {episode_id, reward, info?}       -> {}
    END_EPISODE   {episode_id, observation}         -> {}

Observations and actions travel as JSON numbers or (nested) lists. A bad
request gets HTTP 400 with ``{"error": "<what is wrong and how to fix it>"}``.
The server is multi-threaded: ``GET_ACTION`` blocks its request thread until
the trainer's sampler has computed the action.
"""

from __future__ import annotations

import json
import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import gymnasium as gym
import numpy as np

from ray.rllib.env.external_env import ExternalEnvStopped

logger = logging.getLogger(__name__)

START_EPISODE = "START_EPISODE"
GET_ACTION = "GET_ACTION"
LOG_ACTION = "LOG_ACTION"
LOG_RETURNS = "LOG_RETURNS"
END_EPISODE = "END_EPISODE"
COMMANDS = (START_EPISODE, GET_ACTION, LOG_ACTION, LOG_RETURNS, END_EPISODE)


class PolicyServer(ThreadingHTTPServer):
    """REST server for ``external_env``; call ``serve_forever()`` from its ``run()``."""

    daemon_threads = True

    def __init__(self, external_env, address: str = "localhost", port: int = 8900):
        self.external_env = external_env
        handler = _make_handler(external_env)
        super().__init__((address, port), handler)
        logger.info("policy server listening on %s:%d", address, self.server_address[1])

    @property
    def port(self) -> int:
        return self.server_address[1]

    def serve_in_thread(self) -> threading.Thread:
        thread = threading.Thread(target=self.serve_forever, daemon=True,
                                  name="rllib-policy-server")
        thread.start()
        return thread


def _make_handler(external_env):
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - the http.server API
            try:
                length = int(self.headers.get("Content-Length", 0))
                request = json.loads(self.rfile.read(length) or b"{}")
                reply = execute(external_env, request)
                self._send(200, reply)
            except (ValueError, KeyError, TypeError) as error:
                self._send(400, {"error": _describe(error)})
            except ExternalEnvStopped:
                self._send(503, {"error": "the trainer has stopped sampling from this server"})
            except Exception as error:  # noqa: BLE001 - reported to the client, then logged
                logger.exception("policy server request failed")
                self._send(500, {"error": f"{type(error).__name__}: {error}"})

        def _send(self, status: int, body: dict) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format, *args):  # noqa: A002 - the http.server API
            logger.debug("policy server: " + format, *args)

    return Handler


def execute(env, request: dict) -> dict:
    """Run one client command against the ExternalEnv ``env``."""
    command = request.get("command")
    if command == START_EPISODE:
        return {"episode_id": env.start_episode(request.get("episode_id"),
                                                request.get("training_enabled", True))}
    if command not in COMMANDS:
        raise ValueError(f"unknown command {command!r}: use one of {list(COMMANDS)}")
    episode_id = request["episode_id"]
    if command == GET_ACTION:
        obs = _from_json(request["observation"], env.observation_space)
        return {"action": _to_json(env.get_action(episode_id, obs))}
    if command == LOG_ACTION:
        env.log_action(episode_id, _from_json(request["observation"], env.observation_space),
                       _from_json(request["action"], env.action_space))
        return {}
    if command == LOG_RETURNS:
        env.log_returns(episode_id, float(request["reward"]), request.get("info"))
        return {}
    env.end_episode(episode_id, _from_json(request["observation"], env.observation_space))
    return {}


def _from_json(value, space):
    if isinstance(space, gym.spaces.Box | gym.spaces.MultiBinary | gym.spaces.MultiDiscrete):
        return np.asarray(value, dtype=space.dtype)
    if isinstance(space, gym.spaces.Discrete):
        return int(value)
    if isinstance(space, gym.spaces.Tuple):
        return tuple(_from_json(v, s) for v, s in zip(value, space.spaces))
    if isinstance(space, gym.spaces.Dict):
        return {k: _from_json(value[k], s) for k, s in space.spaces.items()}
    return value


def _to_json(value):
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, tuple | list):
        return [_to_json(v) for v in value]
    if isinstance(value, dict):
        return {k: _to_json(v) for k, v in value.items()}
    return value


def _describe(error: Exception) -> str:
    if isinstance(error, KeyError):
        return f"the request lacks the field {error.args[0]!r}"
    return str(error)


__all__ = ["PolicyServer", "execute"]
