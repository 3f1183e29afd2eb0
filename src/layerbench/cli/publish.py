"""`layerbench publish`: a finished run of this host's store copied into the team's PostgreSQL database
(store/publish.py), and with --setup-roles that database's schema and its reader and writer roles made
(store/pg_roles.py). Registered in cli/app.py."""

from __future__ import annotations

import json

import typer
from rich.markup import escape

from layerbench.cli.boundary import UsageError, boundary
from layerbench.cli.options import DB_OPTION, JSON_OPTION, console
from layerbench.store.open import is_url, open_store

TO_OPTION = typer.Option(
    ...,
    "--to",
    envvar="LAYERBENCH_PUBLISH_TO",
    help="The shared store: postgresql://USER:PASSWORD@HOST:PORT/DATABASE (or PGPASSWORD, ~/.pgpass).",
)


def publish(
    run_ref: str = typer.Argument("latest", metavar="RUN", help="A run id, a unique prefix of one, or 'latest'."),
    to: str = TO_OPTION,
    db: str = DB_OPTION,
    setup_roles: bool = typer.Option(
        False,
        "--setup-roles",
        help="Instead: create (or upgrade) the schema in --to and its roles layerbench_reader and layerbench_writer"
        " (as the database's owner).",
    ),
    as_json: bool = JSON_OPTION,
) -> None:
    """Copy a finished run into a shared PostgreSQL database, whole or not at all.

    The run keeps its id, host, kernel, tool versions and spec. Publishing it again stores it once; a publish
    interrupted midway left nothing and can simply be repeated. Exit 0 when the run is there (stored now or
    before), 6 when the database refused it (a role without write rights, a wrong password, another run of
    the same id).
    """
    with boundary():
        if not is_url(to):
            raise UsageError(f"--to {to!r} is not a postgresql:// URL", hint="publish to a shared PostgreSQL store")
        if setup_roles:
            _set_up(to, as_json)
            return
        from layerbench.store.publish import publish as copy_run

        source = open_store(db, create=False)
        target = open_store(to)
        try:
            done = copy_run(source, run_ref, target)
        finally:
            target.close()
            source.close()
        if as_json:
            print(json.dumps(done.to_json(), indent=2))
        elif done.stored:
            console.print(
                f"published run {done.run_id} to {escape(done.target)}: {done.trials} trials,"
                f" {done.samples} samples in {done.seconds:.1f} s"
            )
        else:
            console.print(f"run {done.run_id} is in {escape(done.target)} already (published before): stored once")


def _set_up(to: str, as_json: bool) -> None:
    from layerbench.store import pg_roles

    store = open_store(to)
    try:
        pg_roles.set_up(store.conn, store.location)
    finally:
        store.close()
    if as_json:
        print(json.dumps({"to": store.location, "roles": [pg_roles.READER, pg_roles.WRITER]}, indent=2))
    else:
        console.print(
            f"{escape(store.location)}: schema ready; roles {pg_roles.READER} (browse) and {pg_roles.WRITER}"
            " (publish) granted. Give each person a login role in one of them (docs/how-to/team-results.md)."
        )
