# Install or upgrade Ray on this node into the virtualenv RAY_VENV (created when missing).
# What is installed: RAY_INSTALL (pip requirements: wheel files, directories, URLs), else
# the packages of this repository's checkout at RAY_SRC [~/ray] (`git pull` first when
# RAY_GIT_PULL=1), the way the 0.2 docs upgraded a cluster from a source checkout.
set -eu
RAY_VENV=${RAY_VENV:-$HOME/ray-venv}
# shellcheck disable=SC2088  # a literal "~/" from the head expands here
case $RAY_VENV in "~/"*) RAY_VENV=$HOME/${RAY_VENV#"~/"} ;; esac
if [ -z "${RAY_INSTALL:-}" ]; then
  RAY_SRC=${RAY_SRC:-$HOME/ray}
  # shellcheck disable=SC2088  # a literal "~/" from the head expands here
  case $RAY_SRC in "~/"*) RAY_SRC=$HOME/${RAY_SRC#"~/"} ;; esac
  if [ ! -d "$RAY_SRC/packages/ray-core" ]; then
    echo "upgrade: no checkout of this repository at $RAY_SRC on $(hostname): clone it there," \
         "set RAY_SRC, or set RAY_INSTALL to pip requirements (wheel files, URLs)" >&2
    exit 1
  fi
  if [ "${RAY_GIT_PULL:-0}" = 1 ]; then git -C "$RAY_SRC" pull --ff-only; fi
  RAY_INSTALL="$RAY_SRC/packages/ray-plasma $RAY_SRC/packages/ray-core $RAY_SRC/packages/ray-autoscaler"
fi
if [ ! -x "$RAY_VENV/bin/python" ]; then
  "${RAY_PYTHON:-python3}" -m venv "$RAY_VENV"
fi
# shellcheck disable=SC2086  # PIP_ARGS and RAY_INSTALL are word lists
"$RAY_VENV/bin/python" -m pip install --upgrade --disable-pip-version-check ${PIP_ARGS:-} $RAY_INSTALL
"$RAY_VENV/bin/python" -c 'import ray, sys; print("ray", ray.__version__, "in", sys.prefix, "at", ray.__file__)'
