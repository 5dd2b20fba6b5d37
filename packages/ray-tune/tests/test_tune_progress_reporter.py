"""CLIReporter / JupyterNotebookReporter: at most one table per `max_report_frequency`
(a controlled clock), rows sorted by the metric with `sort_by_metric` (as in Ray: the
terminated trials, best first for the mode), each checked on the table text itself."""

import io
import re

import pytest

from ray import tune
from ray.tune import progress_reporter
from ray.tune.local_executor import LocalTrialExecutor
from ray.tune.progress_reporter import CLIReporter, JupyterNotebookReporter
from ray.tune.trial import Trial


class Clock:
    """Stands in for the `time` module inside progress_reporter: `time()` is what we set."""

    def __init__(self, now=1000.0):
        self.now = now

    def time(self):
        return self.now


@pytest.fixture
def clock(monkeypatch):
    fake = Clock()
    monkeypatch.setattr(progress_reporter, "time", fake)
    return fake


def make_trial(name, status, loss=None, **config):
    trial = Trial("f", config=config, trial_id=name, experiment_tag=name)
    trial.status = status
    if loss is not None:
        trial.last_result = {"loss": loss, "training_iteration": 1}
    return trial


def tables(text):
    """Each `== Status ==` block of the output, as (header lines, trial table rows)."""
    blocks = text.split("== Status ==\n")[1:]
    out = []
    for block in blocks:
        lines = block.split("Number of errored trials")[0].splitlines()
        rows = [[cell.strip() for cell in line.split("|")[1:-1]]
                for line in lines if line.startswith("|") and not line.startswith("|-")]
        out.append(([line for line in lines if not line.startswith(("|", "+"))], rows))
    return out


def column(rows, name):
    header, *body = rows
    index = header.index(name)
    return [row[index] for row in body]


# -- max_report_frequency ---------------------------------------------------------
def test_cli_reporter_prints_at_most_one_table_per_max_report_frequency(clock):
    out = io.StringIO()
    reporter = CLIReporter(out=out, metric_columns=["loss"], max_report_frequency=10)
    reporter.set_start_time(clock.now)
    trial = make_trial("a", Trial.RUNNING, loss=0.0)
    for second in range(26):  # a driver loop asking once a second for 25 s
        clock.now = 1000.0 + second
        trial.last_result = {"loss": float(second)}
        if reporter.should_report([trial]):
            reporter.report([trial], False)
    clock.now = 1025.5
    assert reporter.should_report([trial], done=True)  # the final table is never held back
    reporter.report([trial], True)

    printed = tables(out.getvalue())
    assert reporter.num_reports == len(printed) == 4
    # The tables of seconds 0, 10 and 20, then the final one: each shows the value of its time.
    assert [column(rows, "loss") for _, rows in printed] == [["0"], ["10"], ["20"], ["25"]]
    running_for = [re.search(r"running for (\S+)\)", "\n".join(h)).group(1) for h, _ in printed]
    assert running_for == ["0:00:00", "0:00:10", "0:00:20", "0:00:25.500"]


def test_max_report_frequency_zero_reports_every_time_and_period_restarts_at_each_table(clock):
    every = CLIReporter(out=io.StringIO(), max_report_frequency=0)
    assert [every.should_report([]) for _ in range(3)] == [True, True, True]

    throttled = CLIReporter(out=io.StringIO(), max_report_frequency=5)
    answers = []
    for now in (0.0, 4.9, 5.0, 9.9, 10.0):
        clock.now = now
        answers.append(throttled.should_report([]))
    assert answers == [True, False, True, False, True]


def test_tune_run_with_a_long_period_prints_the_first_and_the_final_table(tmp_path):
    def three_steps(config):
        for i in range(1, 4):
            tune.report(loss=config["x"] / i)

    out = io.StringIO()
    reporter = CLIReporter(out=out, metric_columns=["loss"], parameter_columns=["x"],
                           max_report_frequency=3600, sort_by_metric=True)
    tune.run(three_steps, name="rep", config={"x": tune.grid_search([3.0, 1.0, 2.0])},
             metric="loss", mode="min", local_dir=str(tmp_path), verbose=1,
             progress_reporter=reporter, trial_executor=LocalTrialExecutor({"CPU": 1}))
    printed = tables(out.getvalue())
    assert len(printed) == 2
    header, rows = printed[-1]
    assert column(rows, "status") == ["TERMINATED"] * 3
    # The tuner's metric and mode reached the reporter: best (lowest) loss first.
    assert column(rows, "loss") == ["0.33333", "0.66667", "1"]
    assert column(rows, "x") == ["1", "2", "3"]
    assert any(line.startswith("Current best trial:") and "loss=0.333" in line for line in header)


