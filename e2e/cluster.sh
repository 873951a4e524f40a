#!/usr/bin/env bash
# A throwaway Kubernetes control plane on loopback: a real etcd and a real
# kube-apiserver (plus a second kube-apiserver without a watch cache, on the
# same etcd), built from their Go modules by build.sh.
#
#   bash e2e/cluster.sh up                  # build if needed, start, print the env file's path
#   source "$(bash e2e/cluster.sh env-file)"  # or: eval "$(bash e2e/cluster.sh env)"
#   bash e2e/cluster.sh run -- CMD ARGS...  # up, run CMD with the env set, down (also on ^C)
#   bash e2e/cluster.sh restart-apiserver [--kill] [--down-for SECONDS] [--nocache]
#   bash e2e/cluster.sh stop-apiserver [--kill] [--nocache]   # leaves it down
#   bash e2e/cluster.sh start-apiserver [--nocache]           # after stop-apiserver
#   bash e2e/cluster.sh revision            # etcd's current revision
#   bash e2e/cluster.sh compact [REVISION]  # compact etcd (default: at the current revision)
#   bash e2e/cluster.sh status | down
#
# Everything listens on 127.0.0.1 only. The state (certificates, tokens,
# kubeconfigs, data dir, logs, pids) lives in one temporary directory, named by
# $KUBE_INFORMER_E2E_DIR or remembered in the cache folder, and `down` removes it.
#
# Settings (environment):
#   KUBE_INFORMER_E2E_NOCACHE_APISERVER=0   do not start the watch-cache-less apiserver
#   KUBE_INFORMER_E2E_APISERVER_ARGS="..."  extra flags for the main kube-apiserver
#   KUBE_INFORMER_E2E_READY_TIMEOUT=120     seconds to wait for /readyz
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=versions.sh
source "$here/versions.sh"

ADMIN_TOKEN_USER=kube-informer-admin
NORIGHTS_USER=kube-informer-norights
READY_TIMEOUT="${KUBE_INFORMER_E2E_READY_TIMEOUT:-120}"
CURRENT_POINTER="$E2E_CACHE_DIR/current-cluster"

log() { echo "e2e/cluster: $*" >&2; }
die() { log "$*"; exit 1; }

# ---------------------------------------------------------------- state dir

state_dir() {
  if [[ -n "${KUBE_INFORMER_E2E_DIR:-}" ]]; then
    echo "$KUBE_INFORMER_E2E_DIR"
  elif [[ -f "$CURRENT_POINTER" ]]; then
    cat "$CURRENT_POINTER"
  else
    return 1
  fi
}

require_state() {
  local dir
  dir="$(state_dir)" || die "no cluster is up (run: bash e2e/cluster.sh up)"
  [[ -f "$dir/env" ]] || die "no cluster state in $dir (run: bash e2e/cluster.sh up)"
  echo "$dir"
}

# ---------------------------------------------------------------- processes

# A port no socket uses right now, below the kernel's ephemeral range: the
# apiservers open many outgoing connections to etcd, and a port picked from
# that range could be taken by one of them before the listener binds it.
free_port() {
  local low=32768 port
  read -r low _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || true
  ((low > 11000)) || low=61000
  for _ in $(seq 1 200); do
    port=$((10000 + RANDOM % (low - 10000)))
    if ! ss -Htan "( sport = :$port )" 2>/dev/null | grep -q . &&
      ! grep -qx "$port" "$STATE/ports" 2>/dev/null; then
      echo "$port" >>"$STATE/ports"
      echo "$port"
      return
    fi
  done
  die "no free port found"
}

# $1 = name; the rest = command. Detached into its own session so that it
# outlives this script; its pid goes to $STATE/NAME.pid.
start_process() {
  local name="$1"; shift
  setsid "$@" >>"$STATE/$name.log" 2>&1 </dev/null &
  echo $! >"$STATE/$name.pid"
}

alive() { [[ -f "$1" ]] && kill -0 "$(cat "$1")" 2>/dev/null; }

# $1 = pid file, $2 = signal. Waits up to 20 s, then kills.
stop_process() {
  local pidfile="$1" signal="${2:-TERM}" pid
  alive "$pidfile" || { rm -f "$pidfile"; return 0; }
  pid="$(cat "$pidfile")"
  kill "-$signal" "$pid" 2>/dev/null || true
  for _ in $(seq 1 200); do
    kill -0 "$pid" 2>/dev/null || { rm -f "$pidfile"; return 0; }
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
  rm -f "$pidfile"
}

