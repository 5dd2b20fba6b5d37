"""ray.init configures the `ray` logger (own handler, propagate=False) and never the root logger."""

import json
import logging
import subprocess
import sys

import pytest

import ray
from ray._private import log_setup


@pytest.fixture
def clean_ray_logger():
    logger = logging.getLogger("ray")
    saved = (list(logger.handlers), logger.level, logger.propagate)
    yield logger
    logger.handlers[:], logger.level, logger.propagate = saved[0], saved[1], saved[2]


def test_configure_is_idempotent_and_leaves_the_root_logger_alone(clean_ray_logger):
    root = logging.getLogger()
    before = (list(root.handlers), root.level)
    log_setup.configure_ray_logger("debug", "%(message)s")
    log_setup.configure_ray_logger(logging.INFO)
    assert (list(root.handlers), root.level) == before
    ours = [h for h in clean_ray_logger.handlers if isinstance(h, log_setup.RayLogHandler)]
    assert len(ours) == 1 and clean_ray_logger.level == logging.INFO
    assert clean_ray_logger.propagate is False


def test_ray_messages_reach_stderr_once_and_not_the_users_handlers(clean_ray_logger, capsys):
    seen = []

    class Collect(logging.Handler):
        def emit(self, record):
            seen.append(record.getMessage())

    root = logging.getLogger()
    collector = Collect()
    root.addHandler(collector)
    try:
        log_setup.configure_ray_logger("info", "RAY %(message)s")
        logging.getLogger("ray.tune.something").info("from ray")
        logging.getLogger("user.module").warning("from the user")
    finally:
        root.removeHandler(collector)
    err = capsys.readouterr().err
    assert err.count("RAY from ray") == 1
    assert seen == ["from the user"]


def test_bad_logging_level_is_an_error_naming_the_parameter():
    with pytest.raises(ValueError, match="logging_level"):
        log_setup.parse_level("loud")
    with pytest.raises(ValueError, match="logging_level"):
        ray.init(num_cpus=1, logging_level="loud")
    assert not ray.is_initialized()


_FRESH_DRIVER = """
import json, logging
import ray

root = logging.getLogger()
before = {"handlers": [repr(h) for h in root.handlers], "level": root.level}
ray.init(num_cpus=1, object_store_memory=64 * 1024**2, logging_level="info")
try:
    after = {"handlers": [repr(h) for h in root.handlers], "level": root.level}
    ray_logger = logging.getLogger("ray")
    logging.getLogger("ray.check").info("RAY-LOGGER-STILL-PRINTS")
    logging.getLogger("user.module").info("USER-INFO-STAYS-SILENT")
finally:
    ray.shutdown()
print(json.dumps({"before": before, "after": after, "propagate": ray_logger.propagate}))
"""


def test_ray_init_leaves_a_fresh_drivers_root_logger_without_handlers():
    # A fresh process: pytest puts handlers on the root logger of its own, so a
    # logging.basicConfig() inside ray.init would go unnoticed in-process.
    proc = subprocess.run([sys.executable, "-c", _FRESH_DRIVER], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen["before"] == {"handlers": [], "level": logging.WARNING}
    assert seen["after"] == seen["before"], proc.stderr[-3000:]
    assert seen["propagate"] is False
    assert proc.stderr.count("RAY-LOGGER-STILL-PRINTS") == 1
    assert "USER-INFO-STAYS-SILENT" not in proc.stderr + proc.stdout


def test_configure_logging_false_leaves_the_ray_logger_alone(clean_ray_logger):
    clean_ray_logger.handlers[:] = []
    clean_ray_logger.propagate = True
    ray.init(num_cpus=1, object_store_memory=64 * 1024**2, configure_logging=False)
    try:
        assert clean_ray_logger.handlers == [] and clean_ray_logger.propagate is True
    finally:
        ray.shutdown()
