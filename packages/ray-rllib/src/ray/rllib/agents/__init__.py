from ray.rllib.agents.config import COMMON_CONFIG, with_common_config
from ray.rllib.agents.trainer import Trainer
from ray.rllib.agents.trainer_template import build_trainer

Agent = Trainer  # 0.6 name

__all__ = ["COMMON_CONFIG", "Agent", "Trainer", "build_trainer", "with_common_config"]
