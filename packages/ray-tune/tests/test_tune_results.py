"""Loggers, experiment state, ExperimentAnalysis, the CLI, the status table, syncing and
resume-after-kill, driven through `tune.run` with the in-process executor (no Ray)."""

import csv
import io
import json
import os
import signal
import struct
import subprocess
import sys
import textwrap
import time

import pytest
from click.testing import CliRunner

from ray import tune
from ray.tune import experiment_state as ES
from ray.tune.local_executor import LocalTrialExecutor
from ray.tune.logger import DEFAULT_LOGGERS, Logger
from ray.tune.progress_reporter import CLIReporter, trial_progress_str
from ray.tune.scripts import cli
from ray.tune.trial import Trial


def fn(config, reporter):
    for i in range(3):
        reporter(mean_accuracy=config["a"] * (i + 1), mean_loss=1.0 / (i + 1), nested={"v": i})


class Recorder(Logger):
    seen: list = []

    def on_result(self, result):
        Recorder.seen.append((self.logdir, result["training_iteration"]))


def _run(tmp_path, name="exp", **kwargs):
    kwargs.setdefault("config", {"a": tune.grid_search([1, 2])})
    return tune.run(fn, name=name, local_dir=str(tmp_path), verbose=0,
                    trial_executor=LocalTrialExecutor(), **kwargs)


def test_default_loggers_write_json_csv_and_tensorboard(tmp_path):
    Recorder.seen = []
    trials = _run(tmp_path, loggers=list(DEFAULT_LOGGERS) + [Recorder])
    for trial in trials:
        rows = [json.loads(line) for line in open(os.path.join(trial.logdir, "result.json"))]
        assert [r["training_iteration"] for r in rows] == [1, 2, 3]
        assert rows[-1]["done"] is True and rows[0]["config"] == trial.config
        with open(os.path.join(trial.logdir, "progress.csv")) as f:
            table = list(csv.DictReader(f))
        assert len(table) == 3 and table[0]["nested/v"] == "0"
        assert json.load(open(os.path.join(trial.logdir, "params.json"))) == trial.config
        [events] = [f for f in os.listdir(trial.logdir) if f.startswith("events.out.tfevents")]
        assert _event_tags(os.path.join(trial.logdir, events)) >= {"ray/tune/mean_accuracy"}
    assert sorted(it for _, it in Recorder.seen) == [1, 1, 2, 2, 3, 3]


def _event_tags(path):
    """Reads TFRecord framing and pulls the tag strings out of the summaries."""
    data = open(path, "rb").read()
    tags, pos = set(), 0
    while pos < len(data):
        (length,) = struct.unpack("<Q", data[pos:pos + 8])
        payload = data[pos + 12:pos + 12 + length]
        pos += 12 + length + 4
        index = payload.find(b"ray/tune/")
        while index >= 0:
            end = index
            while end < len(payload) and 32 < payload[end] < 127:
                end += 1
            tags.add(payload[index:end].decode())
            index = payload.find(b"ray/tune/", end)
    return tags


def test_tensorboard_files_parse_with_the_protobuf_schema(tmp_path):
    pytest.importorskip("tensorboardX")
    from tensorboardX.proto import event_pb2

    from ray.tune._tb_events import EventFileWriter

    writer = EventFileWriter(str(tmp_path))
    writer.add_scalars({"ray/tune/acc": 0.5}, step=7)
    writer.close()
    data = open(writer.path, "rb").read()
    events, pos = [], 0
    while pos < len(data):
        (length,) = struct.unpack("<Q", data[pos:pos + 8])
        event = event_pb2.Event()
        event.ParseFromString(data[pos + 12:pos + 12 + length])
        events.append(event)
        pos += 12 + length + 4
    assert events[0].file_version == "brain.Event:2"
    assert events[1].step == 7 and events[1].summary.value[0].simple_value == 0.5


def test_experiment_analysis_reads_results_back(tmp_path):
    _run(tmp_path)
    analysis = tune.ExperimentAnalysis(str(tmp_path / "exp"))
    frame = analysis.dataframe()
    assert len(frame) == 2 and set(frame["mean_accuracy"]) == {3, 6}
    assert analysis.get_best_config("mean_accuracy") == {"a": 2}
    assert analysis.get_best_config("mean_accuracy", mode="min") == {"a": 1}
    assert analysis.get_best_logdir("mean_accuracy").endswith(tuple(os.listdir(tmp_path / "exp")))
    curves = analysis.trial_dataframes
    assert all(len(df) == 3 for df in curves.values())
    assert analysis.get_best_info("mean_accuracy", flatten=False)["nested"]["v"] == 2


