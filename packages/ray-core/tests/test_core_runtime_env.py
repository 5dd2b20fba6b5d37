"""runtime_env on a real cluster: one module-scoped ``ray.init`` with a job-level env
(working_dir + env_vars + excludes); tasks and actors add their own on top."""

import os
import sys
import zipfile

import pytest

import ray
from ray.exceptions import RuntimeEnvSetupError
from ray.runtime_env import RuntimeEnv

LIMIT = 1024**2  # a small package limit, so the size check is cheap to hit


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("project")
    (root / "helper_mod.py").write_text("GREETING = 'from working_dir'\n")
    (root / "data.txt").write_text("relative read\n")
    (root / "weights.bin").write_bytes(b"0" * 2048)
    (root / "secret").mkdir()
    (root / "secret" / "key.txt").write_text("do not ship")
    return root


@pytest.fixture(scope="module")
def cluster(project):
    info = ray.init(num_cpus=2, object_store_memory=128 * 1024**2, runtime_env={
        "working_dir": str(project), "env_vars": {"JOB_FLAG": "job", "SHARED": "job"},
        "excludes": ["*.bin", "secret/"],
    }, _system_config={"runtime_env_max_package_bytes": LIMIT})
    yield info
    ray.shutdown()


@ray.remote
def probe(*names):
    import helper_mod

    return {
        "env": {n: os.environ.get(n) for n in names},
        "greeting": helper_mod.GREETING,
        "data": open("data.txt").read().strip(),
        "shipped": sorted(os.listdir(".")),
        "cwd": os.getcwd(),
        "pid": os.getpid(),
        "context": dict(ray.get_runtime_context().runtime_env),
    }


def test_job_env_reaches_tasks_working_dir_is_cwd_and_excludes_apply(cluster):
    driver_cwd = os.getcwd()
    out = ray.get(probe.remote("JOB_FLAG"))
    assert out["env"] == {"JOB_FLAG": "job"}
    assert out["greeting"] == "from working_dir" and out["data"] == "relative read"
    assert out["shipped"] == ["data.txt", "helper_mod.py"]  # *.bin and secret/ left out
    assert out["cwd"].startswith(os.path.join(cluster["session_dir"], "runtime_resources"))
    assert out["context"]["working_dir"].startswith("gcs://_ray_pkg_")
    assert out["context"]["env_vars"] == {"JOB_FLAG": "job", "SHARED": "job"}
    assert os.getcwd() == driver_cwd  # the driver's own cwd is untouched
    assert ray.get_runtime_context().runtime_env["env_vars"]["JOB_FLAG"] == "job"


def test_task_env_merges_over_the_job_env_and_children_inherit_it(cluster):
    @ray.remote
    def parent():
        own = os.environ.get("SHARED"), os.environ.get("TASK_ONLY")
        child = ray.get(probe.remote("SHARED", "TASK_ONLY", "JOB_FLAG"))["env"]
        grandchild = ray.get(probe.options(runtime_env={"env_vars": {"DEEPER": "1"}})
                             .remote("SHARED", "DEEPER"))["env"]
        return own, child, grandchild

    own, child, grandchild = ray.get(parent.options(runtime_env={
        "env_vars": {"SHARED": "task", "TASK_ONLY": "yes"}}).remote())
    assert own == ("task", "yes")
    assert child == {"SHARED": "task", "TASK_ONLY": "yes", "JOB_FLAG": "job"}
    assert grandchild == {"SHARED": "task", "DEEPER": "1"}


def test_actor_gets_the_job_env_plus_its_own(cluster):
    @ray.remote(runtime_env=RuntimeEnv(env_vars={"ACTOR_FLAG": "a"}))
    class Reader:
        def read(self):
            import helper_mod

            return (os.environ.get("JOB_FLAG"), os.environ.get("ACTOR_FLAG"),
                    helper_mod.GREETING, ray.get_runtime_context().runtime_env.env_vars())

    actor = Reader.remote()
    job_flag, actor_flag, greeting, env_vars = ray.get(actor.read.remote())
    assert (job_flag, actor_flag, greeting) == ("job", "a", "from working_dir")
    assert env_vars == {"JOB_FLAG": "job", "SHARED": "job", "ACTOR_FLAG": "a"}
    ray.kill(actor)


