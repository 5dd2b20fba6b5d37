"""tune.Callback hooks as Ray 2.x defines them, and the logger callbacks, each checked by
reading back what it wrote (JSON, CSV, TensorBoard, MLflow file store, W&B offline)."""

import csv
import glob
import json
import os
import struct

import pytest

from ray import tune
from ray.tune.local_executor import LocalTrialExecutor
from ray.tune.logger import CSVLoggerCallback, JsonLoggerCallback, TBXLoggerCallback


def three_steps(config):
    for i in range(1, 4):
        tune.report(loss=config["x"] / i, nested={"m": i})


def _run(tmp_path, callbacks, **kwargs):
    return tune.run(three_steps, name="cb", config={"x": tune.grid_search([1.0, 2.0])},
                    local_dir=str(tmp_path), verbose=0, callbacks=callbacks,
                    trial_executor=LocalTrialExecutor({"CPU": 1}), **kwargs)


class Recorder(tune.Callback):
    def __init__(self):
        self.calls = []

    def setup(self, stop=None, num_samples=None, total_num_samples=None, **info):
        self.calls.append(("setup", num_samples, total_num_samples))

    def on_step_begin(self, iteration, trials, **info):
        self.calls.append(("step_begin", iteration))

    def on_trial_start(self, iteration, trials, trial, **info):
        self.calls.append(("start", trial.trial_id))

    def on_trial_result(self, iteration, trials, trial, result, **info):
        self.calls.append(("result", trial.trial_id, result["training_iteration"], result["done"]))

    def on_trial_complete(self, iteration, trials, trial, **info):
        self.calls.append(("complete", trial.trial_id))

    def on_trial_recover(self, iteration, trials, trial, **info):
        self.calls.append(("recover", trial.trial_id))

    def on_trial_error(self, iteration, trials, trial, **info):
        self.calls.append(("error", trial.trial_id))

    def on_experiment_end(self, trials, **info):
        self.calls.append(("end", len(trials)))

    def get_state(self):
        return {"n": len(self.calls)}


def test_hooks_are_called_in_order_with_iterations(tmp_path):
    rec = Recorder()
    trials = _run(tmp_path, [rec])
    names = [c[0] for c in rec.calls]
    assert names[0] == "setup" and rec.calls[0][1:] == (1, 2) and names[-1] == "end"
    for trial in trials:
        mine = [c for c in rec.calls if len(c) > 1 and c[1] == trial.trial_id]
        assert [c[0] for c in mine] == ["start", "result", "result", "result", "complete"]
        assert [c[2] for c in mine if c[0] == "result"] == [1, 2, 3]
        assert mine[-2][3] is True  # the last result is marked done
    steps = [c[1] for c in rec.calls if c[0] == "step_begin"]
    assert steps == sorted(steps) and len(steps) > 1
    # Callback state is saved with the experiment.
    from ray.tune import experiment_state as ES

    assert ES.load_callback_state(ES.load_state(str(tmp_path / "cb")))["0"]["n"] > 0


def test_recover_then_error_hooks(tmp_path):
    class Failing(tune.Trainable):
        def step(self):
            raise RuntimeError("always")

        def save_checkpoint(self, d):
            return {}

        def load_checkpoint(self, c):
            pass

    rec = Recorder()
    tune.run(Failing, local_dir=str(tmp_path), verbose=0, callbacks=[rec], max_failures=2,
             checkpoint_freq=1, raise_on_failed_trial=False,
             trial_executor=LocalTrialExecutor({"CPU": 1}))
    # max_failures=2: two retries, then the third failure is final.
    assert [c[0] for c in rec.calls if c[0] in ("recover", "error")] == ["recover", "recover", "error"]


def test_not_a_callback_is_rejected(tmp_path):
    with pytest.raises(TypeError, match="tune.Callback"):
        _run(tmp_path, [object()])