def test_experiment_state_is_complete_and_trials_reload(tmp_path):
    trials = _run(tmp_path)
    reloaded = ES.load_trials(str(tmp_path / "exp"))
    assert {t.trial_id for t in reloaded} == {t.trial_id for t in trials}
    assert all(t.status == Trial.TERMINATED and t.last_result["done"] for t in reloaded)
    assert not [f for f in os.listdir(tmp_path / "exp") if f.endswith(".tmp")]


def test_cli_lists_filters_sorts_and_saves(tmp_path):
    _run(tmp_path)
    _run(tmp_path, name="other", config={"a": 5})
    runner = CliRunner()
    out = runner.invoke(cli, ["list-trials", str(tmp_path / "exp"), "--sort", "mean_accuracy",
                              "--output", str(tmp_path / "note.csv")])
    assert out.exit_code == 0, out.output
    assert "trainable_name" in out.output and "Output saved at" in out.output
    assert "Dropped columns" in out.output  # timesteps_total is empty for these trials
    assert len(list(csv.DictReader(open(tmp_path / "note.csv")))) == 2
    out = runner.invoke(cli, ["list-trials", str(tmp_path / "exp"), "--filter", "mean_accuracy > 4",
                              "--columns", "trial_id,status", "--result-columns", "mean_accuracy"])
    assert out.exit_code == 0, out.output
    assert out.output.count("TERMINATED") == 1 and "6" in out.output
    out = runner.invoke(cli, ["list-experiments", str(tmp_path), "--filter", "total_trials <= 1",
                              "--sort", "name"])
    assert out.exit_code == 0, out.output
    assert "other" in out.output and "| exp" not in out.output
    bad = runner.invoke(cli, ["list-trials", str(tmp_path / "exp"), "--filter", "nonsense"])
    assert bad.exit_code != 0 and "<column> <operator> <value>" in bad.output


def test_status_table_shows_trials_best_result_and_truncates(tmp_path):
    trials = [Trial("f", config={"i": i}, experiment_tag=str(i), local_dir=str(tmp_path))
              for i in range(25)]
    for i, trial in enumerate(trials):
        trial.status = Trial.RUNNING if i < 22 else Trial.TERMINATED
        trial.last_result = {"pid": 10 + i, "node_ip": "10.0.0.1", "time_total_s": 209.0,
                             "timesteps_total": 20604, "mean_accuracy": float(i),
                             "training_iteration": 3}
    assert trial_progress_str(trials[0]) == "f_0: RUNNING [pid=10], 209 s, 3 iter, 20604 ts, 0 acc"
    out = io.StringIO()
    reporter = CLIReporter(metric="mean_accuracy", mode="max", parameter_columns=["i"], out=out)
    reporter.report(trials, False, "Using FIFO scheduling algorithm.", "Resources requested: 4/8 CPUs")
    text = out.getvalue()
    assert "Number of trials: 25 (22 RUNNING, 3 TERMINATED)" in text
    assert f"Current best trial: {trials[24].trial_id} with mean_accuracy=24.0" in text
    assert "Memory usage on this node:" in text and "Using FIFO scheduling algorithm." in text
    assert "... 5 more trials not shown (2 RUNNING, 3 TERMINATED)" in text
    header = next(line for line in text.splitlines() if line.startswith("| Trial name"))
    assert [c.strip() for c in header.strip("|").split("|")] == [
        "Trial name", "status", "loc", "i", "acc", "total time (s)", "ts", "iter"]
    assert "| f_0 " in text and "10.0.0.1:10" in text


def test_upload_dir_syncs_with_a_template_command(tmp_path):
    remote = tmp_path / "remote"
    _run(tmp_path, name="synced", upload_dir=str(remote),
         sync_function="mkdir -p {remote_dir} && cp -r {local_dir}/. {remote_dir}")
    assert any(f.startswith("experiment_state") for f in os.listdir(remote / "synced"))


