"""RunConfig(storage_path=URI): the experiment is uploaded (fsspec memory://, S3 on moto's
server through pyarrow.fs) and Tuner.restore(URI) continues it, also after the driver
was SIGKILLed mid-run."""

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time

import psutil
import pytest

import ray
from ray import train, tune
from ray.train import Checkpoint

pytest.importorskip("pyarrow")
pytest.importorskip("fsspec")


def counting(config):
    """Counts to 3 from its checkpoint, one checkpoint per step."""
    start = 0
    checkpoint = train.get_checkpoint()
    if checkpoint is not None:
        with checkpoint.as_directory() as d:
            start = int(open(os.path.join(d, "step")).read())
    for step in range(start + 1, 4):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "step"), "w") as f:
                f.write(str(step))
            train.report({"score": config["x"] * step, "step": step},
                         checkpoint=Checkpoint.from_directory(d))


@pytest.fixture
def ray2():
    ray.init(num_cpus=2)
    yield
    ray.shutdown()


def test_memory_uri_uploads_everything_and_restores(tmp_path, monkeypatch, ray2):
    import fsspec

    monkeypatch.setenv("TUNE_RESULT_DIR", str(tmp_path / "staging"))
    uri = f"memory://bucket{os.getpid()}/exps"
    tuner = tune.Tuner(counting, param_space={"x": tune.grid_search([1, 2])},
                       tune_config=tune.TuneConfig(metric="score", mode="max"),
                       run_config=tune.RunConfig(name="exp", storage_path=uri, verbose=0,
                                                 checkpoint_config=tune.CheckpointConfig(num_to_keep=2)))
    results = tuner.fit()
    assert results.experiment_path == f"{uri}/exp" == tuner.experiment_path
    fs = fsspec.filesystem("memory")
    remote = sorted(p.split("/exp/", 1)[1] for p in fs.find(f"/bucket{os.getpid()}/exps/exp"))
    assert "tuner.pkl" in remote and any(p.startswith("experiment_state-") for p in remote)
    for result in results:
        trial_dir = result.path.rsplit("/", 1)[1]
        for name in ("result.json", "progress.csv", "params.json"):
            assert f"{trial_dir}/{name}" in remote
        # num_to_keep=2: the first checkpoint was deleted remotely too.
        kept = sorted({p.split("/")[1] for p in remote if p.startswith(f"{trial_dir}/checkpoint_")})
        assert kept == ["checkpoint_000002", "checkpoint_000003"]
        assert result.filesystem is not None and result.checkpoint.filesystem is not None
        with result.checkpoint.as_directory() as d:
            assert open(os.path.join(d, "step")).read() == "3"
    assert sorted(results.get_dataframe()["score"]) == [3, 6]
    # Restore from the remote copy alone.
    import shutil

    shutil.rmtree(tmp_path / "staging")
    assert tune.Tuner.can_restore(f"{uri}/exp")
    again = tune.Tuner.restore(f"{uri}/exp", counting).get_results()
    assert again.get_best_result().metrics["score"] == 6


def test_bad_storage_uri_names_the_problem(tmp_path):
    with pytest.raises(tune.TuneError, match="nosuchscheme"):
        tune.Tuner(counting, run_config=tune.RunConfig(storage_path="nosuchscheme://x/y")).fit()


# -- S3 on moto's server, with the driver killed -------------------------------------
@pytest.fixture
def s3_uri(monkeypatch):
    from moto.server import ThreadedMotoServer

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port)
    server.start()
    for key, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                       "AWS_DEFAULT_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true"}.items():
        monkeypatch.setenv(key, value)
    import boto3

    boto3.client("s3", endpoint_url=f"http://127.0.0.1:{port}").create_bucket(Bucket="tune")
    yield f"s3://tune/exps?endpoint_override=127.0.0.1:{port}&scheme=http&region=us-east-1", port
    server.stop()


TRAINABLE = textwrap.dedent('''
    import os, tempfile, time
    from ray import train
    from ray.train import Checkpoint

    def stepper(config):
        """Six steps; every step is recorded in a ledger outside the experiment."""
        start = 0
        checkpoint = train.get_checkpoint()
        if checkpoint is not None:
            with checkpoint.as_directory() as d:
                start = int(open(os.path.join(d, "step")).read())
        for step in range(start + 1, 7):
            time.sleep(0.0 if config["x"] == 0 else 0.4)
            with open(os.path.join(config["ledger"], f"x{config['x']}"), "a") as f:
                f.write(f"{step}\\n")
            with tempfile.TemporaryDirectory() as d:
                with open(os.path.join(d, "step"), "w") as f:
                    f.write(str(step))
                train.report({"step": step}, checkpoint=Checkpoint.from_directory(d))
''')

