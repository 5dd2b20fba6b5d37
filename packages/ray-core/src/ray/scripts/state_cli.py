"""``ray list``, ``ray get``, ``ray summary`` and ``ray logs`` (Ray's state CLI).

``--address``: ``auto`` (default: the cluster on this machine, or ``$RAY_ADDRESS``), the
GCS address (``host:port``) or the dashboard URL (``http://host:8265``).
"""

from __future__ import annotations

import datetime
import json
import sys

import click

from ray.scripts.table import render
from ray.util.state import api
from ray.util.state.common import (
    DEFAULT_LIMIT,
    DEFAULT_RPC_TIMEOUT,
    RESOURCES,
    StateResource,
    SummaryResource,
    resource_from_name,
)
from ray.util.state.exception import RayStateApiException

_RESOURCE_NAMES = [r.value.replace("_", "-") for r in StateResource]
_FORMATS = ("default", "json", "yaml", "table")

address_option = click.option(
    "--address", default=None,
    help="auto (the cluster on this machine), the GCS host:port, or http://<dashboard>.")
timeout_option = click.option("--timeout", type=float, default=DEFAULT_RPC_TIMEOUT,
                              show_default=True, help="Seconds to wait for the answer.")


def parse_filter(text: str) -> tuple[str, str, str]:
    """``key=value`` or ``key!=value`` -> (key, predicate, value)."""
    for predicate in ("!=", "="):
        if predicate in text:
            key, value = text.split(predicate, 1)
            if key and value:
                return key.strip(), predicate, value.strip()
    raise click.BadParameter(f"{text!r}: a filter is key=value or key!=value, e.g. "
                             "--filter state=FINISHED")


def _dump(rows: list[dict], fmt: str) -> str:
    if fmt == "json":
        return json.dumps(rows, indent=2, default=str)
    try:
        import yaml
    except ImportError:
        raise click.UsageError("--format yaml needs PyYAML (pip install pyyaml); "
                               "use --format json") from None
    return yaml.safe_dump(rows, sort_keys=False, default_flow_style=False)


def _table(rows: list[dict], columns: list[str], title: str, total_line: str) -> str:
    stamp = datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S")
    table = render([c.upper() for c in columns], [[r.get(c) for c in columns] for r in rows],
                   index=True)
    return (f"======== {title}: {stamp} ========\nStats:\n------------------------------\n"
            f"{total_line}\n\nTable:\n------------------------------\n{table}\n")


def _state_call(fn, *args, **kwargs):
    try:
        return fn(*args, **kwargs)
    except (RayStateApiException, ValueError, ConnectionError) as exc:
        raise click.ClickException(str(exc)) from None


@click.command("list")
@click.argument("resource", type=click.Choice(_RESOURCE_NAMES, case_sensitive=False))
@click.option("--format", "fmt", type=click.Choice(_FORMATS), default="default")
@click.option("-f", "--filter", "filters", multiple=True,
              help="key=value or key!=value (repeatable), e.g. --filter state=FINISHED")
@click.option("--limit", type=int, default=DEFAULT_LIMIT, show_default=True)
@click.option("--detail", is_flag=True, help="Every column (and a yaml-like layout).")
@timeout_option
@address_option
def ray_list(resource, fmt, filters, limit, detail, timeout, address):
    """List actors, tasks, nodes, jobs, workers, objects or placement groups."""
    res = resource_from_name(resource)
    parsed = [parse_filter(f) for f in filters]
    schema = RESOURCES[res].schema
    columns = schema.list_columns(detail=detail)
    lower = {c.lower(): c for c in schema.list_columns(detail=True)}
    parsed = [(lower.get(k.lower(), k), p, v) for k, p, v in parsed]
    rows = _state_call(api.list_resource, res, address=address, filters=parsed, limit=limit,
                       timeout=timeout, detail=detail, raise_on_missing_output=False,
                       explain=False)
    data = [row.asdict() for row in rows]
    if fmt in ("json", "yaml") or (detail and fmt == "default"):
        click.echo(_dump(data, "json" if fmt in ("json", "default") else fmt))
        return
    if not data:
        click.echo(f"No {res.value.replace('_', ' ')} in the cluster"
                   + (" matching the filters." if parsed else "."))
        return
    click.echo(_table(data, columns, "List", f"Total: {len(data)}"))


@click.command("get")
@click.argument("resource", type=click.Choice(_RESOURCE_NAMES, case_sensitive=False))
@click.argument("id")
@timeout_option
@address_option
def ray_get(resource, id, timeout, address):
    """Show one actor, task, node, job, worker, placement group, or an object's references."""
    res = resource_from_name(resource)
    result = _state_call(api.get_resource, res, id, address=address, timeout=timeout,
                         explain=False)
    if not result:
        raise click.ClickException(f"No {RESOURCES[res].noun} with id {id}")
    rows = result if isinstance(result, list) else [result]
    click.echo(json.dumps([r.asdict() for r in rows] if isinstance(result, list)
                          else rows[0].asdict(), indent=2, default=str))


@click.group("summary")
def summary_group():
    """Summarize tasks, actors or objects of the cluster."""


