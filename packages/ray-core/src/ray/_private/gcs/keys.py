"""Every Redis key and pub/sub channel name the system uses, in one place."""

PREFIX = "ray:"

JOB_COUNTER = PREFIX + "job_counter"
JOBS = PREFIX + "jobs"  # hash job_id hex -> msgpack info
NODES = PREFIX + "nodes"  # hash node_id hex -> msgpack info
NODE_HEARTBEATS = PREFIX + "node_heartbeats"  # hash node_id hex -> unix time
NODE_LOADS = PREFIX + "node_loads"  # hash node_id hex -> msgpack load report
# Counters bumped after each change to the node table / to a load report's resources, so
# raylets re-read those tables only when they moved (raylet/monitor.py).
NODES_VERSION = PREFIX + "nodes_version"
NODE_LOADS_VERSION = PREFIX + "node_loads_version"
ACTORS = PREFIX + "actors"  # hash actor_id hex -> msgpack info
CLUSTER_SECRET = PREFIX + "cluster_secret"
PROFILE_EVENTS = PREFIX + "profile_events"  # list of msgpack event batches
# list of msgpack task events, one per element, trimmed to the newest N (task_events.py)
TASK_EVENTS = PREFIX + "task_events"
# hash worker_id hex -> task events that process dropped so far (its buffer was full)
TASK_EVENTS_DROPPED = PREFIX + "task_events_dropped"
REDIS_SHARDS = PREFIX + "redis_shards"
DASHBOARD = PREFIX + "dashboard"  # msgpack {"url", "host", "port", "pid", "node_id"}

CHANNEL_NODES = PREFIX + "ch:nodes"
CHANNEL_ACTORS = PREFIX + "ch:actors"
# A finished job's id (hex): every raylet ends its idle workers of that job.
CHANNEL_JOBS = PREFIX + "ch:jobs"
# Every driver and worker answers a request here with its live state (`ray memory`,
# the dashboard's running tasks) on the request's reply channel.
CHANNEL_INTROSPECT = PREFIX + "ch:introspect"


def function(job_hex: str, function_id_hex: str) -> str:
    return f"{PREFIX}fn:{job_hex}:{function_id_hex}"


def kv(namespace: str, key: str) -> str:
    return f"{PREFIX}kv:{namespace}:{key}"


def kv_pattern(namespace: str, prefix: str = "") -> str:
    return f"{PREFIX}kv:{namespace}:{prefix}*"


def named_actor(namespace: str, name: str) -> str:
    return f"{PREFIX}named_actor:{namespace}:{name}"


def errors(job_hex: str) -> str:
    return f"{PREFIX}errors:{job_hex}"


def channel_errors(job_hex: str) -> str:
    return f"{PREFIX}ch:errors:{job_hex}"


def channel_logs(job_hex: str) -> str:
    return f"{PREFIX}ch:logs:{job_hex}"


def channel_actor(actor_hex: str) -> str:
    return f"{PREFIX}ch:actor:{actor_hex}"


def channel_introspect_reply(request_id: str) -> str:
    return f"{PREFIX}ch:introspect_reply:{request_id}"


# Placement groups: hash pg_id hex -> msgpack record, kept by the head raylet's manager.
PLACEMENT_GROUPS = PREFIX + "placement_groups"
# {"placement_group_id", "state"} whenever a group's state changes.
CHANNEL_PLACEMENT_GROUPS = PREFIX + "ch:placement_groups"


def named_placement_group(namespace: str, name: str) -> str:
    return f"{PREFIX}named_pg:{namespace}:{name}"


# Jobs submitted through the job API: hash submission id -> msgpack JobInfo record.
JOB_SUBMISSIONS = PREFIX + "job_submissions"


def job_logs(submission_id: str) -> str:
    """A submitted job's output: list of msgpack [seq, bytes] chunks (job_manager.py)."""
    return f"{PREFIX}job_logs:{submission_id}"


def node_stats(node_id_hex: str) -> str:
    """A node's utilisation samples: list of msgpack NodeSample tuples (node_stats.py)."""
    return f"{PREFIX}node_stats:{node_id_hex}"


# The autoscaler monitor's latest round: JSON ray.state.AutoscalerStatus, replaced each round.
AUTOSCALER_STATUS = kv("autoscaler", "status")
