"""The GCP provider against Compute Engine responses replayed over googleapiclient's HTTP layer.

The response bodies under tests/data/ have the shape the compute v1 API returns
(instances.get, zoneOperations.get); each test checks the requests the provider
sent (method, URL, body) as well as what it made of the replies.
"""

from __future__ import annotations

import copy
import json
import os
from urllib.parse import parse_qs, urlparse

import pytest

pytest.importorskip("googleapiclient", reason="pip install 'ray-autoscaler[test]'")

from googleapiclient import discovery  # noqa: E402
from googleapiclient.http import HttpMockSequence  # noqa: E402

from ray.autoscaler.node_provider import ProviderError  # noqa: E402
from ray.autoscaler.providers.gcp import GCPNodeProvider, decode_label, encode_label  # noqa: E402
from ray.autoscaler.tags import TAG_RAY_NODE_STATUS, TAG_RAY_USER_NODE_TYPE  # noqa: E402

DATA = os.path.join(os.path.dirname(__file__), "data")
CONFIG = {"type": "gcp", "project_id": "my-project", "region": "us-west1",
          "availability_zone": "us-west1-a"}  # fmt: skip


def load(name):
    with open(os.path.join(DATA, name)) as f:
        return json.load(f)


INSTANCE = load("gcp_instance.json")
OP_RUNNING = load("gcp_operation_running.json")
OP_DONE = {**OP_RUNNING, "status": "DONE", "progress": 100}


class RecordingHttp(HttpMockSequence):
    def __init__(self, replies):
        super().__init__([({"status": str(code)}, json.dumps(body)) for code, body in replies])
        self.sent = []

    def request(self, uri, method="GET", body=None, headers=None, **kwargs):
        self.sent.append((method, uri, json.loads(body) if body else None))
        return super().request(uri, method, body, headers, **kwargs)


def provider_with(replies):
    http = RecordingHttp(replies)
    compute = discovery.build(
        "compute", "v1", http=http, cache_discovery=False, static_discovery=True
    )
    return GCPNodeProvider(CONFIG, "gcpt", compute=compute, sleep=lambda s: None), http


def test_labels_round_trip_through_the_gce_alphabet():
    for value in ["up-to-date", "ray.worker.default", "a_b", "CPU:2 x", ""]:
        encoded = encode_label(value)
        assert all(c.islower() or c.isdigit() or c in "-_" for c in encoded)
        assert decode_label(encoded) == value


def test_list_filters_on_cluster_labels_and_live_status_and_follows_pages():
    second = {**INSTANCE, "name": "ray-gcpt-ffff0000"}
    provider, http = provider_with(
        [(200, {"items": [INSTANCE], "nextPageToken": "p2"}), (200, {"items": [second]})]
    )
    nodes = provider.non_terminated_nodes({TAG_RAY_USER_NODE_TYPE: "ray.worker.default"})
    assert nodes == ["ray-gcpt-0a1b2c3d", "ray-gcpt-ffff0000"]
    method, uri, _ = http.sent[0]
    query = parse_qs(urlparse(uri).query)
    assert method == "GET" and "/projects/my-project/zones/us-west1-a/instances" in uri
    assert '(labels.ray-cluster-name = "gcpt")' in query["filter"][0]
    assert '(labels.ray-user-node-type = "ray_2eworker_2edefault")' in query["filter"][0]
    assert '(status = "RUNNING")' in query["filter"][0]
    assert parse_qs(urlparse(http.sent[1][1]).query)["pageToken"] == ["p2"]
    # Tags, IPs come from the listed instance without further requests.
    assert provider.node_tags(nodes[0])[TAG_RAY_USER_NODE_TYPE] == "ray.worker.default"
    assert provider.external_ip(nodes[0]) == "34.82.1.17"
    assert provider.internal_ip(nodes[0]) == "10.138.0.7"
    assert len(http.sent) == 2