def test_json_csv_tensorboard_callbacks_write_what_was_reported(tmp_path):
    from tensorboardX.proto import event_pb2

    trials = _run(tmp_path, [JsonLoggerCallback(), CSVLoggerCallback(), TBXLoggerCallback()])
    for trial in trials:
        rows = [json.loads(line) for line in open(os.path.join(trial.logdir, "result.json"))]
        assert [r["loss"] for r in rows] == [trial.config["x"] / i for i in (1, 2, 3)]
        assert json.load(open(os.path.join(trial.logdir, "params.json"))) == trial.config
        table = list(csv.DictReader(open(os.path.join(trial.logdir, "progress.csv"))))
        assert [float(r["loss"]) for r in table] == [r["loss"] for r in rows]
        assert [int(r["nested/m"]) for r in table] == [1, 2, 3]
        [events] = glob.glob(os.path.join(trial.logdir, "events.out.tfevents.*"))
        data, pos, scalars = open(events, "rb").read(), 0, []
        while pos < len(data):
            (length,) = struct.unpack("<Q", data[pos:pos + 8])
            event = event_pb2.Event()
            event.ParseFromString(data[pos + 12:pos + 12 + length])
            pos += 16 + length
            scalars += [(event.step, v.tag, v.simple_value) for v in event.summary.value]
        losses = [(s, v) for s, tag, v in scalars if tag == "ray/tune/loss"]
        assert losses == [(i, pytest.approx(trial.config["x"] / i)) for i in (1, 2, 3)]
    # Given explicitly, each kind is not added a second time.
    assert len(open(os.path.join(trials[0].logdir, "result.json")).readlines()) == 3


def test_loggers_argument_replaces_the_defaults(tmp_path):
    from ray.tune.logger import CSVLogger

    trials = _run(tmp_path, None, loggers=[CSVLogger])
    assert sorted(os.listdir(trials[0].logdir)) == ["progress.csv"]


def test_mlflow_callback_writes_a_real_file_store(tmp_path, monkeypatch):
    pytest.importorskip("mlflow")
    from mlflow.tracking import MlflowClient

    from ray.air.integrations.mlflow import MLflowLoggerCallback

    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # mlflow 3: the file store is opt-in
    uri = f"file://{tmp_path}/mlruns"
    trials = _run(tmp_path, [MLflowLoggerCallback(tracking_uri=uri, experiment_name="tune_exp",
                                                  tags={"team": "t"}, save_artifact=True)])
    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name("tune_exp")
    runs = client.search_runs([experiment.experiment_id])
    assert len(runs) == 2
    by_name = {r.data.tags["trial_name"]: r for r in runs}
    for trial in trials:
        run = by_name[str(trial)]
        assert run.info.status == "FINISHED" and run.data.tags["team"] == "t"
        assert float(run.data.params["x"]) == trial.config["x"]
        history = client.get_metric_history(run.info.run_id, "loss")
        assert sorted((m.step, m.value) for m in history) == [
            (i, pytest.approx(trial.config["x"] / i)) for i in (1, 2, 3)]
        artifacts = {a.path for a in client.list_artifacts(run.info.run_id)}
        assert {"result.json", "progress.csv"} <= artifacts


def _wandb_records(path):
    """The records of a .wandb file (LevelDB log blocks of 32 KiB, W&B header first)."""
    from wandb.proto import wandb_internal_pb2 as pb

    data = open(path, "rb").read()
    pos, records, pending = 7, [], b""  # "\x3a\xd9W&B" magic + version
    while pos + 7 <= len(data):
        block_left = 32768 - (pos % 32768)
        if block_left < 7:
            pos += block_left
            continue
        length, kind = struct.unpack("<HB", data[pos + 4:pos + 7])
        payload = data[pos + 7:pos + 7 + length]
        pos += 7 + length
        if kind == 0:
            break
        pending += payload
        if kind in (1, 4):  # FULL or LAST
            record = pb.Record()
            record.ParseFromString(pending)
            records.append(record)
            pending = b""
    return records


def test_wandb_callback_offline_files(tmp_path, monkeypatch):
    pytest.importorskip("wandb")
    from ray.air.integrations.wandb import WandbLoggerCallback

    monkeypatch.setenv("WANDB_SILENT", "true")
    trials = _run(tmp_path, [WandbLoggerCallback(project="proj", mode="offline", log_config=True)])
    for trial in trials:
        [run_file] = glob.glob(os.path.join(trial.logdir, "wandb", f"offline-run-*-{trial.trial_id}",
                                            f"run-{trial.trial_id}.wandb"))
        records = _wandb_records(run_file)
        kinds = [r.WhichOneof("record_type") for r in records]
        assert "run" in kinds and "exit" in kinds
        run = next(r.run for r in records if r.WhichOneof("record_type") == "run")
        assert run.project == "proj" and run.display_name == str(trial)
        config = {i.key: json.loads(i.value_json) for i in run.config.update}
        assert config["x"] == trial.config["x"]
        history = []
        for r in records:
            if r.WhichOneof("record_type") == "history":
                items = {"/".join(i.nested_key) or i.key: json.loads(i.value_json) for i in r.history.item}
                history.append((items["_step"], items["loss"]))
        assert history == [(i, pytest.approx(trial.config["x"] / i)) for i in (1, 2, 3)]
