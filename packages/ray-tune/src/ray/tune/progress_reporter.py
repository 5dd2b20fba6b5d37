"""Progress reporters: the status table printed while an experiment runs.

    reporter = tune.CLIReporter(metric_columns=["loss", "acc"], parameter_columns=["lr"],
                                max_report_frequency=10, metric="loss", mode="min",
                                sort_by_metric=True)
    tune.run(f, progress_reporter=reporter)     # or RunConfig(progress_reporter=reporter)

`ProgressReporter` is the interface (Ray 2.x): the driver loop asks `should_report(trials,
done)` and, if so, calls `report(trials, done, *sys_info)`. `CLIReporter` prints the
table (drawn with `tabulate`) to stdout, at most once per `max_report_frequency`
seconds, and once at the end (`sort_by_metric=True`: the terminated trials sorted by
`metric`, best first for `mode`, as in Ray); `JupyterNotebookReporter` shows it as HTML in a notebook
(IPython), replacing the previous table when `overwrite=True`.

Columns: `metric_columns` (a list, or a dict {result key: shown name}; nested keys as
`a/b`) and `parameter_columns` (config keys, same forms). Without `metric_columns` the
table shows the standard result fields a trial reported plus up to `infer_limit` other
numeric metrics; without `parameter_columns`, the values the searcher chose.
"""

from __future__ import annotations

import collections
import datetime
import numbers
import sys
import time
from typing import Any, TextIO

from ray.tune import result as R
from ray.tune.error import TuneError
from ray.tune.trial import Trial

# Result fields shown by default, with their column names (as in Ray).
DEFAULT_COLUMNS = {
    R.EPISODE_REWARD_MEAN: "reward",
    R.MEAN_ACCURACY: "acc",
    R.MEAN_LOSS: "loss",
    R.TIME_TOTAL_S: "total time (s)",
    R.TIMESTEPS_TOTAL: "ts",
    R.TRAINING_ITERATION: "iter",
}
# Never inferred as user metrics (bookkeeping fields of every result).
_AUTO_FIELDS = {
    R.DONE, R.TRIAL_ID, R.PID, R.HOSTNAME, R.NODE_IP, R.TIMESTAMP, R.TIME_THIS_ITER_S,
    R.TIME_SINCE_RESTORE, R.TIMESTEPS_SINCE_RESTORE, R.ITERATIONS_SINCE_RESTORE,
    R.EPISODES_THIS_ITER, R.TIMESTEPS_THIS_ITER, R.EPISODES_TOTAL, R.EXPERIMENT_ID, R.DATE,
    R.CONFIG, R.SHOULD_CHECKPOINT, "checkpoint_dir_name", *DEFAULT_COLUMNS,
}
_STATUS_ORDER = {s: i for i, s in enumerate(
    (Trial.RUNNING, Trial.PAUSED, Trial.PENDING, Trial.TERMINATED, Trial.ERROR))}


class ProgressReporter:
    """Interface: `should_report(trials, done)` then `report(trials, done, *sys_info)`."""

    def setup(self, start_time: float | None = None, total_samples: int | None = None,
              metric: str | None = None, mode: str | None = None, **kwargs: Any) -> None:
        """Called once before the experiment starts."""
        self.set_start_time(start_time)
        if total_samples is not None:
            self.set_total_samples(total_samples)
        if metric is not None or mode is not None:
            self.set_search_properties(metric, mode)

    def should_report(self, trials: list, done: bool = False) -> bool:
        raise NotImplementedError

    def report(self, trials: list, done: bool, *sys_info: str) -> None:
        raise NotImplementedError

    def set_search_properties(self, metric: str | None, mode: str | None) -> bool:
        return True

    def set_total_samples(self, total_samples: int) -> None:
        pass

    def set_start_time(self, timestamp: float | None = None) -> None:
        pass


def _column_map(columns: Any, where: str) -> collections.OrderedDict | None:
    if columns is None:
        return None
    if isinstance(columns, dict):
        return collections.OrderedDict((str(k), str(v)) for k, v in columns.items())
    if isinstance(columns, (list, tuple)):
        return collections.OrderedDict((str(c), str(c)) for c in columns)
    raise TuneError(f"{where} must be a list of keys or a dict {{key: shown name}}, got {columns!r}")


