#!/usr/bin/env bash
# Build base-deps, deploy and examples, in order, with podman (default) or a Docker engine
# (BUILDER=docker). `build.sh base-deps deploy` builds only the images named (deploy and
# examples are built FROM base-deps).
# No registry is reachable on our machines, so the Debian base image is made locally
# with mmdebstrap the first time (see ../../shared/CONTAINERS.md for the recipe).
# The Dockerfiles use `RUN --mount` (a build secret for pip's CA, a bind mount of local
# wheels): podman/buildah has it; with docker it needs BuildKit, which this script uses
# through `docker buildx build --load` when the buildx plugin is there, else through
# DOCKER_BUILDKIT=1 with a docker CLI older than 23 (those have BuildKit built in).
# DOCKER names the docker CLI (default `docker`), e.g. DOCKER=/usr/bin/docker for Debian's.
# A torch wheel in TORCH_WHEELS (default /opt/wheels, where this kind of machine keeps
# the CPU build that CI pins) is staged into docker/.wheels for the examples image;
# without one, pip takes torch from the registry (a CUDA build of several GB).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILDER=${BUILDER:-podman}
# The packages' version (ci/bump_version.py keeps every package at ray-core's).
TAG=${TAG:-$(sed -n 's/^__version__ = "\(.*\)"$/\1/p' packages/ray-core/src/ray/__init__.py)}
CA=${PIP_CA:-/etc/ssl/certs/ca-certificates.crt}
TORCH_WHEELS=${TORCH_WHEELS:-/opt/wheels}
case $BUILDER in
  podman)
    image_exists() { podman image exists "$1"; }
    build_cmd=(podman build --format docker) ;;
  docker)
    DOCKER=${DOCKER:-docker}
    image_exists() { "$DOCKER" image inspect "$1" >/dev/null 2>&1; }
    if "$DOCKER" buildx version >/dev/null 2>&1; then
      build_cmd=("$DOCKER" buildx build --load)
    else
      # `docker version` fails without a daemon but still prints the client's part
      client=$("$DOCKER" version --format '{{.Client.Version}}' 2>/dev/null | head -n1 || true)
      if ! [[ ${client:-x} =~ ^[0-9]+\. ]] || [ "${client%%.*}" -ge 23 ]; then
        echo "build.sh: the Dockerfiles need BuildKit: '$DOCKER' (client $client) has no buildx" \
          "plugin; install it, or point DOCKER at a CLI older than 23 (Debian 12: DOCKER=/usr/bin/docker from docker.io)" >&2
        exit 2
      fi
      export DOCKER_BUILDKIT=1
      build_cmd=("$DOCKER" build)
    fi
    BUILDER=$DOCKER ;;
  *) echo "build.sh: BUILDER must be podman or docker, not '$BUILDER'" >&2; exit 2 ;;
esac
wanted=" ${*:-base-deps deploy examples} "
for name in $wanted; do
  case $name in base-deps|deploy|examples) ;; *) echo "build.sh: unknown image '$name' (base-deps, deploy, examples)" >&2; exit 2 ;; esac
done
if ! image_exists localhost/debian-base:bookworm; then
  mmdebstrap --quiet --variant=minbase --aptopt='APT::Install-Recommends "false"' bookworm - \
    | "$BUILDER" import --change 'CMD ["/bin/bash"]' --change 'ENV LANG=C.UTF-8' - \
        localhost/debian-base:bookworm
fi
# Local wheels for the examples image (bind-mounted at build time, never copied into a layer).
mkdir -p docker/.wheels
for wheel in "$TORCH_WHEELS"/torch-*.whl; do
  [ -e "$wheel" ] || continue
  [ -e "docker/.wheels/$(basename "$wheel")" ] || ln "$wheel" docker/.wheels/ 2>/dev/null \
    || cp "$wheel" docker/.wheels/
done
image_id() { "$BUILDER" image inspect --format '{{.Id}}' "$1" 2>/dev/null || true; }
build() {  # name, base image
  local old new
  old=$(image_id "localhost/ray/$1:$TAG")
  "${build_cmd[@]}" --network=host --secret "id=pip_ca,src=$CA" \
    --build-arg "BASE_IMAGE=$2" -t "localhost/ray/$1:$TAG" -t "localhost/ray/$1:dev" \
    -f "docker/$1/Dockerfile" .
  new=$(image_id "localhost/ray/$1:$TAG")
  if [ -n "$old" ] && [ "$old" != "$new" ]; then
    # The image this build replaced, now untagged; the engine refuses (and we go on) while
    # a container or another image still uses it.
    "$BUILDER" image rm "$old" >/dev/null 2>&1 || true
  fi
}
[[ $wanted == *" base-deps "* ]] && build base-deps localhost/debian-base:bookworm
[[ $wanted == *" deploy "* ]] && build deploy "localhost/ray/base-deps:$TAG"
[[ $wanted == *" examples "* ]] && build examples "localhost/ray/base-deps:$TAG"
echo "built:$wanted(localhost/ray/NAME:$TAG and :dev)"
