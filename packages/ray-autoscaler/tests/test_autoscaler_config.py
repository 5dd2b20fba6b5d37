"""Cluster YAML validation: defaults filled, errors that name the key and the fix."""

from __future__ import annotations

import pickle

import pytest
import yaml

from ray.autoscaler.config import (
    DEFAULT_WORKER_NODE_TYPE,
    ConfigError,
    hash_runtime_config,
    load_config,
)

LOCAL = {
    "cluster_name": "test",
    "provider": {"type": "local", "head_ip": "10.0.0.1", "worker_ips": ["10.0.0.2", "10.0.0.3"]},
    "auth": {"ssh_user": "root"},
}


def test_documented_defaults_are_filled():
    config = load_config({"provider": {"type": "aws", "region": "us-west-2"}})
    assert config.cluster_name == "default"
    assert (config.min_workers, config.initial_workers, config.max_workers) == (0, 0, 2)
    assert config.target_utilization_fraction == 0.8
    assert config.idle_timeout_minutes == 5 and config.idle_timeout_s == 300
    assert config.auth["ssh_user"] == "ubuntu"
    assert config.docker["container_name"] == "ray_docker"
    assert any("ray start --head" in c for c in config.head_start_ray_commands)
    assert any("$RAY_HEAD_IP" in c for c in config.worker_start_ray_commands)
    assert set(config.node_types) == {config.head_node_type, DEFAULT_WORKER_NODE_TYPE}


def test_local_provider_max_workers_defaults_to_the_listed_machines():
    config = load_config(LOCAL)
    assert config.max_workers == 2
    assert config.provider["worker_ips"] == ["10.0.0.2", "10.0.0.3"]


def test_load_from_yaml_file(tmp_path):
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump({**LOCAL, "min_workers": 1, "setup_commands": ["echo hi"]}))
    config = load_config(path)
    assert config.min_workers == 1 and config.initial_workers == 1
    assert config.setup_commands == ("echo hi",)
    assert load_config(config.to_dict()) == config


def test_misspelled_key_error_names_it_and_suggests_the_fix():
    with pytest.raises(ConfigError, match=r"unknown key `max_worker`: did you mean `max_workers`"):
        load_config({**LOCAL, "max_worker": 3})


def test_wrong_type_error_names_the_key_and_expected_format():
    with pytest.raises(ConfigError, match=r"key `min_workers` is invalid.*whole number >= 0") as e:
        load_config({**LOCAL, "min_workers": "two"})
    assert e.value.key == "min_workers"


def test_unknown_provider_type_lists_the_choices():
    with pytest.raises(
        ConfigError, match=r"`provider.type`.*local, aws, gcp, kubernetes, external"
    ):
        load_config({"provider": {"type": "azure"}})


def test_missing_provider_is_reported():
    with pytest.raises(ConfigError, match=r"missing required key `provider`"):
        load_config({"cluster_name": "x"})


def test_provider_specific_required_keys():
    with pytest.raises(ConfigError, match=r"`provider.worker_ips`.*local provider needs it"):
        load_config({"provider": {"type": "local", "head_ip": "1.2.3.4"}})
    with pytest.raises(ConfigError, match=r"`provider.module`"):
        load_config({"provider": {"type": "external"}})


def test_min_above_max_is_rejected_with_the_fix():
    with pytest.raises(ConfigError, match=r"lower min_workers or raise max_workers"):
        load_config({**LOCAL, "min_workers": 2, "max_workers": 1})


def test_local_max_workers_cannot_exceed_listed_machines():
    with pytest.raises(ConfigError, match=r"list more IPs or lower max_workers"):
        load_config({**LOCAL, "max_workers": 5})


def test_unreadable_and_non_mapping_files_are_reported(tmp_path):
    with pytest.raises(ConfigError, match="cannot read cluster config"):
        load_config(tmp_path / "missing.yaml")
    bad = tmp_path / "list.yaml"
    bad.write_text("- a\n- b\n")
    with pytest.raises(ConfigError, match="must hold a mapping"):
        load_config(bad)


def test_available_node_types_are_typed():
    config = load_config(
        {
            "provider": {"type": "aws", "region": "us-west-2"},
            "max_workers": 10,
            "head_node_type": "head",
            "available_node_types": {
                "head": {"resources": {"CPU": 2}},
                "gpu1": {"resources": {"CPU": 4, "GPU": 1}, "max_workers": 2},
            },
        }
    )
    assert config.node_types["gpu1"].resources == {"CPU": 4, "GPU": 1}
    assert set(config.worker_node_types) == {"gpu1"}
    with pytest.raises(ConfigError, match="head_node_type"):
        load_config({**config.to_dict(), "head_node_type": "nope"})


def test_replace_revalidates():
    config = load_config(LOCAL)
    assert config.replace(max_workers=1).max_workers == 1
    with pytest.raises(ConfigError):
        config.replace(max_workers=-1)


def test_runtime_hash_changes_with_file_mount_contents(tmp_path):
    f = tmp_path / "sha"
    f.write_text("abc")
    config = load_config({**LOCAL, "file_mounts": {"/tmp/sha": str(f)}})
    before = hash_runtime_config(config, head=True)
    assert hash_runtime_config(config, head=True) == before
    f.write_text("def")
    assert hash_runtime_config(config, head=True) != before
    assert hash_runtime_config(config, head=False) != hash_runtime_config(config, head=True)


def test_config_error_pickles():
    err = pickle.loads(pickle.dumps(ConfigError("bad", key="k")))
    assert str(err) == "bad" and err.key == "k"


EXAMPLES = ["local", "aws", "gcp", "kubernetes"]


@pytest.mark.parametrize("provider", EXAMPLES)
def test_shipped_example_yamls_validate(provider):
    import importlib.resources

    text = (
        importlib.resources.files("ray.autoscaler") / provider / "example-full.yaml"
    ).read_text()
    data = yaml.safe_load(text)
    if provider == "gcp":
        # The docs ask users to fill in their project id; until then the error says so.
        with pytest.raises(ConfigError, match="provider.project_id"):
            load_config(data)
        data["provider"]["project_id"] = "my-project"
    config = load_config(data)
    assert config.provider["type"] == provider
    assert config.head_start_ray_commands and config.worker_start_ray_commands


def test_a_yaml_full_of_mistakes_reports_every_one_with_its_fix(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(
        "cluster_name: 'my cluster!'\n"
        "mx_workers: 3\n"
        "idle_timeout_minutes: five\n"
        "provider:\n  type: awz\n  region: us-west-2\n"
        "auth:\n  ssh_user: 7\n"
        "setup_commands: pip install numpy\n"
        "head_setup_comands: []\n"
    )
    with pytest.raises(ConfigError) as info:
        load_config(path)
    message = str(info.value)
    assert message.startswith(f"{path}: 7 problems:")
    for expected in ("`mx_workers`: did you mean `max_workers`?",
                     "`head_setup_comands`: did you mean `head_setup_commands`?",
                     "`cluster_name` is invalid", "`idle_timeout_minutes` is invalid",
                     "`provider.type` is invalid", "one of local, aws, gcp",
                     "`auth.ssh_user` is invalid", "`setup_commands` is invalid"):
        assert expected in message, message
    assert info.value.key == "head_setup_comands"
