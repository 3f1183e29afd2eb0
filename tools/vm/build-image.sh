#!/usr/bin/env bash
# Build the test VM's image once, cached: a Debian bookworm root filesystem made with debootstrap, with
# Debian's kernel and modules, systemd as init (so cgroup v2 by default), docker.io, fio and the
# filesystem tools layerbench drives; booted by layerbench.stack.engines.vm.qemu under qemu.
#
# Usage: tools/vm/build-image.sh CACHE_DIR [MIRROR]
#
# The guest gets its own Python environment from the checkout's requirements.lock (hash-checked, as on
# the host), at /opt/layerbench/venv; the checkout itself is shared at boot, so the guest runs the
# host's code with PYTHONPATH=<checkout>/src. The wheels are downloaded by the host's own pip
# (HOST_PYTHON, python3 unless set: make passes the project's venv), with the host's index and
# certificate settings, and installed in the guest offline.
#
# The image lands in CACHE_DIR/vm/<key>/ (vmlinuz, initrd.img, rootfs.img, packages.txt) where <key> is
# a hash of the recipe, packages.txt and guest/: changing them builds a new image beside the old one, and the old one is
# removed once the new one is complete. Nothing is mounted and no loop device is used: the root
# filesystem is written into rootfs.img by mke2fs -d. MIRROR defaults to the Debian archive the host's
# own apt configuration names for bookworm main; on a host without one, pass it.
set -euo pipefail

if [[ $# -lt 1 || $# -gt 2 || -z "$1" ]]; then
  echo "usage: $0 CACHE_DIR [MIRROR]" >&2
  exit 2
fi
cache=$(realpath -m "$1")
here=$(dirname "$(realpath "$0")")
lock="$here/../../requirements.lock"
suite=bookworm
# The image's identity: what goes into it. Bump RECIPE when a configuration step below changes.
RECIPE=3
key=$( (echo "$RECIPE"; cat "$here/packages.txt" "$here/guest/"* "$lock") | sha256sum | cut -c1-12)
base="$cache/vm"
dest="$base/$suite-$key"

fail() {
  echo "build-image: $*" >&2
  exit 1
}

if [[ -f "$dest/complete" ]]; then
  echo "build-image: cached $dest"
  exit 0
fi
[[ $(id -u) == 0 ]] || fail "run as root (debootstrap creates device nodes and chroots)"
for tool in debootstrap mke2fs chroot flock findmnt; do
  command -v "$tool" >/dev/null || fail "$tool not found (apt-get install debootstrap e2fsprogs)"
done

mirror=${2:-}
if [[ -z "$mirror" ]]; then
  # The host's own archive for this suite's main component, as apt itself resolves its sources.
  mirror=$(apt-get indextargets --format '$(REPO_URI) $(RELEASE) $(COMPONENT)' 'Identifier: Packages' 2>/dev/null \
    | awk -v s="$suite" '$2 == s && $3 == "main" {print $1; exit}')
  [[ -n "$mirror" ]] || fail "the host's apt sources name no $suite main archive: pass a Debian mirror as MIRROR"
fi

mkdir -p "$base"
exec 9>"$base/.lock"
flock 9
[[ -f "$dest/complete" ]] && exit 0

work="$base/.build-$key"
# debootstrap mounts /proc (and /sys) inside the root while it configures packages, and a failed run
# leaves them: unmount whatever is below the build before removing it, and never cross a mount.
discard() {
  if [[ -d "$work" ]]; then
    findmnt -rn -o TARGET | awk -v w="$work/" 'index($0, w) == 1' | sort -r | while read -r m; do
      umount "$m" || umount -l "$m"
    done
    rm -rf --one-file-system "$work"
  fi
}
discard
trap discard EXIT
root="$work/root"
mkdir -p "$root"

mapfile -t packages < <(grep -v '^#' "$here/packages.txt" | grep .)
echo "build-image: debootstrap $suite from $mirror (several minutes)"
debootstrap --variant=minbase --include="$(IFS=,; echo "${packages[*]}")" "$suite" "$root" "$mirror" \
  >"$work/debootstrap.log" 2>&1 || fail "debootstrap failed: $(tail -n 5 "$work/debootstrap.log" | tr '\n' ' ')"

# Configuration: no password, no network (the host talks to the guest over 9p), no system Docker
# (layerbench starts its own daemons, as on the host) but the system containerd Debian's docker.io
# enables, as on a user's host (a private dockerd uses it, in a namespace of its own; under TCG a
# containerd that dockerd starts itself may miss dockerd's start-up timeout), and the oneshot unit
# that runs the host's script.
echo layerbench-vm >"$root/etc/hostname"
printf '/dev/vda / ext4 defaults 0 1\n' >"$root/etc/fstab"
install -m 0755 "$here/guest/run-host-script" "$root/usr/local/sbin/run-host-script"
install -m 0644 "$here/guest/layerbench-guest.service" "$root/etc/systemd/system/layerbench-guest.service"
ln -sf /etc/systemd/system/layerbench-guest.service "$root/etc/systemd/system/multi-user.target.wants/"
for unit in docker.service docker.socket; do
  ln -sf /dev/null "$root/etc/systemd/system/$unit"
done
printf '9p\n9pnet_virtio\n' >>"$root/etc/modules"
echo "build-image: the guest's Python environment from requirements.lock"
cp "$lock" "$root/tmp/requirements.lock"
${HOST_PYTHON:-python3} -m pip download -q --require-hashes -r "$lock" -d "$root/tmp/wheels" >"$work/pip.log" 2>&1 \
  || fail "pip download failed: $(tail -n 5 "$work/pip.log" | tr '\n' ' ')"
if ! chroot "$root" sh -c 'python3 -m venv /opt/layerbench/venv && /opt/layerbench/venv/bin/pip install -q \
    --no-index --find-links /tmp/wheels --require-hashes -r /tmp/requirements.lock' >"$work/pip.log" 2>&1; then
  fail "pip in the guest failed: $(tail -n 5 "$work/pip.log" | tr '\n' ' ')"
fi
rm -rf "$root/tmp/requirements.lock" "$root/tmp/wheels" "$root/root/.cache"
chroot "$root" dpkg-query -W -f '${Package} ${Version}\n' >"$work/packages.txt"
rm -rf "$root/var/cache/apt/archives/"*.deb "$root/var/lib/apt/lists/"*_Packages

mkdir -p "$work/out"
cp -L "$root/vmlinuz" "$work/out/vmlinuz"
cp -L "$root/initrd.img" "$work/out/initrd.img"
mv "$work/packages.txt" "$work/out/"
# A sparse 8 GiB image: room for the loop files and daemons a test makes; only the written blocks take
# space. Guests boot it with snapshot=on, so the cached image never changes.
mke2fs -q -t ext4 -d "$root" -L lbroot "$work/out/rootfs.img" 8G || fail "mke2fs -d failed"
touch "$work/out/complete"
rm -rf "$dest"
mv "$work/out" "$dest"
for old in "$base"/"$suite"-*; do
  [[ "$old" == "$dest" ]] || rm -rf "$old"
done
echo "build-image: built $dest"