def test_workers_are_dedicated_to_one_env(cluster):
    env_a = probe.options(runtime_env={"env_vars": {"WHICH": "a"}})
    env_b = probe.options(runtime_env={"env_vars": {"WHICH": "b"}})
    runs = []
    for _ in range(3):  # interleaved: idle workers of the other env are right there
        runs.append(("a", ray.get(env_a.remote("WHICH"))))
        runs.append(("b", ray.get(env_b.remote("WHICH"))))
    pids = {"a": set(), "b": set()}
    for which, out in runs:
        assert out["env"]["WHICH"] == which
        pids[which].add(out["pid"])
    assert not pids["a"] & pids["b"]
    # and reused within an env (under load a lease may time out between calls and a
    # second worker start, but not one per call)
    assert len(pids["a"]) < 3 and len(pids["b"]) < 3, pids


def test_py_modules_and_zip_working_dir(cluster, tmp_path):
    (tmp_path / "shipped_pkg").mkdir()
    (tmp_path / "shipped_pkg" / "__init__.py").write_text("NAME = 'pkg'\n")
    (tmp_path / "shipped_pkg" / "huge.bin").write_bytes(b"0" * (2 * LIMIT))
    (tmp_path / "shipped_single.py").write_text("NAME = 'single'\n")
    archive = tmp_path / "proj.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("proj/zipped_mod.py", "NAME = 'zip'\n")
    sys.path.insert(0, str(tmp_path))
    try:
        import shipped_single  # a module object is accepted as well as a path
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("shipped_single", None)

    @ray.remote
    def use_them():
        import shipped_pkg
        import shipped_single
        import zipped_mod

        return shipped_pkg.NAME, shipped_single.NAME, zipped_mod.NAME, sorted(os.listdir("."))

    env = {"py_modules": [str(tmp_path / "shipped_pkg"), shipped_single],
           "working_dir": str(archive), "excludes": ["*.bin"]}
    assert ray.get(use_them.options(runtime_env=env).remote()) == (
        "pkg", "single", "zip", ["zipped_mod.py"])
    with pytest.raises(ImportError):  # tasks without it do not see it
        ray.get(ray.remote(lambda: __import__("shipped_pkg")).remote())


def test_package_over_the_size_limit_fails_at_submission(cluster, tmp_path):
    (tmp_path / "big").mkdir()
    (tmp_path / "big" / "model.ckpt").write_bytes(b"0" * (LIMIT + 1))
    with pytest.raises(ValueError, match=r"over the 1 MiB limit.*model\.ckpt.*excludes"):
        probe.options(runtime_env={"py_modules": [str(tmp_path / "big")]}).remote()


def test_unsupported_and_misspelled_keys_fail_before_submission(cluster):
    with pytest.raises(ValueError, match=r"runtime_env\['pip'\] is not supported"):
        probe.options(runtime_env={"pip": ["requests"]})
    with pytest.raises(TypeError, match="Did you mean 'env_vars'"):
        ray.remote(runtime_env={"env_var": {"A": "1"}})(lambda: 1)
    with pytest.raises(TypeError, match=r"env_vars'\]\['N'\] must be a str"):
        probe.options(runtime_env={"env_vars": {"N": 1}})


def test_node_setup_failure_is_a_runtime_env_setup_error(cluster):
    missing = "gcs://_ray_pkg_" + "0" * 40 + ".zip"
    with pytest.raises(RuntimeEnvSetupError, match="not in the GCS"):
        ray.get(probe.options(runtime_env={"py_modules": [missing]}).remote(), timeout=60)
    assert ray.get(probe.remote("JOB_FLAG"))["env"] == {"JOB_FLAG": "job"}  # still fine


def test_env_whose_workers_cannot_start_fails_instead_of_retrying_forever(cluster):
    broken = probe.options(runtime_env={"env_vars": {"PYTHONHOME": "/no/such/python"}})
    with pytest.raises(RuntimeEnvSetupError, match="exited during start-up 3 times"):
        ray.get(broken.remote(), timeout=60)


def test_options_made_by_the_driver_reuse_its_upload_inside_tasks(cluster, tmp_path):
    import shutil

    pkg = tmp_path / "driver_only_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("WHERE = 'uploaded by the driver'\n")

    @ray.remote
    def where():
        import driver_only_pkg

        return driver_only_pkg.WHERE

    with_pkg = where.options(runtime_env={"py_modules": [str(pkg)]})
    assert ray.get(with_pkg.remote()) == "uploaded by the driver"
    shutil.rmtree(pkg)  # not on "this node" any more: tasks must use the upload

    @ray.remote
    def nested():
        return ray.get(with_pkg.remote())

    assert ray.get(nested.remote()) == "uploaded by the driver"
