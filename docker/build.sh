#!/usr/bin/env bash
# Build base-deps, deploy and examples, in order, with podman (or docker: BUILDER=docker).
# `build.sh base-deps deploy` builds only the images named (deploy and examples are
# built FROM base-deps).
# No registry is reachable on our machines, so the Debian base image is made locally
# with mmdebstrap the first time (see ../../shared/CONTAINERS.md for the recipe).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILDER=${BUILDER:-podman}
TAG=${TAG:-$(sed -n 's/^version = "\(.*\)"/\1/p' packages/ray-core/pyproject.toml)}
CA=${PIP_CA:-/etc/ssl/certs/ca-certificates.crt}
if ! "$BUILDER" image exists localhost/debian-base:bookworm 2>/dev/null; then
  mmdebstrap --quiet --variant=minbase --aptopt='APT::Install-Recommends "false"' bookworm - \
    | "$BUILDER" import --change 'CMD ["/bin/bash"]' --change 'ENV LANG=C.UTF-8' - \
        localhost/debian-base:bookworm
fi
build() {  # name, base image
  "$BUILDER" build --format docker --network=host --secret "id=pip_ca,src=$CA" \
    --build-arg "BASE_IMAGE=$2" -t "localhost/ray/$1:$TAG" -t "localhost/ray/$1:dev" \
    -f "docker/$1/Dockerfile" .
}
wanted=" ${*:-base-deps deploy examples} "
for name in $wanted; do
  case $name in base-deps|deploy|examples) ;; *) echo "build.sh: unknown image '$name' (base-deps, deploy, examples)" >&2; exit 2 ;; esac
done
[[ $wanted == *" base-deps "* ]] && build base-deps localhost/debian-base:bookworm
[[ $wanted == *" deploy "* ]] && build deploy "localhost/ray/base-deps:$TAG"
[[ $wanted == *" examples "* ]] && build examples "localhost/ray/base-deps:$TAG"
echo "built:$wanted(localhost/ray/NAME:$TAG and :dev)"
