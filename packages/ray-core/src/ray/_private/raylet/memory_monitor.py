"""The memory monitor: when the node runs out of memory, kill the newest retriable work.

Without it, a task that allocates past the machine's memory takes the node down, or
the kernel's OOM killer picks a process at random (the raylet, Redis, a driver). Ray
2.x instead watches the node's memory and kills one worker before the kernel has to,
choosing the one whose loss costs least. This module is that decision, kept pure:

* ``MemoryMonitor`` gets events in (``sampled(usage, workers)``, ``worker_exited``)
  and returns a ``Kill`` or ``None``: nothing reads ``/proc`` or sends signals here.
  Its rule (Ray's ``retriable_lifo`` policy): over the threshold, kill the most
  recently started *retriable task*; if there is none, the most recently started
  *actor with restarts left*; only then the newest of the rest (whose owners will see
  ``OutOfMemoryError``). It kills one worker at a time and waits for it to exit (or
  ``kill_timeout_s``) before choosing another, so one spike does not empty the node.
* ``read_memory_usage`` reads the node's usage: the cgroup's limit and usage when the
  raylet runs in a memory-limited cgroup (v2 or v1), else ``/proc/meminfo``
  (``MemTotal - MemAvailable``), the same figures Ray uses.
* Owners say in each lease request whether the work is retriable (a task's OOM retries
  left, an actor's restarts left: ``LeaseRequest.retriable``), which is what
  ``LeasedWorker.retriable`` holds.
* ``messages.WorkerKilled`` is what the raylet records before it kills a worker for
  memory and answers to ``get_worker_death_cause``: the task's owner then retries it on
  the OOM budget (``task_oom_retries``, -1 = unlimited, with backoff
  ``task_oom_retry_delay_base_ms``; never for ``max_retries=0``) or raises
  ``OutOfMemoryError``, and an actor's owner restarts it (``max_restarts``) or marks it
  dead with the monitor's message (``ActorDiedError``).

Config (Ray's names, ``_system_config`` or ``RAY_<name>``): ``memory_usage_threshold``
(0.95), ``memory_monitor_refresh_ms`` (250; 0 turns it off), ``min_memory_free_bytes``
(-1: off; otherwise kill only while less than this many bytes are free).
"""

from __future__ import annotations

import dataclasses
import os

from ray._private.messages import WorkerKilled

OUT_OF_MEMORY = WorkerKilled.OUT_OF_MEMORY


@dataclasses.dataclass(frozen=True)
class MemoryUsage:
    used_bytes: int
    total_bytes: int

    @property
    def fraction(self) -> float:
        return self.used_bytes / self.total_bytes if self.total_bytes else 0.0


@dataclasses.dataclass(frozen=True)
class LeasedWorker:
    """What the policy knows of a worker running leased work."""

    worker_id: bytes
    pid: int
    granted_at: float  # when its lease (its current task or actor) started; monotonic
    is_actor: bool
    # Whether its owner can run the work again (task max_retries / actor max_restarts
    # left). None: the owner did not say; tasks are then taken as retriable (Ray's
    # default max_retries is 3) and actors as not (default max_restarts is 0).
    retriable: bool | None = None

    @property
    def retriable_or_default(self) -> bool:
        return (not self.is_actor) if self.retriable is None else self.retriable


@dataclasses.dataclass(frozen=True)
class Kill:
    worker: LeasedWorker
    message: str


def threshold_bytes(total_bytes: int, usage_threshold: float, min_free_bytes: int) -> int:
    """Used bytes above which workers are killed (Ray's ``ComputeMemoryThresholdBytes``)."""
    limit = int(total_bytes * usage_threshold)
    if min_free_bytes >= 0:
        limit = max(limit, total_bytes - min_free_bytes)
    return limit


def kill_order(workers: list[LeasedWorker]) -> list[LeasedWorker]:
    """Who goes first: retriable tasks, then actors with restarts left, then the rest;
    the most recently started first within each group."""

    def group(worker: LeasedWorker) -> int:
        if worker.retriable_or_default:
            return 1 if worker.is_actor else 0
        return 2

    return sorted(workers, key=lambda w: (group(w), -w.granted_at))


class MemoryMonitor:
    """Pure kill decisions (see the module docstring); the raylet does the I/O."""

    def __init__(self, *, usage_threshold: float, min_free_bytes: int = -1,
                 kill_timeout_s: float = 10.0, node_description: str = "this node"):
        self.usage_threshold = usage_threshold
        self.min_free_bytes = min_free_bytes
        self.kill_timeout_s = kill_timeout_s
        self.node_description = node_description
        self._pending: tuple[bytes, float] | None = None  # victim still exiting, since
        self.kills = 0

    def over_threshold(self, usage: MemoryUsage) -> bool:
        limit = threshold_bytes(usage.total_bytes, self.usage_threshold, self.min_free_bytes)
        return usage.used_bytes > limit

    def sampled(self, usage: MemoryUsage, workers: list[LeasedWorker], now: float) -> Kill | None:
        """A memory reading and the node's leased workers: whom to kill, if anyone."""
        if self._pending is not None:
            pending_id, since = self._pending
            alive = any(w.worker_id == pending_id for w in workers)
            if alive and now - since < self.kill_timeout_s:
                return None  # its memory is not back yet: do not kill a second one
            self._pending = None
        if not self.over_threshold(usage) or not workers:
            return None
        victim = kill_order(workers)[0]
        self._pending = (victim.worker_id, now)
        self.kills += 1
        return Kill(victim, self._message(usage, victim))

    def worker_exited(self, worker_id: bytes) -> None:
        if self._pending is not None and self._pending[0] == worker_id:
            self._pending = None

    def _message(self, usage: MemoryUsage, victim: LeasedWorker) -> str:
        gib = 1024**3
        what = "actor" if victim.is_actor else "task"
        why = ("it was the most recently started retriable " + what
               if victim.retriable_or_default
               else f"no retriable work was left to kill (this {what} cannot be retried)")
        return (
            f"The worker (pid {victim.pid}) running this {what} was killed because "
            f"{self.node_description} ran low on memory: "
            f"{usage.used_bytes / gib:.2f} GiB of {usage.total_bytes / gib:.2f} GiB used "
            f"({usage.fraction:.3f}), over the memory_usage_threshold of "
            f"{self.usage_threshold}. It was chosen because {why}. Reduce the memory "
            "each task uses, run fewer at once (ask for more CPUs per task), or add "
            "memory to the node. Tasks killed for memory are retried if submitted with "
            "max_retries != 0 (on a budget of their own, task_oom_retries: unlimited by "
            "default), actors restart up to max_restarts; raise RAY_memory_usage_threshold "
            "to kill later, or set RAY_memory_monitor_refresh_ms=0 to turn the monitor off."
        )


