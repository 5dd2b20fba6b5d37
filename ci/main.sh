#!/usr/bin/env bash
# README command 1: install everything into ./.venv and run the main job, a real
# workload on an embedded single-node cluster.
set -euo pipefail
cd "$(dirname "$0")/.."
ci/install.sh
exec .venv/bin/python examples/main_job.py "$@"