class TuneReporterBase(ProgressReporter):
    """Builds the status text and table; subclasses decide where it goes."""

    def __init__(
        self,
        *,
        metric_columns: list | dict | None = None,
        parameter_columns: list | dict | None = None,
        total_samples: int | None = None,
        max_progress_rows: int = 20,
        max_error_rows: int = 20,
        max_column_length: int = 20,
        max_report_frequency: float = 5,
        infer_limit: int = 3,
        print_intermediate_tables: bool | None = None,
        metric: str | None = None,
        mode: str | None = None,
        sort_by_metric: bool = False,
    ):
        if mode not in (None, "max", "min"):
            raise TuneError(f"{type(self).__name__}(mode={mode!r}): mode must be 'max' or 'min'")
        if max_report_frequency < 0:
            raise TuneError(f"max_report_frequency must be >= 0 seconds, got {max_report_frequency}")
        self._metric_columns = _column_map(metric_columns, "metric_columns")
        self._parameter_columns = _column_map(parameter_columns, "parameter_columns")
        self._total_samples = total_samples
        self._max_progress_rows = max_progress_rows
        self._max_error_rows = max_error_rows
        self._max_column_length = max_column_length
        self._max_report_frequency = max_report_frequency
        self._infer_limit = infer_limit
        self._print_intermediate_tables = print_intermediate_tables
        self._metric = metric
        self._mode = mode
        self._sort_by_metric = sort_by_metric
        self._start_time = time.time()
        self._last_report_time = -float("inf")
        self.num_reports = 0

    # -- configuration ----------------------------------------------------------
    def add_metric_column(self, metric: str, representation: str | None = None) -> None:
        if self._metric_columns is None:
            self._metric_columns = collections.OrderedDict()
        if metric in self._metric_columns:
            raise TuneError(f"column {metric!r} is already shown")
        self._metric_columns[metric] = representation or metric

    def add_parameter_column(self, parameter: str, representation: str | None = None) -> None:
        if self._parameter_columns is None:
            self._parameter_columns = collections.OrderedDict()
        if parameter in self._parameter_columns:
            raise TuneError(f"column {parameter!r} is already shown")
        self._parameter_columns[parameter] = representation or parameter

    def set_search_properties(self, metric: str | None, mode: str | None) -> bool:
        if self._metric is None and metric is not None:
            self._metric = metric
        if self._mode is None and mode is not None:
            self._mode = mode
        return True

    def set_total_samples(self, total_samples: int) -> None:
        self._total_samples = total_samples

    def set_start_time(self, timestamp: float | None = None) -> None:
        self._start_time = time.time() if timestamp is None else timestamp

    # -- when ---------------------------------------------------------------------
    def should_report(self, trials: list, done: bool = False) -> bool:
        """At most once per `max_report_frequency` seconds, and always when `done`."""
        now = time.time()
        if done or now - self._last_report_time >= self._max_report_frequency:
            self._last_report_time = now
            return True
        return False

    # -- what -----------------------------------------------------------------------
    def _header_lines(self, trials: list, *sys_info: str) -> list[str]:
        lines = ["== Status =="]
        now = datetime.datetime.now()
        elapsed = datetime.timedelta(seconds=round(time.time() - self._start_time, 2))
        lines.append(f"Current time: {now:%Y-%m-%d %H:%M:%S} (running for {str(elapsed)[:11]})")
        memory = _memory_line()
        if memory:
            lines.append(memory)
        lines.extend(info for info in sys_info if info)
        best = self._best_trial_line(trials)
        if best:
            lines.append(best)
        lines.append(self._trial_counts(trials))
        return lines

    def _progress_str(self, trials: list, done: bool, *sys_info: str) -> str:
        lines = self._header_lines(trials, *sys_info)
        if done or self._print_intermediate_tables is not False:
            lines.append(self.trial_table(trials))
            errors = self.error_table(trials)
            if errors:
                lines.append(errors)
        return "\n".join(lines) + "\n"

    def _trial_counts(self, trials: list) -> str:
        counts = collections.Counter(t.status for t in trials)
        by_status = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
        total = f"{len(trials)}/{self._total_samples}" if self._total_samples else str(len(trials))
        return f"Number of trials: {total} ({by_status})"

    def _best_trial_line(self, trials: list) -> str:
        if not self._metric:
            return ""
        best = _best_trial(trials, self._metric, self._mode or "max")
        if best is None:
            return ""
        params = {k: _get(best.config, k) for k in self._shown_parameters(trials)}
        return (f"Current best trial: {best.trial_id} with {self._metric}="
                f"{best.last_result[self._metric]} and parameters={params}")

    def _shown_parameters(self, trials: list) -> collections.OrderedDict:
        if self._parameter_columns is not None:
            return self._parameter_columns
        keys: dict[str, str] = collections.OrderedDict()
        for trial in trials:
            for key in getattr(trial, "evaluated_params", None) or {}:
                key = key[len("config/"):] if key.startswith("config/") else key
                keys.setdefault(key, key)
        return keys

    def _shown_metrics(self, trials: list) -> collections.OrderedDict:
        if self._metric_columns is not None:
            return self._metric_columns
        reported = set()
        for trial in trials:
            reported.update(k for k, v in trial.last_result.items() if v is not None)
        columns = collections.OrderedDict(
            (k, v) for k, v in DEFAULT_COLUMNS.items() if k in reported)
        inferred = []
        for trial in trials:
            for key, value in trial.last_result.items():
                if (key not in _AUTO_FIELDS and key not in inferred and key not in columns
                        and isinstance(value, numbers.Number) and not isinstance(value, bool)):
                    inferred.append(key)
        if self._metric and self._metric in reported and self._metric not in columns:
            columns[self._metric] = self._metric
        for key in inferred[: self._infer_limit]:
            columns.setdefault(key, key)
        return columns

    def _ordered(self, trials: list) -> list:
        """Trials grouped by status (running first); with `sort_by_metric`, the terminated
        ones sorted by the metric, best first for the mode (as in Ray: the other groups keep
        their order, and those are the rows a long table still shows)."""
        ordered = sorted(trials, key=lambda t: _STATUS_ORDER.get(t.status, 99))
        if not (self._sort_by_metric and self._metric):
            return ordered
        sign = -1.0 if (self._mode or "max") == "max" else 1.0

        def key(trial):
            value = _get(trial.last_result, self._metric)
            scored = isinstance(value, numbers.Number) and value == value
            return (0 if scored else 1, sign * value if scored else 0.0)

        best_first = iter(sorted((t for t in ordered if t.status == Trial.TERMINATED), key=key))
        return [next(best_first) if t.status == Trial.TERMINATED else t for t in ordered]

    def trial_table(self, trials: list, fmt: str = "psql") -> str:
        """The table of trials: name, status, location, parameters, metrics."""
        from tabulate import tabulate

        params = self._shown_parameters(trials)
        metrics = self._shown_metrics(trials)
        ordered = self._ordered(trials)
        shown = ordered[: self._max_progress_rows] if self._max_progress_rows > 0 else ordered
        rows = []
        for trial in shown:
            location = _location(trial.last_result)
            row = [str(trial)[: max(self._max_column_length, 20) + 20], trial.status, location]
            row += [_cell(_get(trial.config, key), self._max_column_length) for key in params]
            row += [_cell(_get(trial.last_result, key), self._max_column_length) for key in metrics]
            rows.append(row)
        headers = ["Trial name", "status", "loc", *params.values(), *metrics.values()]
        table = tabulate(rows, headers=headers, tablefmt=fmt, showindex=False)
        if len(shown) < len(ordered):
            hidden = collections.Counter(t.status for t in ordered[len(shown):])
            more = ", ".join(f"{n} {s}" for s, n in sorted(hidden.items()))
            table += f"\n... {len(ordered) - len(shown)} more trials not shown ({more})"
        return table

    def error_table(self, trials: list, fmt: str = "psql") -> str:
        from tabulate import tabulate

        errored = [t for t in trials if t.status == Trial.ERROR]
        if not errored:
            return ""
        rows = [[str(t), t.num_failures, t.error_file or _first_line(t.error_msg)]
                for t in errored[: self._max_error_rows]]
        text = f"Number of errored trials: {len(errored)}\n"
        return text + tabulate(rows, headers=["Trial name", "# failures", "error"], tablefmt=fmt)


