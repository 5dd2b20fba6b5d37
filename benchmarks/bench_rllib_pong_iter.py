"""PPO on Pong from pixels: time per training iteration, ours against RLlib 2.60.

    python benchmarks/bench_rllib_pong_iter.py [--iters 8] [--rounds 1]
        [--peer /work/peer/ray260/bin/python] [--only ours|peer]

Both run the settings of ``tuned_examples/pong-ppo.yaml``: ``PongNoFrameskip-v4`` with the
DeepMind preprocessing at 42x42 (4-frame skip with max-pooling, no-op resets, episodic
lives, FIRE on reset, grayscale, 4 frames stacked), rewards clipped to their sign; 2
sampling workers x 4 envs, 128-step fragments, 1024-step train batches, 4 epochs of
256-row minibatches, lr 2.5e-4, gamma 0.99, lambda 0.95, clip 0.1, no KL penalty, value
clip 10 and coefficient 0.5, entropy 0.01, gradient clip 0.5, the conv stack
``[[16, 4, 2], [32, 4, 2], [256, 11, 1]]`` shared by the policy and value heads. RLlib
2.60 gets them through ``PPOConfig`` and its own ``wrap_atari_for_new_api_stack``
(ale-py and OpenCV in its venv). Runs alternate (ours, peer, ...) so both see the same
load; after one warm-up iteration each prints one JSON line: median wall-clock per
iteration, env steps/s over the timed iterations, and the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

from alternate import alternate  # same directory

PEER = "/work/peer/ray260/bin/python"
CONV = [[16, [4, 4], 2], [32, [4, 4], 2], [256, [11, 11], 1]]


def run_ours(iters: int) -> dict:
    import yaml

    import ray
    import ray.rllib
    from ray.rllib.agents.ppo import PPOTrainer

    path = os.path.join(os.path.dirname(ray.rllib.__file__), "tuned_examples",
                        "pong-ppo.yaml")
    with open(path) as f:
        spec = yaml.safe_load(f)["pong-ppo"]
    ray.init(num_cpus=3, include_dashboard=False)
    trainer = PPOTrainer(env=spec["env"], config=dict(spec["config"], seed=0))
    return _time(trainer.train, iters, "ours", trainer.stop, ray.shutdown)


def run_peer(iters: int) -> dict:
    import ale_py
    import gymnasium as gym

    import ray
    from ray import tune
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.connectors.env_to_module.frame_stacking import FrameStackingEnvToModule
    from ray.rllib.connectors.learner.frame_stacking import FrameStackingLearner
    from ray.rllib.env.wrappers.atari_wrappers import wrap_atari_for_new_api_stack

    def make(_cfg):
        gym.register_envs(ale_py)  # in each env runner's process
        return wrap_atari_for_new_api_stack(gym.make("PongNoFrameskip-v4"), dim=42,
                                            framestack=None)

    tune.register_env("pong42", make)
    ray.init(num_cpus=3, include_dashboard=False)
    config = (
        PPOConfig().environment("pong42", clip_rewards=True)
        .env_runners(num_env_runners=2, num_envs_per_env_runner=4,
                     rollout_fragment_length=128,
                     env_to_module_connector=lambda env, *a: FrameStackingEnvToModule(
                         num_frames=4))
        .training(train_batch_size=1024, minibatch_size=256, num_epochs=4, lr=2.5e-4,
                  gamma=0.99, lambda_=0.95, clip_param=0.1, use_kl_loss=False,
                  vf_clip_param=10.0, vf_loss_coeff=0.5, entropy_coeff=0.01,
                  grad_clip=0.5, grad_clip_by="global_norm",
                  learner_connector=lambda *a: FrameStackingLearner(num_frames=4))
        .rl_module(model_config={"conv_filters": CONV, "conv_activation": "relu",
                                 "head_fcnet_hiddens": [], "vf_share_layers": True})
        .debugging(seed=0))
    algo = config.build_algo()
    return _time(algo.train, iters, "rllib-2.60", algo.stop, ray.shutdown)


def _steps(result: dict) -> float:
    runners = result.get("env_runners", {})
    return (result.get("timesteps_total") or result.get("num_env_steps_sampled_lifetime")
            or runners.get("num_env_steps_sampled_lifetime", 0))


def _time(train, iters, who, stop, shutdown) -> dict:
    train()  # warm-up: workers start, first weights broadcast
    times, start_steps = [], None
    result: dict = {}
    begin = time.perf_counter()
    for _ in range(iters):
        t0 = time.perf_counter()
        result = train()
        times.append(time.perf_counter() - t0)
        if start_steps is None:
            start_steps = _steps(result) - 1024
    wall = time.perf_counter() - begin
    steps = _steps(result) - (start_steps or 0)
    stop()
    shutdown()
    return {"who": who, "iters": iters, "median_iter_s": round(statistics.median(times), 2),
            "env_steps_per_s": round(steps / wall, 1), "steps_timed": steps,
            "load": os.getloadavg()[0]}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iters", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--peer", default=PEER)
    parser.add_argument("--only", choices=["ours", "peer"], default=None)
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per run")
    args = parser.parse_args(argv)
    if args.only:
        record = (run_ours if args.only == "ours" else run_peer)(args.iters)
        print(json.dumps(record), flush=True)
        return
    alternate(__file__, ["--iters", str(args.iters)], args.peer, args.rounds,
              args.timeout)


if __name__ == "__main__":
    main()
