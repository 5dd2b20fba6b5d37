"""Tag keys and values the autoscaler writes onto nodes (cloud instance tags, pod labels).

A node's tags are the autoscaler's only durable memory: ``ray up`` on a laptop and
the monitor on the head node see the same cluster through them.
"""

TAG_RAY_CLUSTER_NAME = "ray-cluster-name"
TAG_RAY_NODE_NAME = "ray-node-name"
# "head" or "worker"
TAG_RAY_NODE_KIND = "ray-node-type"
# Which entry of available_node_types the node was launched as.
TAG_RAY_USER_NODE_TYPE = "ray-user-node-type"
# Hash of the node's provider config: a node whose launch hash is stale is replaced.
TAG_RAY_LAUNCH_CONFIG = "ray-launch-config"
# Hash of the commands and file mounts last applied: a stale hash re-runs the updater.
TAG_RAY_RUNTIME_CONFIG = "ray-runtime-config"
TAG_RAY_NODE_STATUS = "ray-node-status"

NODE_KIND_HEAD = "head"
NODE_KIND_WORKER = "worker"

STATUS_UNINITIALIZED = "uninitialized"
STATUS_WAITING_FOR_SSH = "waiting-for-ssh"
STATUS_SYNCING_FILES = "syncing-files"
STATUS_SETTING_UP = "setting-up"
STATUS_UPDATE_FAILED = "update-failed"
STATUS_UP_TO_DATE = "up-to-date"