# --- reading the node's memory --------------------------------------------------------------
_CGROUP_UNLIMITED = 1 << 60


def read_memory_usage(proc_root: str = "/proc", cgroup_root: str = "/sys/fs/cgroup") -> MemoryUsage:
    """The node's memory use: that of this process's memory cgroup when it is limited
    below the machine (a container, a systemd slice), else the machine's
    (``MemTotal - MemAvailable``)."""
    return MemoryReader(proc_root, cgroup_root).read()


class MemoryReader:
    """``read_memory_usage`` for a loop: finds once which memory cgroups of this process
    are limited below the machine (reading ``/proc/self/cgroup`` and probing every path
    on each sample cost ~0.5 ms); a limit set after start is not noticed."""

    def __init__(self, proc_root: str = "/proc", cgroup_root: str = "/sys/fs/cgroup"):
        self._meminfo = os.path.join(proc_root, "meminfo")
        total = _meminfo_usage(self._meminfo).total_bytes
        self._cgroups: list[tuple[str, int]] = []
        for directory, version in _cgroup_dirs(proc_root, cgroup_root):
            usage = _cgroup_usage(directory, version)
            if usage is not None and usage.total_bytes < total \
                    and (directory, version) not in self._cgroups:
                self._cgroups.append((directory, version))

    def read(self) -> MemoryUsage:
        machine = _meminfo_usage(self._meminfo)
        for directory, version in self._cgroups:
            cgroup = _cgroup_usage(directory, version)
            if cgroup is not None and cgroup.total_bytes < machine.total_bytes:
                return cgroup
        return machine


def _meminfo_usage(path: str) -> MemoryUsage:
    fields = {}
    with open(path) as f:
        for line in f:
            name, _, rest = line.partition(":")
            parts = rest.split()
            if parts:
                fields[name] = int(parts[0]) * 1024
    total = fields["MemTotal"]
    available = fields.get("MemAvailable")
    if available is None:  # very old kernels
        available = fields.get("MemFree", 0) + fields.get("Cached", 0) + fields.get("Buffers", 0)
    return MemoryUsage(total - available, total)


def _cgroup_dirs(proc_root: str, cgroup_root: str) -> list[tuple[str, int]]:
    """This process's memory cgroup directories (v2 and v1), then the mount roots (what a
    container with its own cgroup namespace sees)."""
    own = []
    try:
        with open(os.path.join(proc_root, "self", "cgroup")) as f:
            lines = f.read().splitlines()
    except OSError:
        lines = []
    for line in lines:
        hierarchy, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        relative = path.lstrip("/")
        if hierarchy == "0" and not controllers:
            for base in (cgroup_root, os.path.join(cgroup_root, "unified")):
                own.append((os.path.join(base, relative), 2))
        elif "memory" in controllers.split(","):
            own.append((os.path.join(cgroup_root, "memory", relative), 1))
    roots = [(cgroup_root, 2), (os.path.join(cgroup_root, "memory"), 1)]
    return own + [r for r in roots if r not in own]


def _cgroup_usage(directory: str, version: int) -> MemoryUsage | None:
    """Limit and usage (less inactive file pages, which the kernel reclaims first) of one
    cgroup; None when it has no memory limit or is not there."""
    if version == 2:
        names = ("memory.max", "memory.current", "memory.stat", "inactive_file")
    else:
        names = ("memory.limit_in_bytes", "memory.usage_in_bytes", "memory.stat",
                 "total_inactive_file")
    limit_file, usage_file, stat_file, inactive_key = names
    try:
        with open(os.path.join(directory, limit_file)) as f:
            text = f.read().strip()
        if text == "max":
            return None
        limit = int(text)
        with open(os.path.join(directory, usage_file)) as f:
            used = int(f.read().strip())
    except (OSError, ValueError):
        return None
    if limit >= _CGROUP_UNLIMITED:
        return None
    inactive = 0
    try:
        with open(os.path.join(directory, stat_file)) as f:
            for line in f:
                key, _, value = line.partition(" ")
                if key == inactive_key:
                    inactive = int(value)
                    break
    except (OSError, ValueError):
        pass  # no stat file: count every page as used (kills earlier, never later)
    return MemoryUsage(max(0, used - inactive), limit)
