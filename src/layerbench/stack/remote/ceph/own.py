"""A Ceph cluster the user runs (``cluster: {conf, pool, ...}``): an image of the run's own in their pool, and
nothing else of theirs touched. layerbench reads the cluster's state and settings, creates the image, and
removes it (in the ledger first, so `layerbench cleanup` removes a killed run's). It creates or deletes no pool,
sets no option, starts or stops no daemon: read-only commands and `rbd create`/`rbd rm` of that image only;
and, for a degraded or recovering cell on a cluster the user named with `run --allow-faults-on`, one OSD's
noup flag set and removed and the OSD marked down (faults.py).

The clients reach it through a conf of the run's own: the user's, then a section for their user that names
the keyring given and turns librbd's cache off (as on a cluster layerbench builds: fio's direct=1 means every
write reaches the OSDs). A later section of the same name wins in Ceph's parser, so the user's file is read
as it is and only our client's settings change.
"""

from __future__ import annotations

import tempfile
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from layerbench.errors import PrerequisiteError, ToolError
from layerbench.proc import Runner
from layerbench.spec.transports.rbd import OwnClusterSpec, image_size
from layerbench.stack.ledger import Resource, tracked
from layerbench.stack.remote.ceph import cli, faults
from layerbench.stack.remote.ceph.cluster import FILL_BYTES, Cluster, directory, healthy
from layerbench.stack.remote.ceph.conf import Paths
from layerbench.stack.target import BuildContext

ACTIVE_LIMIT_S = 60.0  # the user's cluster is up already: its PGs are active now, or something is wrong
DEFAULT_KEYRINGS = Path("/etc/ceph")  # where Ceph's clients look for a keyring the conf does not name
IMAGE_KIND = "rbd-own-image"  # a ledger row: the image to remove from the user's pool, with the conf to reach it


def conf_text(own: OwnClusterSpec, users_conf: str, log: Path) -> str:
    """The user's conf, then our client's section: the keyring given, librbd's cache off, logs in our directory."""
    keyring = f"keyring = {own.keyring}\n" if own.keyring else ""
    ours = f"[client.{own.user}]\n{keyring}rbd cache = false\nlog file = {log}\n"
    return f"{users_conf.rstrip()}\n\n# layerbench's client\n{ours}"


def write_conf(own: OwnClusterSpec, root: Path) -> cli.Access:
    """Our conf for the user's cluster in ``root`` (``conf_text``), and how commands reach it through it; an
    OSError where the user's conf cannot be read."""
    users_conf = Path(own.conf).read_text()
    paths = Paths(root)
    paths.conf.write_text(conf_text(own, users_conf, root / "client.log"))
    return cli.Access(paths.conf, own.user)


def not_rbd(own: OwnClusterSpec, enabled: dict[str, object]) -> str | None:
    """Why the pool, enabled for these applications (`ceph osd pool application get`), is not an RBD pool."""
    if "rbd" in enabled:
        return None
    return f"pool {own.pool} is not an RBD pool (it is enabled for: {', '.join(enabled) or 'nothing'})"


@contextmanager
def attached(own: OwnClusterSpec, size: int, ctx: BuildContext) -> Iterator[Cluster]:
    """The user's cluster with an image of the run's own of ``size`` bytes in their pool, removed at the end."""
    with ExitStack() as stack:
        root = stack.enter_context(directory(ctx.work_dir / f"ceph-own-{uuid.uuid4().hex[:8]}", ctx, subs=()))
        try:
            access = write_conf(own, root)
        except OSError as exc:
            raise PrerequisiteError(f"device.remote.cluster.conf {own.conf}: {exc.strerror}") from None
        paths = Paths(root)
        usable(access, own, ctx.runner)
        if own.state != "healthy":
            faults.allowed(access, own, ctx)
        image = stack.enter_context(_image(access, own.pool, image_size(size), ctx))
        # Written while an OSD is held down (state recovering): data to recover, in an image of the run's own too.
        fill = stack.enter_context(_image(access, own.pool, FILL_BYTES, ctx)) if own.state == "recovering" else None
        keyring = Path(own.keyring) if own.keyring else DEFAULT_KEYRINGS
        yield Cluster(paths, own.pool, image, image_size(size), [], [], fill, own.user, keyring)


