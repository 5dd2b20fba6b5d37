"""`ray up/exec/submit/rsync/get-head-ip/down` through click, on the in-memory provider and on moto's EC2."""

from __future__ import annotations

import uuid

import pytest
import yaml
from click.testing import CliRunner

from ray.autoscaler import commands
from ray.autoscaler.node_provider import get_node_provider
from ray.autoscaler.providers.memory import InMemoryNodeProvider
from ray.autoscaler.tags import (
    NODE_KIND_HEAD,
    STATUS_UP_TO_DATE,
    TAG_RAY_NODE_KIND,
    TAG_RAY_NODE_STATUS,
)

MEMORY = "ray.autoscaler.providers.memory.InMemoryNodeProvider"


def invoke(command, *args, ok=True):
    result = CliRunner().invoke(command, [str(a) for a in args], catch_exceptions=False)
    if ok:
        assert result.exit_code == 0, result.output
    return result


@pytest.fixture
def memory_cluster(tmp_path):
    name = f"cli-{uuid.uuid4().hex[:6]}"
    (tmp_path / "mount").mkdir()
    (tmp_path / "mount" / "data.txt").write_text("payload")
    config = {
        "cluster_name": name,
        "provider": {"type": "external", "module": MEMORY, "root_dir": str(tmp_path / "nodes")},
        "max_workers": 2,
        "file_mounts": {"~/mounted": str(tmp_path / "mount")},
        "initialization_commands": ["echo init >> ~/log"],
        "setup_commands": ["echo setup >> ~/log"],
        "head_setup_commands": ["echo head-setup >> ~/log"],
        "head_start_ray_commands": ["echo start >> ~/log"],
    }
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump(config))
    provider = get_node_provider(config["provider"], name)
    yield path, provider, tmp_path
    InMemoryNodeProvider.reset(name)


def head_home(provider, root):
    (head,) = provider.non_terminated_nodes({TAG_RAY_NODE_KIND: NODE_KIND_HEAD})
    return head, root / "nodes" / head / "home"


def test_up_launches_and_sets_up_the_head_then_exec_and_down(memory_cluster):
    path, provider, root = memory_cluster
    result = invoke(commands.up_cmd, path, "--yes")
    assert "is up at" in result.output
    head, home = head_home(provider, root)
    assert provider.node_tags(head)[TAG_RAY_NODE_STATUS] == STATUS_UP_TO_DATE
    assert (home / "log").read_text() == "init\nsetup\nhead-setup\nstart\n"
    assert (home / "mounted" / "data.txt").read_text() == "payload"
    bootstrap = yaml.safe_load((home / "ray_bootstrap_config.yaml").read_text())
    assert bootstrap["cluster_name"] == provider.cluster_name
    assert bootstrap["file_mounts"] == {"~/mounted": "~/mounted"}

    assert (
        invoke(commands.exec_cmd, path, "echo hello from $HOME")
        .output.strip()
        .endswith(f"hello from {home}")
    )
    assert invoke(commands.get_head_ip_cmd, path).output.strip() == provider.external_ip(head)

    invoke(commands.down_cmd, path, "--yes")
    assert provider.non_terminated_nodes({}) == []


def test_second_up_updates_the_same_head_and_restart_only_skips_setup(memory_cluster):
    path, provider, root = memory_cluster
    invoke(commands.up_cmd, path, "-y")
    head, home = head_home(provider, root)
    invoke(commands.up_cmd, path, "-y", "--restart-only")
    assert head_home(provider, root)[0] == head
    assert (home / "log").read_text().endswith("start\nstart\n")
    invoke(commands.up_cmd, path, "-y", "--no-restart")
    assert (home / "log").read_text().endswith("start\ninit\nsetup\nhead-setup\n")


def test_up_overrides_land_in_the_bootstrap_config(memory_cluster):
    path, provider, root = memory_cluster
    invoke(commands.up_cmd, path, "-y", "--max-workers", "1", "--min-workers", "1")
    _, home = head_home(provider, root)
    bootstrap = yaml.safe_load((home / "ray_bootstrap_config.yaml").read_text())
    assert (bootstrap["min_workers"], bootstrap["max_workers"]) == (1, 1)


def test_cluster_name_override_makes_a_separate_cluster(memory_cluster):
    path, provider, root = memory_cluster
    other = f"{provider.cluster_name}-b"
    invoke(commands.up_cmd, path, "-y", "-n", other)
    assert provider.non_terminated_nodes({}) == []
    assert len(get_node_provider(provider.provider_config, other).non_terminated_nodes({})) == 1
    invoke(commands.down_cmd, path, "-y", "--cluster-name", other)
    InMemoryNodeProvider.reset(other)


