"""Reading experiment results back (pandas)."""

from ray.tune.analysis.experiment_analysis import Analysis, ExperimentAnalysis

__all__ = ["Analysis", "ExperimentAnalysis"]
