"""`layerbench serve`: the results store as web pages and JSON, read-only, on localhost unless told otherwise.

Registered in cli/app.py. The server (Starlette on uvicorn) and what it renders (report/, the analysis) are
imported when it starts: every other command's start would pay for them.
"""

from __future__ import annotations

import ipaddress

import typer
from rich.markup import escape

from layerbench.cli.boundary import UsageError, boundary, err_console

LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})


def serve_command(
    db: str = typer.Option(
        "layerbench.db", "--db", envvar="LAYERBENCH_DB", metavar="URL|PATH", help="The results store to browse."
    ),
    host: str = typer.Option(
        "127.0.0.1", "--host", help="The address to listen on; another than localhost lets other machines in."
    ),
    port: int = typer.Option(8080, "--port", min=1, max=65535, help="The TCP port to listen on."),
) -> None:
    """Browse the results store in a web browser: the runs (filtered by host, preset, layer and date), one
    run as `report --html` shows it, two runs compared, and one comparison's history across runs; every page
    also as JSON under /api/. Read-only: it never writes the store (a run's read cache beside a SQLite file
    is built as `show` builds it)."""
    with boundary():
        import uvicorn

        from layerbench.serve.app import create_app
        from layerbench.serve.source import Source

        source = Source(db)
        source.check()
        if not _local(host):
            err_console.print(f"[yellow]warning:[/] listening on {escape(host)}: other machines can read every run")
        where = f"[{host}]" if ":" in host else host
        err_console.print(
            f"serving {source.shown()} read-only at http://{where}:{port}/ "
            f"({'localhost only' if _local(host) else 'reachable from other machines'}); Ctrl-C stops",
            soft_wrap=True,  # one line, however long the path: a script waits for the URL in it
            markup=False,
        )
        try:
            uvicorn.run(create_app(source), host=host, port=port, log_level="warning", server_header=False)
        except SystemExit as exc:  # uvicorn exits 1 when it cannot bind; it has said why
            raise UsageError(f"cannot serve on {host}:{port}", hint="is the port taken? pass --port") from exc
        finally:
            source.close()


def _local(host: str) -> bool:
    if host in LOCAL_HOSTS:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