# -- sort_by_metric ---------------------------------------------------------------
def population():
    return [
        make_trial("t1", Trial.TERMINATED, loss=0.5),
        make_trial("r1", Trial.RUNNING, loss=0.9),
        make_trial("t2", Trial.TERMINATED, loss=0.1),
        make_trial("e1", Trial.ERROR, loss=0.05),
        make_trial("t3", Trial.TERMINATED, loss=0.3),
        make_trial("t4", Trial.TERMINATED),  # finished without reporting the metric
        make_trial("p1", Trial.PENDING),
    ]


def names_in_table(reporter, trials):
    out = io.StringIO()
    reporter._out = out
    reporter.report(trials, done=True)
    [(_, rows)] = tables(out.getvalue())
    return column(rows, "Trial name")


@pytest.mark.parametrize("mode, terminated", [
    ("min", ["f_t2", "f_t3", "f_t1", "f_t4"]),
    ("max", ["f_t1", "f_t3", "f_t2", "f_t4"]),
])
def test_sort_by_metric_orders_terminated_rows_by_the_metric_for_the_mode(mode, terminated):
    reporter = CLIReporter(metric_columns=["loss"], metric="loss", mode=mode, sort_by_metric=True)
    # Status groups stay in Ray's order; within TERMINATED, best first, unscored last.
    assert names_in_table(reporter, population()) == ["f_r1", "f_p1", *terminated, "f_e1"]


def test_without_sort_by_metric_rows_keep_the_order_trials_were_added():
    reporter = CLIReporter(metric_columns=["loss"], metric="loss", mode="min")
    assert names_in_table(reporter, population()) == [
        "f_r1", "f_p1", "f_t1", "f_t2", "f_t3", "f_t4", "f_e1"]


def test_sort_by_metric_takes_metric_and_mode_from_the_run_and_keeps_the_best_rows():
    reporter = CLIReporter(metric_columns=["loss"], sort_by_metric=True, max_progress_rows=3)
    reporter.setup(metric="loss", mode="min")  # what tune.run / the Tuner pass
    trials = [make_trial(f"t{i}", Trial.TERMINATED, loss=loss)
              for i, loss in enumerate([0.4, 0.2, 0.5, 0.1, 0.3])]
    out = io.StringIO()
    reporter._out = out
    reporter.report(trials, done=True)
    [(_, rows)] = tables(out.getvalue())
    assert column(rows, "loss") == ["0.1", "0.2", "0.3"]
    assert "... 2 more trials not shown (2 TERMINATED)" in out.getvalue()


# -- JupyterNotebookReporter ------------------------------------------------------
@pytest.fixture
def notebook(tmp_path, monkeypatch):
    """A real IPython shell whose display publisher keeps what the reporter displays."""
    pytest.importorskip("IPython")
    from IPython.core.displaypub import DisplayPublisher
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    class Kept(DisplayPublisher):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.outputs, self.clears = [], 0

        def publish(self, data, metadata=None, source=None, *, transient=None, update=False,
                    **kwargs):
            self.outputs.append((data["text/html"], (transient or {}).get("display_id"), update))

        def clear_output(self, wait=False):
            self.clears += 1

    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    config = Config()
    config.HistoryManager.enabled = False
    shell = InteractiveShell.instance(config=config)
    shell.display_pub = Kept(shell=shell)
    yield shell.display_pub
    InteractiveShell.clear_instance()


def html_rows(html):
    table = html[html.index("<table"):html.index("</table>")]
    return [[re.sub(r"<[^>]+>", "", cell).strip()
             for cell in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row)]
            for row in re.findall(r"<tr>(.*?)</tr>", table, flags=re.S)]


def test_notebook_reporter_replaces_its_table_at_most_once_per_period(notebook, clock):
    reporter = JupyterNotebookReporter(overwrite=True, metric_columns=["loss"], metric="loss",
                                       mode="max", sort_by_metric=True, max_report_frequency=10)
    trials = population()
    for second in (0, 3, 9, 10, 15):
        clock.now = 1000.0 + second
        if reporter.should_report(trials):
            reporter.report(trials, False)
    reporter.report(trials, True)
    assert len(notebook.outputs) == reporter.num_reports == 3  # seconds 0 and 10, and the end
    assert notebook.clears == 3  # overwrite: each table replaces the previous one
    html, display_id, update = notebook.outputs[-1]
    assert display_id is None and update is False
    assert "== Status ==" in html
    assert column(html_rows(html), "Trial name") == [
        "f_r1", "f_p1", "f_t1", "f_t3", "f_t2", "f_t4", "f_e1"]


def test_notebook_reporter_with_a_display_id_updates_that_display_in_place(notebook):
    reporter = JupyterNotebookReporter(True, ["loss"], display="tune-status",
                                       max_report_frequency=0)
    trial = make_trial("a", Trial.RUNNING, loss=1.0)
    reporter.report([trial], False)
    trial.last_result = {"loss": 0.25}
    reporter.report([trial], True)
    assert notebook.clears == 0
    assert [(d, u) for _, d, u in notebook.outputs] == [("tune-status", False), ("tune-status", True)]
    assert [column(html_rows(h), "loss") for h, _, _ in notebook.outputs] == [["1"], ["0.25"]]
