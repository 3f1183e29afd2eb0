"""The remote device axis without root: its spec, its refusals, tc's words, the storage host's subnet."""

from __future__ import annotations

import ipaddress
import json
import random
from dataclasses import replace
from pathlib import Path

import pytest
from pydantic import ValidationError

from layerbench.spec.feasibility import HostCaps
from layerbench.spec.link import parse_delay, parse_rate
from layerbench.spec.models import Cell, DeviceSpec, FioWorkload, LinkSpec, StackSpec
from layerbench.spec.rules import why_not, workload_fits
from layerbench.stack.remote.host import StorageHost, free_subnet, link_argvs, used_networks
from layerbench.stack.remote.link import qdisc_args
from layerbench.stack.remote.nbd import fuse_argv, server_argv
from layerbench.workloads import fio

DATA = Path(__file__).parent.parent / "data" / "remote"
HAS_ALL = {f: None for f in ("storage-host", "nbd", "nbd-fuse", "nbd-fio", "nbd-kernel", "nvme-tcp", "netem", "tbf")}


def _stack(remote: dict | None, engine: str = "native") -> StackSpec:
    device = {"kind": "zram", "size": "1GiB", "remote": remote}
    placement = "raw" if engine == "native" else "volume"
    fs = "none" if engine == "native" else "ext4"
    return StackSpec.model_validate({"device": device, "filesystem": fs, "engine": engine, "placement": placement})


def test_delays_and_rates_parse_as_tc_writes_them() -> None:
    assert parse_delay("50us") == 50_000
    assert parse_delay("1.5ms") == 1_500_000
    assert parse_rate("10gbit") == 10**10
    assert parse_rate("500Mbit") == 5 * 10**8
    with pytest.raises(ValueError, match="ns, us, ms or s"):
        parse_delay("50 micro")
    with pytest.raises(ValueError, match="bit, kbit, mbit or gbit"):
        parse_rate("10GB/s")


def test_a_remote_device_labels_its_transport_client_and_link() -> None:
    dev = DeviceSpec(kind="zram", remote={"transport": "nbd", "client": "fuse", "link": {"delay": "50us"}})
    assert dev.label() == "zram@nbd-fuse(+50us)"
    assert DeviceSpec(kind="zram", remote={"transport": "nvme-tcp"}).label() == "zram@nvme-tcp"


def test_a_local_device_dumps_and_hashes_as_before_remote_existed() -> None:
    dump = DeviceSpec(kind="zram").model_dump(mode="json")
    assert "remote" not in dump
    cell = Cell(stack=_stack(None), workload=FioWorkload(name="r"))
    assert cell.id == Cell(stack=_stack(None), workload=FioWorkload(name="r")).id
    assert cell.id != Cell(stack=_stack({"transport": "nbd"}), workload=FioWorkload(name="r")).id


def test_the_fuse_client_is_nbd_only_and_says_so() -> None:
    with pytest.raises(ValidationError, match="nvme-tcp has a kernel client only"):
        DeviceSpec(remote={"transport": "nvme-tcp", "client": "fuse"})
    with pytest.raises(ValidationError, match="transport"):
        DeviceSpec(remote={"transport": "fibre-channel"})


def test_refusals_name_what_the_host_lacks(full_caps: HostCaps) -> None:
    caps = replace(full_caps, remote={**HAS_ALL, "nvme-tcp": "this kernel has no nvmet", "netem": "no netem qdisc"})
    assert why_not(_stack({"transport": "nbd", "client": "fuse"}), caps) is None
    assert "no nvmet" in why_not(_stack({"transport": "nvme-tcp"}), caps)
    assert "no netem" in why_not(_stack({"transport": "nbd", "link": {"delay": "50us"}}), caps)
    assert why_not(_stack({"transport": "nbd", "link": {"rate": "1gbit"}}), caps) is None  # tbf suffices
    assert "not probed" in why_not(_stack({"transport": "nbd"}), full_caps)


def test_fios_nbd_engine_is_a_client_for_raw_fio_natively_or_in_docker(full_caps: HostCaps) -> None:
    caps = replace(full_caps, remote=HAS_ALL)
    remote = {"transport": "nbd", "client": "fio"}
    assert DeviceSpec(kind="zram", remote=remote).label() == "zram@nbd-fio"
    assert why_not(_stack(remote), caps) is None
    assert "filesystem none, placement raw only" in why_not(_stack(remote, engine="docker:overlay2"), caps)
    in_docker = {"device": {"kind": "zram", "remote": remote}, "filesystem": "none", "placement": "raw"}
    assert why_not(StackSpec.model_validate({**in_docker, "engine": "docker:overlay2"}), caps) is None
    podman = why_not(StackSpec.model_validate({**in_docker, "engine": "podman:overlay"}), caps)
    assert podman == "fio's nbd engine runs natively or in a container of Docker; not yet on Podman"
    limited = StackSpec.model_validate({**_stack(remote).model_dump(mode="json"), "limits": {"cpus": 1.0}})
    assert "neither" in why_not(limited, caps)
    assert "no nbd engine" in why_not(_stack(remote), replace(caps, remote={**HAS_ALL, "nbd-fio": "no nbd engine"}))
    assert "personality names its own files" in workload_fits(
        _stack(remote), FioWorkload(name="p", personality="varmail-like")
    )
    assert workload_fits(_stack(remote), FioWorkload(name="r")) is None
    with pytest.raises(ValidationError, match="client 'fio' is for transport 'nbd'"):
        DeviceSpec(remote={"transport": "iscsi", "client": "fio"})


