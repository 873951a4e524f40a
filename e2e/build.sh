#!/usr/bin/env bash
# Builds etcd and kube-apiserver from their Go modules into the cache folder
# (see versions.sh), or does nothing when the binaries for the pinned versions
# are already there.
#
#   bash e2e/build.sh            # both
#   bash e2e/build.sh etcd       # one of: etcd, kube-apiserver
#
# Neither server can be `go install`ed at a version directly: both main modules
# carry replace directives pointing into their own source trees. So each is
# built from a tiny wrapper module, generated here, that requires the server's
# module and, for Kubernetes, pins every k8s.io staging module it uses to the
# matching v0.x release.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=versions.sh
source "$here/versions.sh"

export GOFLAGS="${GOFLAGS:+$GOFLAGS }-mod=mod"
export GOTOOLCHAIN=local
export CGO_ENABLED=0

log() { echo "e2e/build: $*" >&2; }

need_go() {
  command -v go >/dev/null || { log "go is not installed"; exit 3; }
}

# Runs a long build at low priority: the machine is shared.
quiet_build() { nice -n 10 go build -trimpath "$@"; }

# $1 = wrapper dir. Takes an exclusive lock so two callers never build the
# same thing at once; the second one finds the binary when the first is done.
with_lock() {
  local lock="$1"; shift
  mkdir -p "$(dirname "$lock")"
  exec {fd}>"$lock"
  flock "$fd"
  "$@"
  flock -u "$fd"
}

build_etcd() {
  [[ -x "$ETCD_BIN" ]] && { log "etcd $ETCD_VERSION cached at $ETCD_BIN"; return; }
  need_go
  local dir="$E2E_CACHE_DIR/build/etcd-$ETCD_VERSION"
  mkdir -p "$dir" "$E2E_BIN_DIR"
  cat >"$dir/go.mod" <<MOD
module kube-informer-e2e/etcd

go 1.24

require go.etcd.io/etcd/server/v3 $ETCD_VERSION
MOD
  log "building etcd $ETCD_VERSION (cold builds take minutes)"
  local start=$SECONDS
  (cd "$dir" && quiet_build -ldflags '-s -w' -o "$ETCD_BIN.tmp" go.etcd.io/etcd/server/v3)
  mv "$ETCD_BIN.tmp" "$ETCD_BIN"
  log "etcd built in $((SECONDS - start))s: $ETCD_BIN"
}

# Prints one `replace` line per k8s.io staging module that k8s.io/kubernetes
# requires at the placeholder version v0.0.0 (those it resolves from its own
# source tree), pinned to the v0.x release that goes with $KUBE_VERSION.
staging_replaces() {
  local gomod="$1" staging="v0${KUBE_VERSION#v1}"
  awk -v v="$staging" '
    /^require \(/ { inreq = 1; next }
    inreq && /^\)/ { inreq = 0; next }
    inreq && $1 ~ /^k8s\.io\// && $2 == "v0.0.0" { print "replace " $1 " => " $1 " " v }
  ' "$gomod"
}

build_kube_apiserver() {
  [[ -x "$KUBE_APISERVER_BIN" ]] && { log "kube-apiserver $KUBE_VERSION cached at $KUBE_APISERVER_BIN"; return; }
  need_go
  local dir="$E2E_CACHE_DIR/build/kube-apiserver-$KUBE_VERSION"
  mkdir -p "$dir" "$E2E_BIN_DIR"
  local upstream_mod
  upstream_mod="$(cd "$dir" && go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" |
    sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')"
  [[ -f "$upstream_mod" ]] || { log "could not download k8s.io/kubernetes@$KUBE_VERSION"; exit 3; }
  {
    printf 'module kube-informer-e2e/kube-apiserver\n\ngo %s\n\n' \
      "$(awk '$1 == "go" { print $2; exit }' "$upstream_mod")"
    printf 'require k8s.io/kubernetes %s\n\n' "$KUBE_VERSION"
    staging_replaces "$upstream_mod"
  } >"$dir/go.mod"
  log "building kube-apiserver $KUBE_VERSION (cold builds take many minutes)"
  local start=$SECONDS minor="${KUBE_VERSION#v1.}"
  minor="${minor%%.*}"
  local pkg=k8s.io/component-base/version
  (cd "$dir" && quiet_build \
    -ldflags "-s -w -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean" \
    -o "$KUBE_APISERVER_BIN.tmp" k8s.io/kubernetes/cmd/kube-apiserver)
  mv "$KUBE_APISERVER_BIN.tmp" "$KUBE_APISERVER_BIN"
  log "kube-apiserver built in $((SECONDS - start))s: $KUBE_APISERVER_BIN"
}

what="${1:-all}"
case "$what" in
  etcd) with_lock "$E2E_CACHE_DIR/build/etcd.lock" build_etcd ;;
  kube-apiserver) with_lock "$E2E_CACHE_DIR/build/kube-apiserver.lock" build_kube_apiserver ;;
  all)
    with_lock "$E2E_CACHE_DIR/build/etcd.lock" build_etcd
    with_lock "$E2E_CACHE_DIR/build/kube-apiserver.lock" build_kube_apiserver
    ;;
  *) log "unknown target '$what' (etcd, kube-apiserver or all)"; exit 2 ;;
esac