def test_unknown_run_argument_gets_a_suggestion(tmp_path):
    with pytest.raises(tune.TuneError, match="did you mean 'num_samples'"):
        tune.run(fn, num_sample=3, trial_executor=LocalTrialExecutor(), local_dir=str(tmp_path))


DRIVER = textwrap.dedent('''
    import sys, time
    sys.path.insert(0, {here!r})
    from ray import tune
    from ray.tune.local_executor import LocalTrialExecutor
    from resumable import Slow
    tune.run(Slow, name="resumable", config={{"n": tune.grid_search([0, 1, 2])}},
             stop={{"training_iteration": 12}}, checkpoint_freq=1, local_dir={local_dir!r},
             verbose=0, resume={resume}, trial_executor=LocalTrialExecutor({{"CPU": 1}}))
''')

TRAINABLE = textwrap.dedent('''
    import time
    from ray import tune

    class Slow(tune.Trainable):
        def _setup(self, config):
            self.step = 0

        def _train(self):
            self.step += 1
            # The first trial is quick; the others are slow enough to be killed mid-run.
            time.sleep(0.0 if self.config["n"] == 0 else 0.15)
            return {"step": self.step}

        def _save(self, checkpoint_dir):
            return {"step": self.step}

        def _restore(self, state):
            self.step = state["step"]
''')


def test_resume_after_the_driver_was_killed(tmp_path):
    (tmp_path / "resumable.py").write_text(TRAINABLE)
    local_dir = str(tmp_path / "results")
    script = tmp_path / "driver.py"
    script.write_text(DRIVER.format(here=str(tmp_path), local_dir=local_dir, resume=False))
    proc = subprocess.Popen([sys.executable, str(script)], start_new_session=True)
    exp_dir = os.path.join(local_dir, "resumable")
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            time.sleep(0.1)
            if ES.find_state_file(exp_dir) is None:
                continue
            try:
                states = ES.load_state(exp_dir)["checkpoints"]
            except ValueError:
                continue  # never happens with atomic writes, but do not fail on it
            running = [s for s in states if s["status"] == "RUNNING" and s["checkpoint"]]
            if any(s["status"] == "TERMINATED" for s in states) and running:
                if running[0]["checkpoint"]["result"]["training_iteration"] >= 3:
                    break
        else:
            pytest.fail("the driver never reached a resumable state")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()

    before = {s["trial_id"]: s for s in ES.load_state(exp_dir)["checkpoints"]}
    finished = [tid for tid, s in before.items() if s["status"] == "TERMINATED"]
    interrupted = [tid for tid, s in before.items() if s["status"] == "RUNNING"]

    sys.path.insert(0, str(tmp_path))
    try:
        from resumable import Slow

        trials = tune.run(Slow, name="resumable", config={"n": tune.grid_search([0, 1, 2])},
                          stop={"training_iteration": 12}, checkpoint_freq=1, local_dir=local_dir,
                          verbose=0, resume=True, trial_executor=LocalTrialExecutor({"CPU": 1}))
    finally:
        sys.path.remove(str(tmp_path))
    assert len(trials) == 3  # no new trials were generated
    assert all(t.status == Trial.TERMINATED and t.last_result["step"] == 12 for t in trials)
    by_id = {t.trial_id: t for t in trials}
    for tid in finished:  # finished trials are not re-run
        assert by_id[tid].results_count == before[tid]["results_count"]
    for tid in interrupted:  # running trials continued from their checkpoint
        rows = [json.loads(line) for line in open(os.path.join(by_id[tid].logdir, "result.json"))]
        restored_at = before[tid]["checkpoint"]["result"]["training_iteration"]
        resumed = [r for r in rows if r["iterations_since_restore"] == 1 and r["training_iteration"] > 1]
        assert resumed and resumed[-1]["training_iteration"] == restored_at + 1


class Exportable(tune.Trainable):
    def _setup(self, config):
        self.step = 0

    def _train(self):
        self.step += 1
        return {"score": [3, 9, 1, 5][self.step - 1]}

    def _save(self, checkpoint_dir):
        return {"step": self.step}

    def _restore(self, state):
        self.step = state["step"]

    def _export_model(self, export_formats, export_dir):
        path = os.path.join(export_dir, "model.txt")
        open(path, "w").write(str(self.step))
        return {fmt: path for fmt in export_formats}


