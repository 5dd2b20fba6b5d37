# Start Ray on this node in a container of RAY_IMAGE (whose entry point is `ray start
# --block`, like localhost/ray/deploy): host networking and a shared-memory size for the
# object store. The container is named ray-node-<node IP>; an old one is replaced.
set -eu
DOCKER=${DOCKER:-docker}
RAY_IMAGE=${RAY_IMAGE:-localhost/ray/deploy:dev}
NODE_IP=$(ip -4 route get "$HEAD_IP" 2>/dev/null | sed -n 's/.* src \([0-9.]*\).*/\1/p')
[ "$RAY_ROLE" = head ] && NODE_IP=$HEAD_IP
if [ -z "$NODE_IP" ]; then
  echo "start_docker: no route from $(hostname) to the head at $HEAD_IP" >&2
  exit 1
fi
NAME=ray-node-$NODE_IP
"$DOCKER" rm -f "$NAME" >/dev/null 2>&1 || true
if [ "$RAY_ROLE" = head ]; then
  set -- --head --redis-port="${REDIS_PORT:-6379}"
  ROLE_ARGS=${RAY_HEAD_ARGS:-}
else
  set -- --address="$HEAD_IP:${REDIS_PORT:-6379}"
  ROLE_ARGS=
fi
# The secret enters the container through its environment (`-e NAME` copies it from ours),
# never the command line, where `ps` on the host would show it.
if [ -n "${REDIS_PASSWORD:-}" ]; then export RAY_REDIS_PASSWORD="$REDIS_PASSWORD"; fi
# shellcheck disable=SC2086  # DOCKER_RUN_ARGS / RAY_START_ARGS / ROLE_ARGS are word lists
"$DOCKER" run -d --name "$NAME" --label ray.node-ip="$NODE_IP" --net=host \
  --shm-size="${SHM_SIZE:-2g}" ${REDIS_PASSWORD:+-e RAY_REDIS_PASSWORD} ${DOCKER_RUN_ARGS:-} \
  "$RAY_IMAGE" "$@" --node-ip-address="$NODE_IP" ${RAY_START_ARGS:-} $ROLE_ARGS
sleep 2
if [ "$("$DOCKER" inspect -f '{{.State.Running}}' "$NAME")" != true ]; then
  echo "start_docker: container $NAME on $(hostname) exited:" >&2
  "$DOCKER" logs "$NAME" >&2 || true
  exit 1
fi
echo "$NAME: running $RAY_IMAGE"
