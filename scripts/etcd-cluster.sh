#!/usr/bin/env bash
# scripts/etcd-cluster.sh: start or stop a real 3-member etcd cluster on loopback ports, for the
# etcd adapter's tests (tests/CMakeLists.txt runs it as the CTest fixture etcd_cluster).
#
#   scripts/etcd-cluster.sh start <dir> [base-port]   start it; prints the client endpoints
#                                                      (comma-separated) on the last line
#   scripts/etcd-cluster.sh stop <dir>                 stop it (SIGKILL) and remove its data
#   scripts/etcd-cluster.sh endpoints <dir>            print the client endpoints again
#   scripts/etcd-cluster.sh kill <dir> <member>        SIGKILL one member (0, 1 or 2)
#   scripts/etcd-cluster.sh restart <dir> <member>     start a killed member again, wait until it
#                                                      is healthy
#   scripts/etcd-cluster.sh pause <dir> <member>       SIGSTOP one member, returning once all its threads
#                                                      are stopped (hung: its sockets still
#                                                      accept connections, nothing answers)
#   scripts/etcd-cluster.sh resume <dir> <member>      SIGCONT it
#   scripts/etcd-cluster.sh not-leader <dir> <member>  if the member leads, hand the leadership to
#                                                      another one (etcdctl move-leader) and wait
#
# Member i (0..2) listens for clients on 127.0.0.1:<base-port + 2i> and for peers on
# <base-port + 2i + 1> (base-port 23790 by default: 23790..23795, away from etcd's 2379/2380).
# Its data directory is <dir>/m<i>, its log <dir>/m<i>.log, its pid <dir>/m<i>.pid. Extra flags
# for every member come from ETCD_EXTRA_FLAGS (for example "--max-request-bytes 8388608").
# ETCD_DATA_ROOT (read by start) puts the members' data directories in a fresh directory under it
# instead (for example /dev/shm, a tmpfs: each commit's WAL fsync on three members then costs no
# disk flush; for tests of semantics, not of durability across a machine's crash); start records
# it in <dir>/data-dir, restart and stop use it, stop removes it.
# ETCD_CLIENT_SCHEME=https (read by start, recorded in <dir>/scheme) serves clients over TLS: give
# the members --cert-file, --key-file (and --trusted-ca-file, --client-cert-auth) in
# ETCD_EXTRA_FLAGS, and etcdctl its files in ETCDCTL_CACERT, ETCDCTL_CERT, ETCDCTL_KEY.
# start waits (up to 60 s) until `etcdctl endpoint health` is ok for all three members, and
# fails with the members' log tails otherwise. Needs Debian's etcd-server and etcd-client.
set -euo pipefail

usage() {
  echo "usage: $0 start <dir> [base-port] | stop <dir> | endpoints <dir> | kill|restart|pause|resume|not-leader <dir> <member>" >&2
  exit 2
}

