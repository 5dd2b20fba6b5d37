"""Evolution Strategies / ARS on CartPole-v1: mean return >= 150 (issue 10 bar).

The reported ``episode_reward_mean`` of ES/ARS averages unperturbed evaluation
episodes (or the perturbed ones when an iteration had none); the deterministic
evaluation after training is the stricter number.

    python benchmarks/bench_rllib_es.py [--run ES|ARS] [--seed 0]
"""

import argparse

from rllib_bars import emit, train_bar

CONFIGS = {
    "ES": {"num_workers": 2, "episodes_per_batch": 50, "train_batch_size": 2000,
           "stepsize": 0.02, "noise_size": 2_000_000, "model": {"fcnet_hiddens": [32, 32]}},
    "ARS": {"num_workers": 2, "num_rollouts": 16, "rollouts_used": 8,
            "noise_size": 2_000_000},
}


def main(run="ES", seed=0, max_steps=1_000_000):
    return train_bar(f"rllib_{run.lower()}_cartpole_v1", run, "CartPole-v1",
                     dict(CONFIGS[run], seed=seed), max_steps, 150)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", default="ES", choices=["ES", "ARS"])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    emit(main(args.run, args.seed))
