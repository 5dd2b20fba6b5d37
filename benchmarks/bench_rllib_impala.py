"""IMPALA on CartPole-v1: mean return >= 150 within 500k env steps (issue 10 bar).

Two remote workers (5 envs each) sample asynchronously; the learner thread
trains in the driver (the tuned example ``cartpole-impala.yaml``).

    python benchmarks/bench_rllib_impala.py [--run IMPALA|APPO] [--seed 0]
"""

import argparse

from rllib_bars import emit, train_bar


def main(run="IMPALA", seed=0, max_steps=500_000):
    config = {"num_workers": 2, "num_envs_per_worker": 5, "sample_batch_size": 50,
              "train_batch_size": 500, "min_iter_time_s": 5, "seed": seed}
    return train_bar(f"rllib_{run.lower()}_cartpole_v1", run, "CartPole-v1", config,
                     max_steps, 150)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", default="IMPALA", choices=["IMPALA", "APPO"])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    emit(main(args.run, args.seed))
