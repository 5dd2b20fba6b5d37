"""Experiment checkpoints: `local_dir/name/experiment_state-<timestamp>.json`, written atomically.

The file holds every trial (see `Trial.to_json`), the searcher's state (pickled) and
enough metadata for `resume=True` after the driver was killed, and for the CLI and
`ExperimentAnalysis` to read an experiment without running anything.
"""

from __future__ import annotations

import base64
import glob
import json
import os
import tempfile
import time
from datetime import datetime
from typing import Any

from ray.tune.logger import SafeFallbackEncoder
from ray.tune.trial import Trial

STATE_GLOB = "experiment_state-*.json"


class ExperimentStateWriter:
    """Writes the state file of one experiment directory (the same file every time)."""

    def __init__(self, checkpoint_dir: str, *, min_interval_s: float = 0.5):
        self.checkpoint_dir = checkpoint_dir
        self.min_interval_s = min_interval_s
        os.makedirs(checkpoint_dir, exist_ok=True)
        existing = find_state_file(checkpoint_dir)
        self.path = existing or os.path.join(
            checkpoint_dir, f"experiment_state-{datetime.today():%Y-%m-%d_%H-%M-%S}.json"
        )
        self._last_write = -float("inf")
        self._last_version = -1

    def maybe_write(self, trials: list[Trial], search_alg: Any, version: int,
                    runner_data: dict | None = None, *, force: bool = False) -> bool:
        now = time.monotonic()
        if not force and (version == self._last_version or now - self._last_write < self.min_interval_s):
            return False
        write_state(self.path, trials, search_alg, runner_data)
        self._last_write = now
        self._last_version = version
        return True


def write_state(path: str, trials: list[Trial], search_alg: Any, runner_data: dict | None = None) -> None:
    searcher_state = None
    if search_alg is not None:
        try:
            import cloudpickle

            searcher_state = base64.b64encode(cloudpickle.dumps(search_alg.save_state())).decode()
        except Exception:  # noqa: BLE001 - an unpicklable searcher is simply not restored
            searcher_state = None
    runner = {"timestamp": time.time(), "searcher_state": searcher_state}
    for key, value in (runner_data or {}).items():
        if key == "callback_states":
            value = _encode_callback_states(value)
        runner[key] = value
    data = {
        "checkpoints": [t.cached_json() for t in trials],
        "runner_data": runner,
        "stats": {"num_trials": len(trials)},
    }
    directory = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".experiment_state_", suffix=".tmp")
    try:
        # json.dumps (the C encoder) is ~10x faster than json.dump's chunked writes.
        text = json.dumps(data, cls=SafeFallbackEncoder)
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)  # atomic: a reader sees the old file or the new one
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def find_state_file(checkpoint_dir: str) -> str | None:
    files = sorted(glob.glob(os.path.join(checkpoint_dir, STATE_GLOB)))
    return files[-1] if files else None


def load_state(checkpoint_dir: str) -> dict:
    path = find_state_file(checkpoint_dir)
    if path is None:
        raise FileNotFoundError(f"no experiment state ({STATE_GLOB}) in {checkpoint_dir}")
    with open(path) as f:
        return json.load(f)


def load_trials(checkpoint_dir: str) -> list[Trial]:
    return [Trial.from_json(t) for t in load_state(checkpoint_dir)["checkpoints"]]


def load_searcher_state(data: dict) -> Any:
    encoded = data.get("runner_data", {}).get("searcher_state")
    if not encoded:
        return None
    import cloudpickle

    return cloudpickle.loads(base64.b64decode(encoded))


def _encode_callback_states(states: dict) -> str | None:
    if not states:
        return None
    import cloudpickle

    try:
        return base64.b64encode(cloudpickle.dumps(states)).decode()
    except Exception:  # noqa: BLE001 - a callback whose state cannot pickle is not restored
        return None


def load_callback_state(data: dict) -> dict | None:
    encoded = data.get("runner_data", {}).get("callback_states")
    if not encoded:
        return None
    import cloudpickle

    return cloudpickle.loads(base64.b64decode(encoded))


def rebase_paths(records: list[dict], old_dir: str, new_dir: str) -> list[dict]:
    """Trial records with every path under `old_dir` moved under `new_dir`."""
    old = os.path.abspath(old_dir).rstrip(os.sep)
    new = os.path.abspath(new_dir).rstrip(os.sep)

    def move(value):
        if isinstance(value, str) and (value == old or value.startswith(old + os.sep)):
            return new + value[len(old):]
        return value

    out = []
    for record in records:
        record = dict(record)
        for key in ("logdir", "local_dir", "restore_path"):
            record[key] = move(record.get(key))
        if record.get("checkpoint"):
            record["checkpoint"] = {**record["checkpoint"], "value": move(record["checkpoint"]["value"])}
        record["disk_checkpoints"] = [{**c, "value": move(c["value"])}
                                      for c in record.get("disk_checkpoints", [])]
        out.append(record)
    return out
