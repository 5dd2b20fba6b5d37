"""The real AWS provider against moto's server, with SSH replaced by local "nodes".

moto hands out private IPs (10.x) that nothing answers on, so this subclass keeps
every EC2 call real (launch, tag, list, terminate, bootstrap) and runs node
commands with a LocalCommandRunner in a per-instance directory instead of SSH.
"""

from __future__ import annotations

import os
import tempfile

from ray.autoscaler.command_runner import LocalCommandRunner
from ray.autoscaler.providers.aws import AWSNodeProvider


class MotoAWSNodeProvider(AWSNodeProvider):
    def get_command_runner(
        self, node_id, auth_config, *, use_internal_ip=False, process_runner=None
    ):
        root = self.provider_config.get("root_dir") or tempfile.gettempdir()
        return LocalCommandRunner(
            node_id=node_id, root=os.path.join(root, node_id), process_runner=process_runner
        )
