#!/usr/bin/env bash
# Create ./.venv (if missing) and install every package of the monorepo into it,
# editable, from local paths only. Usage: ci/install.sh [--test]
#   --test  also install what the test suites need (pytest, hypothesis, ruff, ...)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
VENV=${RAY_VENV:-.venv}
if [ ! -x "$VENV/bin/python" ]; then
  "$PY" -m venv "$VENV"
fi
PIP="$VENV/bin/python -m pip install --quiet --disable-pip-version-check"
# torch is pinned everywhere: any other version downloads gigabytes of CUDA wheels.
PKGS=(-e packages/ray-plasma -e packages/ray-core -e packages/ray-tune -e packages/ray-rllib
      -e packages/ray-sgd -e packages/ray-autoscaler)
if [ "${1:-}" = "--test" ]; then
  # The tests exercise the optional paths for real: each package with the extras its
  # tests import (ray.data on Arrow, the dashboard, Tune's searchers/trackers/storage).
  TEST_PKGS=(-e "packages/ray-plasma[test]" -e "packages/ray-core[all]" -e "packages/ray-tune[test]"
             -e "packages/ray-rllib[atari]" -e "packages/ray-sgd[test]" -e "packages/ray-autoscaler[test]")
  $PIP "torch==2.13.0" "${TEST_PKGS[@]}" -r ci/requirements-test.txt
else
  $PIP "torch==2.13.0" "${PKGS[@]}"
fi
