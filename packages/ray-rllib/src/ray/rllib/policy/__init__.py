from ray.rllib.policy.policy import Policy
from ray.rllib.policy.sample_batch import DEFAULT_POLICY_ID, MultiAgentBatch, SampleBatch
from ray.rllib.policy.torch_policy import TorchPolicy
from ray.rllib.policy.torch_policy_template import build_torch_policy

# Deprecated 0.6 names, kept as aliases (FEATURES RL-022).
PolicyGraph = Policy
TorchPolicyGraph = TorchPolicy

__all__ = [
    "DEFAULT_POLICY_ID",
    "MultiAgentBatch",
    "Policy",
    "PolicyGraph",
    "SampleBatch",
    "TorchPolicy",
    "TorchPolicyGraph",
    "build_torch_policy",
]
