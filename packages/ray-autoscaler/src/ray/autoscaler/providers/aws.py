"""EC2 nodes through boto3.

Nodes are instances tagged ``ray-cluster-name=<cluster>``; every other autoscaler
tag is an EC2 tag too, so the console's "Tags" pane shows ``ray-node-status``.
:meth:`AWSNodeProvider.bootstrap_config` fills what ``ray up`` needs before the
first launch: an SSH key pair (saved to ``~/.ssh/ray-autoscaler_<region>.pem``),
subnets in ``provider.availability_zone``, and a security group that admits SSH
and traffic between the cluster's own nodes only.

Endpoints follow boto3's own settings, so ``AWS_ENDPOINT_URL`` points the provider
at moto's server in tests.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Iterator, Mapping
from typing import Any

import boto3
import botocore.config
import botocore.exceptions

from ray.autoscaler.node_provider import NodeProvider, ProviderError, synchronized
from ray.autoscaler.tags import TAG_RAY_CLUSTER_NAME

_BOTO_CONFIG = botocore.config.Config(retries={"max_attempts": 5, "mode": "standard"})
_LIVE_STATES = ["pending", "running"]


def _ec2(provider_config: Mapping[str, Any]):
    return boto3.resource("ec2", region_name=provider_config["region"], config=_BOTO_CONFIG)


class AWSNodeProvider(NodeProvider):
    def __init__(self, provider_config: Mapping[str, Any], cluster_name: str):
        super().__init__(provider_config, cluster_name)
        self.ec2 = _ec2(provider_config)
        self.client = self.ec2.meta.client
        self._cache: dict[str, Any] = {}

    # ---------------------------------------------------------------- queries
    @synchronized
    def non_terminated_nodes(self, tag_filters: Mapping[str, str]) -> list[str]:
        filters = [
            {"Name": "instance-state-name", "Values": _LIVE_STATES},
            {"Name": f"tag:{TAG_RAY_CLUSTER_NAME}", "Values": [self.cluster_name]},
        ]
        filters += [{"Name": f"tag:{k}", "Values": [v]} for k, v in sorted(tag_filters.items())]
        instances = list(self.ec2.instances.filter(Filters=filters))
        self._cache.update({i.id: i for i in instances})
        return [i.id for i in instances]

    def _instance(self, node_id: str, refresh: bool = True):
        instance = self._cache.get(node_id)
        if instance is None:
            instance = self.ec2.Instance(node_id)
            self._cache[node_id] = instance
        elif refresh:
            instance.reload()
        return instance

    @synchronized
    def is_running(self, node_id: str) -> bool:
        return self._instance(node_id).state["Name"] == "running"

    @synchronized
    def is_terminated(self, node_id: str) -> bool:
        return self._instance(node_id).state["Name"] not in _LIVE_STATES

    @synchronized
    def node_tags(self, node_id: str) -> dict[str, str]:
        return {t["Key"]: t["Value"] for t in self._instance(node_id).tags or []}

    @synchronized
    def external_ip(self, node_id: str) -> str | None:
        instance = self._instance(node_id, refresh=False)
        if instance.public_ip_address is None:
            instance.reload()
        return instance.public_ip_address

    @synchronized
    def internal_ip(self, node_id: str) -> str | None:
        instance = self._instance(node_id, refresh=False)
        if instance.private_ip_address is None:
            instance.reload()
        return instance.private_ip_address

    # ---------------------------------------------------------------- changes
    @synchronized
    def create_node(self, node_config: Mapping[str, Any], tags: Mapping[str, str], count: int):
        conf = copy.deepcopy(dict(node_config))
        all_tags = {**tags, TAG_RAY_CLUSTER_NAME: self.cluster_name}
        tag_list = [{"Key": k, "Value": v} for k, v in sorted(all_tags.items())]
        specs = conf.pop("TagSpecifications", [])
        specs.append({"ResourceType": "instance", "Tags": tag_list})
        subnets = conf.pop("SubnetIds", None)
        if subnets:
            conf["SubnetId"] = subnets[0]
        conf.update(MinCount=count, MaxCount=count, TagSpecifications=specs)
        try:
            created = self.ec2.create_instances(**conf)
        except botocore.exceptions.ClientError as e:
            raise ProviderError(f"EC2 refused to launch {count} x {conf.get('InstanceType')}: {e}")
        self._cache.update({i.id: i for i in created})
        return [i.id for i in created]

    @synchronized
    def set_node_tags(self, node_id: str, tags: Mapping[str, str]) -> None:
        self.client.create_tags(
            Resources=[node_id], Tags=[{"Key": k, "Value": v} for k, v in tags.items()]
        )

    def terminate_node(self, node_id: str) -> None:
        self.terminate_nodes([node_id])

    @synchronized
    def terminate_nodes(self, node_ids) -> None:
        if node_ids:
            self.client.terminate_instances(InstanceIds=list(node_ids))
            for node_id in node_ids:
                self._cache.pop(node_id, None)

    # ---------------------------------------------------------------- bootstrap
    @classmethod
    def bootstrap_config(cls, config: dict[str, Any]) -> dict[str, Any]:
        config = copy.deepcopy(config)
        ec2 = _ec2(config["provider"])
        _configure_key_pair(ec2, config)
        _configure_subnets(ec2, config)
        _configure_security_group(ec2, config)
        return config


def _node_configs(config: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every provider node config in the cluster YAML (legacy and typed forms)."""
    for key in ("head_node", "worker_nodes"):
        yield config.setdefault(key, {})
    for node_type in config.get("available_node_types", {}).values():
        yield node_type.setdefault("node_config", {})