# ---------------------------------------------------------------- credentials

make_credentials() {
  local d="$STATE/pki"
  mkdir -p "$d"
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=kube-informer-e2e-ca" \
    -keyout "$d/ca.key" -out "$d/ca.crt" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -subj "/CN=kube-apiserver" \
    -keyout "$d/serving.key" -out "$d/serving.csr" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' >"$d/serving.ext"
  openssl x509 -req -in "$d/serving.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" -CAcreateserial \
    -days 2 -extfile "$d/serving.ext" -out "$d/serving.crt" 2>/dev/null
  # Signs and verifies service-account tokens.
  openssl genrsa -out "$d/sa.key" 2048 2>/dev/null
  openssl rsa -in "$d/sa.key" -pubout -out "$d/sa.pub" 2>/dev/null
  # Static tokens: the admin is in system:masters (every right under RBAC);
  # the second identity is only authenticated, so reading ConfigMaps is a 403.
  ADMIN_TOKEN="$(openssl rand -hex 24)"
  NORIGHTS_TOKEN="$(openssl rand -hex 24)"
  {
    echo "$ADMIN_TOKEN,$ADMIN_TOKEN_USER,uid-admin,\"system:masters\""
    echo "$NORIGHTS_TOKEN,$NORIGHTS_USER,uid-norights"
  } >"$d/tokens.csv"
  chmod 600 "$d"/*.key "$d/tokens.csv"
}

# $1 = output path, $2 = server URL, $3 = user name, $4 = token
write_kubeconfig() {
  local ca
  ca="$(base64 -w0 <"$STATE/pki/ca.crt")"
  cat >"$1" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
- name: kube-informer-e2e
  cluster:
    server: $2
    certificate-authority-data: $ca
users:
- name: $3
  user:
    token: $4
contexts:
- name: kube-informer-e2e
  context:
    cluster: kube-informer-e2e
    user: $3
current-context: kube-informer-e2e
KUBECONFIG
  chmod 600 "$1"
}

# ---------------------------------------------------------------- etcd

start_etcd() {
  local client_port peer_port
  client_port="$(free_port)"
  peer_port="$(free_port)"
  ETCD_ENDPOINT="http://127.0.0.1:$client_port"
  start_process etcd "$ETCD_BIN" \
    --name kube-informer-e2e \
    --data-dir "$STATE/etcd-data" \
    --listen-client-urls "$ETCD_ENDPOINT" \
    --advertise-client-urls "$ETCD_ENDPOINT" \
    --listen-peer-urls "http://127.0.0.1:$peer_port" \
    --initial-advertise-peer-urls "http://127.0.0.1:$peer_port" \
    --initial-cluster "kube-informer-e2e=http://127.0.0.1:$peer_port" \
    --unsafe-no-fsync \
    --log-level warn
  echo "$ETCD_ENDPOINT" >"$STATE/etcd.endpoint"
  local deadline=$((SECONDS + READY_TIMEOUT))
  until curl -sf "$ETCD_ENDPOINT/health" 2>/dev/null | grep -q '"health":"true"'; do
    alive "$STATE/etcd.pid" || { tail -20 "$STATE/etcd.log" >&2; die "etcd exited during startup"; }
    ((SECONDS < deadline)) || die "etcd not healthy after ${READY_TIMEOUT}s (log: $STATE/etcd.log)"
    sleep 0.2
  done
}

# ---------------------------------------------------------------- kube-apiserver

# $1 = name (main or nocache), $2 = port, the rest = extra flags. Writes the
# full command to $STATE/apiserver-NAME.cmd so restart-apiserver can reuse it.
start_apiserver() {
  local name="$1" port="$2"; shift 2
  local p="$STATE/pki"
  local cmd=(
    "$KUBE_APISERVER_BIN"
    --bind-address=127.0.0.1
    --advertise-address=127.0.0.1
    --secure-port="$port"
    --cert-dir="$STATE/apiserver-$name-certs"
    --tls-cert-file="$p/serving.crt"
    --tls-private-key-file="$p/serving.key"
    --token-auth-file="$p/tokens.csv"
    --authorization-mode=RBAC
    --anonymous-auth=false
    --etcd-servers="$(cat "$STATE/etcd.endpoint")"
    --service-account-key-file="$p/sa.pub"
    --service-account-signing-key-file="$p/sa.key"
    --service-account-issuer=https://kubernetes.default.svc
    --service-cluster-ip-range=10.96.0.0/24
    # A loopback address may not back the `kubernetes` Service's endpoints.
    --endpoint-reconciler-type=none
    # No controller-manager runs, so nothing creates `default` service
    # accounts: let Pods in without one.
    --disable-admission-plugins=ServiceAccount
    --profiling=false
    -v=1
    "$@"
  )
  printf '%s\n' "${cmd[@]}" >"$STATE/apiserver-$name.cmd"
  start_apiserver_from_cmd "$name"
}

start_apiserver_from_cmd() {
  local name="$1" cmd
  mapfile -t cmd <"$STATE/apiserver-$name.cmd"
  start_process "apiserver-$name" "${cmd[@]}"
}

# $1 = name, $2 = port. Waits for /readyz and for the `default` namespace.
wait_apiserver_ready() {
  local name="$1" url="https://127.0.0.1:$2" deadline=$((SECONDS + READY_TIMEOUT))
  local curl_args=(-s -o /dev/null -w '%{http_code}' --cacert "$STATE/pki/ca.crt"
    -H "Authorization: Bearer $(admin_token)")
  until [[ "$(curl "${curl_args[@]}" "$url/readyz" 2>/dev/null)" == 200 &&
    "$(curl "${curl_args[@]}" "$url/api/v1/namespaces/default" 2>/dev/null)" == 200 ]]; do
    alive "$STATE/apiserver-$name.pid" ||
      { tail -30 "$STATE/apiserver-$name.log" >&2; die "kube-apiserver ($name) exited during startup"; }
    ((SECONDS < deadline)) ||
      die "kube-apiserver ($name) not ready after ${READY_TIMEOUT}s (log: $STATE/apiserver-$name.log)"
    sleep 0.3
  done
}

admin_token() { awk -F, 'NR == 1 { print $1 }' "$STATE/pki/tokens.csv"; }
norights_token() { awk -F, 'NR == 2 { print $1 }' "$STATE/pki/tokens.csv"; }
apiserver_port() { sed -n 's/^--secure-port=//p' "$STATE/apiserver-$1.cmd"; }

write_env() {
  {
    echo "export KUBE_INFORMER_E2E_DIR='$STATE'"
    echo "export KUBE_INFORMER_E2E_CLUSTER_SCRIPT='$here/cluster.sh'"
    echo "export KUBE_INFORMER_E2E_KUBECONFIG='$STATE/admin.kubeconfig'"
    echo "export KUBE_INFORMER_E2E_NORIGHTS_KUBECONFIG='$STATE/norights.kubeconfig'"
    if [[ -f "$STATE/apiserver-nocache.cmd" ]]; then
      echo "export KUBE_INFORMER_E2E_NOCACHE_KUBECONFIG='$STATE/nocache.kubeconfig'"
    fi
    echo "export KUBE_INFORMER_E2E_ETCD_ENDPOINTS='$(cat "$STATE/etcd.endpoint")'"
    echo "export KUBE_INFORMER_E2E_ETCD_PID='$(cat "$STATE/etcd.pid")'"
    echo "export KUBE_INFORMER_E2E_APISERVER_PID='$(cat "$STATE/apiserver-main.pid")'"
    if [[ -f "$STATE/apiserver-nocache.pid" ]]; then
      echo "export KUBE_INFORMER_E2E_NOCACHE_APISERVER_PID='$(cat "$STATE/apiserver-nocache.pid")'"
    fi
    echo "export KUBE_INFORMER_E2E_KUBE_VERSION='$KUBE_VERSION'"
    echo "export KUBE_INFORMER_E2E_ETCD_VERSION='$ETCD_VERSION'"
  } >"$STATE/env.tmp"
  mv "$STATE/env.tmp" "$STATE/env"
}

# ---------------------------------------------------------------- commands

# The apiservers stop together (each may take seconds to drain its
# connections), then etcd, which they need until they are gone.
stop_all() {
  local dir="$1" pidfile
  local stoppers=()
  for pidfile in "$dir"/apiserver-*.pid; do
    [[ -e "$pidfile" ]] || continue
    stop_process "$pidfile" TERM &
    stoppers+=($!)
  done
  # Only these: when `up` fails, this shell is also etcd's parent.
  ((${#stoppers[@]} == 0)) || wait "${stoppers[@]}"
  [[ -e "$dir/etcd.pid" ]] && stop_process "$dir/etcd.pid" TERM
  return 0
}

cmd_down() {
  local dir
  dir="$(state_dir)" || { log "no cluster is up"; return 0; }
  [[ -d "$dir" ]] || { rm -f "$CURRENT_POINTER"; return 0; }
  STATE="$dir"
  stop_all "$dir"
  # Only remove what `up` made: a directory holding our env or pid files.
  if [[ -f "$dir/.kube-informer-e2e" ]]; then rm -rf "$dir"; fi
  if [[ -f "$CURRENT_POINTER" && "$(cat "$CURRENT_POINTER")" == "$dir" ]]; then
    rm -f "$CURRENT_POINTER"
  fi
  log "cluster stopped"
}

cmd_up() {
  if dir="$(state_dir)" && [[ -f "$dir/env" ]] && alive "$dir/apiserver-main.pid"; then
    log "a cluster is already up in $dir"
    echo "$dir/env"
    return
  fi
  bash "$here/build.sh" all
  STATE="${KUBE_INFORMER_E2E_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/kube-informer-e2e.XXXXXX")}"
  mkdir -p "$STATE"
  touch "$STATE/.kube-informer-e2e"
  mkdir -p "$E2E_CACHE_DIR"
  [[ -n "${PRIVATE_CLUSTER:-}" ]] || echo "$STATE" >"$CURRENT_POINTER"
  # Anything started before a failure or an interrupt is stopped again.
  UP_DONE=0
  trap '((UP_DONE)) || { log "startup did not finish; cleaning up"; KUBE_INFORMER_E2E_DIR="$STATE" cmd_down; }' EXIT
  trap 'exit 130' INT TERM

  local start=$SECONDS
  make_credentials
  start_etcd
  log "etcd $ETCD_VERSION up at $ETCD_ENDPOINT"

  local main_port nocache_port=""
  main_port="$(free_port)"
  # shellcheck disable=SC2086 # extra flags are meant to split on spaces
  start_apiserver main "$main_port" ${KUBE_INFORMER_E2E_APISERVER_ARGS:-}
  if [[ "${KUBE_INFORMER_E2E_NOCACHE_APISERVER:-1}" != 0 ]]; then
    nocache_port="$(free_port)"
    # Lists and watches go straight to etcd: a watch from a compacted
    # resourceVersion gets 410 Gone, which the forced-relist scenario needs.
    start_apiserver nocache "$nocache_port" --watch-cache=false
  fi
  wait_apiserver_ready main "$main_port"
  [[ -z "$nocache_port" ]] || wait_apiserver_ready nocache "$nocache_port"

  write_kubeconfig "$STATE/admin.kubeconfig" "https://127.0.0.1:$main_port" "$ADMIN_TOKEN_USER" "$ADMIN_TOKEN"
  write_kubeconfig "$STATE/norights.kubeconfig" "https://127.0.0.1:$main_port" "$NORIGHTS_USER" "$NORIGHTS_TOKEN"
  [[ -z "$nocache_port" ]] ||
    write_kubeconfig "$STATE/nocache.kubeconfig" "https://127.0.0.1:$nocache_port" "$ADMIN_TOKEN_USER" "$ADMIN_TOKEN"
  write_env
  UP_DONE=1
  trap - EXIT INT TERM
  log "kube-apiserver $KUBE_VERSION ready at https://127.0.0.1:$main_port after $((SECONDS - start))s"
  echo "$STATE/env"
}

# Options shared by restart-, stop- and start-apiserver: which apiserver
# (main, or the watch-cache-less one with --nocache), which signal stops it
# (--kill: SIGKILL, else SIGTERM), how long it stays down.
parse_apiserver_options() {
  APISERVER=main SIGNAL=TERM DOWN_FOR=0
  while (($#)); do
    case "$1" in
      --kill) SIGNAL=KILL ;;
      --down-for) DOWN_FOR="$2"; shift ;;
      --nocache) APISERVER=nocache ;;
      *) die "unknown apiserver option $1" ;;
    esac
    shift
  done
  STATE="$(require_state)"
  [[ -f "$STATE/apiserver-$APISERVER.cmd" ]] || die "this cluster runs no $APISERVER kube-apiserver"
}

stop_apiserver() {
  stop_process "$STATE/apiserver-$APISERVER.pid" "$SIGNAL"
  log "kube-apiserver ($APISERVER) stopped (SIG$SIGNAL)"
}

start_apiserver_again() {
  local port
  port="$(apiserver_port "$APISERVER")"
  alive "$STATE/apiserver-$APISERVER.pid" || start_apiserver_from_cmd "$APISERVER"
  wait_apiserver_ready "$APISERVER" "$port"
  write_env
  log "kube-apiserver ($APISERVER) back at https://127.0.0.1:$port"
}

cmd_restart_apiserver() {
  parse_apiserver_options "$@"
  stop_apiserver
  sleep "$DOWN_FOR"
  start_apiserver_again
}

cmd_stop_apiserver() {
  parse_apiserver_options "$@"
  stop_apiserver
}

cmd_start_apiserver() {
  parse_apiserver_options "$@"
  start_apiserver_again
}

# $1 = gateway path under /v3, $2 = JSON body. etcd's JSON gateway reports
# errors as a body with a gRPC "code", so those fail here too.
etcd_post() {
  local reply
  reply="$(curl -s -X POST "$(cat "$STATE/etcd.endpoint")/v3/$1" -d "$2")" ||
    die "etcd did not answer $1"
  if [[ "$reply" == *'"code":'* ]]; then
    die "etcd refused $1: $reply"
  fi
  echo "$reply"
}

cmd_revision() {
  STATE="$(require_state)"
  # A range over an empty key returns the store's header, which carries the
  # current revision (int64 values come back as JSON strings).
  etcd_post kv/range '{"key":"AA=="}' | sed -n 's/.*"revision":"\([0-9]*\)".*/\1/p'
}