def test_exec_without_a_head_explains_how_to_start_one(memory_cluster):
    path, provider, root = memory_cluster
    result = invoke(commands.exec_cmd, path, "true", ok=False)
    assert result.exit_code == 1 and "ray up` (or pass --start)" in result.output
    invoke(commands.exec_cmd, path, "true", "--start")
    assert len(provider.non_terminated_nodes({})) == 1


def test_exec_stop_tears_the_cluster_down_afterwards(memory_cluster):
    path, provider, root = memory_cluster
    result = invoke(commands.exec_cmd, path, "echo done", "--start", "--stop")
    assert "done" in result.output
    assert provider.non_terminated_nodes({}) == []


def test_exec_stop_tears_down_even_when_the_command_fails(memory_cluster):
    path, provider, root = memory_cluster
    result = invoke(commands.exec_cmd, path, "exit 2", "--start", "--stop", ok=False)
    assert result.exit_code == 1 and "exit status 2" in result.output
    assert provider.non_terminated_nodes({}) == []


def test_failing_exec_reports_the_exit_status(memory_cluster):
    path, provider, root = memory_cluster
    invoke(commands.up_cmd, path, "-y")
    result = invoke(commands.exec_cmd, path, "echo oops; exit 4", ok=False)
    assert result.exit_code == 1 and "exit status 4" in result.output and "oops" in result.output


def test_submit_uploads_and_runs_a_script_with_arguments(memory_cluster, tmp_path):
    path, provider, root = memory_cluster
    script = tmp_path / "job.py"
    script.write_text("import sys\nprint('args', sys.argv[1:])\n")
    result = invoke(commands.submit_cmd, path, script, "a", "b c", "--start")
    assert "args ['a', 'b c']" in result.output


def test_rsync_up_and_down(memory_cluster, tmp_path):
    path, provider, root = memory_cluster
    invoke(commands.up_cmd, path, "-y")
    src = tmp_path / "up.txt"
    src.write_text("up!")
    invoke(commands.rsync_up_cmd, path, src, "~/remote/up.txt")
    _, home = head_home(provider, root)
    assert (home / "remote" / "up.txt").read_text() == "up!"
    invoke(commands.rsync_down_cmd, path, "~/remote/up.txt", tmp_path / "back" / "down.txt")
    assert (tmp_path / "back" / "down.txt").read_text() == "up!"


def test_failing_head_setup_is_reported_with_the_fix(memory_cluster):
    path, provider, root = memory_cluster
    config = yaml.safe_load(path.read_text())
    config["setup_commands"] = ["echo no-such-package >&2; exit 9"]
    path.write_text(yaml.safe_dump(config))
    result = invoke(commands.up_cmd, path, "-y", ok=False)
    assert result.exit_code == 1
    assert "status 9" in result.output and "run `ray up` again" in result.output


def test_bad_config_is_a_clean_cli_error(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({"provider": {"type": "local"}, "max_worker": 1}))
    result = invoke(commands.up_cmd, path, "-y", ok=False)
    assert result.exit_code == 1
    assert "unknown key `max_worker`: did you mean `max_workers`?" in result.output
    assert "Traceback" not in result.output


def test_conflicting_flags_are_rejected(memory_cluster):
    path, provider, root = memory_cluster
    result = invoke(commands.up_cmd, path, "-y", "--no-restart", "--restart-only", ok=False)
    assert "cannot be combined" in result.output


def test_up_asks_for_confirmation_without_yes(memory_cluster):
    path, provider, root = memory_cluster
    result = CliRunner().invoke(commands.up_cmd, [str(path)], input="n\n")
    assert result.exit_code == 1 and "Aborted" in result.output
    assert provider.non_terminated_nodes({}) == []


def test_python_m_group_lists_every_documented_command():
    names = set(commands.cli().commands)
    assert {"up", "down", "exec", "attach", "submit", "rsync-up", "rsync-down",
            "get-head-ip", "monitor", "rsync_up", "rsync_down", "get_head_ip"} <= names  # fmt: skip


