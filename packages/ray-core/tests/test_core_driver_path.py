"""A task can import a module that sits next to the driver's script (the job's workers
put the script's folder on sys.path), and Ray 2.x's ray._private.services exists."""

import os
import subprocess
import sys
import textwrap


def test_task_imports_a_module_next_to_the_driver_script(tmp_path):
    (tmp_path / "sibling_helper.py").write_text("def triple(x):\n    return 3 * x\n")
    script = tmp_path / "driver.py"
    script.write_text(textwrap.dedent("""
        import ray
        ray.init(num_cpus=1)

        @ray.remote
        def use_helper(x):
            import sibling_helper
            return sibling_helper.triple(x)

        print(ray.get(use_helper.remote(14)))
        ray.shutdown()
    """))
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    # Run from elsewhere: only the script's own folder can make the import work.
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=120, cwd="/", env=env)
    assert out.stdout.strip() == "42", out.stderr


def test_ray_private_services_has_the_node_helpers():
    from ray._private.services import get_node_ip_address

    assert get_node_ip_address().count(".") == 3
