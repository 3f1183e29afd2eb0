#!/usr/bin/env bash
# Build layerbench's YCSB bindings into CACHE_DIR/ycsb/lib: YCSB core 0.17.0, the JDBC, Jedis and CQL
# drivers and our own jar, so that `java -cp "CACHE_DIR/ycsb/lib/*" site.ycsb.Client ...` runs.
#
# Usage: java/build-ycsb.sh CACHE_DIR
#
# Maven's repository lives in CACHE_DIR/m2: the first run downloads from Maven Central, later runs
# work offline. Nothing is rebuilt while the stamp (a hash of the POM, the sources and this script)
# matches; the new lib directory replaces the old one only once it is complete.
set -euo pipefail

if [[ $# -ne 1 || -z "$1" ]]; then
  echo "usage: $0 CACHE_DIR" >&2
  exit 2
fi
cache=$(realpath -m "$1")
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
project="$here/ycsb-bindings"
lib="$cache/ycsb/lib"
stamp="$cache/ycsb/stamp"

for tool in mvn java sha256sum flock; do
  command -v "$tool" >/dev/null || { echo "build-ycsb: $tool not found (apt-get install maven openjdk-17-jdk-headless)" >&2; exit 3; }
done

mkdir -p "$cache/ycsb"
# Two builds at once (two make targets, two users) would swap lib under each other.
exec 9>"$cache/ycsb/.lock"
flock 9

# Paths relative to the project, sorted: the hash does not depend on where the checkout is.
sources_hash() {
  (
    cd "$project"
    find pom.xml src -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum
    sha256sum < "$here/build-ycsb.sh"
  ) | sha256sum | cut -d' ' -f1
}
want=$(sources_hash)

if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -f "$lib/layerbench-ycsb.jar" ]]; then
  exit 0
fi

staging="$cache/ycsb/lib.new"
rm -rf "$staging"
# Maven's log is shown only on failure (Debian's Maven 3.8.7 prints colour codes even with -B -q);
# clean: a source file removed must not leave its class behind in the jar.
log="$cache/ycsb/build.log"
if ! mvn -B -q -f "$project/pom.xml" -Dmaven.repo.local="$cache/m2" \
  clean package dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$staging" >"$log" 2>&1; then
  cat "$log" >&2
  echo "build-ycsb: the Maven build failed (log above, kept in $log)" >&2
  exit 1
fi
cp "$project/target/layerbench-ycsb.jar" "$staging/layerbench-ycsb.jar"

rm -rf "$lib"
mv "$staging" "$lib"
echo "$want" > "$stamp"
echo "build-ycsb: $(ls "$lib" | wc -l) jars in $lib"