DRIVER = textwrap.dedent('''
    import sys
    sys.path.insert(0, {here!r})
    import ray
    from ray import tune
    from killable import stepper
    ray.init(num_cpus=2)
    tune.Tuner(stepper, param_space={{"x": tune.grid_search([0, 1, 2]), "ledger": {ledger!r}}},
               run_config=tune.RunConfig(name="killed", storage_path={uri!r}, verbose=0,
                                         sync_config=tune.SyncConfig(sync_period=0.5))).fit()
''')


@pytest.mark.slow
def test_s3_restore_after_sigkill_loses_no_trial_and_reruns_nothing_checkpointed(
        tmp_path, monkeypatch, s3_uri):
    import boto3

    uri, port = s3_uri
    ledger = tmp_path / "ledger"
    ledger.mkdir()
    (tmp_path / "killable.py").write_text(TRAINABLE)
    script = tmp_path / "driver.py"
    script.write_text(DRIVER.format(here=str(tmp_path), ledger=str(ledger), uri=uri))
    monkeypatch.setenv("TUNE_RESULT_DIR", str(tmp_path / "staging1"))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        p for p in (str(tmp_path), os.environ.get("PYTHONPATH")) if p))
    s3 = boto3.client("s3", endpoint_url=f"http://127.0.0.1:{port}")

    def remote_state():
        keys = [o["Key"] for o in s3.list_objects_v2(Bucket="tune").get("Contents", [])]
        states = [k for k in keys if k.startswith("exps/killed/experiment_state-")]
        if not states:
            return None
        return json.loads(s3.get_object(Bucket="tune", Key=states[-1])["Body"].read())

    proc = subprocess.Popen([sys.executable, str(script)], start_new_session=True)
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            time.sleep(0.2)
            assert proc.poll() is None, "the driver exited before it was killed"
            state = remote_state()
            if state is None:
                continue
            records = state["checkpoints"]
            done = [r for r in records if r["status"] == "TERMINATED"]
            mid = [r for r in records if r["status"] == "RUNNING" and r["checkpoint"]
                   and 2 <= r["checkpoint"]["result"]["step"] < 6]
            if done and mid:
                break
        else:
            pytest.fail("the driver never uploaded a state with a finished and a checkpointed trial")
    finally:
        doomed = psutil.Process(proc.pid).children(recursive=True)
        os.killpg(proc.pid, signal.SIGKILL)
        for child in doomed:
            try:
                child.kill()
            except psutil.Error:
                pass
        proc.wait()

    state = remote_state()
    checkpointed = {}
    for record in state["checkpoints"]:
        x = record["last_result"].get("config", {}).get("x")
        if record["checkpoint"]:
            checkpointed[x] = record["checkpoint"]["result"]["step"]
    finished_before = {r["trial_id"] for r in state["checkpoints"] if r["status"] == "TERMINATED"}

    # A new driver, another staging directory: everything comes from S3.
    monkeypatch.setenv("TUNE_RESULT_DIR", str(tmp_path / "staging2"))
    sys.path.insert(0, str(tmp_path))
    ray.init(num_cpus=2)
    try:
        from killable import stepper

        assert tune.Tuner.can_restore(uri.replace("/exps?", "/exps/killed?"))
        results = tune.Tuner.restore(uri.replace("/exps?", "/exps/killed?"), stepper).fit()
    finally:
        ray.shutdown()
        sys.path.remove(str(tmp_path))
    assert len(results) == 3 and results.num_errors == 0
    assert all(r.metrics["step"] == 6 for r in results)
    for x in (0, 1, 2):
        steps = [int(s) for s in (ledger / f"x{x}").read_text().split()]
        # Every step ran; a step ran twice only if it came after the last uploaded checkpoint.
        assert sorted(set(steps)) == [1, 2, 3, 4, 5, 6]
        last = checkpointed.get(x, 0)
        repeated = {s for s in steps if steps.count(s) > 1}
        assert all(s > last for s in repeated), (x, steps, last)
    ids_after = {r.path.rsplit("_", 1)[-1] for r in results}
    assert finished_before <= ids_after
