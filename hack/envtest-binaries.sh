#!/usr/bin/env bash
# Builds the Kubernetes control plane the tests and `make run` use from the Go module proxy and
# caches it outside the repository, keyed by version, so tests run real components without
# downloading prebuilt binaries (nothing but the module proxy is reachable here).
#
#   envtest-binaries.sh                  kube-apiserver and etcd; prints their directory (the
#                                        value for KUBEBUILDER_ASSETS)
#   envtest-binaries.sh --control-plane  also kube-controller-manager, kube-scheduler and KWOK
#                                        (simulated nodes; the project's own stages, in
#                                        internal/test/testenv, say how their pods run); prints the
#                                        directory that holds those three, after building both
#
# Progress goes to stderr so callers can capture stdout.
set -euo pipefail

K8S_VERSION="${K8S_VERSION:-1.37.2}"
ETCD_VERSION="${ETCD_VERSION:-3.6.16}"
KWOK_VERSION="${KWOK_VERSION:-0.8.0}"
CACHE_ROOT="${FLINK_ADMISSION_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/flink-admission}"
# BUILD_REV changes when the way the binaries are built changes, so stale caches are not reused.
BUILD_REV=2
DEST="$CACHE_ROOT/envtest/k8s-${K8S_VERSION}-etcd-${ETCD_VERSION}-r${BUILD_REV}"
PLANE_REV=1
PLANE_DEST="$CACHE_ROOT/controlplane/k8s-${K8S_VERSION}-kwok-${KWOK_VERSION}-r${PLANE_REV}"
GO="${GO:-go}"

want_plane=false
case "${1:-}" in
  "") ;;
  --control-plane) want_plane=true ;;
  *) printf 'usage: %s [--control-plane]\n' "$0" >&2; exit 2 ;;
esac

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

# kube_module makes the current directory a module that builds the k8s.io/kubernetes commands
# named as arguments (e.g. cmd/kube-apiserver) with the module proxy only.
kube_module() {
  "$GO" mod init flink-admission.local/kube-build >/dev/null 2>&1
  "$GO" mod download -json "k8s.io/kubernetes@v${K8S_VERSION}" > dl.json
  local gomod staging minor m c
  gomod="$(sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",*$/\1/p' dl.json)"
  "$GO" mod edit -require="k8s.io/kubernetes@v${K8S_VERSION}"
  # k8s.io/kubernetes requires its staging modules at v0.0.0 and replaces them with local
  # directories; a consumer replaces each with the published module of the matching version.
  staging="$(grep -Eo '^[[:space:]]*k8s\.io/[a-z0-9-]+ v0\.0\.0$' "$gomod" | awk '{print $1}' | sort -u)"
  minor="${K8S_VERSION#*.}"
  for m in $staging; do
    "$GO" mod edit -replace="$m=$m@v0.${minor}"
  done
  { printf '//go:build tools\n\npackage tools\n\nimport (\n'
    for c in "$@"; do printf '\t_ "k8s.io/kubernetes/%s"\n' "$c"; done
    printf ')\n'; } > tools.go
}

# kube_ldflags stamps the version a module build cannot stamp by itself: /version then reports
# v1.37.2, not v0.0.0-master, so kubectl and clients that negotiate by server version behave.
kube_ldflags() {
  local minor="${K8S_VERSION#*.}"
  printf '%s' "-X k8s.io/component-base/version.gitVersion=v${K8S_VERSION} -X k8s.io/component-base/version.gitMajor=${K8S_VERSION%%.*} -X k8s.io/component-base/version.gitMinor=${minor%%.*} -X k8s.io/component-base/version.gitTreeState=clean"
}

# The wrapper modules run with the module proxy only; the project's own go.mod is not involved.
export GOFLAGS=-mod=mod GOWORK=off CGO_ENABLED=0

# work is a scratch directory for one build, removed on exit.
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# locked runs a build under a lock of its destination: tests in several packages (and
# `make run`) may ask at once, so one builds and the others wait for it.
locked() {
  local dest="$1" what="$2"; shift 2
  mkdir -p "$dest"
  exec 9>"$dest/.lock"
  if ! flock -n 9; then
    log "another build of $what is running; waiting for it"
    flock 9
  fi
  "$@"
  exec 9>&-
}

