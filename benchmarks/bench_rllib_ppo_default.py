"""Default PPO on CartPole-v1, ours against RLlib 2.60 on identical hyperparameters.

    python benchmarks/bench_rllib_ppo_default.py [--steps 100000] [--rounds 1]
        [--peer /work/peer/ray260/bin/python] [--only ours|peer]

The hyperparameters are the documented PPO defaults, which both share: one sampling
worker with one env, 200-step fragments, 4000-step train batches, 30 epochs of 128-row
minibatches, lr 5e-5, gamma 0.99, lambda 1.0, KL coefficient 0.2 (target 0.01), clip 0.3,
value clip 10, value coefficient 1, no entropy bonus, separate 256x256 tanh policy and
value networks. Ours is ``PPOTrainer(env="CartPole-v1", config={"num_workers": 1})``;
RLlib 2.60 gets the same numbers through ``PPOConfig`` (its default new API stack).
Runs alternate (ours, peer, ours, peer, ...) so both see the same machine load; each
prints one JSON line: steps, wall-clock, env steps/s, mean sample/learn time per
iteration, the first step count with a training return >= 450, the final return.
"""

from __future__ import annotations

import argparse
import json
import os
import time

from alternate import alternate  # same directory

PEER = "/work/peer/ray260/bin/python"

SHARED = dict(train_batch_size=4000, lr=5e-5, gamma=0.99, lambda_=1.0, kl_coeff=0.2,
              kl_target=0.01, clip_param=0.3, vf_clip_param=10.0, vf_loss_coeff=1.0,
              entropy_coeff=0.0, minibatch_size=128, num_epochs=30)


def run_ours(steps: int, seed: int) -> dict:
    import ray
    from ray.rllib.agents.ppo import PPOTrainer

    ray.init(num_cpus=2)
    start = time.perf_counter()
    trainer = PPOTrainer(env="CartPole-v1", config={"num_workers": 1, "seed": seed})
    return _loop(trainer.train, steps, start, "ours", trainer.stop, ray.shutdown)


def run_peer(steps: int, seed: int) -> dict:
    import ray
    from ray.rllib.algorithms.ppo import PPOConfig

    ray.init(num_cpus=2, include_dashboard=False)
    start = time.perf_counter()
    config = (PPOConfig().environment("CartPole-v1")
              .env_runners(num_env_runners=1, num_envs_per_env_runner=1,
                           rollout_fragment_length=200)
              .training(**SHARED)
              .rl_module(model_config={"fcnet_hiddens": [256, 256],
                                       "fcnet_activation": "tanh", "vf_share_layers": False})
              .debugging(seed=seed))
    algo = config.build_algo()
    return _loop(algo.train, steps, start, "rllib-2.60", algo.stop, ray.shutdown)


def _loop(train, steps, start, who, stop, shutdown) -> dict:
    reached, result, samples, learns, ret = None, {}, [], [], float("nan")
    total = 0
    while total < steps:
        result = train()
        runners = result.get("env_runners", {})
        total = result.get("timesteps_total") or \
            result.get("num_env_steps_sampled_lifetime") or \
            runners.get("num_env_steps_sampled_lifetime", 0)
        ret = runners.get("episode_return_mean", result.get("episode_reward_mean"))
        timers = result.get("timers", {})
        samples.append(timers.get("sample_time_ms") or timers.get("env_runner_sampling_timer"))
        learns.append(timers.get("learn_time_ms") or timers.get("learner_update_timer"))
        if reached is None and ret is not None and ret >= 450:
            reached = total
    wall = time.perf_counter() - start
    stop()
    shutdown()

    def mean(xs):
        xs = [x for x in xs if isinstance(x, int | float)]
        return round(sum(xs) / len(xs), 1) if xs else None

    return {"who": who, "steps": total, "wall_s": round(wall, 1),
            "env_steps_per_s": round(total / wall, 1), "first_steps_ge_450": reached,
            "final_return": ret, "mean_sample_ms": mean(samples), "mean_learn_ms": mean(learns),
            "load": os.getloadavg()[0]}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--peer", default=PEER)
    parser.add_argument("--only", choices=["ours", "peer"], default=None)
    parser.add_argument("--timeout", type=float, default=3600, help="seconds per run")
    args = parser.parse_args(argv)
    if args.only:
        record = (run_ours if args.only == "ours" else run_peer)(args.steps, args.seed)
        print(json.dumps(record), flush=True)
        return
    alternate(__file__, ["--steps", str(args.steps), "--seed", str(args.seed)], args.peer, args.rounds,
              args.timeout)


if __name__ == "__main__":
    main()