cmd_compact() {
  STATE="$(require_state)"
  local rev="${1:-}"
  [[ -n "$rev" ]] || rev="$(cmd_revision)"
  [[ "$rev" =~ ^[0-9]+$ ]] || die "compact: revision must be a number, got '$rev'"
  etcd_post kv/compaction "{\"revision\":\"$rev\",\"physical\":true}" >/dev/null
  echo "$rev"
}

cmd_status() {
  STATE="$(require_state)"
  for pidfile in "$STATE"/etcd.pid "$STATE"/apiserver-*.pid; do
    [[ -e "$pidfile" ]] || continue
    local name
    name="$(basename "$pidfile" .pid)"
    if alive "$pidfile"; then echo "$name: running (pid $(cat "$pidfile"))"; else echo "$name: stopped"; fi
  done
  echo "state: $STATE"
}

cmd_run() {
  [[ "${1:-}" == -- ]] && shift
  (($#)) || die "run: give a command after --"
  # A cluster of its own, never one a developer left up with `up`.
  local env_file
  RUN_DIR="$(mktemp -d "${TMPDIR:-/tmp}/kube-informer-e2e.XXXXXX")"
  trap 'KUBE_INFORMER_E2E_DIR="$RUN_DIR" cmd_down; rmdir "$RUN_DIR" 2>/dev/null || true' EXIT
  trap 'exit 130' INT TERM
  env_file="$(KUBE_INFORMER_E2E_DIR="$RUN_DIR" PRIVATE_CLUSTER=1 cmd_up)"
  # shellcheck disable=SC1090
  source "$env_file"
  "$@"
}

command="${1:-}"
shift || true
case "$command" in
  up) cmd_up ;;
  down) cmd_down ;;
  env) cat "$(require_state)/env" ;;
  env-file) echo "$(require_state)/env" ;;
  status) cmd_status ;;
  restart-apiserver) cmd_restart_apiserver "$@" ;;
  stop-apiserver) cmd_stop_apiserver "$@" ;;
  start-apiserver) cmd_start_apiserver "$@" ;;
  revision) cmd_revision ;;
  compact) cmd_compact "$@" ;;
  run) cmd_run "$@" ;;
  *)
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
    exit 2
    ;;
esac
