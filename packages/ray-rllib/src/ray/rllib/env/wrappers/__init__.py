from ray.rllib.env.wrappers.pettingzoo_env import ParallelPettingZooEnv, PettingZooEnv

__all__ = ["ParallelPettingZooEnv", "PettingZooEnv"]
