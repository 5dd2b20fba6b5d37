"""Resume after the driver was killed, on real Ray clusters (a killed one, then a new one)."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import psutil
import pytest

import ray
from ray import tune
from ray.tune import experiment_state as ES
from ray.tune.trial import Trial

TRAINABLE = textwrap.dedent('''
    import time
    from ray import tune

    class Slow(tune.Trainable):
        def _setup(self, config):
            self.step = 0

        def _train(self):
            self.step += 1
            time.sleep(0.0 if self.config["n"] == 0 else 0.2)
            return {"step": self.step}

        def _save(self, checkpoint_dir):
            return {"step": self.step}

        def _restore(self, state):
            self.step = state["step"]
''')

DRIVER = textwrap.dedent('''
    import sys
    sys.path.insert(0, {here!r})
    import ray
    from ray import tune
    from resumable_ray import Slow
    ray.init(num_cpus=1)
    tune.run(Slow, name="resumable", config={{"n": tune.grid_search([0, 1, 2])}},
             stop={{"training_iteration": 10}}, checkpoint_freq=1, local_dir={local_dir!r},
             verbose=0)
''')


def _descendants(pid):
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []


@pytest.mark.slow
def test_resume_after_killing_a_ray_driver(tmp_path, monkeypatch):
    (tmp_path / "resumable_ray.py").write_text(TRAINABLE)
    local_dir = str(tmp_path / "results")
    script = tmp_path / "driver.py"
    script.write_text(DRIVER.format(here=str(tmp_path), local_dir=local_dir))
    # Ray workers import the trainable's module by name: they need it on their path.
    path = os.pathsep.join(p for p in (str(tmp_path), os.environ.get("PYTHONPATH")) if p)
    monkeypatch.setenv("PYTHONPATH", path)
    proc = subprocess.Popen([sys.executable, str(script)], start_new_session=True)
    exp_dir = os.path.join(local_dir, "resumable")
    deadline = time.monotonic() + 90
    try:
        while time.monotonic() < deadline:
            time.sleep(0.2)
            if ES.find_state_file(exp_dir) is None:
                continue
            states = ES.load_state(exp_dir)["checkpoints"]
            running = [s for s in states if s["status"] == "RUNNING" and s["checkpoint"]]
            if any(s["status"] == "TERMINATED" for s in states) and running:
                if running[0]["checkpoint"]["result"]["training_iteration"] >= 2:
                    break
        else:
            pytest.fail("the driver never reached a resumable state")
    finally:
        doomed = _descendants(proc.pid)
        os.killpg(proc.pid, signal.SIGKILL)
        for child in doomed:  # Ray processes that left the driver's session
            try:
                child.kill()
            except psutil.Error:
                pass
        proc.wait()

    before = {s["trial_id"]: s for s in ES.load_state(exp_dir)["checkpoints"]}
    sys.path.insert(0, str(tmp_path))
    ray.init(num_cpus=2)
    try:
        from resumable_ray import Slow

        trials = tune.run(Slow, name="resumable", config={"n": tune.grid_search([0, 1, 2])},
                          stop={"training_iteration": 10}, checkpoint_freq=1, local_dir=local_dir,
                          verbose=0, resume=True)
    finally:
        ray.shutdown()
        sys.path.remove(str(tmp_path))
    assert len(trials) == 3
    assert all(t.status == Trial.TERMINATED and t.last_result["step"] == 10 for t in trials)
    for trial in trials:
        old = before[trial.trial_id]
        if old["status"] == "TERMINATED":
            assert trial.results_count == old["results_count"]
        elif old["status"] == "RUNNING":
            rows = [json.loads(line) for line in open(os.path.join(trial.logdir, "result.json"))]
            restored_at = old["checkpoint"]["result"]["training_iteration"]
            assert any(r["iterations_since_restore"] == 1 and r["training_iteration"] == restored_at + 1
                       for r in rows)
