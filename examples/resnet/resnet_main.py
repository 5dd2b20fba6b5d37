"""Data-parallel ResNet training with actors and weight averaging (FEATURES EX-014).

One ``ResNetTrainActor`` per device (``--num-gpus`` GPUs, or ``--num-cpu-replicas``
CPU processes) trains a small PyTorch ResNet on its shard for a few steps from the
same weights; the driver averages the replicas' weights, broadcasts them and has a
test actor evaluate them. The documents train on CIFAR-10 tarballs; this version
uses scikit-learn's bundled 8x8 digits, upsampled to 16x16 (no downloads).

    python examples/resnet/resnet_main.py                                # full size, CPU
    python examples/resnet/resnet_main.py --num-gpus=1                   # one GPU actor
    python examples/resnet/resnet_main.py --rounds=2 --steps-per-round=5 # smoke
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import ray


def load_data(seed: int = 0):
    from sklearn.datasets import load_digits

    digits = load_digits()
    x = (digits.images / 16.0).astype(np.float32)
    x = x.repeat(2, axis=1).repeat(2, axis=2)[:, None]  # 1x16x16
    y = digits.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(x))
    cut = int(0.8 * len(x))
    return x[order[:cut]], y[order[:cut]], x[order[cut:]], y[order[cut:]]


def build_resnet(width: int = 16, blocks_per_stage: int = 1):
    import torch
    from torch import nn

    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.shortcut = (nn.Sequential() if stride == 1 and cin == cout else
                             nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout)))

        def forward(self, x):
            out = torch.relu(self.bn1(self.conv1(x)))
            return torch.relu(self.bn2(self.conv2(out)) + self.shortcut(x))

    layers = [nn.Conv2d(1, width, 3, 1, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU()]
    cin = width
    for stage, cout in enumerate([width, 2 * width, 4 * width]):
        for b in range(blocks_per_stage):
            layers.append(Block(cin, cout, 2 if stage > 0 and b == 0 else 1))
            cin = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, 10)]
    return nn.Sequential(*layers)


class _Replica:
    def __init__(self, device: str):
        import torch

        torch.set_num_threads(1)
        torch.manual_seed(0)
        self.torch = torch
        self.device = device
        self.model = build_resnet().to(device)

    def get_weights(self):
        return {k: v.detach().cpu().numpy() for k, v in self.model.state_dict().items()}

    def set_weights(self, weights):
        self.model.load_state_dict({k: self.torch.tensor(v) for k, v in weights.items()})


@ray.remote
class ResNetTrainActor(_Replica):
    def __init__(self, shard: int, num_shards: int, use_gpu: bool, batch_size: int = 64):
        super().__init__("cuda" if use_gpu else "cpu")
        x, y, _, _ = load_data()
        self.x, self.y = x[shard::num_shards], y[shard::num_shards]
        self.rng = np.random.default_rng(shard)
        self.batch_size = batch_size
        self.optimizer = self.torch.optim.SGD(self.model.parameters(), lr=0.1, momentum=0.9)

    def compute_steps(self, weights, num_steps: int):
        torch = self.torch
        self.set_weights(weights)
        self.model.train()
        for _ in range(num_steps):
            idx = self.rng.integers(0, len(self.x), self.batch_size)
            xs = torch.as_tensor(self.x[idx]).to(self.device)
            ys = torch.as_tensor(self.y[idx]).to(self.device)
            loss = torch.nn.functional.cross_entropy(self.model(xs), ys)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
        return self.get_weights(), float(loss)


@ray.remote
class ResNetTestActor(_Replica):
    def __init__(self):
        super().__init__("cpu")
        _, _, self.x, self.y = load_data()

    def accuracy(self, weights) -> float:
        self.set_weights(weights)
        self.model.eval()
        with self.torch.no_grad():
            predicted = self.model(self.torch.as_tensor(self.x)).argmax(1).numpy()
        return float((predicted == self.y).mean())


def average(weights_list):
    return {k: np.mean([w[k] for w in weights_list], axis=0).astype(weights_list[0][k].dtype)
            for k in weights_list[0]}


def train(num_replicas: int, use_gpu: bool, rounds: int, steps_per_round: int) -> list[dict]:
    train_cls = ResNetTrainActor.options(num_gpus=1) if use_gpu else ResNetTrainActor
    actors = [train_cls.remote(i, num_replicas, use_gpu) for i in range(num_replicas)]
    tester = ResNetTestActor.remote()
    weights = ray.get(tester.get_weights.remote())
    history = []
    start = time.perf_counter()
    for r in range(rounds):
        results = ray.get([a.compute_steps.remote(weights, steps_per_round) for a in actors])
        weights = average([w for w, _ in results])
        accuracy = ray.get(tester.accuracy.remote(weights))
        history.append({"round": r + 1, "train_loss": float(np.mean([loss for _, loss in results])),
                        "test_accuracy": accuracy, "seconds": time.perf_counter() - start})
        print(history[-1])
    for actor in [*actors, tester]:
        ray.kill(actor)
    return history


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description="Data-parallel ResNet with weight averaging.")
    parser.add_argument("--num-gpus", default=0, type=int, help="one training actor per GPU")
    parser.add_argument("--num-cpu-replicas", default=2, type=int, help="replicas when --num-gpus=0")
    parser.add_argument("--rounds", default=30, type=int)
    parser.add_argument("--steps-per-round", default=20, type=int)
    parser.add_argument("--redis-address", "--address", dest="address", default=None)
    args = parser.parse_args(argv)
    if not ray.is_initialized():
        ray.init(address=args.address, num_gpus=args.num_gpus or None)
    replicas = args.num_gpus or args.num_cpu_replicas
    return train(replicas, args.num_gpus > 0, args.rounds, args.steps_per_round)


if __name__ == "__main__":
    main()
