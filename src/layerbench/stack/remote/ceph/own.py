"""A Ceph cluster the user runs (``cluster: {conf, pool, ...}``): an image of the run's own in their pool, and
nothing else of theirs touched. layerbench reads the cluster's state and settings, creates the image, and
removes it (in the ledger first, so `layerbench cleanup` removes a killed run's). It creates or deletes no pool,
sets no option, starts or stops no daemon: read-only commands and `rbd create`/`rbd rm` of that image only.

The clients reach it through a conf of the run's own: the user's, then a section for their user that names
the keyring given and turns librbd's cache off (as on a cluster layerbench builds: fio's direct=1 means every
write reaches the OSDs). A later section of the same name wins in Ceph's parser, so the user's file is read
as it is and only our client's settings change.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from layerbench.errors import PrerequisiteError, ToolError
from layerbench.proc import Runner
from layerbench.spec.transports.rbd import OwnClusterSpec, image_size
from layerbench.stack.ledger import Resource, tracked
from layerbench.stack.remote.ceph import cli
from layerbench.stack.remote.ceph.cluster import Cluster, directory, healthy
from layerbench.stack.remote.ceph.conf import Paths
from layerbench.stack.target import BuildContext

ACTIVE_LIMIT_S = 60.0  # the user's cluster is up already: its PGs are active now, or something is wrong
IMAGE_KIND = "rbd-own-image"  # a ledger row: the image to remove from the user's pool, with the conf to reach it


def conf_text(own: OwnClusterSpec, users_conf: str, log: Path) -> str:
    """The user's conf, then our client's section: the keyring given, librbd's cache off, logs in our directory."""
    keyring = f"keyring = {own.keyring}\n" if own.keyring else ""
    ours = f"[client.{own.user}]\n{keyring}rbd cache = false\nlog file = {log}\n"
    return f"{users_conf.rstrip()}\n\n# layerbench's client\n{ours}"


@contextmanager
def attached(own: OwnClusterSpec, size: int, ctx: BuildContext) -> Iterator[Cluster]:
    """The user's cluster with an image of the run's own of ``size`` bytes in their pool, removed at the end."""
    try:
        users_conf = Path(own.conf).read_text()
    except OSError as exc:
        raise PrerequisiteError(f"device.remote.cluster.conf {own.conf}: {exc.strerror}") from None
    with ExitStack() as stack:
        root = stack.enter_context(directory(ctx.work_dir / f"ceph-own-{uuid.uuid4().hex[:8]}", ctx, subs=()))
        paths = Paths(root)
        paths.conf.write_text(conf_text(own, users_conf, root / "client.log"))
        access = cli.Access(paths.conf, own.user)
        usable(access, own, ctx.runner)
        image = stack.enter_context(_image(access, own.pool, image_size(size), ctx))
        yield Cluster(paths, own.pool, image, image_size(size), [], [], user=own.user)


def usable(access: cli.Access, own: OwnClusterSpec, runner: Runner) -> None:
    """The cluster answers as this user, has the pool, and every PG is active; refused in Ceph's words if not."""
    try:
        # Ceph's own words for a pool that is not there; the applications a pool is enabled for, else.
        found = cli.ceph_json(runner, access, "osd", "pool", "application", "get", own.pool) or {}
        if "rbd" not in found:
            raise PrerequisiteError(
                f"pool {own.pool} of the Ceph cluster at {own.conf} is not an RBD pool (it is enabled for: "
                f"{', '.join(found) or 'nothing'})",
                hint=f"layerbench changes no pool: `rbd pool init {own.pool}` makes it one, if it is yours to change",
            )
        healthy(access, runner, ACTIVE_LIMIT_S, cli.Status.active)
    except ToolError as exc:
        raise PrerequisiteError(
            f"the Ceph cluster at {own.conf}, as client.{own.user}, pool {own.pool}: {exc}",
            hint="layerbench creates no pool: the pool must exist and be an RBD pool (rbd pool init), and the user "
            "needs mon 'profile rbd' and osd 'profile rbd pool=POOL' (mon 'allow r' to read the cluster's status)",
        ) from None


@contextmanager
def _image(access: cli.Access, pool: str, size: int, ctx: BuildContext) -> Iterator[str]:
    name = f"lb-{ctx.run_id[:12]}-{uuid.uuid4().hex[:6]}"

    def create(rid: int) -> str:
        cli.rbd(ctx.runner, access, "create", f"{pool}/{name}", "--size", f"{size // 2**20}M")
        return name

    remove = lambda n: _remove(access, f"{pool}/{n}", ctx.runner)  # noqa: E731
    with tracked(ctx.ledger, IMAGE_KIND, f"{pool}/{name}", create, remove, conf=str(access.conf), user=access.user):
        yield name


def _remove(access: cli.Access, image: str, runner: Runner) -> None:
    cli.rbd(runner, access, "rm", "--no-progress", image, timeout=300)


def reclaim_image(res: Resource, runner: Runner) -> None:
    """A dead run's image on the user's cluster, removed through the conf that made it (kept in the run's
    directory until its own row is removed, after this one)."""
    conf = Path(str(res.detail.get("conf", "")))
    if conf.is_file():
        _remove(cli.Access(conf, str(res.detail.get("user", cli.USER))), res.ident, runner)
