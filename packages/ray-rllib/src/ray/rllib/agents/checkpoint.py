"""The versioned checkpoint format.

A checkpoint is one pickle file holding only plain data (dicts, lists,
numbers, numpy arrays)::

    {"format": "ray.rllib.checkpoint", "version": N, "algorithm": "PPO",
     "config": {...}, "worker": {"policies": {...}, "filters": {...}},
     "trainer_state": {...}}

``load_checkpoint`` upgrades older versions step by step, so checkpoints
written by earlier releases stay restorable.
"""

from __future__ import annotations

import pickle

FORMAT = "ray.rllib.checkpoint"
VERSION = 1

# version -> function upgrading a checkpoint of that version to version + 1
_UPGRADES: dict = {}


class CheckpointError(ValueError):
    """A file that is not an RLlib checkpoint, or one from a newer release."""


def write_checkpoint(path: str, algorithm: str, config: dict, worker_state: dict,
                     trainer_state: dict) -> None:
    data = {
        "format": FORMAT,
        "version": VERSION,
        "algorithm": algorithm,
        "config": _plain_config(config),
        "worker": worker_state,
        "trainer_state": trainer_state,
    }
    with open(path, "wb") as f:
        pickle.dump(data, f)


def load_checkpoint(path_or_data) -> dict:
    if isinstance(path_or_data, dict):
        data = path_or_data
    else:
        with open(path_or_data, "rb") as f:
            data = pickle.load(f)
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise CheckpointError(f"{path_or_data!r} is not an RLlib checkpoint")
    version = data.get("version", 0)
    if version > VERSION:
        raise CheckpointError(
            f"checkpoint version {version} is newer than this RLlib understands ({VERSION}): "
            "upgrade ray-rllib to restore it"
        )
    while version < VERSION:
        data = _UPGRADES[version](data)
        version = data["version"]
    return data


def _plain_config(config: dict) -> dict:
    """Drop what cannot be pickled by reference later (callbacks, lambdas, classes)."""
    out = {}
    for key, value in config.items():
        if isinstance(value, dict):
            out[key] = _plain_config(value)
        elif callable(value):
            continue
        else:
            out[key] = value
    return out
