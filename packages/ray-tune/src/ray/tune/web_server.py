"""The Tune Client API: a small REST server inside `tune.run(with_server=True)`, and TuneClient.

    GET  /trials          -> {"trials": [trial info, ...]}
    GET  /trials/<id>     -> {"trial": trial info}
    POST /trials          {"name": experiment name, "spec": experiment spec} -> adds trials
    PUT  /trials/<id>     -> stops the trial

The server thread never touches trials: it queues a request that the `tune.run`
loop answers between two results.
"""

from __future__ import annotations

import json
import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

from ray.tune.error import TuneError
from ray.tune.trial import Trial, _jsonable

logger = logging.getLogger(__name__)

DEFAULT_PORT = 4321
_REPLY_TIMEOUT_S = 30.0


def trial_info(trial: Trial) -> dict:
    return {
        "name": str(trial),
        "id": trial.trial_id,
        "trial_id": trial.trial_id,
        "status": trial.status,
        "trainable_name": trial.trainable_name,
        "experiment_tag": trial.experiment_tag,
        "config": _jsonable(trial.config),
        "logdir": trial.logdir,
        "resources": trial.resources.to_json(),
        "num_failures": trial.num_failures,
        "error_msg": trial.error_msg,
        "last_result": _jsonable(trial.last_result),
    }


class _Request:
    """A client request answered by the `tune.run` loop (see `_Shell.submit`)."""

    def __init__(self, kind: str, trial_id: str | None = None, body: dict | None = None):
        self.kind = kind
        self.trial_id = trial_id
        self.body = body or {}
        self.reply: tuple[int, dict] | None = None
        self._done = threading.Event()

    def run(self, shell) -> None:
        try:
            self.reply = self._answer(shell)
        except Exception as exc:  # noqa: BLE001 - reported to the client, not fatal to the run
            self.reply = (400, {"error": f"{type(exc).__name__}: {exc}"})
        self._done.set()

    def _answer(self, shell) -> tuple[int, dict]:
        controller = shell.controller
        if self.kind == "list":
            return 200, {"trials": [trial_info(t) for t in controller.get_trials()]}
        if self.kind == "get":
            trial = controller.get_trial(self.trial_id)
            if trial is None:
                return 404, {"error": f"no trial {self.trial_id}"}
            return 200, {"trial": trial_info(trial)}
        if self.kind == "stop":
            trial = controller.get_trial(self.trial_id)
            if trial is None:
                return 404, {"error": f"no trial {self.trial_id}"}
            shell._do(controller.request_stop(self.trial_id))
            return 200, {"trial": trial_info(trial)}
        if self.kind == "add":
            from ray.tune.experiment import Experiment
            from ray.tune.suggest.basic_variant import BasicVariantGenerator

            name = self.body.get("name") or shell.experiments[0].name
            spec = dict(self.body.get("spec") or {})
            spec.setdefault("local_dir", shell.experiments[0].spec["local_dir"])
            generator = BasicVariantGenerator()
            generator.add_configurations([Experiment.from_json(name, spec)])
            added = generator.next_trials()
            for trial in added:
                controller.add_trial(trial)
            return 200, {"trials": [trial_info(t) for t in added]}
        return 400, {"error": f"unknown request {self.kind}"}

    def wait(self) -> tuple[int, dict]:
        if not self._done.wait(_REPLY_TIMEOUT_S):
            return 503, {"error": "the experiment did not answer in time"}
        return self.reply  # type: ignore[return-value]


class TuneServer:
    """Serves the Client API on `port` from a daemon thread (see the module docstring)."""

    def __init__(self, shell, port: int = DEFAULT_PORT, host: str = "0.0.0.0"):
        self._shell = shell
        handler = _make_handler(shell)
        self._server = ThreadingHTTPServer((host, port), handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, name="tune-server", daemon=True)
        self._thread.start()
        logger.info("Tune server listening on port %s", self.port)

    def shutdown(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


def _make_handler(shell):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, fmt, *args):  # keep the console for the status table
            logger.debug(fmt, *args)

        def _reply(self, code: int, payload: dict) -> None:
            body = json.dumps(payload).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _trial_id(self) -> str | None:
            parts = [p for p in self.path.split("?")[0].split("/") if p]
            if not parts or parts[0] != "trials":
                return "__bad__"
            return parts[1] if len(parts) > 1 else None

        def _body(self) -> dict:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length).decode() if length else ""
            if not raw:
                return {}
            try:
                return json.loads(raw)
            except json.JSONDecodeError:
                form = {k: v[0] for k, v in parse_qs(raw).items()}
                if "spec" in form:
                    form["spec"] = json.loads(form["spec"])
                return form

        def _submit(self, request: _Request) -> None:
            shell.submit(request)
            self._reply(*request.wait())

        def do_GET(self):  # noqa: N802 - http.server's naming
            trial_id = self._trial_id()
            if trial_id == "__bad__":
                return self._reply(404, {"error": "use /trials or /trials/<id>"})
            self._submit(_Request("list") if trial_id is None else _Request("get", trial_id))

        def do_PUT(self):  # noqa: N802
            trial_id = self._trial_id()
            if trial_id in (None, "__bad__"):
                return self._reply(404, {"error": "use PUT /trials/<id>"})
            self._submit(_Request("stop", trial_id))

        def do_POST(self):  # noqa: N802
            if self._trial_id() is not None:
                return self._reply(404, {"error": "use POST /trials"})
            self._submit(_Request("add", body=self._body()))

    return Handler


class TuneClient:
    """Client for a running experiment's TuneServer (needs `requests`)."""

    def __init__(self, tune_address: str, port_forward: int = DEFAULT_PORT):
        self._tune_address = tune_address
        self._port_forward = port_forward
        self._path = f"http://{tune_address}:{port_forward}"

    def get_all_trials(self) -> dict:
        """{"trials": [info, ...]} for every trial of the experiment."""
        return self._request("get", "/trials")

    def get_trial(self, trial_id: str) -> dict:
        """{"trial": info}."""
        return self._request("get", f"/trials/{trial_id}")

    def add_trial(self, name: str, specification: dict) -> dict:
        """Adds trials generated from an experiment spec (like a `run_experiments` entry)."""
        return self._request("post", "/trials", json={"name": name, "spec": specification})

    def stop_trial(self, trial_id: str) -> dict:
        return self._request("put", f"/trials/{trial_id}")

    def _request(self, method: str, path: str, **kwargs: Any) -> dict:
        import requests

        response = getattr(requests, method)(self._path + path, timeout=60, **kwargs)
        payload = response.json()
        if response.status_code >= 400:
            raise TuneError(f"{method.upper()} {path} failed ({response.status_code}): {payload}")
        return payload
