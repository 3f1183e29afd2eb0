"""The two group roles of a team's results database: who may only read, and who may publish.

``ROLES_SQL`` is what `layerbench publish --setup-roles` runs as the database's owner, after creating (or
upgrading) the schema, and what docs/how-to/team-results.md shows (a test keeps the two the same). It can be
run again: a role already there is kept, and the grants are repeated (a new table of a later schema version
is granted too). People log in as their own roles, each granted one of the two.
"""

from __future__ import annotations

from typing import Any

from layerbench.store.pg import translated_errors

READER = "layerbench_reader"
WRITER = "layerbench_writer"

ROLES_SQL = """\
DO $$ BEGIN CREATE ROLE layerbench_reader NOLOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$;
DO $$ BEGIN CREATE ROLE layerbench_writer NOLOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$;
GRANT layerbench_reader TO layerbench_writer;
DO $$ BEGIN EXECUTE format('GRANT CONNECT, TEMPORARY ON DATABASE %I TO layerbench_reader', current_database()); END $$;
GRANT USAGE ON SCHEMA public TO layerbench_reader;
GRANT SELECT ON ALL TABLES IN SCHEMA public TO layerbench_reader;
GRANT INSERT, UPDATE ON ALL TABLES IN SCHEMA public TO layerbench_writer;
GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO layerbench_writer;
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT ON TABLES TO layerbench_reader;
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT INSERT, UPDATE ON TABLES TO layerbench_writer;
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT USAGE ON SEQUENCES TO layerbench_writer;
"""


def statements() -> list[str]:
    return [line for line in ROLES_SQL.splitlines() if line.strip()]


def set_up(conn: Any, where: str) -> None:
    """``ROLES_SQL`` run in one transaction on ``conn`` (a psycopg connection of the database's owner)."""
    with translated_errors(where), conn.transaction():
        for statement in statements():
            conn.execute(statement.encode())  # bytes: run as written, no placeholders parsed