class CLIReporter(TuneReporterBase):
    """Prints the status table to stdout (or `out`)."""

    def __init__(self, *args: Any, out: TextIO | None = None, **kwargs: Any):
        if args:
            # Ray's positional order: metric_columns, parameter_columns, total_samples, ...
            names = ("metric_columns", "parameter_columns", "total_samples", "max_progress_rows",
                     "max_error_rows", "max_column_length", "max_report_frequency", "infer_limit",
                     "print_intermediate_tables", "metric", "mode", "sort_by_metric")
            if len(args) > len(names):
                raise TuneError(f"CLIReporter takes at most {len(names)} positional arguments")
            kwargs.update(zip(names, args))
        super().__init__(**kwargs)
        self._out = out

    def report(self, trials: list, done: bool, *sys_info: str) -> None:
        out = self._out or sys.stdout
        out.write(self._progress_str(trials, done, *sys_info))
        out.flush()
        self.num_reports += 1


class JupyterNotebookReporter(TuneReporterBase):
    """Shows the status table as HTML in a Jupyter notebook (needs IPython).

    `overwrite=True` replaces the previous table instead of adding one below it.
    `display` is a display id to update in place (default: a new one per reporter).
    """

    def __init__(self, overwrite: bool = True, *args: Any, display: str | None = None, **kwargs: Any):
        if args:
            names = ("metric_columns", "parameter_columns", "total_samples", "max_progress_rows",
                     "max_error_rows", "max_column_length", "max_report_frequency", "infer_limit",
                     "print_intermediate_tables", "metric", "mode", "sort_by_metric")
            kwargs.update(zip(names, args))
        super().__init__(**kwargs)
        try:
            import IPython.display  # noqa: F401
        except ImportError as exc:
            raise TuneError(
                "JupyterNotebookReporter needs IPython: pip install ipython (or use CLIReporter "
                "outside notebooks)"
            ) from exc
        self._overwrite = overwrite
        self._display_id = display
        self._handle = None

    def _html(self, trials: list, done: bool, *sys_info: str) -> str:
        import html

        parts = ["<div class='tuneStatus'>"]
        parts.append("<br>".join(html.escape(line) for line in self._header_lines(trials, *sys_info)))
        if done or self._print_intermediate_tables is not False:
            parts.append(self.trial_table(trials, fmt="html"))
            errors = self.error_table(trials, fmt="html")
            if errors:
                title, table = errors.split("\n", 1)
                parts.append(f"<br>{html.escape(title)}{table}")
        parts.append("</div>")
        return "".join(parts)

    def report(self, trials: list, done: bool, *sys_info: str) -> None:
        from IPython.display import HTML, clear_output, display

        content = HTML(self._html(trials, done, *sys_info))
        if self._overwrite:
            if self._display_id is not None:
                if self._handle is None:
                    self._handle = display(content, display_id=self._display_id)
                else:
                    self._handle.update(content)
            else:
                clear_output(wait=True)
                display(content)
        else:
            display(content)
        self.num_reports += 1


