#!/usr/bin/env bash
# Fetch IOzone (Debian/Ubuntu package iozone3) into CACHE_DIR/iozone: the binary `iozone` (0755) and
# VERSION (the .deb's version), so that layerbench can run IOzone's automatic mode itself.
#
# Usage: tools/fetch-iozone.sh CACHE_DIR
#
# iozone3 is not in Debian's `main` but in `non-free` (Ubuntu: `multiverse`). The host's own apt is
# tried first (it has the package where that component is enabled); otherwise a private source list
# for this release's component, on the archive the host's apt already uses, is read. Either way the system's apt configuration, lists and cache
# are left untouched: the private lists, cache and downloads live in CACHE_DIR/iozone/apt, removed
# after, and no package is installed (the binary is taken out of the .deb with dpkg-deb -x).
# Exits 0 at once when CACHE_DIR/iozone/iozone already runs; non-zero with one line on stderr when
# IOzone cannot be had (layerbench then refuses iozone workloads and says why).
set -euo pipefail

if [[ $# -ne 1 || -z "$1" ]]; then
  echo "usage: $0 CACHE_DIR" >&2
  exit 2
fi
cache=$(realpath -m "$1")
dest="$cache/iozone"
binary="$dest/iozone"
work="$dest/apt"

fail() {
  echo "fetch-iozone: $*" >&2
  exit 1
}

# `iozone -v` prints its version and exits 0: proof that the binary and its libraries load.
runs() { "$1" -v >/dev/null 2>&1; }

if [[ -x "$binary" ]] && runs "$binary"; then
  exit 0
fi

for tool in apt-get dpkg-deb flock; do
  command -v "$tool" >/dev/null || fail "$tool not found (IOzone is fetched as a Debian/Ubuntu package)"
done

mkdir -p "$dest"
# Two fetches at once (two make runs) would share the private apt directory.
exec 9>"$dest/.lock"
flock 9
if [[ -x "$binary" ]] && runs "$binary"; then
  exit 0
fi

rm -rf "$work"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/deb"
# apt downloads as the unprivileged _apt user when run as root; it warns (and runs unsandboxed)
# when that user cannot write the target directory.
if [[ $(id -u) == 0 ]] && id _apt >/dev/null 2>&1; then
  chown -R _apt "$work"
fi
log="$work/apt.log"

# Never write the system's binary caches (/var/cache/apt/*.bin): build them in memory.
no_cache=(-o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache=)

# apt's first error, for a one-line message (a failed fetch is only a warning to apt-get update).
apt_error() {
  grep -m1 -E '^(E:|W: Failed)' "$log" || tail -n1 "$log"
}

from_host() {
  (cd "$work/deb" && apt-get -q "${no_cache[@]}" download iozone3) >"$work/host.log" 2>&1
}

# The archive apt itself uses for this release's main component (a host behind a local mirror or a
# proxy keeps using it), as apt resolves its sources (.list or deb822).
host_archive() {
  apt-get indextargets --format '$(REPO_URI) $(RELEASE) $(COMPONENT)' 'Identifier: Packages' 2>/dev/null \
    | awk -v s="$1" '$2 == s && $3 == "main" {print $1; exit}'
}

# The release's component that holds iozone3, as "ARCHIVE SUITE COMPONENT KEYRING": the release from
# os-release, the archive from the host's apt sources.
private_source() {
  local ID="" ID_LIKE="" VERSION_CODENAME="" UBUNTU_CODENAME="" suite component keyring archive
  # shellcheck disable=SC1091
  [[ -r /etc/os-release ]] && . /etc/os-release
  if [[ $ID == ubuntu || " $ID_LIKE " == *" ubuntu "* ]]; then
    suite=${UBUNTU_CODENAME:-$VERSION_CODENAME} component=multiverse
    keyring=/usr/share/keyrings/ubuntu-archive-keyring.gpg
  elif [[ $ID == debian || " $ID_LIKE " == *" debian "* ]]; then
    suite=$VERSION_CODENAME component=non-free keyring=/usr/share/keyrings/debian-archive-keyring.gpg
  else
    return 0
  fi
  archive=$(host_archive "$suite")
  [[ -n $archive ]] || fail "the host's apt sources name no $suite main archive to read $component from"
  echo "${archive%/} $suite $component $keyring"
}

# A configuration file read after the system's (-c): our own sources, lists and cache, and none of
# the system's update hooks (Docker's Debian images delete /var/cache/apt/archives/*.deb after
# every update; AppStream refreshes its catalogue).
private_config() {
  local mirror=$1 suite=$2 component=$3 keyring=$4 signed=""
  [[ -r $keyring ]] && signed="[signed-by=$keyring] "
  echo "deb ${signed}$mirror $suite $component" >"$work/sources.list"
  cat >"$work/apt.conf" <<EOF
#clear APT::Update::Pre-Invoke;
#clear APT::Update::Post-Invoke;
#clear APT::Update::Post-Invoke-Success;
Dir::Etc::SourceList "$work/sources.list";
Dir::Etc::SourceParts "/dev/null";
Dir::State::Lists "$work/lists";
Dir::Cache "$work/cache";
Dir::Cache::Archives "$work/cache/archives";
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
Acquire::Languages "none";
Acquire::IndexTargets::deb::DEP-11::DefaultEnabled "false";
EOF
}

from_private_list() {
  local source
  source=$(private_source)
  [[ -n $source ]] || fail "not Debian or Ubuntu (/etc/os-release): cannot find the package iozone3"
  # shellcheck disable=SC2086
  set -- $source
  [[ -n $2 ]] || fail "no VERSION_CODENAME in /etc/os-release: cannot tell which release's $3 to read"
  private_config "$@"
  origin="$1 $2 $3"
  # apt-get update exits 0 when it could not fetch an index: what it left in the lists is the test.
  apt-get -q -c "$work/apt.conf" update >>"$log" 2>&1 || fail "cannot read $1 $2 $3: $(apt_error)"
  compgen -G "$work/lists/*_Packages*" >/dev/null || fail "cannot read $1 $2 $3: $(apt_error)"
  (cd "$work/deb" && apt-get -q -c "$work/apt.conf" download iozone3) >>"$log" 2>&1 \
    || fail "iozone3 is not in $1 $2 $3: $(apt_error)"
}

origin="the host's apt sources"
from_host || from_private_list

deb=$(find "$work/deb" -maxdepth 1 -name 'iozone3_*.deb' -print -quit)
[[ -n $deb ]] || fail "apt-get download left no iozone3 .deb in $work/deb"
version=$(dpkg-deb -f "$deb" Version)
dpkg-deb -x "$deb" "$work/root"
[[ -f $work/root/usr/bin/iozone ]] || fail "the iozone3 $version package holds no usr/bin/iozone"
runs "$work/root/usr/bin/iozone" || fail "the iozone3 $version binary does not run here ($work/root/usr/bin/iozone -v)"

# In place only once complete: a reader never sees a half-written binary.
install -m 0755 "$work/root/usr/bin/iozone" "$dest/iozone.new"
echo "$version" >"$dest/VERSION"
mv "$dest/iozone.new" "$binary"
echo "fetch-iozone: IOzone $version (from $origin) in $binary"
