"""``rllib train``: run an algorithm on an env under Tune.

    rllib train --run PPO --env CartPole-v0 --stop '{"timesteps_total": 10000}' \\
        --config '{"num_workers": 1}' --checkpoint-freq 1
    rllib train -f tuned_examples/cartpole-ppo.yaml
"""

from __future__ import annotations

import argparse
import json
import os

import yaml

EXAMPLE_USAGE = """
Training example via RLlib CLI:
    rllib train --run DQN --env CartPole-v0

Grid search example via RLlib CLI:
    rllib train -f tuned_examples/cartpole-grid-search-example.yaml
"""


def create_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rllib train", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Train a reinforcement learning agent.", epilog=EXAMPLE_USAGE,
    )
    parser.add_argument("--run", default=None, help="algorithm: PPO, PG, A2C or A3C")
    parser.add_argument("--env", default=None, help="gym env id or registered env name")
    parser.add_argument("--config", default="{}", type=json.loads, help="JSON algorithm config")
    parser.add_argument("--stop", default="{}", type=json.loads, help="JSON stop criteria")
    parser.add_argument("-f", "--config-file", default=None, help="YAML experiment file")
    parser.add_argument("--experiment-name", default="default")
    parser.add_argument("--local-dir", default=os.path.expanduser("~/ray_results"))
    parser.add_argument("--checkpoint-freq", default=0, type=int)
    parser.add_argument("--checkpoint-at-end", action="store_true")
    parser.add_argument("--num-samples", default=1, type=int)
    parser.add_argument("--restore", default=None, help="checkpoint to start from")
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--ray-address", "--redis-address", dest="ray_address", default=None)
    parser.add_argument("--ray-num-cpus", default=None, type=int)
    parser.add_argument("--ray-num-gpus", default=None, type=int)
    parser.add_argument("--ray-object-store-memory", default=None, type=int)
    parser.add_argument("--queue-trials", action="store_true")
    parser.add_argument("-v", action="store_true", help="verbose")
    return parser


def experiments_from_args(args) -> dict:
    if args.config_file:
        with open(args.config_file) as f:
            return yaml.safe_load(f)
    if not args.run or not args.env:
        raise SystemExit("rllib train: give --run and --env (or -f FILE.yaml)")
    return {
        args.experiment_name: {
            "run": args.run,
            "env": args.env,
            "config": args.config,
            "stop": args.stop,
            "checkpoint_freq": args.checkpoint_freq,
            "checkpoint_at_end": args.checkpoint_at_end,
            "local_dir": args.local_dir,
            "num_samples": args.num_samples,
            "restore": args.restore,
        }
    }


def main(argv=None) -> int:
    args = create_parser().parse_args(argv)
    experiments = experiments_from_args(args)
    for spec in experiments.values():
        # Tune hands trainables only their config: the env travels inside it.
        spec.setdefault("config", {})
        if spec.get("env") is not None:
            spec["config"]["env"] = spec.pop("env")
        if not spec.get("restore"):
            spec.pop("restore", None)
    import ray.rllib  # noqa: F401  (registers the algorithms with Tune)
    from ray import tune

    ray.init(address=args.ray_address, num_cpus=args.ray_num_cpus, num_gpus=args.ray_num_gpus,
             object_store_memory=args.ray_object_store_memory)
    try:
        tune.run_experiments(experiments, resume=args.resume, verbose=2 if args.v else 1)
    finally:
        ray.shutdown()
    return 0
