"""A small ResNet trained with PyTorchTrainer on a synthetic image set.

The images are noise plus a class-dependent colour pattern, so accuracy climbs
quickly; the script reports loss, accuracy and images/s per epoch.

    python examples/sgd/resnet_synthetic.py [--num-replicas 2] [--epochs 3]
"""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F

import ray
from ray.sgd import PyTorchTrainer

NUM_CLASSES = 10


class BasicBlock(nn.Module):
    def __init__(self, in_planes, planes, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(in_planes, planes, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.shortcut = nn.Sequential()
        if stride != 1 or in_planes != planes:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_planes, planes, 1, stride=stride, bias=False), nn.BatchNorm2d(planes)
            )

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class ResNet(nn.Module):
    """ResNet-style: a stem and three stages of basic blocks (widths 16/32/64)."""

    def __init__(self, blocks_per_stage=1, num_classes=NUM_CLASSES):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16))
        layers, in_planes = [], 16
        for planes, stride in ((16, 1), (32, 2), (64, 2)):
            for i in range(blocks_per_stage):
                layers.append(BasicBlock(in_planes, planes, stride if i == 0 else 1))
                in_planes = planes
        self.stages = nn.Sequential(*layers)
        self.head = nn.Linear(64, num_classes)

    def forward(self, x):
        out = self.stages(F.relu(self.stem(x)))
        return self.head(F.adaptive_avg_pool2d(out, 1).flatten(1))


def synthetic_images(num_images, image_size, seed):
    generator = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, NUM_CLASSES, (num_images,), generator=generator)
    patterns = torch.randn(NUM_CLASSES, 3, 1, 1, generator=torch.Generator().manual_seed(7))
    images = torch.randn(num_images, 3, image_size, image_size, generator=generator)
    return torch.utils.data.TensorDataset(images * 0.5 + patterns[labels], labels)


def model_creator(config):
    return ResNet(blocks_per_stage=config.get("blocks_per_stage", 1))


def data_creator(config):
    size, n = config.get("image_size", 16), config.get("num_images", 512)
    return synthetic_images(n, size, seed=0), synthetic_images(n // 4, size, seed=1)


def optimizer_creator(model, config):
    return torch.optim.SGD(model.parameters(), lr=config.get("lr", 0.05), momentum=0.9)


def main(num_replicas=2, epochs=3, num_images=512, image_size=16, batch_size=32):
    ray.init(num_cpus=num_replicas, object_store_memory=200 * 1024**2)
    try:
        trainer = PyTorchTrainer(
            model_creator,
            data_creator,
            optimizer_creator=optimizer_creator,
            loss_creator=nn.CrossEntropyLoss,
            config={"num_images": num_images, "image_size": image_size},
            num_replicas=num_replicas,
            batch_size=batch_size,
        )
        history = []
        for _ in range(epochs):
            stats = trainer.train()
            stats["images_per_s"] = stats["num_samples"] / stats["time_s"]
            stats.update(trainer.validate())
            print(
                "epoch {epoch}: train_loss {train_loss:.3f} validation_accuracy "
                "{validation_accuracy:.3f} ({images_per_s:.0f} images/s)".format(**stats)
            )
            history.append(stats)
        trainer.shutdown()
        return history
    finally:
        ray.shutdown()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--num-replicas", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--num-images", type=int, default=512)
    parser.add_argument("--image-size", type=int, default=16)
    args = parser.parse_args()
    main(args.num_replicas, args.epochs, args.num_images, args.image_size)
