#!/usr/bin/env bash
# Builds kube-apiserver and etcd from the Go module proxy and caches them outside the
# repository, keyed by version, so envtest-based tests run a real control plane without
# downloading prebuilt binaries (nothing but the module proxy is reachable here).
#
# Prints the directory that holds both binaries (the value for KUBEBUILDER_ASSETS).
# Progress goes to stderr so callers can capture stdout.
set -euo pipefail

K8S_VERSION="${K8S_VERSION:-1.37.2}"
ETCD_VERSION="${ETCD_VERSION:-3.6.16}"
CACHE_ROOT="${FLINK_ADMISSION_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/flink-admission}"
# BUILD_REV changes when the way the binaries are built changes, so stale caches are not reused.
BUILD_REV=2
DEST="$CACHE_ROOT/envtest/k8s-${K8S_VERSION}-etcd-${ETCD_VERSION}-r${BUILD_REV}"
GO="${GO:-go}"

log() { printf '[envtest-binaries] %s\n' "$*" >&2; }

# progress turns `go build -v` output (one line per compiled package) into a line every 100
# packages, so a cold build never looks like a silent, hung terminal.
progress() {
  awk -v what="$1" '{ n++; if (n % 100 == 0) { printf "[envtest-binaries] %s: %d packages...\n", what, n; fflush() } }' >&2
}

# logged runs a command with its output counted by progress and kept in a log, printed when
# the command fails so that the failure is never hidden behind the progress lines.
logged() {
  local what="$1"; shift
  if ! "$@" > >(tee "$work/$what.log" | progress "$what") 2>&1; then
    log "$what failed:"; tail -n 40 "$work/$what.log" >&2
    return 1
  fi
}

if [[ -x "$DEST/kube-apiserver" && -x "$DEST/etcd" ]]; then
  echo "$DEST"
  exit 0
fi

mkdir -p "$DEST"
# Tests in several packages (and `make run`) may ask at once: one builds, the others wait.
exec 9>"$DEST/.lock"
if ! flock -n 9; then
  log "another build of kube-apiserver/etcd is running; waiting for it"
  flock 9
fi
if [[ -x "$DEST/kube-apiserver" && -x "$DEST/etcd" ]]; then
  echo "$DEST"
  exit 0
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# The wrapper modules run with the module proxy only; the project's own go.mod is not involved.
export GOFLAGS=-mod=mod GOWORK=off CGO_ENABLED=0

if [[ ! -x "$DEST/etcd" ]]; then
  log "building etcd v${ETCD_VERSION} from the Go module proxy (cached in $DEST)"
  mkdir -p "$work/etcd"
  (
    cd "$work/etcd"
    "$GO" mod init flink-admission.local/etcd-build >/dev/null 2>&1
    "$GO" mod edit -require="go.etcd.io/etcd/server/v3@v${ETCD_VERSION}"
    cat > tools.go <<'GO'
//go:build tools

package tools

import _ "go.etcd.io/etcd/server/v3"
GO
    log "etcd: resolving modules"
    logged etcd-modules "$GO" mod tidy
    logged etcd "$GO" build -v -o "$DEST/etcd.tmp" go.etcd.io/etcd/server/v3
    mv "$DEST/etcd.tmp" "$DEST/etcd"
  )
  log "etcd ready"
fi

if [[ ! -x "$DEST/kube-apiserver" ]]; then
  log "building kube-apiserver v${K8S_VERSION} from the Go module proxy; a cold build takes ~10 minutes on 2 cores and is cached in $DEST"
  mkdir -p "$work/kube"
  (
    cd "$work/kube"
    "$GO" mod init flink-admission.local/kube-apiserver-build >/dev/null 2>&1
    "$GO" mod download -json "k8s.io/kubernetes@v${K8S_VERSION}" > dl.json
    gomod="$(sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",*$/\1/p' dl.json)"
    "$GO" mod edit -require="k8s.io/kubernetes@v${K8S_VERSION}"
    # k8s.io/kubernetes requires its staging modules at v0.0.0 and replaces them with local
    # directories; a consumer replaces each with the published module of the matching version.
    staging="$(grep -Eo '^[[:space:]]*k8s\.io/[a-z0-9-]+ v0\.0\.0$' "$gomod" | awk '{print $1}' | sort -u)"
    minor="${K8S_VERSION#*.}"
    for m in $staging; do
      "$GO" mod edit -replace="$m=$m@v0.${minor}"
    done
    cat > tools.go <<'GO'
//go:build tools

package tools

import _ "k8s.io/kubernetes/cmd/kube-apiserver"
GO
    log "kube-apiserver: resolving modules (downloads from the Go module proxy)"
    logged kube-apiserver-modules "$GO" mod tidy
    # The version a module build cannot stamp by itself: /version then reports v1.37.2, not
    # v0.0.0-master, so kubectl and clients that negotiate by server version behave.
    ldflags="-X k8s.io/component-base/version.gitVersion=v${K8S_VERSION} -X k8s.io/component-base/version.gitMajor=${K8S_VERSION%%.*} -X k8s.io/component-base/version.gitMinor=${minor%%.*} -X k8s.io/component-base/version.gitTreeState=clean"
    logged kube-apiserver "$GO" build -v -ldflags "$ldflags" -o "$DEST/kube-apiserver.tmp" k8s.io/kubernetes/cmd/kube-apiserver
    mv "$DEST/kube-apiserver.tmp" "$DEST/kube-apiserver"
  )
  log "kube-apiserver ready"
fi

echo "$DEST"
