"""Database servers layerbench can run: an explicit registry, one module each."""

from __future__ import annotations

from layerbench.workloads.servers import cassandra, ferretdb, postgres, redis
from layerbench.workloads.servers.base import SERVER_UID, ServerConfig, ServerDef

SERVERS: dict[str, ServerDef] = {
    "postgres": postgres.DEFINITION,
    "redis": redis.DEFINITION,
    "cassandra": cassandra.DEFINITION,
    "ferretdb": ferretdb.DEFINITION,
}

__all__ = ["SERVERS", "SERVER_UID", "ServerConfig", "ServerDef"]
