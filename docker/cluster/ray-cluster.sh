#!/usr/bin/env bash
# Run a manual Ray cluster from its head node with parallel-ssh (Debian package `pssh`).
#
#   docker/cluster/ray-cluster.sh [-w workers.txt] COMMAND [ARGS]
#
# workers.txt lists one worker per line (IP or [user@]host[:port], head excluded, `#`
# comments allowed). Every COMMAND acts on the head (this machine) and on the workers;
# the workers get the matching script under node/ on their standard input
# (`parallel-ssh -h workers.txt -i -I bash -s < script`), preceded by the settings below.
#
# Commands
#   check                 ssh to every worker and run `uptime`
#   install               install/upgrade Ray here, then on the workers (node/upgrade.sh)
#   up | start            `ray start --head` here, then `ray start --address=HEAD:PORT` on the workers
#   down | stop           `ray stop` on the workers, then here
#   docker-install        make RAY_IMAGE present on every node (node/setup_docker.sh)
#   docker-up             head container here, worker containers on the workers (--net=host)
#   docker-down           stop and remove those containers
#   sync DIR ABS_DEST     parallel-rsync DIR to the absolute path ABS_DEST on the workers
#   script NAME [ROLE]    print what a node receives for node/NAME.sh (ROLE: worker|head)
#
# Settings (environment variables; defaults in brackets)
#   WORKERS [workers.txt]     HEAD_IP [the address this machine uses to reach the first worker]
#   REDIS_PORT [6379]
#   REDIS_PASSWORD []         the cluster's secret; `up` and `docker-up` make one when it is empty
#                             and keep it (mode 0600) in RAY_SECRET_FILE [~/.ray-cluster-password]:
#                             drivers pass it as ray.init(..., redis_password=...)
#   RAY_START_ARGS []         extra `ray start` flags on every node, e.g. "--num-cpus=8"
#   RAY_HEAD_ARGS []          extra flags for the head only
#   RAY_VENV []               virtualenv holding Ray on each node (install target) [~/ray-venv for install]
#   RAY_BIN []                directory with the `ray` command on each node [$RAY_VENV/bin,
#                             else this machine's `ray` directory]: ssh sessions run no login
#                             shell, so PATH is set explicitly (the classic pssh pitfall)
#   RAY_PYTHON [python3]      interpreter that creates RAY_VENV when it does not exist yet
#   RAY_INSTALL []            pip requirements to install (wheel files, directories, URLs); when
#                             empty, the packages of the checkout RAY_SRC [~/ray] on each node
#   RAY_GIT_PULL [0]          1: `git pull --ff-only` in RAY_SRC before installing
#   PIP_ARGS []               extra `pip install` arguments, e.g. "--no-index --find-links /wheels"
#   SSH_USER []  SSH_KEY []   user and private key for the workers (default: ssh's own)
#   SSH_OPTIONS [StrictHostKeyChecking=accept-new BatchMode=yes]  ssh -o options
#   PSSH_PAR [32]             parallel connections; PSSH_TIMEOUT [120] seconds per host (0: none)
#   DOCKER [docker, else podman]   RAY_IMAGE [localhost/ray/deploy:dev]   SHM_SIZE [2g]
#   IMAGE_ARCHIVE []          `docker save` tarball (.tar or .tar.gz) to copy and load where the
#                             image is missing (no registry needed); otherwise it is pulled
#   DOCKER_RUN_ARGS []        extra `docker run` flags
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

die() { echo "ray-cluster: $*" >&2; exit 2; }
usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; }

while getopts "w:h" opt; do
  case $opt in
    w) WORKERS=$OPTARG ;;
    h) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { usage >&2; exit 2; }
CMD=$1; shift

WORKERS=${WORKERS:-workers.txt}
REDIS_PORT=${REDIS_PORT:-6379}
PSSH_PAR=${PSSH_PAR:-32}
PSSH_TIMEOUT=${PSSH_TIMEOUT:-120}
SSH_OPTIONS=${SSH_OPTIONS:-StrictHostKeyChecking=accept-new BatchMode=yes}

# Hosts from workers.txt, without comments and blank lines.
worker_hosts() {
  if [ ! -f "$WORKERS" ]; then
    [ "$CMD" = script ] && return 0
    die "no workers file '$WORKERS': list one worker IP per line (head excluded), or pass -w FILE"
  fi
  sed -e 's/#.*//' -e 's/[[:space:]]//g' "$WORKERS" | grep -v '^$' || true
}
HOSTS=$(worker_hosts)
[ -n "$HOSTS" ] || [ "$CMD" = script ] || die "'$WORKERS' lists no worker"
HOSTFILE=$(mktemp); trap 'rm -f "$HOSTFILE"' EXIT
[ -z "$HOSTS" ] || printf '%s\n' "$HOSTS" > "$HOSTFILE"