def test_create_node_inserts_labelled_instance_and_waits_for_the_operation():
    provider, http = provider_with([(200, OP_RUNNING), (200, OP_RUNNING), (200, OP_DONE)])
    node_config = {"machineType": "n1-standard-2", "disks": [{"boot": True}]}
    (name,) = provider.create_node(node_config, {"ray-node-type": "worker"}, 1)
    method, uri, body = http.sent[0]
    assert method == "POST" and uri.split("?")[0].endswith("/zones/us-west1-a/instances")
    assert body["name"] == name and name.startswith("ray-gcpt-")
    assert body["machineType"] == "zones/us-west1-a/machineTypes/n1-standard-2"
    assert body["labels"] == {"ray-node-type": "worker", "ray-cluster-name": "gcpt"}
    assert body["disks"] == [{"boot": True}]
    assert [m for m, _, _ in http.sent[1:]] == ["GET", "GET"]
    assert OP_RUNNING["name"] in http.sent[1][1]


def test_failed_operation_raises_with_the_api_message():
    failed = {
        **OP_DONE,
        "error": {"errors": [{"code": "QUOTA_EXCEEDED", "message": "Quota 'CPUS' exceeded."}]},
    }
    provider, _ = provider_with([(200, failed)])
    with pytest.raises(ProviderError, match="Quota 'CPUS' exceeded"):
        provider.create_node({"machineType": "n1-standard-2"}, {}, 1)


def test_set_node_tags_sends_merged_labels_with_fingerprint():
    provider, http = provider_with([(200, INSTANCE), (200, OP_DONE)])
    provider.set_node_tags("ray-gcpt-0a1b2c3d", {TAG_RAY_NODE_STATUS: "up-to-date"})
    method, uri, body = http.sent[1]
    assert method == "POST" and "/instances/ray-gcpt-0a1b2c3d/setLabels" in uri
    assert body["labelFingerprint"] == INSTANCE["labelFingerprint"]
    assert body["labels"][TAG_RAY_NODE_STATUS] == "up-to-date"
    assert body["labels"]["ray-cluster-name"] == "gcpt"
    assert provider.node_tags("ray-gcpt-0a1b2c3d")[TAG_RAY_NODE_STATUS] == "up-to-date"


def test_terminate_deletes_and_status_is_read_from_the_api():
    stopping = copy.deepcopy(INSTANCE)
    stopping["status"] = "STOPPING"
    provider, http = provider_with([(200, OP_RUNNING), (200, stopping)])
    provider.terminate_node("ray-gcpt-0a1b2c3d")
    assert http.sent[0][0] == "DELETE"
    assert provider.is_terminated("ray-gcpt-0a1b2c3d")


def test_bootstrap_adds_a_generated_ssh_key_to_project_metadata(tmp_path, monkeypatch):
    from ray.autoscaler.config import load_config
    from ray.autoscaler.providers.gcp import _bootstrap

    monkeypatch.setenv("HOME", str(tmp_path))
    project = {
        "kind": "compute#project",
        "name": "my-project",
        "commonInstanceMetadata": {
            "kind": "compute#metadata",
            "fingerprint": "fp-1=",
            "items": [{"key": "ssh-keys", "value": "alice:ssh-rsa AAAA alice"}],
        },
    }
    global_op = {**OP_RUNNING, "zone": None, "operationType": "setMetadata"}
    http = RecordingHttp([(200, project), (200, global_op), (200, {**global_op, "status": "DONE"})])
    compute = discovery.build(
        "compute", "v1", http=http, cache_discovery=False, static_discovery=True
    )
    config = load_config({"provider": CONFIG, "auth": {"ssh_user": "ray"}}).to_dict()
    booted = _bootstrap(config, compute, sleep=lambda s: None)
    key = booted["auth"]["ssh_private_key"]
    assert key.endswith("ray-autoscaler_gcp_us-west1_my-project_ray.pem") and os.path.exists(key)
    method, uri, body = http.sent[1]
    assert method == "POST" and uri.split("?")[0].endswith(
        "/projects/my-project/setCommonInstanceMetadata"
    )
    assert body["fingerprint"] == "fp-1="
    (ssh_keys,) = [i["value"] for i in body["items"] if i["key"] == "ssh-keys"]
    alice, ours = ssh_keys.split("\n")
    assert alice == "alice:ssh-rsa AAAA alice" and ours.startswith("ray:ssh-rsa ")
    assert "/projects/my-project/global/operations/" in http.sent[2][1]
    assert booted["head_node"]["networkInterfaces"][0]["network"] == "global/networks/default"
