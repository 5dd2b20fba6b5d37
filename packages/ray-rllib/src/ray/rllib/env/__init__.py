from ray.rllib.env.base_env import BaseEnv
from ray.rllib.env.env_context import EnvContext
from ray.rllib.env.external_env import ExternalEnv, ServingEnv
from ray.rllib.env.multi_agent_env import MultiAgentEnv
from ray.rllib.env.vector_env import VectorEnv

__all__ = ["BaseEnv", "EnvContext", "ExternalEnv", "MultiAgentEnv", "ServingEnv", "VectorEnv"]
