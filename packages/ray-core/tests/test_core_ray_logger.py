"""ray.init configures the `ray` logger (own handler, propagate=False) and never the root logger."""

import logging

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


def test_ray_init_does_not_touch_the_root_logger(clean_ray_logger):
    root = logging.getLogger()
    before = (list(root.handlers), root.level)
    ray.init(num_cpus=1, object_store_memory=64 * 1024**2, logging_level="warning")
    try:
        assert (list(root.handlers), root.level) == before
        assert clean_ray_logger.propagate is False
        assert clean_ray_logger.level == logging.WARNING
        assert any(isinstance(h, log_setup.RayLogHandler) for h in clean_ray_logger.handlers)
    finally:
        ray.shutdown()


def test_configure_logging_false_leaves_the_ray_logger_alone(clean_ray_logger):
    clean_ray_logger.handlers[:] = []
    clean_ray_logger.propagate = True
    ray.init(num_cpus=1, object_store_memory=64 * 1024**2, configure_logging=False)
    try:
        assert clean_ray_logger.handlers == [] and clean_ray_logger.propagate is True
    finally:
        ray.shutdown()
