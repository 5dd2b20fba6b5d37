"""Run a benchmark script's two sides (ours, the peer) in turn, each in its own process.

``alternate(script, args, peer_python, rounds, timeout)`` runs ``script --only ours``
with this interpreter and ``script --only peer`` with ``peer_python`` (the peer's own
venv), ``rounds`` times, so both see the same machine load; it prints each run's last
JSON line (or a JSON error / time-out record).
"""

from __future__ import annotations

import json
import subprocess
import sys


def alternate(script: str, args: list[str], peer_python: str, rounds: int,
              timeout: float) -> None:
    for _ in range(rounds):
        for who, python in (("ours", sys.executable), ("peer", peer_python)):
            try:
                out = subprocess.run([python, script, "--only", who, *args],
                                     capture_output=True, text=True, timeout=timeout)
            except subprocess.TimeoutExpired:
                print(json.dumps({"who": who, "timed_out_s": timeout}), flush=True)
                continue
            lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
            print(lines[-1] if lines else json.dumps(
                {"who": who, "error": out.stderr[-2000:]}), flush=True)
