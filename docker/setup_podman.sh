#!/usr/bin/env bash
# Make podman usable on this kind of machine (Debian 12, root, no systemd): install podman,
# buildah, runc, catatonit (the pause process `podman kube play` builds its pods' infra
# image from) and mmdebstrap from Debian's packages when missing, and give podman the two
# settings it needs here (see shared/CONTAINERS.md):
#   - runc as the OCI runtime (crun fails on this hybrid cgroup setup),
#   - default ulimits within the hard limits (podman's default nofile/nproc of 1048576 needs
#     CAP_SYS_RESOURCE, which these machines do not grant).
# Idempotent: a second run changes nothing. The image tests (marker `docker`) run it first.
set -euo pipefail
need=()
for tool in podman buildah runc catatonit mmdebstrap; do
  command -v "$tool" >/dev/null 2>&1 || [ -x "/usr/sbin/$tool" ] || need+=("$tool")
done
if [ "${#need[@]}" -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "setup_podman: ${need[*]} missing; run as root (apt-get install podman buildah runc catatonit mmdebstrap)" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  # runc named explicitly: podman depends on "crun | runc", and crun does not work here.
  apt-get install -y -qq podman buildah runc catatonit mmdebstrap >/dev/null
fi
conf=/etc/containers/containers.conf
marker="# written by ray docker/setup_podman.sh"
if [ -e "$conf" ] && ! grep -qF "$marker" "$conf"; then
  # Someone else's configuration: leave it, but say what podman needs here.
  grep -q 'runtime *= *"runc"' "$conf" && grep -q default_ulimits "$conf" \
    || echo "setup_podman: $conf exists; make sure it sets runtime = \"runc\" and default_ulimits" >&2
  exit 0
fi
nofile=$(ulimit -Hn)
nproc=$(ulimit -Hu)
pid_max=$(cat /proc/sys/kernel/pid_max)
# podman caps its own nproc at pid_max
if [ "$nproc" = unlimited ] || [ "$nproc" -gt "$pid_max" ]; then nproc=$pid_max; fi
if [ "$nofile" = unlimited ]; then nofile=1048576; fi
want=$(printf '%s\n[containers]\ndefault_ulimits = ["nofile=%s:%s", "nproc=%s:%s"]\n[engine]\nruntime = "runc"\n' \
  "$marker" "$nofile" "$nofile" "$nproc" "$nproc")
if [ "$(cat "$conf" 2>/dev/null)" != "$want" ]; then
  mkdir -p "$(dirname "$conf")"
  printf '%s\n' "$want" > "$conf"
fi
