# Make RAY_IMAGE available on this node: install the container engine when it is missing
# (Debian: docker.io, or podman + runc), then keep the image if present, else load it from
# IMAGE_ARCHIVE (copied here beforehand by ray-cluster.sh), else pull it.
set -eu
DOCKER=${DOCKER:-docker}
RAY_IMAGE=${RAY_IMAGE:-localhost/ray/deploy:dev}
if ! command -v "$DOCKER" >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    case $DOCKER in podman) pkgs="podman runc" ;; *) pkgs=docker.io ;; esac
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $pkgs
  else
    echo "setup_docker: '$DOCKER' is not installed on $(hostname) (apt-get install docker.io)" >&2
    exit 1
  fi
fi
if [ "$DOCKER" = docker ] && ! docker info >/dev/null 2>&1 && command -v service >/dev/null; then
  service docker start
fi
if "$DOCKER" image inspect "$RAY_IMAGE" >/dev/null 2>&1; then
  echo "$RAY_IMAGE: present"
elif [ -n "${IMAGE_ARCHIVE:-}" ]; then
  case $IMAGE_ARCHIVE in
    *.gz) gunzip -c "$IMAGE_ARCHIVE" | "$DOCKER" load ;;
    *) "$DOCKER" load -i "$IMAGE_ARCHIVE" ;;
  esac
  "$DOCKER" image inspect "$RAY_IMAGE" >/dev/null || {
    echo "setup_docker: $IMAGE_ARCHIVE does not contain $RAY_IMAGE" >&2; exit 1; }
else
  "$DOCKER" pull "$RAY_IMAGE"
fi
