from __future__ import annotations


class EnvContext(dict):
    """The ``env_config`` dict handed to env creators, plus where the env runs.

    ``worker_index`` is 0 on the driver and 1..N on remote workers;
    ``vector_index`` numbers the envs inside one worker.
    """

    def __init__(self, env_config: dict, worker_index: int, vector_index: int = 0,
                 remote: bool = False):
        super().__init__(env_config or {})
        self.worker_index = worker_index
        self.vector_index = vector_index
        self.remote = remote

    def copy_with_overrides(self, env_config=None, worker_index=None, vector_index=None,
                            remote=None) -> EnvContext:
        return EnvContext(
            dict(self) if env_config is None else env_config,
            self.worker_index if worker_index is None else worker_index,
            self.vector_index if vector_index is None else vector_index,
            self.remote if remote is None else remote,
        )

    def __reduce__(self):
        return (EnvContext, (dict(self), self.worker_index, self.vector_index, self.remote))
