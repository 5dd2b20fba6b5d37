"""One contract, every provider: memory, local, aws (moto's server), kubernetes (a real fake API server)."""

from __future__ import annotations

import os
import uuid

import pytest

from ray.autoscaler.node_provider import (
    NodeProvider,
    ProviderError,
    get_node_provider,
    load_external_provider,
)
from ray.autoscaler.tags import (
    NODE_KIND_HEAD,
    NODE_KIND_WORKER,
    TAG_RAY_CLUSTER_NAME,
    TAG_RAY_NODE_KIND,
    TAG_RAY_NODE_STATUS,
)


@pytest.fixture(scope="module")
def moto_server():
    pytest.importorskip("boto3", reason="pip install 'ray-autoscaler[test]'")
    ThreadedMotoServer = pytest.importorskip("moto.server").ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    env = {
        "AWS_ENDPOINT_URL": f"http://{host}:{port}",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-west-2",
    }
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield f"http://{host}:{port}"
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        server.stop()


@pytest.fixture(scope="module")
def fake_k8s():
    pytest.importorskip("kubernetes", reason="pip install 'ray-autoscaler[test]'")
    from autoscaler_fake_k8s import FakeKubernetesAPI

    with FakeKubernetesAPI() as api:
        yield api


def _aws_ami():
    import boto3

    images = boto3.client("ec2", region_name="us-west-2").describe_images(Owners=["amazon"])
    return images["Images"][0]["ImageId"]


@pytest.fixture(params=["memory", "local", "aws", "kubernetes"])
def provider_kit(request, tmp_path):
    """(make_provider(cluster_name), head node_config, worker node_config)."""
    kind = request.param
    made: list[NodeProvider] = []
    blocks: dict[str, int] = {}

    def make(cluster_name: str) -> NodeProvider:
        config = {"type": kind}
        if kind == "memory":
            config["root_dir"] = str(tmp_path / "nodes")
        elif kind == "local":
            # Each cluster lists its own machines (node ids are IPs).
            block = blocks.setdefault(cluster_name, len(blocks))
            config.update(
                head_ip=f"10.9.{block}.1",
                worker_ips=[f"10.9.{block}.2", f"10.9.{block}.3"],
                state_path=str(tmp_path / f"{cluster_name}.state"),
            )
        elif kind == "aws":
            config["region"] = "us-west-2"
        elif kind == "kubernetes":
            config.update(api_server=fake, namespace="ray")
        provider = get_node_provider(config, cluster_name)
        made.append(provider)
        return provider

    fake = None
    head = worker = {}
    if kind == "aws":
        request.getfixturevalue("moto_server")
        ami = _aws_ami()
        head = {"InstanceType": "m5.large", "ImageId": ami}
        worker = {"InstanceType": "m5.large", "ImageId": ami}
    elif kind == "kubernetes":
        fake = request.getfixturevalue("fake_k8s").url
        head = {"spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray"}]}}
        worker = {"spec": {"containers": [{"name": "ray-worker", "image": "rayproject/ray"}]}}
    yield make, head, worker
    for provider in made:
        provider.cleanup()
    if kind == "memory":
        from ray.autoscaler.providers.memory import InMemoryNodeProvider

        for provider in made:
            InMemoryNodeProvider.reset(provider.cluster_name)


def _name():
    return f"t{uuid.uuid4().hex[:8]}"


def _head_and_workers(make, head, worker, cluster=None):
    provider = make(cluster or _name())
    provider.create_node(head, {TAG_RAY_NODE_KIND: NODE_KIND_HEAD}, 1)
    provider.create_node(worker, {TAG_RAY_NODE_KIND: NODE_KIND_WORKER, "x": "1"}, 2)
    return provider


def test_created_nodes_are_listed_with_their_tags_and_cluster_name(provider_kit):
    provider = _head_and_workers(*provider_kit)
    all_nodes = provider.non_terminated_nodes({})
    heads = provider.non_terminated_nodes({TAG_RAY_NODE_KIND: NODE_KIND_HEAD})
    workers = provider.non_terminated_nodes({TAG_RAY_NODE_KIND: NODE_KIND_WORKER})
    assert len(all_nodes) == 3 and len(heads) == 1 and len(workers) == 2
    assert set(heads) | set(workers) == set(all_nodes)
    for node in workers:
        tags = provider.node_tags(node)
        assert tags[TAG_RAY_CLUSTER_NAME] == provider.cluster_name
        assert tags["x"] == "1"
    assert provider.non_terminated_nodes({"x": "2"}) == []


def test_set_node_tags_merges_and_is_visible_to_filters(provider_kit):
    provider = _head_and_workers(*provider_kit)
    node = provider.non_terminated_nodes({TAG_RAY_NODE_KIND: NODE_KIND_WORKER})[0]
    provider.set_node_tags(node, {TAG_RAY_NODE_STATUS: "up-to-date"})
    tags = provider.node_tags(node)
    assert tags[TAG_RAY_NODE_STATUS] == "up-to-date" and tags["x"] == "1"
    assert provider.non_terminated_nodes({TAG_RAY_NODE_STATUS: "up-to-date"}) == [node]


