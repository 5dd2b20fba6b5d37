"""The Atari learning check: PPO (or IMPALA) on Pong from pixels improves by >= 5 points.

    nice -n 10 python benchmarks/bench_rllib_pong.py [--run PPO|IMPALA] [--log FILE]
        [--max-steps N] [--max-hours H] [--improvement 5]

Trains the tuned example (``tuned_examples/pong-ppo.yaml`` or ``pong-impala.yaml``:
DeepMind preprocessing, 84x84x4 uint8 frames, clipped rewards) and prints one JSON line
per iteration (wall-clock, env steps, steps/s, the mean score of the last 100 games, the
load average) plus a closing summary. The baseline is the mean score of the first 10
games played (a random-ish policy, about -20.5); the check passes once the 100-game mean
(or, before 100 games, the mean of all games so far, at least 20) is >= baseline + 5.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import yaml

import ray
import ray.rllib  # noqa: F401
from ray.rllib.agents.registry import get_agent_class

TUNED_DIR = os.path.join(os.path.dirname(ray.rllib.__file__), "tuned_examples")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--run", default="PPO", choices=["PPO", "IMPALA"])
    parser.add_argument("--log", default=None, help="also append the JSON lines here")
    parser.add_argument("--max-steps", type=int, default=1_500_000)
    parser.add_argument("--max-hours", type=float, default=3.0)
    parser.add_argument("--improvement", type=float, default=5.0)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    name = "pong-ppo" if args.run == "PPO" else "pong-impala"
    with open(os.path.join(TUNED_DIR, f"{name}.yaml")) as f:
        spec = yaml.safe_load(f)[name]
    log = open(args.log, "a") if args.log else None

    def emit(record):
        line = json.dumps(record)
        print(line, flush=True)
        if log:
            log.write(line + "\n")
            log.flush()

    ray.init(num_cpus=max(2, spec["config"]["num_workers"] + 1))
    start = time.perf_counter()
    trainer = get_agent_class(spec["run"])(env=spec["env"],
                                           config=dict(spec["config"], seed=args.seed))
    games: list[float] = []
    baseline = None
    passed = False
    result = {}
    while True:
        result = trainer.train()
        games.extend(result["hist_stats"]["episode_reward"][-result["episodes_this_iter"]:]
                     if result["episodes_this_iter"] else [])
        if baseline is None and len(games) >= 10:
            baseline = sum(games[:10]) / 10
        recent = games[-100:]
        mean = sum(recent) / len(recent) if recent else None
        elapsed = time.perf_counter() - start
        emit({"iter": result["training_iteration"], "wall_s": round(elapsed, 1),
              "steps": result["timesteps_total"],
              "steps_per_s": round(result["timesteps_total"] / elapsed, 1),
              "games": len(games), "mean_last_100": mean, "baseline": baseline,
              "sample_time_ms": result["info"].get("sample_time_ms"),
              "learn_time_ms": result["info"].get("learn_time_ms"),
              "load": os.getloadavg()[0]})
        if baseline is not None and len(games) >= 20 and mean is not None \
                and mean >= baseline + args.improvement:
            passed = True
            break
        if result["timesteps_total"] >= args.max_steps or elapsed >= args.max_hours * 3600:
            break
    emit({"summary": name, "passed": passed, "baseline": baseline, "final_mean": mean,
          "games": len(games), "steps": result["timesteps_total"],
          "wall_s": round(time.perf_counter() - start, 1)})
    trainer.stop()
    ray.shutdown()
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
