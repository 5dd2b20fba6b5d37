"""A replica that dies or never joins: a clear error in time, or recovery."""

from __future__ import annotations

import os
import signal
import threading
import time

import numpy as np
import pytest
import torch

from ray.sgd import PyTorchTrainer, RendezvousTimeoutError, TrainingFailedError
from ray.sgd.weights import get_flat


class SlowDataset(torch.utils.data.Dataset):
    """Wraps a dataset; sleeps per item so an epoch lasts long enough to be cut."""

    def __init__(self, base, delay_s: float):
        self.base, self.delay_s = base, delay_s

    def __len__(self):
        return len(self.base)

    def __getitem__(self, index):
        time.sleep(self.delay_s)
        return self.base[index]


class CrashOnceDataset(torch.utils.data.Dataset):
    """The first replica to read ``crash_after`` items exits, once per marker file."""

    def __init__(self, base, marker: str, crash_after: int):
        self.base, self.marker, self.crash_after, self.served = base, marker, crash_after, 0

    def __len__(self):
        return len(self.base)

    def __getitem__(self, index):
        self.served += 1
        if self.served == self.crash_after:
            try:
                os.close(os.open(self.marker, os.O_CREAT | os.O_EXCL))
                os._exit(1)  # a hard crash of the replica process, mid-epoch
            except FileExistsError:
                pass
        return self.base[index]


def _regression(n):
    generator = torch.Generator().manual_seed(1)
    x = torch.randn(n, 4, generator=generator)
    return torch.utils.data.TensorDataset(x, x.sum(dim=1, keepdim=True) * 0.5 + 1)


def slow_data_creator(config):
    data = SlowDataset(_regression(2000), delay_s=0.002)
    return data, data


def crashing_data_creator(config):
    data = _regression(400)
    return CrashOnceDataset(data, config["crash_marker"], crash_after=40), data


def stalling_model_creator(config):
    try:
        os.close(os.open(config["stall_marker"], os.O_CREAT | os.O_EXCL))
        time.sleep(120)  # this replica never reaches the rendezvous
    except FileExistsError:
        pass
    return torch.nn.Linear(4, 1)


def test_killed_replica_surfaces_error_within_timeout(ray_2_cpus, regression_job):
    timeout_s = 5.0
    job = dict(regression_job, data_creator=slow_data_creator)
    trainer = PyTorchTrainer(**job, num_replicas=2, batch_size=8, timeout_s=timeout_s)
    killed_at = []

    def kill_replica_1():
        time.sleep(1.0)
        killed_at.append(time.monotonic())
        os.kill(trainer.pids[1], signal.SIGKILL)

    killer = threading.Thread(target=kill_replica_1)
    killer.start()
    with pytest.raises(TrainingFailedError) as info:
        trainer.train()
    surfaced_s = time.monotonic() - killed_at[0]
    killer.join()

    assert surfaced_s < timeout_s + 3.0
    assert "max_retries" in str(info.value)
    with pytest.raises(TrainingFailedError, match="no replicas"):
        trainer.train()  # the group is gone, and the message says what to do
    trainer.shutdown()


@pytest.mark.slow
def test_stalled_replica_surfaces_error_within_timeout(ray_2_cpus, regression_job):
    timeout_s = 4.0
    job = dict(regression_job, data_creator=slow_data_creator)
    trainer = PyTorchTrainer(**job, num_replicas=2, batch_size=8, timeout_s=timeout_s)
    stalled_at = []

    def stall_replica_1():
        time.sleep(1.0)
        stalled_at.append(time.monotonic())
        os.kill(trainer.pids[1], signal.SIGSTOP)  # alive, but silent

    staller = threading.Thread(target=stall_replica_1)
    staller.start()
    try:
        with pytest.raises(TrainingFailedError, match="timeout_s=4.0"):
            trainer.train()
        surfaced_s = time.monotonic() - stalled_at[0]
    finally:
        staller.join()
        try:
            os.kill(trainer.pids[1], signal.SIGKILL)
        except ProcessLookupError:
            pass  # the trainer already killed the group
    assert surfaced_s < timeout_s + 5.0
    trainer.shutdown()


@pytest.mark.slow
def test_replica_crash_mid_epoch_recovers_to_uninterrupted_result(
    ray_2_cpus, regression_job, tmp_path
):
    config = dict(regression_job["config"], crash_marker=str(tmp_path / "crashed"))
    job = dict(regression_job, data_creator=crashing_data_creator, config=config)
    trainer = PyTorchTrainer(**job, num_replicas=2, batch_size=8, timeout_s=10)
    trainer.train(num_steps=2)
    before = trainer.save(str(tmp_path / "before.pt"))
    first_pids = list(trainer.pids)

    recovered = trainer.train(num_steps=20, max_retries=1)  # a replica exits at step 10
    assert os.path.exists(config["crash_marker"])
    assert trainer.pids != first_pids  # a new group
    recovered_weights = trainer.foreach_model(get_flat)
    assert np.array_equal(*recovered_weights)

    trainer.restore(before)
    uninterrupted = trainer.train(num_steps=20)
    assert recovered["train_loss"] == uninterrupted["train_loss"]
    assert np.array_equal(recovered_weights[0], trainer.foreach_model(get_flat)[0])
    trainer.shutdown()


@pytest.mark.slow
def test_replica_that_never_joins_raises_rendezvous_timeout(ray_2_cpus, tmp_path):
    config = {"stall_marker": str(tmp_path / "stalled")}
    start = time.monotonic()
    with pytest.raises(RendezvousTimeoutError, match="timeout_s=3"):
        PyTorchTrainer(
            stalling_model_creator,
            lambda config: (_regression(16), _regression(16)),
            config=config,
            num_replicas=2,
            batch_size=4,
            timeout_s=3.0,
        )
    # Actor start-up (seconds on a loaded 2-core machine) is included in this bound.
    assert time.monotonic() - start < 3.0 + 45.0