def usable(access: cli.Access, own: OwnClusterSpec, runner: Runner) -> None:
    """The cluster answers as this user, has the pool, and every PG is active; refused in Ceph's words if not."""
    try:
        # Ceph's own words for a pool that is not there; the applications a pool is enabled for, else.
        why = not_rbd(own, cli.ceph_json(runner, access, "osd", "pool", "application", "get", own.pool) or {})
        if why is not None:
            raise PrerequisiteError(
                f"{why}, on the Ceph cluster at {own.conf}",
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


DoctorRow = tuple[str, str, bool, str]  # (axis, what, ok, note), as `doctor` prints its rows


def doctor_rows(own: OwnClusterSpec, runner: Runner) -> list[DoctorRow]:
    """`doctor`'s rows for a cluster the user runs, each asked as their user through the conf a run would use:
    whether it answers and how healthy it is, whether the pool is there and an RBD pool, and what the user may
    read. Nothing is created: whether the user may create an image is what a run's first image finds out."""
    where = f"{own.conf} as client.{own.user}"
    with tempfile.TemporaryDirectory(prefix="lb-doctor-ceph-") as root:
        try:
            access = write_conf(own, Path(root))
        except OSError as exc:
            return [("ceph", where, False, f"cannot read the conf: {exc.strerror}")]
        try:
            status = cli.parse_status(cli.ceph(runner, access, "status"))
        except ToolError as exc:
            return [("ceph", where, False, f"no answer: {exc}")]
        active = status.active()
        waits = f"a run waits at most {ACTIVE_LIMIT_S:.0f} s for every PG to be active, then fails its trials"
        return [
            ("ceph", where, True, f"Ceph {_version(runner, access)}; {status.said()}"),
            ("ceph", "placement groups active", active, "every PG takes I/O" if active else waits),
            _pool_row(access, own, runner),
            _caps_row(access, own, runner),
        ]


def _version(runner: Runner, access: cli.Access) -> str:
    try:
        found = cli.ceph_json(runner, access, "version") or {}
    except ToolError:
        return "(version not readable)"
    return str(found.get("version", "?")).removeprefix("ceph version ").split(" (")[0]


def _pool_row(access: cli.Access, own: OwnClusterSpec, runner: Runner) -> DoctorRow:
    what = f"pool {own.pool}"
    try:
        why = not_rbd(own, cli.ceph_json(runner, access, "osd", "pool", "application", "get", own.pool) or {})
    except ToolError as exc:
        return ("ceph", what, False, f"{exc}; layerbench creates no pool")
    if why is not None:
        return ("ceph", what, False, f"{why}; `rbd pool init {own.pool}` makes it one")
    return ("ceph", what, True, "an RBD pool: a run makes an image of its own there and removes it")


def _caps_row(access: cli.Access, own: OwnClusterSpec, runner: Runner) -> DoctorRow:
    """What the user may do: its capabilities where it may read them, else whether it can list the pool."""
    what = f"client.{own.user}'s capabilities"
    try:
        (entry, *_) = cli.ceph_json(runner, access, "auth", "get", f"client.{own.user}") or [{}]
        caps = "; ".join(f"{k} '{v}'" for k, v in sorted(entry.get("caps", {}).items()))
        return ("ceph", what, True, caps or "none listed")
    except (ToolError, ValueError):
        pass  # a user without mon 'allow *' may not read its own entry: ask what it can do instead
    try:
        cli.rbd(runner, access, "ls", own.pool)
    except ToolError as exc:
        return ("ceph", what, False, f"cannot list pool {own.pool}'s images: {exc}; a run needs "
                "mon 'profile rbd' and osd 'profile rbd pool=POOL'")  # fmt: skip
    return ("ceph", what, True, f"lists pool {own.pool}'s images (its own entry is not readable as this user); "
            "whether it may create one, a run's first image finds out")  # fmt: skip
