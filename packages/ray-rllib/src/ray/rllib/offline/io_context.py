from __future__ import annotations

from typing import Any, NamedTuple


class IOContext(NamedTuple):
    """Handed to ``input``/``output`` functions: where, and for which worker, to read/write."""

    log_dir: str | None
    config: dict
    worker_index: int
    worker: Any

    def default_sampler_input(self):
        """The worker's own sampler, as an InputReader (``input="sampler"``)."""
        return SamplerInput(self.worker.sampler)


class SamplerInput:
    """A sampler seen as an InputReader: ``next()`` returns its next batch."""

    def __init__(self, sampler):
        self.sampler = sampler

    def next(self):
        return self.sampler.get_data()
