from ray.rllib.models.torch_models import FullyConnectedNetwork

__all__ = ["FullyConnectedNetwork"]
