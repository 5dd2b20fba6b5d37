from ray.rllib.models.pytorch.model import TorchModel

__all__ = ["TorchModel"]