strip_host() { local h=${1#*@}; echo "${h%%:*}"; }

if [ -z "${HEAD_IP:-}" ]; then
  first=$(head -n1 "$HOSTFILE"); first=$(strip_host "$first")
  if [ -n "$first" ] && command -v getent >/dev/null; then
    first=$(getent ahostsv4 "$first" | awk 'NR==1 {print $1}')
  fi
  [ -n "$first" ] && HEAD_IP=$(ip -4 route get "$first" 2>/dev/null | sed -n 's/.* src \([0-9.]*\).*/\1/p')
  [ -n "${HEAD_IP:-}" ] || [ "$CMD" != script ] || HEAD_IP="<head-ip>"
  [ -n "${HEAD_IP:-}" ] || die "cannot work out the head's IP address: set HEAD_IP to the address the workers reach this machine at"
fi

if [ -z "${RAY_BIN:-}" ] && [ -z "${RAY_VENV:-}" ] && command -v ray >/dev/null; then
  RAY_BIN=$(dirname "$(command -v ray)")
fi
if [ -z "${DOCKER:-}" ] && [[ $CMD == docker-* || $CMD == script ]]; then  # a docker CLI without a reachable daemon does not count
  if command -v docker >/dev/null && docker version --format '{{.Server.Version}}' >/dev/null 2>&1; then
    DOCKER=docker
  elif command -v podman >/dev/null; then DOCKER=podman
  else DOCKER=docker
  fi
fi

# The cluster secret: given, or kept from an earlier `up`, or a new random one.
cluster_secret() {
  local file=${RAY_SECRET_FILE:-$HOME/.ray-cluster-password}
  if [ -z "${REDIS_PASSWORD:-}" ]; then
    if [ -s "$file" ]; then
      REDIS_PASSWORD=$(cat "$file")
    else
      REDIS_PASSWORD=$(head -c 18 /dev/urandom | base64 | tr '+/' '-_')
      (umask 077 && echo "$REDIS_PASSWORD" > "$file")
    fi
  fi
  SECRET_NOTE="the cluster secret (redis_password) is in $file"
  [ -s "$file" ] && [ "$(cat "$file")" = "$REDIS_PASSWORD" ] || SECRET_NOTE="redis_password as given in REDIS_PASSWORD"
}

ssh_args() {  # ssh client arguments shared by ssh, parallel-ssh and parallel-rsync
  local o
  [ -n "${SSH_KEY:-}" ] && printf '%s\n' -i "$SSH_KEY"
  for o in $SSH_OPTIONS; do printf '%s\n' -o "$o"; done
}

pssh_cmd() {
  local bin=${PSSH:-}
  [ -n "$bin" ] || bin=$(command -v parallel-ssh || command -v pssh || true)
  [ -n "$bin" ] || die "parallel-ssh is not installed: apt-get install pssh (the command is 'pssh' on some distributions)"
  local args=(-h "$HOSTFILE" -p "$PSSH_PAR" -t "$1"); shift
  [ -n "${SSH_USER:-}" ] && args+=(-l "$SSH_USER")
  local o; for o in $SSH_OPTIONS; do args+=(-O "$o"); done
  [ -n "${SSH_KEY:-}" ] && args+=(-x "-i $SSH_KEY")
  "$bin" "${args[@]}" "$@"
}

# The text a node runs: the settings as exports, then node/NAME.sh.
node_script() {  # NAME ROLE
  local name=$1 role=$2 var
  [ -f "$HERE/node/$name.sh" ] || die "no node script '$name' (see $HERE/node/)"
  echo "# generated by ray-cluster.sh for a $role node"
  printf 'export RAY_ROLE=%q\n' "$role"
  for var in HEAD_IP REDIS_PORT REDIS_PASSWORD RAY_START_ARGS RAY_HEAD_ARGS RAY_VENV RAY_BIN \
             RAY_PYTHON RAY_INSTALL RAY_SRC RAY_GIT_PULL PIP_ARGS DOCKER RAY_IMAGE SHM_SIZE IMAGE_ARCHIVE DOCKER_RUN_ARGS; do
    [ -n "${!var:-}" ] && printf 'export %s=%q\n' "$var" "${!var}"
  done
  cat "$HERE/node/$name.sh"
}

on_head() { node_script "$1" head | bash -s; }
on_workers() {  # NAME [TIMEOUT]
  # -i: each worker's stdout and stderr, labelled, once it finishes
  node_script "$1" worker | pssh_cmd "${2:-$PSSH_TIMEOUT}" -i -I bash -s
}

case $CMD in
  check)
    mapfile -t opts < <(ssh_args)
    failed=0
    while read -r host; do
      [ -n "$host" ] || continue
      target=$host; [ -n "${SSH_USER:-}" ] && [[ $host != *@* ]] && target="$SSH_USER@$host"
      port=""; [[ ${target##*@} == *:* ]] && { port=${target##*:}; target=${target%:*}; }
      if out=$(ssh "${opts[@]}" ${port:+-p "$port"} -o ConnectTimeout=10 "$target" uptime </dev/null 2>&1); then
        echo "$host: ok:$out"
      else
        echo "$host: FAILED: $out"; failed=1
      fi
    done < "$HOSTFILE"
    [ "$failed" = 0 ] || die "some workers are not reachable over ssh (key loaded? ssh-add, or SSH_KEY=...)"
    ;;
  install|upgrade)
    on_head upgrade
    on_workers upgrade 0
    ;;
  up|start)
    cluster_secret
    on_head start
    on_workers start
    echo "cluster address: $HEAD_IP:$REDIS_PORT; $SECRET_NOTE"
    ;;
  down|stop)
    rc=0
    on_workers stop || rc=$?
    on_head stop
    exit "$rc"
    ;;
  docker-install)
    if [ -n "${IMAGE_ARCHIVE:-}" ]; then
      [ -f "$IMAGE_ARCHIVE" ] || die "IMAGE_ARCHIVE '$IMAGE_ARCHIVE' does not exist (make one with: $DOCKER save IMAGE | gzip > FILE)"
      case $IMAGE_ARCHIVE in /*) ;; *) die "IMAGE_ARCHIVE must be an absolute path (it is copied to the same path on the workers)" ;; esac
      bin=$(command -v parallel-scp || command -v pscp.pssh || command -v pscp || true)
      [ -n "$bin" ] || die "parallel-scp is not installed: apt-get install pssh"
      args=(-h "$HOSTFILE" -p "$PSSH_PAR" -t 0)
      [ -n "${SSH_USER:-}" ] && args+=(-l "$SSH_USER")
      for o in $SSH_OPTIONS; do args+=(-O "$o"); done
      [ -n "${SSH_KEY:-}" ] && args+=(-x "-i $SSH_KEY")
      "$bin" "${args[@]}" "$IMAGE_ARCHIVE" "$IMAGE_ARCHIVE"
    fi
    on_head setup_docker
    on_workers setup_docker 0
    ;;
  docker-up)
    cluster_secret
    on_head start_docker
    on_workers start_docker
    echo "cluster address: $HEAD_IP:$REDIS_PORT; $SECRET_NOTE; a shell in the head container: $DOCKER exec -it ray-node-$HEAD_IP bash"
    ;;
  docker-down)
    rc=0
    on_workers stop_docker || rc=$?
    on_head stop_docker
    exit "$rc"
    ;;
  sync)
    [ $# -eq 2 ] || die "usage: sync DIR ABS_DEST"
    case $2 in /*) ;; *) die "sync: the destination must be an absolute path on the workers, got '$2'" ;; esac
    bin=$(command -v parallel-rsync || command -v prsync || true)
    [ -n "$bin" ] || die "parallel-rsync is not installed: apt-get install pssh"
    args=(-h "$HOSTFILE" -p "$PSSH_PAR" -t 0 -r)
    [ -n "${SSH_USER:-}" ] && args+=(-l "$SSH_USER")
    for o in $SSH_OPTIONS; do args+=(-O "$o"); done
    # parallel-rsync: -S is for ssh (its -x would go to rsync)
    [ -n "${SSH_KEY:-}" ] && args+=(-S "-i $SSH_KEY")
    "$bin" "${args[@]}" "$1" "$2"
    ;;
  script)
    [ $# -ge 1 ] || die "usage: script NAME [worker|head]"
    node_script "$1" "${2:-worker}"
    ;;
  *)
    die "unknown command '$CMD' (check, install, up, down, docker-install, docker-up, docker-down, sync, script; -h for help)"
    ;;
esac
