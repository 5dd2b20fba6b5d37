"""Ray 2.x code (Modin's Ray engine) reads get_runtime_context().runtime_env after init."""

import ray


def test_runtime_env_is_an_empty_dict_in_driver_and_tasks():
    ray.init(num_cpus=1)
    try:

        @ray.remote
        def env_in_task():
            return ray.get_runtime_context().runtime_env

        assert ray.get_runtime_context().runtime_env == {}
        assert ray.get(env_in_task.remote()) == {}
        assert ray.get_runtime_context().runtime_env.get("env_vars", {}) == {}
    finally:
        ray.shutdown()
