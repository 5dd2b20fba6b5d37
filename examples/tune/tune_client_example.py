"""Talking to a running experiment with TuneClient (FEATURES EX-045, the documents'
client-API notebook as a script): the experiment runs with ``with_server=True``; a
client, here in a thread (normally another process or a notebook), lists the trials,
adds one and stops one while the experiment is running.

    python examples/tune/tune_client_example.py               # full size: 20 iterations per trial
    python examples/tune/tune_client_example.py --smoke-test
"""

from __future__ import annotations

import argparse
import socket
import threading
import time

import ray
from ray import tune
from ray.tune.web_server import TuneClient


def slow_trainable(config, reporter):
    for step in range(config["iterations"]):
        time.sleep(config["sleep_s"])
        reporter(mean_accuracy=config["rate"] * (step + 1), timesteps_total=step + 1)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def drive_with_client(port: int, log: list, iterations: int, sleep_s: float, timeout_s: float = 60.0) -> None:
    """What a user types in another process: list, add and stop trials."""
    client = TuneClient("127.0.0.1", port)
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            trials = client.get_all_trials()["trials"]
            if any(t["status"] == "RUNNING" for t in trials):
                break
        except Exception:  # the server is not up yet
            pass
        if time.monotonic() > deadline:
            log.append(("error", "no running trial seen"))
            return
        time.sleep(0.2)
    log.append(("listed", sorted(t["id"] for t in trials)))
    spec = {"run": "slow_trainable",
            "config": {"rate": 0.5, "iterations": iterations, "sleep_s": sleep_s},
            "stop": {"training_iteration": iterations}}
    log.append(("added", client.add_trial("from_client", spec)))
    first = trials[0]["id"]
    log.append(("stopped", first, client.stop_trial(first)))
    log.append(("final", client.get_trial(first)["trial"]["status"]))


def main(smoke_test: bool = False, local_dir: str | None = None):
    iterations, sleep_s = (8, 0.25) if smoke_test else (20, 0.5)
    tune.register_trainable("slow_trainable", slow_trainable)
    port = free_port()
    log: list = []
    client = threading.Thread(target=drive_with_client, args=(port, log, iterations, sleep_s), daemon=True)
    client.start()
    analysis = tune.run(
        "slow_trainable",
        name="tune-client",
        config={"rate": tune.grid_search([0.1, 0.2]), "iterations": iterations, "sleep_s": sleep_s},
        stop={"training_iteration": iterations},
        with_server=True,
        server_port=port,
        local_dir=local_dir,
        verbose=1,
    )
    client.join(timeout=30)
    for entry in log:
        print(*entry)
    return analysis, log


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--smoke-test", action="store_true")
    args = parser.parse_args()
    ray.init()
    main(args.smoke_test)