def test_checkpoint_retention_and_export_at_the_end(tmp_path):
    [trial] = tune.run(Exportable, name="keep", stop={"training_iteration": 4}, checkpoint_freq=1,
                       keep_checkpoints_num=2, checkpoint_score_attr="score",
                       export_formats=["txt"], local_dir=str(tmp_path), verbose=0,
                       trial_executor=LocalTrialExecutor())
    kept = sorted(d for d in os.listdir(trial.logdir) if d.startswith("checkpoint_"))
    # Scores by iteration: 3, 9, 1, 5 -> the best (2) and the newest (4) are kept.
    assert kept == ["checkpoint_2", "checkpoint_4"]
    assert open(trial.export_paths["txt"]).read() == "4"


def test_return_trials_false_returns_an_experiment_analysis(tmp_path):
    analysis = _run(tmp_path, name="analysed", return_trials=False)
    assert isinstance(analysis, tune.ExperimentAnalysis)
    assert analysis.get_best_config("mean_accuracy") == {"a": 2}


def test_jupyter_notebook_reporter_displays_the_status_table_as_html_in_place(tmp_path):
    pytest.importorskip("IPython")
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output

    from ray.tune.progress_reporter import JupyterNotebookReporter

    trials = []
    for i in range(3):
        trial = Trial("f", config={"lr": 0.1 * (i + 1)}, trial_id=f"t{i}", local_dir=str(tmp_path))
        trial.status = Trial.RUNNING if i else Trial.TERMINATED
        trial.last_result = {"score": float(i), "training_iteration": i + 1, "config": trial.config}
        trials.append(trial)
    trials[2].status, trials[2].error_msg = Trial.ERROR, "ValueError: bad <lr>"
    InteractiveShell.instance()
    try:
        reporter = JupyterNotebookReporter(overwrite=True, display="tune-status", metric="score",
                                           mode="max", metric_columns=["score"],
                                           parameter_columns=["lr"])
        with capture_output() as captured:
            reporter.report(trials, False, "Using FIFO scheduling algorithm.")
            trials[1].last_result = {**trials[1].last_result, "score": 7.5}
            reporter.report(trials, True, "Using FIFO scheduling algorithm.")
        first, second = (o.data["text/html"] for o in captured.outputs)
        assert "<table>" in first and "Number of trials: 3" in first
        assert "Current best trial: t2 with score=2.0" in first
        assert "bad &lt;lr&gt;" in first  # the error table, escaped
        assert "7.5" in second and "7.5" not in first  # the second report updates the first
        assert [o.update for o in captured.outputs] == [False, True]
        assert all(o.transient == {"display_id": "tune-status"} for o in captured.outputs)
        assert reporter.num_reports == 2
        appending = JupyterNotebookReporter(overwrite=False, metric_columns=["score"])
        with capture_output() as captured:
            appending.report(trials, False)
            appending.report(trials, False)
        assert len(captured.outputs) == 2 and not any(o.update for o in captured.outputs)
    finally:
        InteractiveShell.clear_instance()


def fails_once(config, reporter):
    marker = os.path.join(config["dir"], "failed_once")
    if not os.path.exists(marker):
        open(marker, "w").close()
        raise RuntimeError("first attempt fails")
    reporter(ok=1)


def test_explicit_max_failures_restarts_a_trial_without_checkpoint_and_the_default_does_not(tmp_path):
    # Ray 2.x (FailureConfig(max_failures=1) / tune.run(max_failures=1)): retried from the
    # start. Left out, tune.run keeps Ray 0.7's rule: only trials that checkpoint retry.
    retried_dir, default_dir = tmp_path / "retried", tmp_path / "default"
    retried_dir.mkdir()
    default_dir.mkdir()
    retried = tune.run(fails_once, name="retried", config={"dir": str(retried_dir)}, max_failures=1,
                       local_dir=str(tmp_path), verbose=0, raise_on_failed_trial=False,
                       trial_executor=LocalTrialExecutor())
    assert retried[0].status == Trial.TERMINATED and retried[0].num_failures == 1
    assert retried[0].last_result["ok"] == 1
    default = tune.run(fails_once, name="default", config={"dir": str(default_dir)},
                       local_dir=str(tmp_path), verbose=0, raise_on_failed_trial=False,
                       trial_executor=LocalTrialExecutor())
    assert default[0].status == Trial.ERROR and default[0].num_failures == 1