def _summary_text(resource: str, summary: dict, key_name: str) -> str:
    cluster = dict(summary.get("cluster") or {})
    if not cluster or not cluster.get("summary"):
        return f"No {resource} in the cluster."
    entries = cluster.pop("summary")
    by = cluster.pop("summary_by")
    stamp = datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S")
    stats = "\n".join(f"{k}: {v}" for k, v in sorted(cluster.items()))
    rows = []
    headers = None
    for entry in entries.values():
        keys_ = sorted(entry)
        headers = headers or [k.upper() for k in keys_]
        rows.append([", ".join(f"{s}: {n}" for s, n in sorted(v.items()))
                     if isinstance(v, dict) else v for v in (entry[k] for k in keys_)])
    table = render(headers or [key_name.upper()], rows, index=True)
    return (f"======== {resource.capitalize()} Summary: {stamp} ========\nStats:\n"
            f"------------------------------------\n{stats}\n\n\nTable (group by {by}):\n"
            f"------------------------------------\n{table}\n")


# resource -> (its command's help, the column its summary is grouped by)
_SUMMARIES = {
    SummaryResource.TASKS: ("Task counts by function and state.", "func_or_class_name"),
    SummaryResource.ACTORS: ("Actor counts by class and state.", "class_name"),
    SummaryResource.OBJECTS: ("Object references: counts, sizes, reference types.", "callsite"),
}


def _summary_command(resource: SummaryResource, help_text: str, key_name: str):
    @summary_group.command(resource.value, help=help_text)
    @timeout_option
    @address_option
    def summary(timeout, address):
        result = _state_call(api.summarize_resource, resource, address=address, timeout=timeout,
                             raise_on_missing_output=False, explain=False)
        click.echo(_summary_text(resource.value, result, key_name))

    return summary


for _resource, (_help, _key_name) in _SUMMARIES.items():
    _summary_command(_resource, _help, _key_name)


# -- ray logs ---------------------------------------------------------------------------------
def _print_log(address, follow, tail, interval, **query):
    try:
        for chunk in api.get_log(address=address, follow=follow, tail=tail, _interval=interval,
                                 errors="replace", **query):
            sys.stdout.write(chunk)
            sys.stdout.flush()
    except KeyboardInterrupt:
        pass
    except (RayStateApiException, ValueError, LookupError) as exc:
        raise click.ClickException(str(exc)) from None


def _log_options(fn):
    for option in reversed([
        click.option("-f", "--follow", is_flag=True, help="Keep printing what is appended."),
        click.option("--tail", type=int, default=1000, show_default=True,
                     help="Lines from the end to print first (-1: all)."),
        click.option("--interval", type=float, default=0.5, help="Follow poll period (s)."),
        address_option,
    ]):
        fn = option(fn)
    return fn


class _LogsGroup(click.Group):
    """``ray logs PATTERN`` is ``ray logs cluster PATTERN`` (as in Ray)."""

    def parse_args(self, ctx, args):
        if not args or (args[0] not in self.commands and args[0] not in ("-h", "--help")):
            args = ["cluster", *args]
        return super().parse_args(ctx, args)


@click.group("logs", cls=_LogsGroup)
def logs_group():
    """Print or follow log files: of a node (by file name), an actor, a task, a worker
    pid or a submitted job."""


@logs_group.command("cluster")
@click.argument("glob_filter", required=False, default="*")
@click.option("--node-id", default=None)
@click.option("--node-ip", default=None)
@_log_options
def logs_cluster(glob_filter, node_id, node_ip, follow, tail, interval, address):
    """List a node's log files, or print the one file GLOB_FILTER names."""
    groups = _state_call(api.list_logs, address=address, node_id=node_id, node_ip=node_ip,
                         glob_filter=glob_filter)
    names = [n for files in groups.values() for n in files]
    if len(names) == 1 and glob_filter != "*":
        _print_log(address, follow, tail, interval, node_id=node_id, node_ip=node_ip,
                   filename=names[0])
        return
    if not names:
        raise click.ClickException(f"No log file matches {glob_filter!r} on that node.")
    for group, files in sorted(groups.items()):
        click.echo(f"{group}:")
        for name in files:
            click.echo(f"  {name}")


@logs_group.command("actor")
@click.option("--id", "actor_id", required=True, help="The actor's id (hex).")
@click.option("--err", is_flag=True, help="Its stderr instead of stdout.")
@_log_options
def logs_actor(actor_id, err, follow, tail, interval, address):
    """The output of an actor's worker."""
    _print_log(address, follow, tail, interval, actor_id=actor_id, suffix="err" if err else "out")


@logs_group.command("task")
@click.option("--id", "task_id", required=True, help="The task's id (hex).")
@click.option("--err", is_flag=True, help="Its stderr instead of stdout.")
@_log_options
def logs_task(task_id, err, follow, tail, interval, address):
    """The output of the worker that ran a task."""
    _print_log(address, follow, tail, interval, task_id=task_id, suffix="err" if err else "out")


@logs_group.command("worker")
@click.option("--pid", type=int, required=True)
@click.option("--node-id", default=None)
@click.option("--node-ip", default=None)
@click.option("--err", is_flag=True, help="Its stderr instead of stdout.")
@_log_options
def logs_worker(pid, node_id, node_ip, err, follow, tail, interval, address):
    """The output of a worker process (by pid, on the head unless a node is named)."""
    _print_log(address, follow, tail, interval, pid=pid, node_id=node_id, node_ip=node_ip,
               suffix="err" if err else "out")


@logs_group.command("job")
@click.option("--id", "submission_id", required=True, help="The submission id.")
@_log_options
def logs_job(submission_id, follow, tail, interval, address):
    """The output of a submitted job's entrypoint."""
    _print_log(address, follow, tail, interval, submission_id=submission_id)


COMMANDS = {"list": ray_list, "get": ray_get, "summary": summary_group, "logs": logs_group}

__all__ = ["COMMANDS", "parse_filter"]
