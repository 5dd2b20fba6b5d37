# Stop the Ray processes that `ray start` started on this node.
set -eu
# shellcheck disable=SC2088  # a literal "~/" from the head expands here
case ${RAY_VENV:-} in "~/"*) RAY_VENV=$HOME/${RAY_VENV#"~/"} ;; esac
RAY_BIN=${RAY_BIN:-${RAY_VENV:+$RAY_VENV/bin}}
if [ -n "$RAY_BIN" ]; then export PATH="$RAY_BIN:$PATH"; fi
if ! command -v ray >/dev/null; then
  echo "stop: no 'ray' command on $(hostname) (PATH=$PATH): set RAY_BIN or RAY_VENV" >&2
  exit 1
fi
ray stop
