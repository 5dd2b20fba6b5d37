"""Logger callbacks for experiment trackers: `mlflow.MLflowLoggerCallback`, `wandb.WandbLoggerCallback`."""