def test_fio_reaches_an_nbd_export_with_its_nbd_engine_and_no_file() -> None:
    uri = "nbd://10.213.0.2:10809/lb"
    w = FioWorkload(name="r", rw="randwrite", precondition="none", ioengine="io_uring")
    for args in (fio.argv(w, uri, True), fio.precondition_argv(2**20, uri, True), fio.steady_argv(2**20, uri, True)):
        assert args[-2:] == ["--ioengine=nbd", f"--uri={uri}"]
        assert not [a for a in args if a.startswith(("--filename=", "--unlink=")) or a == "--ioengine=io_uring"]
    local = fio.argv(w, "/dev/zram3", True)
    assert "--filename=/dev/zram3" in local and "--ioengine=io_uring" in local and fio.over_export(local) == local


def test_fuse_needs_fuse_and_loop(full_caps: HostCaps) -> None:
    caps = replace(full_caps, remote=HAS_ALL, fuse=False)
    assert "lacks FUSE" in why_not(_stack({"transport": "nbd", "client": "fuse"}), caps)


def test_a_vm_on_a_remote_device_is_refused_for_now(full_caps: HostCaps) -> None:
    stack = StackSpec.model_validate(
        {"device": {"kind": "zram", "remote": {}}, "filesystem": "ext4", "engine": "vm", "placement": "host-dir"}
    )
    assert "not supported yet" in why_not(stack, replace(full_caps, remote=HAS_ALL))


def test_link_shaping_picks_netem_for_a_delay_and_tbf_for_a_rate_alone() -> None:
    assert qdisc_args(LinkSpec()) == []
    assert qdisc_args(LinkSpec(delay="50us", rate="10gbit")) == ["netem", "delay", "50us", "rate", "10gbit"]
    tbf = qdisc_args(LinkSpec(rate="1gbit"))
    assert tbf[:3] == ["tbf", "rate", "1gbit"]
    assert int(tbf[tbf.index("burst") + 1]) >= 10**9 // 8 // 1000  # at least 1 ms of the rate


def test_the_storage_hosts_subnet_avoids_every_address_and_route_of_this_host() -> None:
    addrs = json.loads((DATA / "ip-addr.json").read_text())
    routes = json.loads((DATA / "ip-route.json").read_text())
    used = used_networks(addrs, routes)
    assert ipaddress.ip_network("127.0.0.0/8") in used
    # Everything but one /30 of the pool taken: that one is found, wherever the search starts.
    pool = list(ipaddress.ip_network("10.213.0.0/16").subnets(new_prefix=30))
    free = pool[1234]
    taken = [n for n in pool if n != free] + used
    for seed in range(5):
        assert free_subnet(taken, random.Random(seed)) == free


def test_commands_are_argument_lists_with_the_storage_host_namespace() -> None:
    host = StorageHost("lb-st-1", "lb1h", "lb1s", "10.213.0.1", "10.213.0.2")
    argvs = link_argvs(host, 30)
    assert argvs[0] == ["ip", "link", "set", "lb1s", "netns", "lb-st-1"]
    assert argvs[-1] == ["ip", "netns", "exec", "lb-st-1", "ip", "link", "set", "lb1s", "up"]
    server = server_argv("/dev/zram3", "10.213.0.2")
    assert "--cache=none" in server and server[-1] == "/dev/zram3"  # O_DIRECT on the server's side
    assert fuse_argv(Path("/w/p"), Path("/w/m"), "nbd://10.213.0.2:10809/")[-2:] == [
        "/w/m/disk",
        "nbd://10.213.0.2:10809/",
    ]


def test_the_transports_rows_say_which_device_fio_reaches_itself() -> None:
    from layerbench.spec.transports import device_clients, fio_export_args, without_device

    remote = DeviceSpec(kind="zram", remote={"transport": "nbd", "client": "fio"}).remote
    assert remote is not None and without_device(remote.label()) and not without_device("nbd-fuse")
    assert device_clients("nbd") == ["kernel", "fuse"] and device_clients("iscsi") == ["kernel"]
    assert fio_export_args("/dev/zram3") is None
