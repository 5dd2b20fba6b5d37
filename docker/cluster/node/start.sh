# Start Ray on this node: RAY_ROLE=head starts a new cluster (Redis/GCS on REDIS_PORT), a
# worker joins HEAD_IP:REDIS_PORT. Ray processes this node already runs are stopped first.
set -eu
# shellcheck disable=SC2088  # a literal "~/" from the head expands here
case ${RAY_VENV:-} in "~/"*) RAY_VENV=$HOME/${RAY_VENV#"~/"} ;; esac
RAY_BIN=${RAY_BIN:-${RAY_VENV:+$RAY_VENV/bin}}
# ssh runs no login shell: PATH may not reach the Python that has Ray (set RAY_BIN).
if [ -n "$RAY_BIN" ]; then export PATH="$RAY_BIN:$PATH"; fi
if ! command -v ray >/dev/null; then
  echo "start: no 'ray' command on $(hostname) (PATH=$PATH): set RAY_BIN or RAY_VENV, or run 'ray-cluster.sh install'" >&2
  exit 1
fi
NODE_IP=$(ip -4 route get "$HEAD_IP" 2>/dev/null | sed -n 's/.* src \([0-9.]*\).*/\1/p')
[ "$RAY_ROLE" = head ] && NODE_IP=$HEAD_IP
ray stop >/dev/null 2>&1 || true
# The secret goes through the environment (ray start reads $RAY_REDIS_PASSWORD), not argv,
# where `ps` would show it to every user of the node.
if [ -n "${REDIS_PASSWORD:-}" ]; then export RAY_REDIS_PASSWORD="$REDIS_PASSWORD"; fi
# shellcheck disable=SC2086  # RAY_START_ARGS / RAY_HEAD_ARGS are word lists
if [ "$RAY_ROLE" = head ]; then
  ray start --head --redis-port="${REDIS_PORT:-6379}" --node-ip-address="$NODE_IP" \
    ${RAY_START_ARGS:-} ${RAY_HEAD_ARGS:-}
else
  ray start --address="$HEAD_IP:${REDIS_PORT:-6379}" ${NODE_IP:+--node-ip-address="$NODE_IP"} \
    ${RAY_START_ARGS:-}
fi
