"""Ray 0.7's import path for ``PyTorchTrainer``; the code lives in ``ray.sgd.pytorch``."""

from ray.sgd.pytorch import PyTorchTrainer, Resources, utils

__all__ = ["PyTorchTrainer", "Resources", "utils"]
