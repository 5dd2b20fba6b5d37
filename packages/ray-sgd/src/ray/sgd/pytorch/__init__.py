"""Distributed PyTorch training on Ray actors (``ray.experimental.sgd.pytorch`` in Ray 0.7)."""

from ray.sgd.pytorch import utils
from ray.sgd.pytorch.trainer import PyTorchTrainer
from ray.sgd.resources import Resources

__all__ = ["PyTorchTrainer", "Resources", "utils"]
