"""Merging the replicas' per-call statistics into what the trainer returns."""

from __future__ import annotations

from ray.sgd.pytorch.runner import StepStats

__all__ = ["merge_train_stats", "merge_validation_stats"]


def merge_train_stats(stats: list[StepStats]) -> dict:
    """One ``train()`` result: the loss is the sample-weighted mean over replicas,
    which is the loss one replica would report on the same global batches."""
    samples = sum(s.num_samples for s in stats)
    return {
        "epoch": stats[0].epoch,
        "batch_count": stats[0].num_steps,
        "num_samples": samples,
        "train_loss": sum(s.loss_sum for s in stats) / samples if samples else float("nan"),
        "time_s": max(s.elapsed_s for s in stats),
        "num_replicas": len(stats),
    }


def merge_validation_stats(stats: list[StepStats]) -> dict:
    """One ``validate()`` result; its keys do not collide with ``train()``'s."""
    samples = sum(s.num_samples for s in stats)
    result = {
        "validation_loss": sum(s.loss_sum for s in stats) / samples if samples else float("nan"),
        "num_validation_samples": samples,
        "validation_time_s": max(s.elapsed_s for s in stats),
    }
    if any(s.has_accuracy for s in stats) and samples:
        result["validation_accuracy"] = sum(s.correct for s in stats) / samples
    return result
