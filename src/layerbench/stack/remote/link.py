"""The link to a storage host, shaped with tc on both ends of its veth pair: a delay each way (netem),
a rate (netem's own where there is a delay too, else tbf, which kernels without netem often have).

Each qdisc is recorded before it exists; it goes with its link anyway, so its remover only deletes
one whose device is still there.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

from layerbench.proc import Runner
from layerbench.spec.link import delay_text, rate_text
from layerbench.spec.models import LinkSpec
from layerbench.stack.ledger import tracked
from layerbench.stack.remote.host import StorageHost
from layerbench.stack.target import BuildContext

# tbf's bucket: at least what 1 ms of the rate sends, and never less than a few jumbo frames.
MIN_BURST_BYTES = 64 * 1024
TBF_LATENCY = "50ms"  # how long a packet may wait in tbf's queue before it is dropped


def qdisc_args(link: LinkSpec) -> list[str]:
    """tc's words for ``link`` after ``qdisc add dev X root``; empty when the link is not shaped."""
    if link.delay:
        rate = ["rate", rate_text(link.rate)] if link.rate else []
        return ["netem", "delay", delay_text(link.delay), *rate]
    if link.rate:
        burst = max(MIN_BURST_BYTES, link.rate // 8 // 1000)
        return ["tbf", "rate", rate_text(link.rate), "burst", str(burst), "latency", TBF_LATENCY]
    return []


@contextmanager
def shaped(host: StorageHost, link: LinkSpec, ctx: BuildContext) -> Iterator[None]:
    args = qdisc_args(link)
    if not args:
        yield
        return
    with ExitStack() as stack:
        for dev, netns in ((host.veth, None), (host.peer, host.netns)):
            stack.enter_context(_qdisc(dev, netns, args, ctx))
        yield


@contextmanager
def _qdisc(dev: str, netns: str | None, args: list[str], ctx: BuildContext) -> Iterator[str]:
    def create(rid: int) -> str:
        ctx.runner(tc_argv(["qdisc", "add", "dev", dev, "root", *args], netns), timeout=30).check()
        return dev

    with tracked(ctx.ledger, "qdisc", dev, create, lambda d: remove_qdisc(d, netns, ctx.runner), netns=netns):
        yield dev


def tc_argv(words: list[str], netns: str | None) -> list[str]:
    return ["ip", "netns", "exec", netns, "tc", *words] if netns else ["tc", *words]


def remove_qdisc(dev: str, netns: str | None, runner: Runner) -> None:
    """Back to the default root qdisc, if the device (and its namespace) still exists with ours on it."""
    shown = runner(tc_argv(["qdisc", "show", "dev", dev, "root"], netns), timeout=30)
    if shown.rc != 0 or shown.stdout.split()[1:2] not in (["netem"], ["tbf"]):
        return  # the link, or its namespace, is gone and the qdisc with it; or it was never added
    runner(tc_argv(["qdisc", "del", "dev", dev, "root"], netns), timeout=30).check()
