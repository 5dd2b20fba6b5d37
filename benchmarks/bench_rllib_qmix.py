"""QMIX (and VDN) on the two-step game: the greedy joint policy earns the optimum, 8.

    python benchmarks/bench_rllib_qmix.py [--run QMIX|VDN] [--seeds 0 1 2]
"""

import argparse

from rllib_bars import emit, train_bar

from ray.rllib.env.twostep_game import TwoStepGame


def greedy_return(trainer) -> float:
    env = TwoStepGame.grouped()
    obs, total, done = env.reset(), 0.0, False
    while not done:
        obs, rewards, dones, _ = env.step(
            {"group_1": trainer.compute_action(obs["group_1"], explore=False)})
        total += rewards["group_1"]
        done = dones["__all__"]
    return total


def main(run="QMIX", seed=0, max_steps=20_000):
    config = {"learning_starts": 500, "schedule_max_timesteps": 20_000,
              "target_network_update_freq": 200, "timesteps_per_iteration": 1000,
              "min_iter_time_s": 0, "seed": seed}
    # Target 7.9: the mean training return with 2% exploration once the optimum is found.
    record = train_bar(f"rllib_{run.lower()}_twostep", run, "grouped_twostep", config,
                       max_steps, 7.9, evaluate=greedy_return, needs_ray=False)
    record["passed"] = record["eval_return_deterministic"] == 8.0
    return record


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", default="QMIX", choices=["QMIX", "VDN"])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    args = parser.parse_args()
    for seed in args.seeds:
        emit(main(args.run, seed))
