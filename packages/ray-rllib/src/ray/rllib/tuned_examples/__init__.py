"""Tuned hyperparameter files: ``rllib train -f <this dir>/cartpole-ppo.yaml``."""
