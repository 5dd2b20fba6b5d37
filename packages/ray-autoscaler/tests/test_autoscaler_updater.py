"""Command lines (ssh, rsync, docker, kubectl) and the NodeUpdater run for real on local nodes."""

from __future__ import annotations

import shlex

import pytest

from ray.autoscaler.command_runner import (
    CommandFailed,
    DockerCommandRunner,
    LocalCommandRunner,
    ProcessResult,
    SSHCommandRunner,
    run_process,
)
from ray.autoscaler.providers.memory import InMemoryNodeProvider
from ray.autoscaler.tags import (
    STATUS_SETTING_UP,
    STATUS_SYNCING_FILES,
    STATUS_UP_TO_DATE,
    STATUS_UPDATE_FAILED,
    STATUS_WAITING_FOR_SSH,
    TAG_RAY_NODE_STATUS,
    TAG_RAY_RUNTIME_CONFIG,
)
from ray.autoscaler.updater import Backoff, NodeUpdater, UpdatePlan, retry_transport_errors


class StaticIPs:
    def external_ip(self, node_id):
        return "203.0.113.7"

    def internal_ip(self, node_id):
        return "10.0.0.7"


def ssh_runner(**kwargs):
    return SSHCommandRunner(
        node_id="n1",
        provider=StaticIPs(),
        auth_config={"ssh_user": "ray", "ssh_private_key": "~/key.pem"},
        cluster_name="c",
        **kwargs,
    )


def test_ssh_command_line_uses_key_user_ip_and_a_login_shell():
    argv = ssh_runner().command_argv("echo 'hi there'")
    assert argv[0] == "ssh" and "-tt" not in argv
    assert argv[argv.index("-i") + 1].endswith("/key.pem")
    assert "StrictHostKeyChecking=no" in argv and "BatchMode=yes" in argv
    assert argv[-2] == "ray@203.0.113.7"
    assert shlex.split(argv[-1]) == ["bash", "--login", "-c", "echo 'hi there'"]


def test_ssh_internal_ip_port_forward_and_tty():
    argv = ssh_runner(use_internal_ip=True).command_argv(
        "jupyter", port_forward=[8899], interactive=True
    )
    assert "-tt" in argv and argv[-2] == "ray@10.0.0.7"
    assert argv[argv.index("-L") + 1] == "8899:localhost:8899"


def test_rsync_command_lines_carry_the_ssh_options():
    up = ssh_runner().rsync_up_argv("/local/dir/", "~/remote")
    assert up[0] == "rsync" and up[-2:] == ["/local/dir/", "ray@203.0.113.7:~/remote"]
    rsh = shlex.split(up[up.index("--rsh") + 1])
    assert rsh[0] == "ssh" and "-i" in rsh
    down = ssh_runner().rsync_down_argv("/remote/f", "/tmp/f")
    assert down[-2:] == ["ray@203.0.113.7:/remote/f", "/tmp/f"]


def test_env_is_exported_before_the_command():
    seen = []
    runner = ssh_runner(process_runner=lambda argv, **kw: seen.append(argv) or ProcessResult(0, ""))
    runner.run("ray start", env={"RAY_HEAD_IP": "10.0.0.1"})
    assert shlex.split(seen[0][-1])[-1] == "export RAY_HEAD_IP=10.0.0.1; ray start"


def test_docker_runner_execs_in_the_container_without_a_tty():
    docker = DockerCommandRunner(ssh_runner(), {"image": "img:1", "container_name": "ray_docker"})
    inner = shlex.split(docker.command_argv("python -V")[-1])[-1]
    assert inner.startswith("docker exec -i ray_docker /bin/bash -lc")
    assert "-it" in shlex.split(docker.command_argv("bash", interactive=True)[-1])[-1]
    start = docker.start_container_command(["/tmp/mount"])
    assert "docker run --rm --name ray_docker -d -it" in start
    assert "-v /tmp/mount:/tmp/mount" in start and "--net=host" in start
    assert start.startswith("(command -v docker >/dev/null || (curl -fsSL https://get.docker.com")
    assert '[ "$(docker inspect' in start


def test_command_failed_carries_node_status_and_output(tmp_path):
    runner = LocalCommandRunner(node_id="n9", root=str(tmp_path))
    with pytest.raises(CommandFailed) as e:
        runner.run("echo boom >&2; exit 3")
    assert e.value.returncode == 3 and "boom" in e.value.output and "n9" in str(e.value)
    assert not e.value.transport_error


def test_process_timeout_is_reported_as_a_failure():
    result = run_process(["sleep", "5"], timeout_s=0.2)
    assert result.returncode == 124 and "timed out" in result.output


def test_backoff_schedule_is_exponential_and_capped():
    assert Backoff(initial_s=1, factor=2, max_s=5, timeout_s=20).delays() == [1, 2, 4, 5, 5, 5]


def test_transport_errors_are_retried_with_backoff_and_others_are_not():
    calls, slept = [], []

    def flaky():
        calls.append(1)
        if len(calls) < 3:
            raise CommandFailed("n", "uptime", 255, "Connection refused")
        return "ok"

    backoff = Backoff(initial_s=1, timeout_s=60)
    assert retry_transport_errors(flaky, backoff, sleep=slept.append) == "ok"
    assert slept == [1, 2]

    def broken():
        raise CommandFailed("n", "false", 1)

    with pytest.raises(CommandFailed):
        retry_transport_errors(broken, backoff, sleep=slept.append)
    assert slept == [1, 2]


