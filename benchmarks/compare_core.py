"""Run bench_core.py under this project's venv and a peer's (e.g. Ray 2.60 in its own
venv) back to back, and print both plus the ratios as JSON.

    python benchmarks/compare_core.py --peer-python /path/to/ray-venv/bin/python
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
# Higher is better for these; for the rest (times, memory) lower is better.
HIGHER_IS_BETTER = {"tasks_async_per_s", "tasks_sync_per_s", "actor_calls_async_per_s",
                    "actor_calls_sync_per_s", "put_small_per_s", "put_big_first_gb_per_s",
                    "memcpy_prefaulted_gb_per_s", "put_vs_memcpy_ratio"}


def run(python: str, extra: list[str]) -> dict:
    # Run outside the repository so the peer does not import our sources.
    out = subprocess.run([python, os.path.join(HERE, "bench_core.py"), *extra],
                         capture_output=True, text=True, cwd=tempfile.gettempdir(),
                         timeout=1200)
    text = out.stdout
    start = text.rfind("\n{")
    start = 0 if text.startswith("{") and start < 0 else start + 1
    try:
        return json.loads(text[start:])
    except json.JSONDecodeError:
        raise SystemExit(f"{python} produced no JSON:\n{text[-2000:]}\n{out.stderr[-2000:]}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--peer-python", required=True)
    p.add_argument("--ours-python", default=sys.executable)
    p.add_argument("bench_args", nargs="*")
    args = p.parse_args()
    ours = run(args.ours_python, args.bench_args)
    peer = run(args.peer_python, args.bench_args)
    speedup = {}
    for key, value in ours.items():
        other = peer.get(key)
        if isinstance(value, int | float) and isinstance(other, int | float) and other and value:
            speedup[key] = value / other if key in HIGHER_IS_BETTER else other / value
    print(json.dumps({"ours": ours, "peer": peer, "speedup_vs_peer": speedup}, indent=2))


if __name__ == "__main__":
    main()
