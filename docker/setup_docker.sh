#!/usr/bin/env bash
# Make a real Docker engine available on this kind of machine (Debian 12, root, no
# systemd): install Debian's docker.io (dockerd, containerd, runc, tini and the 20.10 CLI
# with BuildKit built in, at /usr/bin/docker) and mmdebstrap (build.sh makes the Debian
# base image with it) when missing. Starts nothing: whoever needs the engine starts its own
# dockerd (tests/test_docker_engine.py does, on a socket and data root of its own).
# Idempotent: a second run changes nothing. Counterpart of setup_podman.sh.
set -euo pipefail
need=()
[ -x /usr/sbin/dockerd ] && [ -x /usr/bin/docker ] || need+=(docker.io)
command -v mmdebstrap >/dev/null 2>&1 || [ -x /usr/bin/mmdebstrap ] || need+=(mmdebstrap)
if [ "${#need[@]}" -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "setup_docker: ${need[*]} missing; run as root (apt-get install docker.io mmdebstrap)" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  # --no-install-recommends: no apparmor, cgroupfs-mount, git, xz-utils; none is needed here.
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