def test_terminated_nodes_disappear(provider_kit):
    provider = _head_and_workers(*provider_kit)
    workers = provider.non_terminated_nodes({TAG_RAY_NODE_KIND: NODE_KIND_WORKER})
    provider.terminate_nodes(workers)
    assert provider.non_terminated_nodes({TAG_RAY_NODE_KIND: NODE_KIND_WORKER}) == []
    assert all(provider.is_terminated(n) for n in workers)
    assert len(provider.non_terminated_nodes({})) == 1


def test_nodes_have_ips_and_become_running(provider_kit):
    provider = _head_and_workers(*provider_kit)
    for node in provider.non_terminated_nodes({}):
        assert provider.internal_ip(node)
        assert not provider.is_terminated(node)
        assert provider.is_running(node) or provider.is_running(node)


def test_clusters_do_not_see_each_others_nodes(provider_kit):
    make, head, worker = provider_kit
    a = make(_name())
    b = make(_name())
    a.create_node(head, {TAG_RAY_NODE_KIND: NODE_KIND_HEAD}, 1)
    b.create_node(head, {TAG_RAY_NODE_KIND: NODE_KIND_HEAD}, 1)
    assert len(a.non_terminated_nodes({})) == 1
    assert set(a.non_terminated_nodes({})).isdisjoint(b.non_terminated_nodes({}))


def test_a_second_provider_instance_sees_the_same_cluster(provider_kit):
    make, head, worker = provider_kit
    first = _head_and_workers(make, head, worker)
    second = make(first.cluster_name)
    assert sorted(second.non_terminated_nodes({})) == sorted(first.non_terminated_nodes({}))


def test_local_provider_refuses_more_workers_than_listed(tmp_path):
    provider = get_node_provider(
        {"type": "local", "head_ip": "h", "worker_ips": ["w1"], "state_path": str(tmp_path / "s")},
        "c",
    )
    with pytest.raises(ProviderError, match="list more provider.worker_ips"):
        provider.create_node({}, {TAG_RAY_NODE_KIND: NODE_KIND_WORKER}, 2)


def test_external_provider_is_loaded_by_module_path():
    cls = load_external_provider("ray.autoscaler.providers.memory.InMemoryNodeProvider")
    assert issubclass(cls, NodeProvider)
    provider = get_node_provider(
        {"type": "external", "module": "ray.autoscaler.providers.memory.InMemoryNodeProvider"},
        "ext",
    )
    assert provider.non_terminated_nodes({}) == []


@pytest.mark.parametrize(
    "path, message",
    [
        ("nomodule", "must be package.ProviderClass"),
        ("no_such_pkg_xyz.Provider", "cannot import no_such_pkg_xyz"),
        ("ray.autoscaler.tags.TAG_RAY_NODE_KIND", "is not a NodeProvider subclass"),
    ],
)
def test_bad_external_provider_paths_explain_the_format(path, message):
    with pytest.raises(ProviderError, match=message):
        load_external_provider(path)


def test_aws_bootstrap_creates_key_subnets_and_security_group(moto_server, tmp_path, monkeypatch):
    import boto3

    from ray.autoscaler.config import load_config
    from ray.autoscaler.providers.aws import AWSNodeProvider

    monkeypatch.setenv("HOME", str(tmp_path))
    config = load_config(
        {"cluster_name": "boot", "provider": {"type": "aws", "region": "us-west-2"}}
    ).to_dict()
    booted = AWSNodeProvider.bootstrap_config(config)
    key = booted["auth"]["ssh_private_key"]
    assert os.path.exists(key) and oct(os.stat(key).st_mode & 0o777) == "0o600"
    for section in ("head_node", "worker_nodes"):
        assert booted[section]["KeyName"].startswith("ray-autoscaler_us-west-2")
        assert booted[section]["SubnetIds"] and booted[section]["SecurityGroupIds"]
    ec2 = boto3.client("ec2", region_name="us-west-2")
    group = ec2.describe_security_groups(GroupIds=booted["head_node"]["SecurityGroupIds"])
    assert group["SecurityGroups"][0]["GroupName"] == "ray-autoscaler-boot"
    # Idempotent: a second bootstrap reuses the key pair and the group.
    again = AWSNodeProvider.bootstrap_config(config)
    assert again["head_node"]["SecurityGroupIds"] == booted["head_node"]["SecurityGroupIds"]
    assert again["auth"]["ssh_private_key"] == key


def test_kubernetes_pods_carry_labels_and_spec(fake_k8s):
    provider = get_node_provider(
        {"type": "kubernetes", "api_server": fake_k8s.url, "namespace": "ray"}, "k8s-spec"
    )
    spec = {"spec": {"containers": [{"name": "w", "image": "img"}]}}
    provider.create_node(spec, {TAG_RAY_NODE_KIND: NODE_KIND_WORKER}, 1)
    (node,) = provider.non_terminated_nodes({})
    pod = fake_k8s.pods[("ray", node)]
    assert pod["metadata"]["labels"][TAG_RAY_CLUSTER_NAME] == "k8s-spec"
    assert pod["spec"]["containers"][0]["image"] == "img"
    assert node.startswith("ray-k8s-spec-")
    runner = provider.get_command_runner(node, {})
    assert runner.command_argv("echo hi")[:6] == ["kubectl", "-n", "ray", "exec", "-i", node]
    provider.terminate_node(node)
    provider.terminate_node(node)  # a second delete (404) is not an error
    assert provider.is_terminated(node)
    provider.cleanup()
