"""End to end on a real single-node Ray cluster (`ray.init(num_cpus=2)`)."""

import json
import os

import pytest

import ray
from ray import tune
from ray.tune.error import TuneError
from ray.tune.schedulers import PopulationBasedTraining
from ray.tune.trial import Trial


@pytest.fixture(scope="module")
def ray_cluster():
    ray.init(num_cpus=2, num_gpus=1)  # one logical GPU: no device is needed to schedule it
    yield
    ray.shutdown()


def train_func(config, reporter):
    for i in range(5):
        reporter(mean_accuracy=config["momentum"] * (i + 1), timesteps_this_iter=10)


def test_quick_start_grid_search_runs_and_logs_every_trial(ray_cluster, tmp_path):
    trials = tune.run(
        train_func, name="quick-start", stop={"mean_accuracy": 0.5},
        config={"momentum": tune.grid_search([0.1, 0.2, 0.3])}, local_dir=str(tmp_path), verbose=0,
    )
    assert [t.status for t in trials] == [Trial.TERMINATED] * 3
    by_momentum = {t.config["momentum"]: t.last_result for t in trials}
    assert by_momentum[0.1]["training_iteration"] == 5  # never reached the stop value
    assert by_momentum[0.3]["training_iteration"] == 2  # 0.6 >= 0.5 at the 2nd report
    for trial in trials:
        assert trial.last_result["pid"] != os.getpid()
        lines = open(os.path.join(trial.logdir, "result.json")).read().splitlines()
        assert json.loads(lines[-1])["trial_id"] == trial.trial_id
        assert os.path.exists(os.path.join(trial.logdir, "progress.csv"))
        assert any(f.startswith("events.out.tfevents") for f in os.listdir(trial.logdir))
    # 3 trials on 2 CPUs: the third reused a finished trial's actor.
    assert len({t.last_result["pid"] for t in trials}) <= 2
    assert trials.get_best_config("training_iteration", mode="min") == {"momentum": 0.3}
    analysis = tune.ExperimentAnalysis(str(tmp_path / "quick-start"))
    assert analysis.get_best_config("training_iteration", mode="min") == {"momentum": 0.3}


class Checkpointed(tune.Trainable):
    def _setup(self, config):
        self.step = 0

    def _train(self):
        self.step += 1
        marker = self.config.get("crash_marker")
        if marker and self.step == 3 and not os.path.exists(marker):
            open(marker, "w").close()
            os._exit(1)  # the actor process dies, as on a lost node
        return {"step": self.step, "mean_loss": 1.0 / self.step}

    def _save(self, checkpoint_dir):
        return {"step": self.step}

    def _restore(self, state):
        self.step = state["step"]


def test_trial_restarts_from_its_last_checkpoint_after_the_actor_dies(ray_cluster, tmp_path):
    [trial] = tune.run(
        Checkpointed, name="recover", config={"crash_marker": str(tmp_path / "crashed")},
        stop={"training_iteration": 5}, checkpoint_freq=1, max_failures=2,
        local_dir=str(tmp_path), verbose=0,
    )
    assert trial.status == Trial.TERMINATED and trial.num_failures == 1
    assert trial.last_result["step"] == 5 and trial.last_result["training_iteration"] == 5
    assert os.path.exists(tmp_path / "crashed")


def test_checkpoint_at_end_and_restore_continue_a_trial(ray_cluster, tmp_path):
    [first] = tune.run(Checkpointed, name="ckpt", stop={"training_iteration": 2},
                       checkpoint_at_end=True, local_dir=str(tmp_path), verbose=0)
    assert first.checkpoint is not None and os.path.exists(first.checkpoint.value)
    [second] = tune.run(Checkpointed, name="restored", stop={"training_iteration": 4},
                        restore=first.checkpoint.value, local_dir=str(tmp_path), verbose=0)
    assert second.last_result["step"] == 4
    assert second.last_result["iterations_since_restore"] == 2


def test_failed_trials_raise_tune_error_with_the_cause(ray_cluster, tmp_path):
    def broken(config, reporter):
        raise ValueError("no such layer")

    with pytest.raises(TuneError, match="no such layer"):
        tune.run(broken, name="broken", local_dir=str(tmp_path), verbose=0)


class Walker(tune.Trainable):
    def _setup(self, config):
        self.theta = 0.0

    def _train(self):
        self.theta += self.config["lr"]
        return {"score": self.theta}

    def _save(self, checkpoint_dir):
        return {"theta": self.theta}

    def _restore(self, state):
        self.theta = state["theta"]

    def reset_config(self, new_config):
        return True  # paused and exploited trials reuse actors


