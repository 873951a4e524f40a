# The loopback server's lifetime, shared by wire.sh and chunking.sh (sourced,
# not run). Needs `work` (a scratch folder) set by the caller; sets
# `server` (its URL) once it listens, and stops it on exit.

server_pid=""
stop_server() {
  if [[ -n $server_pid ]]; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    server_pid=""
  fi
}
trap stop_server EXIT

# name binary serve-arguments... : starts `binary serve ARGS` and waits until
# it listens (its log is $work/NAME-server.log).
start_server() {
  local name=$1 binary=$2
  shift 2
  local address_file="$work/$name-server-address" log="$work/$name-server.log"
  rm -f "$address_file"
  "$binary" serve "$@" --address-file "$address_file" >/dev/null 2>"$log" &
  server_pid=$!
  for _ in $(seq 600); do
    [[ -s $address_file ]] && break
    if ! kill -0 "$server_pid" 2>/dev/null; then
      echo "the server exited: $(cat "$log")" >&2
      exit 1
    fi
    sleep 0.5
  done
  server="$(cat "$address_file")"
}
