#!/bin/sh
# with-policy-rc.sh COMMAND [ARGS...]: run COMMAND (an apt-get install) with a policy-rc.d that answers
# "exit 101", so the packages it installs do not start their services; used by `make apt-db` and
# `make apt-k8s`. The file is removed on every way out this shell sees (success, failure, Ctrl-C,
# SIGTERM, SIGHUP; not SIGKILL, which no shell can catch), and only if this script made it: one that was
# there before is kept as it was, and said so. POLICY_RC_D names the file (tests point it into a temporary
# directory); /usr/sbin/policy-rc.d otherwise.
set -u
policy=${POLICY_RC_D:-/usr/sbin/policy-rc.d}
ours='#!/bin/sh
exit 101'
made=""

cleanup() {
  if [ -n "$made" ]; then rm -f "$policy"; made=""; fi
}
trap cleanup EXIT
trap 'cleanup; trap - INT; kill -INT $$' INT  # die of the signal, as the caller expects of Ctrl-C
trap 'cleanup; exit 143' TERM
trap 'cleanup; exit 129' HUP

if [ -e "$policy" ] || [ -L "$policy" ]; then
  if [ "$(cat "$policy" 2>/dev/null)" = "$ours" ]; then
    echo "with-policy-rc: $policy is the one an earlier, interrupted install left: it keeps every service" \
      "on this host from starting; kept for this install, remove it after (rm $policy)" >&2
  else
    echo "with-policy-rc: $policy was already there; kept as it is (services may start during this install)" >&2
  fi
else
  made=1  # before the file exists: a signal between the two still removes it
  printf '%s\n' "$ours" > "$policy" && chmod 755 "$policy"
fi
"$@"
