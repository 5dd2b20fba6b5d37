"""Tune + a Keras-style training loop with a reporting callback (FEATURES EX-044
``tune_mnist_keras``), in plain PyTorch.

The documents' example converts the Keras MNIST script by passing a ``TuneReporterCallback``
to ``model.fit(..., callbacks=[...])``. Here ``fit`` is a few lines of PyTorch that call
Keras's callback hooks (``on_train_begin``, ``on_epoch_end(epoch, logs)``,
``on_train_end``), and the callback hands each epoch's ``logs`` to Tune's reporter. The
model is the digits CNN of mnist_pytorch.py; AsyncHyperBand stops weak trials early.

    python examples/tune/tune_mnist_keras.py                 # full size: 8 trials, up to 10 epochs
    python examples/tune/tune_mnist_keras.py --smoke-test    # 2 trials x 2 epochs
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import cloudpickle
import mnist_pytorch
import numpy as np

from ray import tune
from ray.tune.schedulers import AsyncHyperBandScheduler

cloudpickle.register_pickle_by_value(mnist_pytorch)  # workers lack this directory on their path


class Callback:
    """The Keras callback hooks ``fit`` calls (override the ones you need)."""

    def on_train_begin(self, logs=None):
        pass

    def on_epoch_end(self, epoch: int, logs=None):
        pass

    def on_train_end(self, logs=None):
        pass


class TuneReporterCallback(Callback):
    """Reports Keras's per-epoch ``logs`` to Tune (``val_acc`` as ``mean_accuracy``)."""

    def __init__(self, reporter):
        self.reporter = reporter

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        self.reporter(mean_accuracy=logs["val_acc"], mean_loss=logs["loss"], epochs_done=epoch + 1)


def fit(net, optimizer, data, epochs: int, batch_size: int, callbacks=()):
    """``model.fit(x, y, validation_data=...)`` in Keras's shape: train, validate, call back."""
    import torch

    x, y, x_val, y_val = data
    rng = np.random.default_rng(0)
    for cb in callbacks:
        cb.on_train_begin()
    logs = {}
    for epoch in range(epochs):
        mnist_pytorch.train_epoch(net, optimizer, x, y, batch_size, rng)
        with torch.no_grad():
            loss = float(torch.nn.functional.cross_entropy(net(torch.as_tensor(x)), torch.as_tensor(y)))
        logs = {"loss": loss, "val_acc": mnist_pytorch.test_accuracy(net, x_val, y_val)}
        for cb in callbacks:
            cb.on_epoch_end(epoch, logs)
    for cb in callbacks:
        cb.on_train_end(logs)
    return logs


def train_mnist_keras_style(config, reporter):
    import torch

    torch.set_num_threads(1)
    torch.manual_seed(0)
    net = mnist_pytorch.net_from_config(config)
    optimizer = torch.optim.SGD(net.parameters(), lr=config["lr"], momentum=config["momentum"])
    fit(net, optimizer, mnist_pytorch.load_digits_split(), epochs=config["epochs"],
        batch_size=config["batch_size"], callbacks=[TuneReporterCallback(reporter)])


def main(smoke_test: bool = False, local_dir: str | None = None):
    epochs = 2 if smoke_test else 10
    scheduler = AsyncHyperBandScheduler(time_attr="training_iteration", metric="mean_accuracy", mode="max",
                                        max_t=epochs, grace_period=2)
    return tune.run(
        train_mnist_keras_style,
        name="tune_mnist_keras",
        scheduler=scheduler,
        num_samples=2 if smoke_test else 8,
        stop={"mean_accuracy": 0.99, "training_iteration": epochs},
        config={
            "lr": tune.sample_from(lambda spec: float(np.random.uniform(0.01, 0.1))),
            "momentum": tune.sample_from(lambda spec: float(np.random.uniform(0.1, 0.9))),
            "hidden": tune.sample_from(lambda spec: int(np.random.randint(32, 128))),
            "batch_size": 64,
            "epochs": epochs,
        },
        local_dir=local_dir,
        verbose=0 if smoke_test else 1,
    )


if __name__ == "__main__":
    mnist_pytorch.run_cli(main)