def test_entry_points_register_the_commands_for_the_ray_cli():
    from importlib.metadata import entry_points

    eps = {ep.name: ep for ep in entry_points(group="ray.cli")}
    for name in ["up", "down", "exec", "attach", "submit", "rsync-up", "rsync-down",
                 "get-head-ip", "monitor"]:  # fmt: skip
        assert eps[name].load() is getattr(commands, name.replace("-", "_") + "_cmd")


# ---------------------------------------------------------------- AWS flow on moto


@pytest.fixture
def moto_env(monkeypatch, tmp_path):
    pytest.importorskip("boto3", reason="pip install 'ray-autoscaler[test]'")
    ThreadedMotoServer = pytest.importorskip("moto.server").ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://{host}:{port}")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    yield
    server.stop()


def test_aws_up_exec_down_end_to_end_on_moto(moto_env, tmp_path):
    import boto3

    ec2 = boto3.client("ec2", region_name="us-west-2")
    ami = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
    config = {
        "cluster_name": "moto-e2e",
        "provider": {
            "type": "external",
            "module": "autoscaler_moto_provider.MotoAWSNodeProvider",
            "region": "us-west-2",
            "availability_zone": "us-west-2a",
            "root_dir": str(tmp_path / "nodes"),
        },
        "head_node": {"InstanceType": "m5.large", "ImageId": ami},
        "worker_nodes": {
            "InstanceType": "m5.large",
            "ImageId": ami,
            "InstanceMarketOptions": {"MarketType": "spot"},
        },  # fmt: skip
        "head_start_ray_commands": ["echo started > ~/started"],
    }
    path = tmp_path / "aws.yaml"
    path.write_text(yaml.safe_dump(config))
    assert "is up at" in invoke(commands.up_cmd, path, "-y").output
    running = ec2.describe_instances(
        Filters=[{"Name": "tag:ray-cluster-name", "Values": ["moto-e2e"]},
                 {"Name": "instance-state-name", "Values": ["pending", "running"]}]
    )  # fmt: skip
    (instance,) = [i for r in running["Reservations"] for i in r["Instances"]]
    tags = {t["Key"]: t["Value"] for t in instance["Tags"]}
    assert tags["ray-node-type"] == "head" and tags["ray-node-status"] == "up-to-date"
    assert instance["KeyName"].startswith("ray-autoscaler_us-west-2")
    assert instance["Placement"]["AvailabilityZone"] == "us-west-2a"
    key = tmp_path / "home" / ".ssh" / f"{instance['KeyName']}.pem"
    assert key.exists()
    # The head got the key and a bootstrap config pointing at it, for launching workers.
    head_home = tmp_path / "nodes" / instance["InstanceId"] / "home"
    assert (head_home / "ray_bootstrap_key.pem").read_text() == key.read_text()
    bootstrap = yaml.safe_load((head_home / "ray_bootstrap_config.yaml").read_text())
    assert bootstrap["auth"]["ssh_private_key"] == "~/ray_bootstrap_key.pem"
    assert bootstrap["worker_nodes"]["SecurityGroupIds"]
    assert invoke(commands.exec_cmd, path, "cat ~/started").output.strip() == "started"
    assert invoke(commands.get_head_ip_cmd, path).output.strip() == instance.get(
        "PublicIpAddress", instance["PrivateIpAddress"]
    )
    invoke(commands.down_cmd, path, "-y")
    state = ec2.describe_instances(InstanceIds=[instance["InstanceId"]])
    assert state["Reservations"][0]["Instances"][0]["State"]["Name"] in (
        "shutting-down",
        "terminated",
    )


class Recorder:
    """Process runner that records the argv it is given and succeeds."""

    def __init__(self):
        self.calls = []

    def __call__(self, argv, **kwargs):
        from ray.autoscaler.command_runner import ProcessResult

        self.calls.append((argv, kwargs))
        return ProcessResult(0, "")


@pytest.mark.parametrize(
    "options, expected",
    [
        ({}, "screen -L -xRR"),
        ({"new": True}, "screen -L"),
        ({"use_tmux": True}, "tmux attach || tmux new"),
        ({"use_tmux": True, "new": True}, "tmux new"),
    ],
)
def test_attach_opens_an_interactive_session_on_the_head(memory_cluster, options, expected):
    path, provider, root = memory_cluster
    invoke(commands.up_cmd, path, "-y")
    recorder = Recorder()
    commands.attach_cluster(str(path), process_runner=recorder, **options)
    ((argv, kwargs),) = recorder.calls
    assert argv[-1].endswith(expected) and kwargs["interactive"] is True