@pytest.fixture
def memory_node(tmp_path):
    provider = InMemoryNodeProvider({"root_dir": str(tmp_path / "nodes")}, "updater-test")
    provider.create_node({}, {}, 1)
    (node_id,) = provider.non_terminated_nodes({})
    yield provider, node_id
    InMemoryNodeProvider.reset("updater-test")


def test_updater_syncs_files_runs_commands_in_order_and_tags_progress(memory_node, tmp_path):
    provider, node_id = memory_node
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.txt").write_text("A\n")
    (tmp_path / "sha").write_text("abc123")
    runner = provider.get_command_runner(node_id, {})
    plan = UpdatePlan(
        file_mounts={"~/code": str(tmp_path / "src"), "/tmp/sha": str(tmp_path / "sha")},
        initialization_commands=["echo init >> ~/log"],
        setup_commands=["echo setup $RAY_HEAD_IP >> ~/log", "cat ~/code/a.txt >> ~/log"],
        start_commands=["echo start >> ~/log"],
        runtime_hash="h1",
        env={"RAY_HEAD_IP": "10.1.2.3"},
    )
    updater = NodeUpdater(node_id, provider, runner, plan, sleep=lambda s: None)
    assert updater.run(), updater.error
    assert (tmp_path / "nodes" / node_id / "home" / "log").read_text().split("\n") == [
        "init", "setup 10.1.2.3", "A", "start", "",
    ]  # fmt: skip
    assert (tmp_path / "nodes" / node_id / "tmp" / "sha").read_text() == "abc123"
    assert updater.statuses == [
        STATUS_WAITING_FOR_SSH, STATUS_SYNCING_FILES, STATUS_SETTING_UP, STATUS_UP_TO_DATE,
    ]  # fmt: skip
    tags = provider.node_tags(node_id)
    assert tags[TAG_RAY_NODE_STATUS] == STATUS_UP_TO_DATE and tags[TAG_RAY_RUNTIME_CONFIG] == "h1"


def test_updater_restart_only_and_no_restart(memory_node, tmp_path):
    provider, node_id = memory_node
    runner = provider.get_command_runner(node_id, {})
    home = tmp_path / "nodes" / node_id / "home"
    base = dict(setup_commands=["echo setup >> ~/log"], start_commands=["echo start >> ~/log"])
    NodeUpdater(node_id, provider, runner, UpdatePlan(**base, restart_only=True)).run()
    assert home.joinpath("log").read_text() == "start\n"
    NodeUpdater(node_id, provider, runner, UpdatePlan(**base, no_restart=True)).run()
    assert home.joinpath("log").read_text() == "start\nsetup\n"


def test_updater_marks_failed_setup_and_keeps_the_error(memory_node):
    provider, node_id = memory_node
    runner = provider.get_command_runner(node_id, {})
    plan = UpdatePlan(setup_commands=["echo fine", "echo broken >&2; exit 7", "echo never"])
    updater = NodeUpdater(node_id, provider, runner, plan)
    assert not updater.run()
    assert provider.node_tags(node_id)[TAG_RAY_NODE_STATUS] == STATUS_UPDATE_FAILED
    assert isinstance(updater.error, CommandFailed) and updater.error.returncode == 7
    assert "broken" in str(updater.error)


def test_updater_waits_for_ssh_with_backoff_until_the_node_answers(memory_node):
    provider, node_id = memory_node
    attempts = []

    def refuses_twice(argv, **kwargs):
        # Fault injection in front of the real process runner: the first two
        # connections fail the way ssh does when sshd is not up yet.
        attempts.append(argv)
        if len(attempts) <= 2:
            return ProcessResult(255, "ssh: connect to host: Connection refused")
        return run_process(argv, **kwargs)

    runner = provider.get_command_runner(node_id, {}, process_runner=refuses_twice)
    slept = []
    updater = NodeUpdater(
        node_id,
        provider,
        runner,
        UpdatePlan(start_commands=["true"]),
        ssh_backoff=Backoff(initial_s=0.5, timeout_s=10),
        sleep=slept.append,
    )
    assert updater.run(), updater.error
    assert slept == [0.5, 1.0]


def test_updater_gives_up_when_ssh_never_comes_up(memory_node):
    provider, node_id = memory_node
    runner = provider.get_command_runner(
        node_id, {}, process_runner=lambda argv, **kw: ProcessResult(255, "No route to host")
    )
    slept = []
    updater = NodeUpdater(
        node_id, provider, runner, UpdatePlan(),
        ssh_backoff=Backoff(initial_s=1, max_s=4, timeout_s=10), sleep=slept.append,
    )  # fmt: skip
    assert not updater.run()
    assert sum(slept) >= 10 and "No route to host" in str(updater.error)
    assert provider.node_tags(node_id)[TAG_RAY_NODE_STATUS] == STATUS_UPDATE_FAILED
