#!/usr/bin/env bash
# Build FerretDB (a MongoDB wire-protocol server on SQLite) into CACHE_DIR/ferretdb/bin/ferretdb:
# layerbench's own small wrapper (tools/ferretdb) around FerretDB's embeddable package, v1.24.2.
#
# Usage: tools/build-ferretdb.sh CACHE_DIR
#
# Go's module cache and build cache live in CACHE_DIR/go: the first run downloads from the Go module
# proxy, later runs work offline. Static (CGO_ENABLED=0: FerretDB's SQLite is modernc.org/sqlite,
# pure Go), so an image needs the binary alone. Nothing is rebuilt while the stamp (a hash of the
# module's files and this script) matches; the new binary replaces the old one only once complete.
set -euo pipefail

if [[ $# -ne 1 || -z "$1" ]]; then
  echo "usage: $0 CACHE_DIR" >&2
  exit 2
fi
cache=$(realpath -m "$1")
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
module="$here/ferretdb"
dest="$cache/ferretdb"
binary="$dest/bin/ferretdb"
stamp="$dest/stamp"

# Go's official tarball unpacks into /usr/local/go, not always on PATH (sudo's, make's).
command -v go >/dev/null || PATH="/usr/local/go/bin:$PATH"
for tool in go sha256sum flock; do
  command -v "$tool" >/dev/null || {
    echo "build-ferretdb: $tool not found (FerretDB needs Go 1.24 or later: https://go.dev/dl/, unpacked into /usr/local)" >&2
    exit 3
  }
done

# FerretDB 1.24's go.mod asks for Go 1.24 (Debian 12's golang-go is 1.19).
version=$(go env GOVERSION)
if [[ ! $version =~ ^go1\.([0-9]+) ]] || ((BASH_REMATCH[1] < 24)); then
  echo "build-ferretdb: $version is too old: FerretDB needs Go 1.24 or later (https://go.dev/dl/, unpacked into /usr/local)" >&2
  exit 3
fi

mkdir -p "$dest/bin"
# Two builds at once would replace the binary under each other.
exec 9>"$dest/.lock"
flock 9

# Paths relative to the module, sorted: the hash does not depend on where the checkout is.
want=$(
  cd "$module"
  {
    find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum
    sha256sum <"$here/build-ferretdb.sh"
  } | sha256sum | cut -d' ' -f1
)
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -x "$binary" ]]; then
  exit 0
fi

export GOPATH="$cache/go" GOMODCACHE="$cache/go/mod" GOCACHE="$cache/go/cache" CGO_ENABLED=0
log="$dest/build.log"
fail() {
  cat "$log" >&2
  echo "build-ferretdb: $* (log above, kept in $log)" >&2
  exit 1
}

# One fix to FerretDB 1.24.2 (the last release with SQLite; upstream has no fix): its SQLite backend
# indexes _id as `_ferretdb_sjson->"_id"` but looks _id up as `_ferretdb_sjson->'$._id'`, an
# expression SQLite cannot match to that index, so every read, update and delete of one record
# scanned the collection (10 ms a read at 1,000 records here; 0.005 ms with the index). The lookup
# is made to use the index's own expression, which selects the same value. Files beneath
# GOMODCACHE cannot be overlaid, so a patched copy of the module replaces it (-modfile: the
# checkout's go.mod stays as it is).
src="$dest/src"
rm -rf "$src"
mkdir -p "$src"
(cd "$module" && go mod download -json github.com/FerretDB/FerretDB) >"$log" 2>&1 || fail "cannot fetch FerretDB"
upstream=$(cd "$module" && go list -mod=readonly -m -f '{{.Dir}}' github.com/FerretDB/FerretDB)
cp -R "$upstream" "$src/FerretDB"
chmod -R u+w "$src/FerretDB"
metadata="$src/FerretDB/internal/backends/sqlite/metadata/metadata.go"
sed -i "s|IDColumn = DefaultColumn + \"->'\$._id'\"|IDColumn = DefaultColumn + \"->'_id'\"|" "$metadata"
grep -q "IDColumn = DefaultColumn + \"->'_id'\"" "$metadata" || fail "the _id lookup to patch is not in $metadata"
cp "$module/go.mod" "$module/go.sum" "$src/"
echo "replace github.com/FerretDB/FerretDB => $src/FerretDB" >>"$src/go.mod"

# -mod=readonly: go.sum is the pinned truth, never rewritten; -buildvcs=false: layerbench's own
# commit is not FerretDB's, and a dirty checkout must not change the binary.
(cd "$module" && go build -modfile "$src/go.mod" -mod=readonly -buildvcs=false -trimpath -ldflags='-s -w' \
  -o "$binary.new" .) >>"$log" 2>&1 || fail "the Go build failed"
rm -rf "$src"
mv "$binary.new" "$binary"
echo "$want" >"$stamp"
echo "build-ferretdb: $("$binary" -version) in $binary ($(du -h "$binary" | cut -f1))"
