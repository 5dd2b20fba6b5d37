"""QMIX (or VDN, or PG on ungrouped agents) on the two-step game of the QMIX paper.

    python examples/rllib/twostep_game.py --run QMIX   # learns the optimum, 8
    python examples/rllib/twostep_game.py --run VDN

The two agents are grouped into one logical agent with Tuple spaces
(``ray.rllib.env.twostep_game.TwoStepGame.grouped``), which is what QMIX
trains; RLlib registers that env as ``"grouped_twostep"``.
"""

import argparse

from ray import tune


def main(run="QMIX", stop_timesteps=10000, config=None, local_dir=None):
    config = dict({
        "env": "grouped_twostep", "num_workers": 0, "learning_starts": 500,
        "schedule_max_timesteps": 20000, "target_network_update_freq": 200,
        "min_iter_time_s": 0,
    }, **(config or {}))
    return tune.run(run, stop={"timesteps_total": stop_timesteps}, config=config,
                    local_dir=local_dir, verbose=0)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", default="QMIX", choices=["QMIX", "VDN"])
    parser.add_argument("--stop-timesteps", type=int, default=10000)
    args = parser.parse_args()
    analysis = main(args.run, args.stop_timesteps)
    trials = getattr(analysis, "trials", analysis)
    print("episode_reward_mean:", trials[0].last_result["episode_reward_mean"])
