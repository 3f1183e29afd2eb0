#!/usr/bin/env bash
# Build the local test cluster's Kubernetes into CACHE_DIR/k8s/bin: kube-apiserver,
# kube-controller-manager, kube-scheduler and kubelet v1.32.2 from the Go module proxy (tools/k8s
# pins them), and the pause container's binary from the same module's build/pause/linux/pause.c.
#
# Usage: tools/build-k8s.sh CACHE_DIR
#
# Measured on a 2-core host with empty Go caches: 320 s, downloads included, 3.6 GB of Go caches (in
# CACHE_DIR/go) and 315 MB of binaries; later runs work offline, and nothing is rebuilt while the
# stamp (a hash of the module's files and this script) matches. The binaries replace the old ones
# only once all of them are built.
set -euo pipefail

if [[ $# -ne 1 || -z "$1" ]]; then
  echo "usage: $0 CACHE_DIR" >&2
  exit 2
fi
cache=$(realpath -m "$1")
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
module="$here/k8s"
dest="$cache/k8s"
stamp="$dest/stamp"
COMMANDS=(kube-apiserver kube-controller-manager kube-scheduler kubelet)

command -v go >/dev/null || PATH="/usr/local/go/bin:$PATH"
for tool in go gcc sha256sum flock; do
  command -v "$tool" >/dev/null || {
    echo "build-k8s: $tool not found (Kubernetes 1.32 needs Go 1.23 or later: https://go.dev/dl/; gcc: apt-get install gcc libc6-dev)" >&2
    exit 3
  }
done
version=$(go env GOVERSION)
if [[ ! $version =~ ^go1\.([0-9]+) ]] || ((BASH_REMATCH[1] < 23)); then
  echo "build-k8s: $version is too old: Kubernetes 1.32 needs Go 1.23 or later" >&2
  exit 3
fi

mkdir -p "$dest"
exec 9>"$dest/.lock"
flock 9

want=$(
  cd "$module"
  {
    find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum
    sha256sum <"$here/build-k8s.sh"
  } | sha256sum | cut -d' ' -f1
)
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -x "$dest/bin/kubelet" && -x "$dest/bin/pause" ]]; then
  exit 0
fi

export GOPATH="$cache/go" GOMODCACHE="$cache/go/mod" GOCACHE="$cache/go/cache"
log="$dest/build.log"
fail() {
  cat "$log" >&2
  echo "build-k8s: $* (log above, kept in $log)" >&2
  exit 1
}
# What Kubernetes' own build stamps into every binary: without it each says v0.0.0-master, and the
# version skew a kubelet and an apiserver check (and the apiserver's emulated version) go by it.
release=$(cd "$module" && go list -mod=readonly -m -f '{{.Version}}' k8s.io/kubernetes)
[[ $release =~ ^v([0-9]+)\.([0-9]+)\. ]] || fail "cannot read Kubernetes' version from tools/k8s/go.mod"
v=k8s.io/component-base/version
stamps="-X $v.gitVersion=$release -X $v.gitMajor=${BASH_REMATCH[1]} -X $v.gitMinor=${BASH_REMATCH[2]}"
stamps+=" -X $v.gitTreeState=clean -X $v.buildDate=1970-01-01T00:00:00Z"
staging="$dest/bin.new"
rm -rf "$staging"
mkdir -p "$staging"
: >"$log"
started=$SECONDS
for cmd in "${COMMANDS[@]}"; do
  echo "build-k8s: $cmd ($((SECONDS - started)) s so far; about 5 minutes in all the first time)"
  # CGO off as Kubernetes' own release builds do for these; -mod=readonly: go.sum is the pinned truth.
  (cd "$module" && CGO_ENABLED=0 go build -mod=readonly -buildvcs=false -trimpath -ldflags="-s -w $stamps" \
    -o "$staging/$cmd" "k8s.io/kubernetes/cmd/$cmd") >>"$log" 2>&1 || fail "the Go build of $cmd failed"
done
pause=$(cd "$module" && go list -mod=readonly -m -f '{{.Dir}}' k8s.io/kubernetes)/build/pause/linux/pause.c
gcc -Os -static -o "$staging/pause" "$pause" >>"$log" 2>&1 || fail "the pause binary did not compile"
rm -rf "$dest/bin"
mv "$staging" "$dest/bin"
echo "$want" >"$stamp"
echo "build-k8s: ${COMMANDS[*]} and pause in $dest/bin ($(du -sh "$dest/bin" | cut -f1), $((SECONDS - started)) s)"
