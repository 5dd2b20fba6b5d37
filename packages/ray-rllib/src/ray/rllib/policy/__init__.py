from ray.rllib.policy.policy import Policy
from ray.rllib.policy.sample_batch import DEFAULT_POLICY_ID, MultiAgentBatch, SampleBatch
from ray.rllib.policy.torch_policy import TorchPolicy
from ray.rllib.policy.torch_policy_template import build_torch_policy
from ray.rllib.utils.deprecation import deprecated_aliases

# Deprecated 0.6 names (FEATURES RL-022): they resolve, with a DeprecationWarning.
__getattr__ = deprecated_aliases(__name__, {
    "PolicyGraph": ("ray.rllib.policy.Policy", lambda: Policy),
    "TorchPolicyGraph": ("ray.rllib.policy.TorchPolicy", lambda: TorchPolicy),
})

__all__ = [
    "DEFAULT_POLICY_ID",
    "MultiAgentBatch",
    "Policy",
    "SampleBatch",
    "TorchPolicy",
    "build_torch_policy",
]
