"""``rllib rollout``: run a trained policy from a checkpoint.

    rllib rollout ~/ray_results/default/PPO_CartPole-v0_0/checkpoint_1/checkpoint-1 \\
        --run PPO --env CartPole-v0 --steps 10000 --no-render

The checkpoint carries the training config; ``--config`` overrides it.
Sampling happens in this process (no Ray cluster is started).
"""

from __future__ import annotations

import argparse
import json
import pickle

from ray.rllib.agents.checkpoint import load_checkpoint
from ray.rllib.agents.registry import get_agent_class
from ray.rllib.env.base_env import _DUMMY_AGENT_ID
from ray.rllib.env.gym_compat import ensure_new_api
from ray.rllib.env.multi_agent_env import MultiAgentEnv, normalize_reset, normalize_step


def create_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rllib rollout",
                                     description="Roll out a reinforcement learning agent "
                                                 "given a checkpoint.")
    parser.add_argument("checkpoint", help="checkpoint file to restore")
    parser.add_argument("--run", required=True, help="algorithm that wrote the checkpoint")
    parser.add_argument("--env", default=None, help="env (default: the one it was trained on)")
    parser.add_argument("--steps", default=10000, type=int, help="env steps to roll out")
    parser.add_argument("--episodes", default=0, type=int, help="stop after N episodes")
    parser.add_argument("--out", default=None, help="pickle the rollouts to this file")
    parser.add_argument("--no-render", action="store_true", help="do not render the env")
    parser.add_argument("--config", default="{}", type=json.loads, help="config overrides")
    return parser


def main(argv=None) -> int:
    args = create_parser().parse_args(argv)
    data = load_checkpoint(args.checkpoint)
    config = dict(data["config"])
    config.update(args.config)
    config["num_workers"] = 0
    config["evaluation_interval"] = None
    env = args.env or config.get("env")
    if env is None:
        raise SystemExit("rllib rollout: the checkpoint names no env; pass --env")
    config["env"] = env
    trainer = get_agent_class(args.run)(env=env, config=config)
    try:
        trainer.restore(args.checkpoint)
        rollouts = rollout(trainer, args.steps, args.episodes, not args.no_render)
    finally:
        trainer.stop()
    if args.out:
        with open(args.out, "wb") as f:
            pickle.dump(rollouts, f)
    return 0


def rollout(trainer, num_steps: int, num_episodes: int = 0, render: bool = False) -> list:
    """Run the trainer's policies; returns one ``[obs, action, next_obs, reward, done]`` list
    per episode, and prints each episode's reward."""
    # The local worker's env carries the same wrappers the policy was trained behind
    # (e.g. the DeepMind Atari preprocessing), so its observations fit the policy.
    env = trainer.workers.local_worker().env
    multi_agent = isinstance(env, MultiAgentEnv)
    if not multi_agent:
        env = ensure_new_api(env)
    mapping = trainer.config["multiagent"]["policy_mapping_fn"] or (lambda _a: "default_policy")
    rollouts, steps = [], 0
    while steps < num_steps and (not num_episodes or len(rollouts) < num_episodes):
        obs = normalize_reset(env.reset()) if multi_agent else env.reset()[0]
        episode, done, total = [], False, 0.0
        while not done and steps < num_steps:
            if multi_agent:
                action = {a: trainer.compute_action(o, policy_id=mapping(a))
                          for a, o in obs.items()}
                next_obs, rewards, dones, _ = normalize_step(env.step(action))
                reward, done = sum(rewards.values()), dones["__all__"]
            else:
                action = trainer.compute_action(obs, policy_id=mapping(_DUMMY_AGENT_ID))
                next_obs, reward, term, trunc, _ = env.step(action)
                done = term or trunc
            if render:
                env.render()
            episode.append([obs, action, next_obs, reward, done])
            obs, total, steps = next_obs, total + reward, steps + 1
        rollouts.append(episode)
        print(f"Episode reward {total}")
    return rollouts