def _configure_key_pair(ec2, config: dict[str, Any]) -> None:
    auth = config.setdefault("auth", {})
    if auth.get("ssh_private_key"):
        return
    region = config["provider"]["region"]
    existing = {k.name for k in ec2.key_pairs.all()}
    for i in range(10):
        name = f"ray-autoscaler_{region}" + (f"_{i}" if i else "")
        path = os.path.expanduser(f"~/.ssh/{name}.pem")
        if name in existing and os.path.exists(path):
            break
        if name not in existing:
            key = ec2.create_key_pair(KeyName=name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
                f.write(key.key_material)
            break
    else:
        raise ProviderError(
            "could not find or create an EC2 key pair with a matching local .pem: "
            "set auth.ssh_private_key and KeyName in the node configs"
        )
    auth["ssh_private_key"] = path
    for node_config in _node_configs(config):
        node_config.setdefault("KeyName", name)


def _configure_subnets(ec2, config: dict[str, Any]) -> None:
    node_configs = list(_node_configs(config))
    if all("SubnetIds" in c or "SubnetId" in c for c in node_configs):
        return
    zones = config["provider"].get("availability_zone")
    wanted = set(zones.split(",")) if zones else None
    subnets = [
        s
        for s in ec2.subnets.all()
        if s.state == "available" and (wanted is None or s.availability_zone in wanted)
    ]
    if not subnets:
        raise ProviderError(
            f"no available subnet in availability zone(s) {zones}: create one or set "
            "SubnetIds in head_node/worker_nodes"
        )
    subnets.sort(key=lambda s: (not s.map_public_ip_on_launch, s.availability_zone, s.id))
    ids = [s.id for s in subnets if s.vpc_id == subnets[0].vpc_id]
    for node_config in node_configs:
        if "SubnetId" not in node_config:
            node_config.setdefault("SubnetIds", ids)


def _configure_security_group(ec2, config: dict[str, Any]) -> None:
    node_configs = list(_node_configs(config))
    if all("SecurityGroupIds" in c for c in node_configs):
        return
    subnet_id = (node_configs[0].get("SubnetIds") or [node_configs[0].get("SubnetId")])[0]
    vpc_id = ec2.Subnet(subnet_id).vpc_id
    name = f"ray-autoscaler-{config['cluster_name']}"
    found = list(
        ec2.security_groups.filter(
            Filters=[
                {"Name": "group-name", "Values": [name]},
                {"Name": "vpc-id", "Values": [vpc_id]},
            ]
        )
    )
    if found:
        group = found[0]
    else:
        group = ec2.create_security_group(
            GroupName=name, Description="Auto-created by the Ray autoscaler", VpcId=vpc_id
        )
        group.authorize_ingress(
            IpPermissions=[
                # Nodes of the cluster talk to each other on every port...
                {"IpProtocol": "-1", "UserIdGroupPairs": [{"GroupId": group.id}]},
                # ...and the outside world only reaches SSH.
                {
                    "IpProtocol": "tcp",
                    "FromPort": 22,
                    "ToPort": 22,
                    "IpRanges": [{"CidrIp": "0.0.0.0/0"}],
                },
            ]
        )
    for node_config in node_configs:
        node_config.setdefault("SecurityGroupIds", [group.id])
