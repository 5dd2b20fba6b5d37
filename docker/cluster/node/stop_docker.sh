# Stop and remove this node's Ray container (ray-node-<node IP>, see start_docker.sh).
set -eu
DOCKER=${DOCKER:-docker}
NODE_IP=$(ip -4 route get "$HEAD_IP" 2>/dev/null | sed -n 's/.* src \([0-9.]*\).*/\1/p')
[ "$RAY_ROLE" = head ] && NODE_IP=$HEAD_IP
NAME=ray-node-$NODE_IP
if "$DOCKER" container inspect "$NAME" >/dev/null 2>&1; then
  "$DOCKER" stop -t 10 "$NAME" >/dev/null
  "$DOCKER" rm -f "$NAME" >/dev/null
  echo "$NAME: stopped and removed"
else
  echo "$NAME: no such container"
fi