def test_pbt_exploits_through_the_object_store_with_time_multiplexing(ray_cluster, tmp_path):
    pbt = PopulationBasedTraining(
        time_attr="training_iteration", metric="score", mode="max", perturbation_interval=2,
        hyperparam_mutations={"lr": [0.1, 0.5, 1.0]}, seed=0,
    )
    trials = tune.run(
        Walker, name="pbt", config={"lr": tune.grid_search([0.1, 0.2, 1.0])},
        stop={"training_iteration": 8}, scheduler=pbt, local_dir=str(tmp_path), verbose=0,
    )
    assert all(t.status == Trial.TERMINATED for t in trials)
    assert pbt._num_perturbations >= 1
    # The bottom trial was cloned and continued from its source's state: every trial
    # ends above what lr=0.1 alone reaches (which of the others PBT also picked
    # depends on the order results arrive in, so that is not asserted).
    assert min(t.last_result["score"] for t in trials) > 8 * 0.1 + 0.5


def test_client_lists_gets_adds_and_stops_trials(ray_cluster, tmp_path):
    import threading

    from ray.tune.web_server import TuneClient

    port = 4321 + os.getpid() % 1000
    seen = {}

    def forever(config, reporter):
        while True:
            reporter(x=1)

    def client_thread():
        import time

        client = TuneClient("127.0.0.1", port)
        for _ in range(200):
            try:
                trials = client.get_all_trials()["trials"]
                if trials and trials[0]["status"] == "RUNNING":
                    break
            except Exception:  # noqa: BLE001 - the server is not up yet
                pass
            time.sleep(0.05)
        seen["list"] = trials
        tid = trials[0]["id"]
        seen["get"] = client.get_trial(tid)["trial"]
        seen["added"] = client.add_trial("client", {"run": "forever", "stop": {"training_iteration": 2}})
        seen["stop"] = client.stop_trial(tid)

    tune.register_trainable("forever", forever)
    thread = threading.Thread(target=client_thread)
    thread.start()
    trials = tune.run("forever", name="client", with_server=True, server_port=port,
                      local_dir=str(tmp_path), verbose=0)
    thread.join(10)
    assert seen["get"]["trainable_name"] == "forever"
    assert len(seen["added"]["trials"]) == 1
    assert len(trials) == 2 and all(t.status == Trial.TERMINATED for t in trials)
    added = [t for t in trials if t.trial_id == seen["added"]["trials"][0]["id"]][0]
    assert added.last_result["training_iteration"] == 2


def test_trial_bigger_than_the_cluster_fails_with_advice(ray_cluster, tmp_path):
    with pytest.raises(TuneError, match="Trials did not complete"):
        tune.run(train_func, name="big", config={"momentum": 0.1},
                 resources_per_trial={"cpu": 3}, local_dir=str(tmp_path), verbose=0)


def test_pinned_objects_reach_every_trial(ray_cluster, tmp_path):
    from ray.tune.util import get_pinned_object, pin_in_object_store

    pinned = pin_in_object_store(list(range(1000)))

    def uses_pinned(config, reporter):
        reporter(total=sum(get_pinned_object(pinned)))

    [trial] = tune.run(uses_pinned, name="pinned", local_dir=str(tmp_path), verbose=0)
    assert trial.last_result["total"] == sum(range(1000))


def test_fractional_gpus_share_a_device_and_cpu_trials_see_none(ray_cluster, tmp_path):
    def report_devices(config, reporter):
        import time

        start = time.time()
        time.sleep(0.5)
        reporter(cuda=os.environ.get("CUDA_VISIBLE_DEVICES"), start=start, end=time.time())

    gpu_trials = tune.run(report_devices, name="gpu", num_samples=2, local_dir=str(tmp_path),
                          resources_per_trial={"cpu": 1, "gpu": 0.5}, verbose=0)
    first, second = (t.last_result for t in gpu_trials)
    assert first["cuda"] == second["cuda"] == "0"
    assert first["start"] < second["end"] and second["start"] < first["end"]  # concurrent
    [cpu_trial] = tune.run(report_devices, name="cpu", local_dir=str(tmp_path), verbose=0)
    assert cpu_trial.last_result["cuda"] == ""


def _uses_a_registered_env(config, reporter):
    from ray.tune import registry

    creator = registry.get(registry.ENV_CREATOR, "tune-test-registered-env")
    reporter(done=True, made=creator({"size": 7})["size"], pid=os.getpid())


def test_names_registered_in_the_driver_resolve_in_trial_actors(ray_cluster, tmp_path):
    from ray.tune import registry

    registry.register_env("tune-test-registered-env", lambda env_config: dict(env_config))
    [trial] = tune.run(_uses_a_registered_env, local_dir=str(tmp_path), verbose=0)
    assert trial.status == Trial.TERMINATED, trial.error_msg
    assert trial.last_result["made"] == 7
    assert trial.last_result["pid"] != os.getpid()  # resolved in another process
