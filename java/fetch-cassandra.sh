#!/usr/bin/env bash
# Fetch Apache Cassandra (cassandra-all 5.0.x from Maven Central, java/cassandra/pom.xml) and its
# runtime dependencies into CACHE_DIR/cassandra/lib, so that
# `java -cp "CACHE_DIR/cassandra/lib/*" org.apache.cassandra.service.CassandraDaemon` runs it.
# About 100 jars, 67 MB.
#
# Usage: java/fetch-cassandra.sh CACHE_DIR
#
# Maven's repository lives in CACHE_DIR/m2 (shared with build-ycsb.sh): the first run downloads,
# later runs work offline. Nothing is fetched again while the stamp (a hash of the POM and this
# script) matches; the new lib directory replaces the old one only once it is complete.
set -euo pipefail

if [[ $# -ne 1 || -z "$1" ]]; then
  echo "usage: $0 CACHE_DIR" >&2
  exit 2
fi
cache=$(realpath -m "$1")
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
pom="$here/cassandra/pom.xml"
lib="$cache/cassandra/lib"
stamp="$cache/cassandra/stamp"

for tool in mvn java sha256sum flock; do
  command -v "$tool" >/dev/null || { echo "fetch-cassandra: $tool not found (apt-get install maven default-jdk-headless)" >&2; exit 3; }
done

mkdir -p "$cache/cassandra"
# Two fetches at once would swap lib under each other (and under a running server).
exec 9>"$cache/cassandra/.lock"
flock 9

want=$(cat "$pom" "$here/fetch-cassandra.sh" | sha256sum | cut -d' ' -f1)
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -d "$lib" ]]; then
  exit 0
fi

staging="$cache/cassandra/lib.new"
rm -rf "$staging"
log="$cache/cassandra/fetch.log"
# No `package`: the POM builds nothing, it only names what to copy.
if ! mvn -B -q -f "$pom" -Dmaven.repo.local="$cache/m2" \
  dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$staging" >"$log" 2>&1; then
  cat "$log" >&2
  echo "fetch-cassandra: the Maven fetch failed (log above, kept in $log)" >&2
  exit 1
fi
if ! ls "$staging"/cassandra-all-*.jar >/dev/null 2>&1; then
  echo "fetch-cassandra: Maven succeeded but copied no cassandra-all jar into $staging" >&2
  exit 1
fi

rm -rf "$lib"
mv "$staging" "$lib"
echo "$want" > "$stamp"
echo "fetch-cassandra: $(ls "$lib" | wc -l) jars ($(du -sh "$lib" | cut -f1)) in $lib"
