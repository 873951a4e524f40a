# Versions of the real servers the end-to-end harness builds. Sourced by the
# other e2e scripts; each can be overridden from the environment.
#
# kube-apiserver matches the API level the crate compiles against (the
# k8s-openapi feature `v1_34` in Cargo.toml); etcd is the newest 3.6 patch,
# which serves streaming lists and progress notifications.
KUBE_VERSION="${KUBE_INFORMER_E2E_KUBE_VERSION:-v1.34.4}"
ETCD_VERSION="${KUBE_INFORMER_E2E_ETCD_VERSION:-v3.6.16}"

# Built binaries live here, one file per version, and are reused when present.
E2E_CACHE_DIR="${KUBE_INFORMER_E2E_CACHE:-${HOME}/.cache/kube-informer/e2e}"
E2E_BIN_DIR="${E2E_CACHE_DIR}/bin"
ETCD_BIN="${E2E_BIN_DIR}/etcd-${ETCD_VERSION}"
KUBE_APISERVER_BIN="${E2E_BIN_DIR}/kube-apiserver-${KUBE_VERSION}"