[[ $# -ge 2 ]] || usage
cmd=$1
dir=$2

ETCD=${ETCD:-etcd}
ETCDCTL=${ETCDCTL:-etcdctl}
export ETCDCTL_API=3

data_of() {  # data_of <member>: the member's data directory
  if [[ -f $dir/data-dir ]]; then echo "$(cat "$dir/data-dir")/m$1"; else echo "$dir/m$1"; fi
}

port_of() {  # port_of <member> <client|peer>
  local base
  base=$(cat "$dir/base-port")
  if [[ $2 == client ]]; then echo $((base + 2 * $1)); else echo $((base + 2 * $1 + 1)); fi
}

scheme() {  # the clients' URL scheme: http, or https when started with ETCD_CLIENT_SCHEME=https
  if [[ -f $dir/scheme ]]; then cat "$dir/scheme"; else echo http; fi
}

endpoints() {
  local out="" i
  for i in 0 1 2; do
    out+="${out:+,}$(scheme)://127.0.0.1:$(port_of "$i" client)"
  done
  echo "$out"
}

start_member() {  # start_member <i> <new|existing>
  local i=$1 state=$2 cluster="" j
  for j in 0 1 2; do
    cluster+="${cluster:+,}m$j=http://127.0.0.1:$(port_of "$j" peer)"
  done
  # shellcheck disable=SC2086  # ETCD_EXTRA_FLAGS is a list of flags
  nohup "$ETCD" --name "m$i" --data-dir "$(data_of "$i")" \
    --listen-client-urls "$(scheme)://127.0.0.1:$(port_of "$i" client)" \
    --advertise-client-urls "$(scheme)://127.0.0.1:$(port_of "$i" client)" \
    --listen-peer-urls "http://127.0.0.1:$(port_of "$i" peer)" \
    --initial-advertise-peer-urls "http://127.0.0.1:$(port_of "$i" peer)" \
    --initial-cluster "$cluster" --initial-cluster-state "$state" \
    --initial-cluster-token "keyschema-$(cat "$dir/base-port")" \
    --logger zap --log-outputs stderr ${ETCD_EXTRA_FLAGS:-} \
    >>"$dir/m$i.log" 2>&1 </dev/null &
  echo $! >"$dir/m$i.pid"
}

wait_healthy() {  # wait_healthy <endpoints>
  local deadline=$((SECONDS + 60))
  until "$ETCDCTL" --endpoints "$1" --command-timeout=2s endpoint health >/dev/null 2>&1; do
    if ((SECONDS >= deadline)); then
      echo "etcd-cluster: not healthy after 60 s at $1; member logs:" >&2
      for f in "$dir"/m*.log; do
        echo "== $f" >&2
        tail -n 20 "$f" >&2
      done
      return 1
    fi
    sleep 0.2
  done
}

stop_member() {  # stop_member <i> <signal>
  local pidfile="$dir/m$1.pid" pid
  [[ -f $pidfile ]] || return 0
  pid=$(cat "$pidfile")
  if kill -0 "$pid" 2>/dev/null; then
    kill "-$2" "$pid" 2>/dev/null || true
    # SIGSTOP is delivered to each thread when it next runs: return only when every thread of
    # the member is stopped (state T), so that nothing the caller does next races the pause.
    if [[ $2 == STOP ]]; then
      local tries=0 stat
      while (( tries < 500 )); do
        stat=$(cat /proc/"$pid"/task/*/stat 2>/dev/null | awk '$3 != "T" && $3 != "t" {n++} END {print n+0}') || break
        [[ $stat == 0 ]] && break
        sleep 0.01
        tries=$((tries + 1))
      done
    fi
  fi
}

remove_data() {  # the members' data, and the directory under ETCD_DATA_ROOT
  rm -rf "$dir"/m0 "$dir"/m1 "$dir"/m2
  if [[ -f $dir/data-dir ]]; then
    rm -rf "$(cat "$dir/data-dir")"
    rm -f "$dir/data-dir"
  fi
}

field_of() {  # field_of <member> <field>: a field of `etcdctl endpoint status -w fields`
  "$ETCDCTL" --endpoints "$(scheme)://127.0.0.1:$(port_of "$1" client)" --command-timeout=5s endpoint status -w fields |
    sed -n "s/^\"$2\" : //p"
}

case $cmd in
  start)
    base=${3:-23790}
    mkdir -p "$dir"
    if [[ -f $dir/m0.pid ]] && kill -0 "$(cat "$dir/m0.pid")" 2>/dev/null; then
      echo "etcd-cluster: a cluster already runs in $dir; stop it first" >&2
      exit 1
    fi
    remove_data
    rm -rf "$dir"/m*.log "$dir"/m*.pid
    echo "$base" >"$dir/base-port"
    echo "${ETCD_CLIENT_SCHEME:-http}" >"$dir/scheme"
    if [[ -n ${ETCD_DATA_ROOT:-} ]]; then
      mktemp -d "$ETCD_DATA_ROOT/keyschema-etcd.XXXXXX" >"$dir/data-dir"
    fi
    for i in 0 1 2; do start_member "$i" new; done
    if ! wait_healthy "$(endpoints)"; then
      for i in 0 1 2; do stop_member "$i" KILL; done
      exit 1
    fi
    endpoints
    ;;
  endpoints)
    endpoints
    ;;
  kill)
    [[ $# -ge 3 ]] || usage
    stop_member "$3" KILL
    ;;
  restart)
    [[ $# -ge 3 ]] || usage
    start_member "$3" existing
    wait_healthy "$(scheme)://127.0.0.1:$(port_of "$3" client)"
    ;;
  pause)
    [[ $# -ge 3 ]] || usage
    stop_member "$3" STOP
    ;;
  resume)
    [[ $# -ge 3 ]] || usage
    stop_member "$3" CONT
    ;;
  not-leader)
    [[ $# -ge 3 ]] || usage
    other=$((($3 + 1) % 3))
    for _ in $(seq 100); do
      [[ $(field_of "$3" Leader) != "$(field_of "$3" MemberID)" ]] && exit 0
      "$ETCDCTL" --endpoints "$(scheme)://127.0.0.1:$(port_of "$3" client)" --command-timeout=5s \
        move-leader "$(printf '%x' "$(field_of "$other" MemberID)")" >/dev/null 2>&1 || true
      sleep 0.2
    done
    echo "etcd-cluster: member $3 still leads" >&2
    exit 1
    ;;
  stop)
    [[ -f $dir/base-port ]] || exit 0
    # SIGKILL at once: the data is removed anyway, and a member stopped with SIGTERM first hands
    # its leadership on, which took 3 to 17 s on a loaded machine.
    for i in 0 1 2; do stop_member "$i" KILL; done
    for _ in $(seq 100); do
      alive=0
      for i in 0 1 2; do
        if [[ -f $dir/m$i.pid ]] && kill -0 "$(cat "$dir/m$i.pid")" 2>/dev/null; then alive=1; fi
      done
      ((alive)) || break
      sleep 0.05
    done
    remove_data
    rm -rf "$dir"/m*.pid "$dir/scheme"
    echo "etcd-cluster: stopped"
    ;;
  *)
    usage
    ;;
esac
