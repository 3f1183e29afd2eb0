"""A storage host: a network namespace of its own, joined to this one by a veth pair on a private /30.

What a transport's target serves runs inside it (``StorageHost.argv``), so every byte a client reads
crosses a real TCP connection over a link that tc can shape, as between two machines. Removing the
namespace does not end the processes in it, so its remover ends them first: nothing but layerbench
puts a process into a namespace layerbench named.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import random
import signal
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from layerbench.errors import PrerequisiteError, ToolError
from layerbench.proc import Runner
from layerbench.stack.ledger import tracked
from layerbench.stack.target import BuildContext

# Private addresses for the links: a /30 per storage host, chosen where this host routes nothing.
POOL = ipaddress.ip_network("10.213.0.0/16")
NETNS_PREFIX = "lb-st-"


@dataclass(frozen=True)
class StorageHost:
    netns: str
    veth: str  # this namespace's end
    peer: str  # the storage host's end
    address: str  # this end's address
    remote_address: str  # the storage host's address, where its targets listen

    def argv(self, argv: Sequence[str]) -> list[str]:
        """``argv`` run on the storage host."""
        return ["ip", "netns", "exec", self.netns, *argv]

    def configfs_argv(self, argv: Sequence[str]) -> list[str]:
        """``argv`` in the storage host's network namespace only. A kernel target opens its listening
        socket in the namespace of the process that enables its port through configfs; `ip netns exec`
        remounts /sys, which hides configfs, so nsenter joins the network namespace alone."""
        return ["nsenter", f"--net=/run/netns/{self.netns}", *argv]


@contextmanager
def storage_host(ctx: BuildContext) -> Iterator[StorageHost]:
    tag = uuid.uuid4().hex[:8]
    subnet = free_subnet(_used_networks(ctx.runner))
    near, far = (str(a) for a in list(subnet.hosts())[:2])
    host = StorageHost(f"{NETNS_PREFIX}{tag}", f"lb{tag}h", f"lb{tag}s", near, far)

    def create_netns(rid: int) -> str:
        ctx.runner(["ip", "netns", "add", host.netns], timeout=30).check()
        ctx.runner(host.argv(["ip", "link", "set", "lo", "up"]), timeout=30).check()
        return host.netns

    def create_veth(rid: int) -> str:
        try:
            ctx.runner(["ip", "link", "add", host.veth, "type", "veth", "peer", "name", host.peer], timeout=30).check()
            for argv in link_argvs(host, subnet.prefixlen):
                ctx.runner(argv, timeout=30).check()
        except BaseException:
            delete_link(host.veth, ctx.runner)
            ctx.ledger.removed(rid)
            raise
        return host.veth

    with (
        tracked(ctx.ledger, "netns", host.netns, create_netns, lambda ns: remove_netns(ns, ctx.runner)),
        tracked(ctx.ledger, "veth", host.veth, create_veth, lambda v: delete_link(v, ctx.runner), netns=host.netns),
    ):
        yield host


def link_argvs(host: StorageHost, prefixlen: int) -> list[list[str]]:
    """Move the peer into the storage host, turn scatter-gather off on both ends, address them, bring
    them up.

    Without scatter-gather, a kernel initiator (NVMe/TCP, iSCSI) copies what it sends into socket
    buffers instead of lending the writer's own pages. Between two machines a NIC reads those pages;
    over a veth the target, in the same kernel, copies straight out of them, and Debian 12's 6.1 kernel
    BUGs on that when a page run crosses a huge page (mm/usercopy.c: "Kernel memory exposure attempt
    detected from page alloc", seen in the test VM with nvmet-tcp). The copy costs the initiator CPU
    that a NIC with scatter-gather would not; user-space transports (qemu-nbd, nbdfuse) copy anyway.
    """
    return [
        ["ip", "link", "set", host.peer, "netns", host.netns],
        ["ethtool", "-K", host.veth, "sg", "off"],
        host.argv(["ethtool", "-K", host.peer, "sg", "off"]),
        ["ip", "addr", "add", f"{host.address}/{prefixlen}", "dev", host.veth],
        ["ip", "link", "set", host.veth, "up"],
        host.argv(["ip", "addr", "add", f"{host.remote_address}/{prefixlen}", "dev", host.peer]),
        host.argv(["ip", "link", "set", host.peer, "up"]),
    ]


def free_subnet(used: Sequence[ipaddress.IPv4Network], rng: random.Random | None = None) -> ipaddress.IPv4Network:
    """A /30 of POOL that overlaps nothing this host addresses or routes; a random start, so two runs at
    once rarely race for the same one."""
    blocks = list(POOL.subnets(new_prefix=30))
    near = list(ipaddress.collapse_addresses(u for u in used if u.overlaps(POOL)))
    start = (rng or random.Random()).randrange(len(blocks))
    for block in blocks[start:] + blocks[:start]:
        if not any(block.overlaps(u) for u in near):
            return block
    raise PrerequisiteError(f"every /30 of {POOL} is in use on this host: no address for a storage host's link")


def _used_networks(runner: Runner) -> list[ipaddress.IPv4Network]:
    addrs = json.loads(runner(["ip", "-j", "-4", "addr"], timeout=30).check().stdout or "[]")
    routes = json.loads(runner(["ip", "-j", "-4", "route", "show", "table", "all"], timeout=30).check().stdout or "[]")
    return used_networks(addrs, routes)


def used_networks(addrs: list[dict], routes: list[dict]) -> list[ipaddress.IPv4Network]:
    """The IPv4 networks in `ip -j addr` and `ip -j route` output (a default route counts as none)."""
    nets = []
    for link in addrs:
        for a in link.get("addr_info", []):
            nets.append(ipaddress.ip_network(f"{a['local']}/{a['prefixlen']}", strict=False))
    for r in routes:
        dst = r.get("dst", "default")
        if dst != "default" and ":" not in dst:
            with contextlib.suppress(ValueError):
                nets.append(ipaddress.ip_network(dst, strict=False))
    return nets


def remove_netns(name: str, runner: Runner) -> None:
    """End what runs in the namespace (only layerbench put anything there), then delete it."""
    if not name.startswith(NETNS_PREFIX) or not _netns_exists(name, runner):
        return
    for _ in range(50):
        pids = runner(["ip", "netns", "pids", name], timeout=30).stdout.split()
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGKILL)
        time.sleep(0.1)
    runner(["ip", "netns", "delete", name], timeout=30).check()


def _netns_exists(name: str, runner: Runner) -> bool:
    listed = runner(["ip", "-j", "netns", "list"], timeout=30).stdout or "[]"
    return any(ns.get("name") == name for ns in json.loads(listed))


def delete_link(name: str, runner: Runner) -> None:
    """Delete a veth (both ends go); nothing to do if it is gone already."""
    if not name or runner(["ip", "link", "show", name], timeout=30).rc != 0:
        return
    try:
        runner(["ip", "link", "delete", name], timeout=30).check()
    except ToolError:
        if runner(["ip", "link", "show", name], timeout=30).rc == 0:
            raise
