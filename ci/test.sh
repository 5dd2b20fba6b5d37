#!/usr/bin/env bash
# The project's test command (README command 2; .ci/run calls exactly this).
# Installs what the tests need, then runs the default suite. Extra arguments go
# to pytest, e.g. `ci/test.sh -m multinode`.
set -euo pipefail
cd "$(dirname "$0")/.."
ci/install.sh --test
ci/system_deps.sh
export PYTHONHASHSEED=0 OMP_NUM_THREADS=1
if [ "$#" -eq 0 ]; then
  # The default run: everything but image builds, GPU tests, the full RL learning
  # bars, the extended end-to-end runs and the 100-node scale test (those run from
  # benchmarks/ or with `ci/test.sh -m learning` / `-m extended` / `-m scale`).
  set -- -m "not docker and not gpu and not (learning and slow) and not extended and not scale" --durations=30
fi
.venv/bin/ruff check .
.venv/bin/lint-imports                          # ray-core layers (pyproject.toml)
.venv/bin/python ci/check_library_imports.py    # libraries use only public ray
.venv/bin/python ci/check_types.py              # mypy; ci/mypy_exemptions.txt only shrinks
exec .venv/bin/python -m pytest "$@"
