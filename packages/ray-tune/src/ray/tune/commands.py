"""`tune list-trials` and `tune list-experiments`: tables of what is on disk."""

from __future__ import annotations

import operator
import os
import shutil
from datetime import datetime

from ray.tune import experiment_state as ES
from ray.tune import result as R
from ray.tune.error import TuneError
from ray.tune.logger import flatten_dict

DEFAULT_EXPERIMENT_INFO_KEYS = ("trainable_name", "experiment_tag", "trial_id", "status", "last_update_time")
DEFAULT_RESULT_KEYS = R.DEFAULT_RESULT_KEYS
DEFAULT_PROJECT_INFO_KEYS = (
    "name", "total_trials", "running_trials", "terminated_trials", "error_trials", "last_updated",
)
OPERATORS = {
    "<=": operator.le, ">=": operator.ge, "==": operator.eq, "!=": operator.ne,
    "<": operator.lt, ">": operator.gt,
}


def trials_frame(experiment_path: str, info_keys=None, result_keys=None):
    import pandas as pd

    experiment_path = os.path.abspath(os.path.expanduser(experiment_path))
    if ES.find_state_file(experiment_path) is None:
        raise TuneError(f"no experiment state file in {experiment_path}")
    records = ES.load_state(experiment_path)["checkpoints"]
    info_keys = list(info_keys or DEFAULT_EXPERIMENT_INFO_KEYS)
    result_keys = list(result_keys or DEFAULT_RESULT_KEYS)
    rows = []
    for record in records:
        row = {k: record.get(k) for k in info_keys}
        if "last_update_time" in row and row["last_update_time"]:
            row["last_update_time"] = datetime.fromtimestamp(row["last_update_time"]).isoformat(
                sep=" ", timespec="seconds"
            )
        last = flatten_dict(record.get("last_result") or {})
        row.update({k: last.get(k) for k in result_keys})
        rows.append(row)
    return pd.DataFrame(rows, columns=info_keys + result_keys)


def experiments_frame(project_path: str, info_keys=None):
    import pandas as pd

    project_path = os.path.abspath(os.path.expanduser(project_path))
    if not os.path.isdir(project_path):
        raise TuneError(f"{project_path} is not a directory")
    info_keys = list(info_keys or DEFAULT_PROJECT_INFO_KEYS)
    rows = []
    for name in sorted(os.listdir(project_path)):
        path = os.path.join(project_path, name)
        state_file = ES.find_state_file(path) if os.path.isdir(path) else None
        if state_file is None:
            continue
        statuses = [t["status"] for t in ES.load_state(path)["checkpoints"]]
        row = {
            "name": name,
            "total_trials": len(statuses),
            "running_trials": statuses.count("RUNNING"),
            "terminated_trials": statuses.count("TERMINATED"),
            "error_trials": statuses.count("ERROR"),
            "last_updated": datetime.fromtimestamp(os.path.getmtime(state_file)).isoformat(
                sep=" ", timespec="seconds"
            ),
        }
        rows.append({k: row.get(k) for k in info_keys})
    return pd.DataFrame(rows, columns=info_keys)


def apply_filter(frame, filter_op: str | None):
    if not filter_op:
        return frame
    parts = filter_op.split(" ", 2)
    if len(parts) != 3 or parts[1] not in OPERATORS:
        raise TuneError(
            f"invalid filter {filter_op!r}: use '<column> <operator> <value>' with one of "
            f"{sorted(OPERATORS)}"
        )
    column, op, value = parts
    if column not in frame:
        raise TuneError(f"no column {column!r} to filter on; columns: {list(frame.columns)}")
    series = frame[column]
    typed: object = value
    if series.dtype.kind in "if":
        typed = float(value)
    elif series.dtype.kind == "b":
        typed = value.lower() in ("true", "1", "yes")
    return frame[OPERATORS[op](series, typed)]


def render(frame, *, sort: str | None = None, filter_op: str | None = None, output: str | None = None,
           width: int | None = None) -> str:
    """The table text (and writes `output`: .csv or .pkl/.pickle)."""
    from tabulate import tabulate

    frame = apply_filter(frame, filter_op)
    if sort:
        for column in sort.split(","):
            if column not in frame:
                raise TuneError(f"cannot sort by {column!r}; columns: {list(frame.columns)}")
        frame = frame.sort_values(by=sort.split(","))
    empty = [c for c in frame.columns if frame[c].isna().all()]
    frame = frame.drop(columns=empty)
    lines = []
    width = width or shutil.get_terminal_size((200, 50)).columns
    shown = frame
    table = tabulate(shown, headers="keys", tablefmt="psql", showindex=False)
    truncated = False
    while shown.shape[1] > 1 and max(len(line) for line in table.splitlines()) > width:
        shown = shown.iloc[:, :-1]
        table = tabulate(shown, headers="keys", tablefmt="psql", showindex=False)
        truncated = True
    lines.append(table)
    if empty:
        lines.append(f"Dropped columns: {empty}")
    if truncated:
        lines.append("Please increase your terminal size to view remaining columns.")
    if output:
        if output.endswith(".csv"):
            frame.to_csv(output, index=False)
        elif output.endswith((".pkl", ".pickle")):
            frame.to_pickle(output)
        else:
            raise TuneError(f"unsupported output format {output!r}: use .csv or .pkl")
        lines.append(f"Output saved at: {output}")
    return "\n".join(lines)


def list_trials(experiment_path, sort=None, output=None, filter_op=None, info_keys=None,
                result_keys=None, width=None) -> str:
    frame = trials_frame(experiment_path, info_keys, result_keys)
    return render(frame, sort=sort, filter_op=filter_op, output=output, width=width)


def list_experiments(project_path, sort=None, output=None, filter_op=None, info_keys=None,
                     width=None) -> str:
    frame = experiments_frame(project_path, info_keys)
    return render(frame, sort=sort, filter_op=filter_op, output=output, width=width)