def detect_reporter(**kwargs: Any) -> TuneReporterBase:
    """A JupyterNotebookReporter inside a notebook kernel, else a CLIReporter."""
    if _in_notebook():
        return JupyterNotebookReporter(overwrite=True, **kwargs)
    return CLIReporter(**kwargs)


def _in_notebook() -> bool:
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return False
    shell = ipython.get_ipython() if hasattr(ipython, "get_ipython") else None
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


# -- helpers ----------------------------------------------------------------------
def _get(data: dict, key: str) -> Any:
    """`data[key]`, where `a/b` reads nested dicts."""
    if key in data:
        return data[key]
    node: Any = data
    for part in key.split("/"):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def _cell(value: Any, max_len: int) -> Any:
    if value is None:
        return ""
    if isinstance(value, float):
        return float(f"{value:.5g}")
    if isinstance(value, (bool, int)):
        return value
    text = str(value)
    return text if len(text) <= max_len else text[: max(1, max_len - 3)] + "..."


def _location(result: dict) -> str:
    ip, pid = result.get(R.NODE_IP), result.get(R.PID)
    if ip and pid:
        return f"{ip}:{pid}"
    return str(ip or "")


def _first_line(text: str | None) -> str:
    return (text or "").strip().splitlines()[0][:100] if (text or "").strip() else ""


def _memory_line() -> str:
    try:
        import psutil
    except ImportError:
        return ""
    mem = psutil.virtual_memory()
    used = (mem.total - mem.available) / 2**30
    return f"Memory usage on this node: {used:.1f}/{mem.total / 2**30:.1f} GiB"


def _best_trial(trials: list, metric: str, mode: str):
    scored = [t for t in trials if isinstance(t.last_result.get(metric), numbers.Number)
              and t.last_result[metric] == t.last_result[metric]]
    if not scored:
        return None
    sign = 1 if mode == "max" else -1
    return max(scored, key=lambda t: sign * t.last_result[metric])


def trial_progress_str(trial: Trial) -> str:
    """`name: RUNNING [pid=6778], 209 s, 20604 ts, 7.29 acc` (the Ray 0.7 status line)."""
    result = trial.last_result
    info = f"{trial}: {trial.status}"
    if trial.status == Trial.ERROR and trial.error_msg:
        info += ", " + _first_line(trial.error_msg)
    if not result:
        return info
    pieces = []
    if R.PID in result:
        info += f" [pid={result[R.PID]}]"
    if result.get(R.TIME_TOTAL_S) is not None:
        pieces.append(f"{result[R.TIME_TOTAL_S]:.3g} s")
    if result.get(R.TRAINING_ITERATION) is not None:
        pieces.append(f"{result[R.TRAINING_ITERATION]} iter")
    if result.get(R.TIMESTEPS_TOTAL) is not None:
        pieces.append(f"{result[R.TIMESTEPS_TOTAL]} ts")
    if result.get(R.EPISODE_REWARD_MEAN) is not None:
        pieces.append(f"{result[R.EPISODE_REWARD_MEAN]:.3g} rew")
    if result.get(R.MEAN_LOSS) is not None:
        pieces.append(f"{result[R.MEAN_LOSS]:.3g} loss")
    if result.get(R.MEAN_ACCURACY) is not None:
        pieces.append(f"{result[R.MEAN_ACCURACY]:.3g} acc")
    return info + (", " + ", ".join(pieces) if pieces else "")
