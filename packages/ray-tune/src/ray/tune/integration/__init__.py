"""Experiment-tracker logger callbacks (`mlflow.MLflowLoggerCallback`,
`wandb.WandbLoggerCallback`); also importable from `ray.air.integrations` (Ray 2.x)."""
