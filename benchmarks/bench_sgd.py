"""PyTorchTrainer against a hand-written torch.distributed DDP loop; prints JSON.

Both run the same job (an MLP regression, gloo, ``--replicas`` processes with
one torch thread each, the same DistributedSampler order and global batch).
Epochs alternate between the two so machine noise hits both alike; the report
gives median epoch times, their ratio (trainer / hand-written: the trainer's
overhead, timed from the driver, including the Ray call; also the replicas'
own loop time) and the setup times
(trainer: constructor after ray.init; hand-written: spawn to DDP ready).

    .venv/bin/python benchmarks/bench_sgd.py [--quick]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def make_model(config):
    torch.manual_seed(0)
    width = config["width"]
    return torch.nn.Sequential(
        torch.nn.Linear(32, width),
        torch.nn.ReLU(),
        torch.nn.Linear(width, width),
        torch.nn.ReLU(),
        torch.nn.Linear(width, 1),
    )


def make_data(config):
    generator = torch.Generator().manual_seed(1)
    x = torch.randn(config["num_samples"], 32, generator=generator)
    y = x[:, :8].sum(dim=1, keepdim=True)
    return TensorDataset(x, y), TensorDataset(x[:256], y[:256])


def make_optimizer(model, config):
    return torch.nn.MSELoss(), torch.optim.SGD(model.parameters(), lr=0.01)


def handwritten_worker(rank, world, port, config, commands, results):
    """The loop a user would write by hand: DDP + DistributedSampler."""
    torch.set_num_threads(1)
    dist.init_process_group(
        "gloo",
        init_method=f"tcp://127.0.0.1:{port}",
        rank=rank,
        world_size=world,
        timeout=datetime.timedelta(seconds=60),
    )
    model = DistributedDataParallel(make_model(config))
    criterion, optimizer = make_optimizer(model, config)
    train_set, _ = make_data(config)
    sampler = DistributedSampler(train_set, num_replicas=world, rank=rank, seed=0)
    loader = DataLoader(train_set, batch_size=config["batch_size"] // world, sampler=sampler)
    results.put(("ready", rank, time.time()))
    epoch = 0
    while commands[rank].get() == "epoch":
        dist.barrier()
        start = time.perf_counter()
        sampler.set_epoch(epoch)
        for x, y in loader:
            loss = criterion(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        dist.barrier()
        results.put(("epoch", rank, time.perf_counter() - start))
        epoch += 1
    dist.destroy_process_group()


def free_port():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a smaller job (CI smoke)")
    parser.add_argument("--replicas", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=12)
    args = parser.parse_args()
    config = {
        "width": 128 if args.quick else 256,
        "num_samples": 2048 if args.quick else 8192,
        "batch_size": 64,
    }
    epochs = 2 if args.quick else args.epochs
    world = args.replicas
    report = {"python": sys.version.split()[0], "cpus": os.cpu_count(), "job": config}

    ctx = mp.get_context("spawn")
    commands, results = [ctx.Queue() for _ in range(world)], ctx.Queue()
    start = time.time()
    port = free_port()
    procs = [
        ctx.Process(target=handwritten_worker, args=(r, world, port, config, commands, results))
        for r in range(world)
    ]
    for p in procs:
        p.start()
    ready = [results.get(timeout=120) for _ in range(world)]
    report["handwritten_setup_s"] = max(t for _, _, t in ready) - start

    import ray
    from ray.sgd import PyTorchTrainer

    ray.init(num_cpus=world, object_store_memory=200 * 1024**2)
    start = time.perf_counter()
    trainer = PyTorchTrainer(
        make_model,
        make_data,
        make_optimizer,
        config=config,
        num_replicas=world,
        batch_size=config["batch_size"],
    )
    report["trainer_setup_s"] = time.perf_counter() - start

    handwritten, trained, trained_inside = [], [], []
    for _ in range(epochs):
        for queue in commands:
            queue.put("epoch")
        handwritten.append(max(results.get(timeout=600)[2] for _ in range(world)))
        start = time.perf_counter()
        stats = trainer.train()
        trained.append(time.perf_counter() - start)
        trained_inside.append(stats["time_s"])
    for queue in commands:
        queue.put("stop")
    for p in procs:
        p.join()
    trainer.shutdown()
    ray.shutdown()

    # The first epoch of each warms caches and allocators; it is reported, not compared.
    report["handwritten_epoch_s"] = handwritten
    report["trainer_epoch_s"] = trained
    report["handwritten_median_s"] = statistics.median(handwritten[1:] or handwritten)
    report["trainer_median_s"] = statistics.median(trained[1:] or trained)
    report["trainer_inside_median_s"] = statistics.median(trained_inside[1:] or trained_inside)
    report["trainer_over_handwritten"] = report["trainer_median_s"] / report["handwritten_median_s"]
    # The replicas' own loop time (no Ray call): isolates the training loop itself.
    report["trainer_loop_over_handwritten"] = (
        report["trainer_inside_median_s"] / report["handwritten_median_s"]
    )
    report["steps_per_epoch"] = stats["batch_count"]
    report["final_train_loss"] = stats["train_loss"]
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
