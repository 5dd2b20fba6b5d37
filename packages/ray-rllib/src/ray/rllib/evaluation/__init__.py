from ray.rllib.evaluation.episode import MultiAgentEpisode, RolloutMetrics
from ray.rllib.evaluation.metrics import collect_metrics, summarize_episodes
from ray.rllib.evaluation.postprocessing import Postprocessing, compute_advantages
from ray.rllib.evaluation.rollout_worker import EvaluatorInterface, RolloutWorker
from ray.rllib.evaluation.sample_batch_builder import (
    MultiAgentSampleBatchBuilder,
    SampleBatchBuilder,
)
from ray.rllib.evaluation.sampler import AsyncSampler, SyncSampler
from ray.rllib.evaluation.worker_set import WorkerSet
from ray.rllib.policy.policy import Policy
from ray.rllib.policy.sample_batch import MultiAgentBatch, SampleBatch
from ray.rllib.utils.deprecation import deprecated_aliases

__getattr__ = deprecated_aliases(__name__, {
    "PolicyGraph": ("ray.rllib.policy.Policy", lambda: Policy),
    "PolicyEvaluator": ("ray.rllib.evaluation.RolloutWorker", lambda: RolloutWorker),
})

__all__ = [
    "AsyncSampler",
    "EvaluatorInterface",
    "MultiAgentBatch",
    "MultiAgentEpisode",
    "MultiAgentSampleBatchBuilder",
    "Postprocessing",
    "RolloutMetrics",
    "RolloutWorker",
    "SampleBatch",
    "SampleBatchBuilder",
    "SyncSampler",
    "WorkerSet",
    "collect_metrics",
    "compute_advantages",
    "summarize_episodes",
]