envtest_ready() { [[ -x "$DEST/kube-apiserver" && -x "$DEST/etcd" ]]; }
plane_ready() {
  [[ -x "$PLANE_DEST/kube-controller-manager" && -x "$PLANE_DEST/kube-scheduler" && -x "$PLANE_DEST/kwok" ]]
}

# module_build builds the command pkg of module@version (a module with no replace directives
# to honour) into out, in a module of its own under $work/what.
module_build() {
  local what="$1" module="$2" pkg="$3" out="$4"
  mkdir -p "$work/$what"
  (
    cd "$work/$what"
    "$GO" mod init "flink-admission.local/$what-build" >/dev/null 2>&1
    "$GO" mod edit -require="$module"
    printf '//go:build tools\n\npackage tools\n\nimport _ "%s"\n' "$pkg" > tools.go
    log "$what: resolving modules"
    logged "$what-modules" "$GO" mod tidy
    logged "$what" "$GO" build -v -o "$out.tmp" "$pkg"
    mv "$out.tmp" "$out"
  )
}

build_envtest() {
  envtest_ready && return 0
  if [[ ! -x "$DEST/etcd" ]]; then
    log "building etcd v${ETCD_VERSION} from the Go module proxy (cached in $DEST)"
    module_build etcd "go.etcd.io/etcd/server/v3@v${ETCD_VERSION}" go.etcd.io/etcd/server/v3 "$DEST/etcd"
    log "etcd ready"
  fi
  if [[ ! -x "$DEST/kube-apiserver" ]]; then
    log "building kube-apiserver v${K8S_VERSION} from the Go module proxy; a cold build takes ~10 minutes on 2 cores and is cached in $DEST"
    mkdir -p "$work/kube-apiserver"
    (
      cd "$work/kube-apiserver"
      kube_module cmd/kube-apiserver
      log "kube-apiserver: resolving modules (downloads from the Go module proxy)"
      logged kube-apiserver-modules "$GO" mod tidy
      logged kube-apiserver "$GO" build -v -ldflags "$(kube_ldflags)" -o "$DEST/kube-apiserver.tmp" k8s.io/kubernetes/cmd/kube-apiserver
      mv "$DEST/kube-apiserver.tmp" "$DEST/kube-apiserver"
    )
    log "kube-apiserver ready"
  fi
}

build_plane() {
  plane_ready && return 0
  local c
  for c in kube-controller-manager kube-scheduler; do
    [[ -x "$PLANE_DEST/$c" ]] && continue
    log "building $c v${K8S_VERSION} from the Go module proxy; a cold build takes ~5 minutes on 2 cores (less after kube-apiserver's) and is cached in $PLANE_DEST"
    mkdir -p "$work/$c"
    (
      cd "$work/$c"
      kube_module "cmd/$c"
      log "$c: resolving modules"
      logged "$c-modules" "$GO" mod tidy
      logged "$c" "$GO" build -v -ldflags "$(kube_ldflags)" -o "$PLANE_DEST/$c.tmp" "k8s.io/kubernetes/cmd/$c"
      mv "$PLANE_DEST/$c.tmp" "$PLANE_DEST/$c"
    )
    log "$c ready"
  done
  if [[ ! -x "$PLANE_DEST/kwok" ]]; then
    log "building kwok v${KWOK_VERSION} (simulated nodes and pods) from the Go module proxy (cached in $PLANE_DEST)"
    module_build kwok "sigs.k8s.io/kwok@v${KWOK_VERSION}" sigs.k8s.io/kwok/cmd/kwok "$PLANE_DEST/kwok"
    log "kwok ready"
  fi
}

if ! envtest_ready; then locked "$DEST" "kube-apiserver/etcd" build_envtest; fi
if ! $want_plane; then
  echo "$DEST"
  exit 0
fi
if ! plane_ready; then locked "$PLANE_DEST" "kube-controller-manager/kube-scheduler/kwok" build_plane; fi
echo "$PLANE_DEST"
