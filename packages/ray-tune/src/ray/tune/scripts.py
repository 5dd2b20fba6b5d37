"""The `tune` command line (`tune list-trials`, `tune list-experiments`)."""

from __future__ import annotations

import click

from ray.tune import commands
from ray.tune.error import TuneError


def _split(value: str | None):
    return [v.strip() for v in value.split(",") if v.strip()] if value else None


@click.group()
def cli():
    """Inspect Tune experiments on disk."""


def _run(fn, *args, **kwargs):
    try:
        click.echo(fn(*args, **kwargs))
    except TuneError as exc:
        raise click.ClickException(str(exc)) from None


@cli.command("list-trials")
@click.argument("experiment_path", type=str)
@click.option("--sort", default=None, help="Column(s) to sort by, comma separated.")
@click.option("--output", "-o", default=None, help="Write the table to a .csv or .pkl file.")
@click.option("--filter", "filter_op", default=None, help='"<column> <operator> <value>"')
@click.option("--columns", default=None, help="Trial info columns, comma separated.")
@click.option("--result-columns", default=None, help="Result columns, comma separated.")
def list_trials(experiment_path, sort, output, filter_op, columns, result_columns):
    """Lists the trials of the experiment in EXPERIMENT_PATH."""
    _run(
        commands.list_trials, experiment_path, sort=sort, output=output, filter_op=filter_op,
        info_keys=_split(columns), result_keys=_split(result_columns),
    )


@cli.command("list-experiments")
@click.argument("project_path", type=str)
@click.option("--sort", default=None, help="Column(s) to sort by, comma separated.")
@click.option("--output", "-o", default=None, help="Write the table to a .csv or .pkl file.")
@click.option("--filter", "filter_op", default=None, help='"<column> <operator> <value>"')
@click.option("--columns", default=None, help="Columns, comma separated.")
def list_experiments(project_path, sort, output, filter_op, columns):
    """Lists the experiments in PROJECT_PATH."""
    _run(
        commands.list_experiments, project_path, sort=sort, output=output, filter_op=filter_op,
        info_keys=_split(columns),
    )


# Short aliases (later Ray versions' spelling).
cli.add_command(list_trials, name="ls")
cli.add_command(list_experiments, name="lsx")


def main():
    cli()


if __name__ == "__main__":
    main()