def test_exec_screen_and_tmux_run_detached_sessions(memory_cluster):
    path, provider, root = memory_cluster
    invoke(commands.up_cmd, path, "-y")
    recorder = Recorder()
    commands.exec_cluster(str(path), "python train.py", tmux=True, process_runner=recorder)
    commands.exec_cluster(str(path), "python train.py", screen=True, process_runner=recorder)
    tmux, screen = (argv[-1] for argv, _ in recorder.calls)
    assert "tmux new -d bash -c 'python train.py; exec bash'" in tmux
    assert "screen -L -dm bash -c 'python train.py; exec bash'" in screen


def test_exec_docker_without_an_image_says_what_to_set(memory_cluster):
    path, provider, root = memory_cluster
    invoke(commands.up_cmd, path, "-y")
    result = invoke(commands.exec_cmd, path, "true", "--docker", ok=False)
    assert "--docker needs docker.image" in result.output


def test_monitor_tails_the_autoscaler_log_on_the_head(memory_cluster):
    path, provider, root = memory_cluster
    invoke(commands.up_cmd, path, "-y")
    recorder = Recorder()
    commands.monitor_cluster(str(path), lines=20, process_runner=recorder)
    ((argv, _),) = recorder.calls
    assert argv[-1].endswith("tail -n 20 -f /tmp/ray/session_*/logs/monitor*")


def test_aws_autoscaler_rounds_launch_tag_and_terminate_spot_workers_on_moto(moto_env, tmp_path):
    import boto3

    from ray.autoscaler.autoscaler import StandardAutoscaler
    from ray.autoscaler.config import load_config
    from ray.autoscaler.load import ClusterLoad, NodeLoad

    ec2 = boto3.client("ec2", region_name="us-west-2")
    ami = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
    raw = {
        "cluster_name": "moto-scale",
        "max_workers": 3,
        "worker_start_ray_commands": ["echo started > ~/started"],
        "idle_timeout_minutes": 1,
        "target_utilization_fraction": 1.0,
        "provider": {
            "type": "external",
            "region": "us-west-2",
            "module": "autoscaler_moto_provider.MotoAWSNodeProvider",
            "root_dir": str(tmp_path / "nodes"),
        },  # fmt: skip
        "head_node_type": "head",
        "available_node_types": {
            "head": {
                "resources": {"CPU": 2},
                "node_config": {"InstanceType": "m5.large", "ImageId": ami},
            },
            "spot4": {
                "resources": {"CPU": 4},
                "node_config": {
                    "InstanceType": "m5.xlarge",
                    "ImageId": ami,
                    "InstanceMarketOptions": {"MarketType": "spot"},
                },
            },  # fmt: skip
        },
    }
    from autoscaler_moto_provider import MotoAWSNodeProvider

    config = load_config(MotoAWSNodeProvider.bootstrap_config(load_config(raw).to_dict()))
    provider = MotoAWSNodeProvider(config.provider, config.cluster_name)
    now = [0.0]
    demand: list[dict] = [{"CPU": 4}, {"CPU": 4}]
    autoscaler = StandardAutoscaler(
        config, provider, lambda: ClusterLoad(
            tuple(NodeLoad(provider.internal_ip(n), {"CPU": 4}, {"CPU": 4})
                  for n in provider.non_terminated_nodes({"ray-node-type": "worker"})
                  if provider.node_tags(n).get("ray-node-status") == "up-to-date"),
            tuple(demand)),
        clock=lambda: now[0],
    )  # fmt: skip
    assert autoscaler.update().launch == {"spot4": 2}
    autoscaler.wait_for_updaters(timeout_s=60)
    workers = provider.non_terminated_nodes({"ray-node-type": "worker"})
    described = ec2.describe_instances(InstanceIds=workers)["Reservations"]
    instances = [i for r in described for i in r["Instances"]]
    assert {i["InstanceType"] for i in instances} == {"m5.xlarge"}
    assert all(i.get("InstanceLifecycle") == "spot" for i in instances)
    for i in instances:
        tags = {t["Key"]: t["Value"] for t in i["Tags"]}
        assert tags["ray-user-node-type"] == "spot4" and tags["ray-node-status"] == "up-to-date"
        assert i["SecurityGroups"] and i["KeyName"].startswith("ray-autoscaler_us-west-2")
    demand.clear()
    autoscaler.update()
    now[0] += 61
    assert sorted(autoscaler.update().terminate) == sorted(workers)
    assert provider.non_terminated_nodes({"ray-node-type": "worker"}) == []
