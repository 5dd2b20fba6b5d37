"""``python -m ray.autoscaler up|down|exec|...``: the cluster commands without ray-core's CLI."""

from ray.autoscaler.commands import cli

if __name__ == "__main__":
    cli()(prog_name="python -m ray.autoscaler")
