from ray.rllib.models.action_dist import (
    ActionDistribution,
    Categorical,
    Deterministic,
    DiagGaussian,
    Dirichlet,
    MultiCategorical,
)
from ray.rllib.models.catalog import MODEL_DEFAULTS, ModelCatalog
from ray.rllib.models.preprocessors import Preprocessor
from ray.rllib.models.pytorch.model import TorchModel
from ray.rllib.models.torch_models import FullyConnectedNetwork, LSTMWrapper, VisionNetwork

Model = TorchModel
LSTM = LSTMWrapper

__all__ = [
    "LSTM",
    "MODEL_DEFAULTS",
    "ActionDistribution",
    "Categorical",
    "Deterministic",
    "DiagGaussian",
    "Dirichlet",
    "FullyConnectedNetwork",
    "LSTMWrapper",
    "Model",
    "ModelCatalog",
    "MultiCategorical",
    "Preprocessor",
    "TorchModel",
    "VisionNetwork",
]
