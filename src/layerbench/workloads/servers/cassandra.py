"""Apache Cassandra 5.0: its jars from Maven Central (java/fetch-cassandra.sh), run by the host's JDK.

No tarball and no start scripts: ``java -cp CACHE/cassandra/lib/* CassandraDaemon`` with what
Cassandra's own scripts would add (conf/jvm17-server.options: G1 and the module flags Java 17
needs; heap sized as cassandra-env.sh does, but from the memory the server is given, not the
host's). The image carries the same JDK (its binary, libraries, module image and
configuration) and the same jars, at the same paths, so native and container run the same bits.

Everything Cassandra writes lives in its data directory on the placement: data, commit log,
saved caches, hints, and the cassandra.yaml and logback.xml layerbench writes there. One node,
its own cluster: the node talks to itself on a loopback address of its own, derived from its
client port (instances side by side on the host's loopback never share the internode port), and
JMX is never started (no port to clash). It serves CQL when its native transport answers a CQL
OPTIONS request and the role cassandra logs in with the run's password (PasswordAuthenticator;
``ready`` sets that password); SIGTERM drains it (memtables flushed) and it exits.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import struct
from pathlib import Path

import yaml

from layerbench.errors import PrerequisiteError
from layerbench.proc import Runner
from layerbench.workloads.servers.base import ServerConfig, ServerDef

MAIN_CLASS = "org.apache.cassandra.service.CassandraDaemon"
MIB, GIB = 2**20, 2**30
INTERNODE_PORT = 7000
# The JDK's libraries a headless server never loads (they pull in X11 and sound libraries).
DESKTOP_LIBRARIES = frozenset(
    {"libawt_xawt.so", "libjawt.so", "libsplashscreen.so", "libjsound.so", "libatk-wrapper.so"}
)
# The JDK's files only the compiler or a debugger reads (ct.sym: javac's symbols; src.zip: sources).
JDK_SKIPPED = frozenset({"ct.sym", "src.zip"})

# Cassandra 5.0's conf/jvm17-server.options (G1 and the JPMS exports and opens it needs on Java 17).
JVM17_OPTIONS = [
    "-XX:+UseG1GC", "-XX:+ParallelRefProcEnabled", "-XX:MaxTenuringThreshold=1", "-XX:G1HeapRegionSize=16m",
    "-XX:G1RSetUpdatingPauseTimePercent=5", "-XX:MaxGCPauseMillis=300", "-XX:InitiatingHeapOccupancyPercent=70",
    "-Djdk.attach.allowAttachSelf=true",
    *[f"--add-exports={m}=ALL-UNNAMED" for m in (
        "java.base/jdk.internal.misc", "java.management.rmi/com.sun.jmx.remote.internal.rmi",
        "java.rmi/sun.rmi.registry", "java.rmi/sun.rmi.server", "java.sql/java.sql", "java.base/java.lang.ref",
        "jdk.unsupported/sun.misc", "jdk.compiler/com.sun.tools.javac.file", "jdk.attach/sun.tools.attach",
    )],
    *[f"--add-opens={m}=ALL-UNNAMED" for m in (
        "java.base/java.lang.module", "java.base/jdk.internal.loader", "java.base/jdk.internal.ref",
        "java.base/jdk.internal.reflect", "java.base/jdk.internal.math", "java.base/jdk.internal.module",
        "java.base/jdk.internal.util.jar", "jdk.management/com.sun.management.internal", "java.base/sun.nio.ch",
        "java.base/java.io", "java.base/java.lang.reflect", "jdk.compiler/com.sun.tools.javac",
        "java.base/java.lang", "java.base/java.util",
    )],
    "-Dio.netty.tryReflectionSetAccessible=true",
    "-Dio.netty.allocator.useCacheForAllThreads=true",
    "-Dio.netty.allocator.maxOrder=11",
]  # fmt: skip
# From conf/jvm-server.options, and what a single-node test cluster skips.
SERVER_OPTIONS = [
    "-Xss256k",
    "-XX:+AlwaysPreTouch",  # the heap is resident from the start: the memory it takes is the memory it has
    "-XX:+PerfDisableSharedMem",  # no hsperfdata file in a shared /tmp
    "-XX:+ExitOnOutOfMemoryError",  # a server out of heap dies (its trials fail with its log), never limps on
    "-Dcassandra-foreground=yes",
    # One node, its own seed: nothing to gossip with, so the 30 s ring delay and the waits for
    # gossip to settle (about 55 s of a 66 s start here) only delay it.
    "-Dcassandra.skip_wait_for_gossip_to_settle=0",
    "-Dcassandra.ring_delay_ms=100",
    # The default role (cassandra/cassandra) made at once, not 10 s on: ``ready`` changes its password.
    "-Dcassandra.superuser_setup_delay_ms=0",
]
LOGBACK = """<configuration>
  <appender name="STDOUT" class="ch.qos.logback.core.ConsoleAppender">
    <encoder><pattern>%-5level [%thread] %date{ISO8601} %F:%L - %msg%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="STDOUT"/></root>
</configuration>
"""


def lib_dir(cache_dir: Path) -> Path:
    return cache_dir / "cassandra" / "lib"


def jars(cache_dir: Path) -> list[str]:
    found = sorted(str(p) for p in lib_dir(cache_dir).glob("*.jar"))
    if not any(Path(j).name.startswith("cassandra-all-") for j in found):
        raise PrerequisiteError(
            f"Cassandra's jars are not in {lib_dir(cache_dir)}",
            hint=f"make setup fetches them (java/fetch-cassandra.sh {cache_dir})",
        )
    return found


def java() -> Path:
    """The JDK's own java binary (not /usr/bin/java's alternatives link): its home is two levels up."""
    path = shutil.which("java")
    if path is None:
        raise PrerequisiteError("java is not installed", hint="apt-get install default-jdk-headless (make setup does)")
    return Path(os.path.realpath(path))


def binaries(cache_dir: Path) -> dict[str, str]:
    jars(cache_dir)  # refuse here, where the host's servers are listed, when set-up has not run
    return {"java": str(java())}


def files(cache_dir: Path) -> list[str]:
    """The jars, and the JDK's run-time files: module image, libraries, configuration (links followed)."""
    home = java().parent.parent
    found = []
    for part in ("lib", "conf"):
        for p in (home / part).rglob("*"):
            if p.name in DESKTOP_LIBRARIES or p.name in JDK_SKIPPED or not p.is_file():
                continue  # is_file: links to files (conf's into /etc), not dangling ones
            found.append(str(p))
    return sorted([*found, *jars(cache_dir)])


def heap_bytes(memory: int) -> int:
    """cassandra-env.sh's rule, max(min(1/2, 1 GiB), min(1/4, 8 GiB)), of the memory it is given."""
    return max(min(memory // 2, GIB), min(memory // 4, 8 * GIB)) // MIB * MIB


def internode_address(port: int) -> str:
    """A loopback address of this instance's own (all of 127/8 is loopback on Linux), from its client port."""
    return f"127.{port >> 8 & 0xFF}.{port & 0xFF}.1"


def settings(c: ServerConfig) -> dict[str, object]:
    """cassandra.yaml: one node, every directory under the data directory, sized to its memory."""
    data, peer = Path(c.data_dir), internode_address(c.port)
    heap = heap_bytes(c.memory)
    out: dict[str, object] = {
        "cluster_name": "layerbench",
        "num_tokens": 16,
        "partitioner": "org.apache.cassandra.dht.Murmur3Partitioner",
        "endpoint_snitch": "SimpleSnitch",  # its data center is "datacenter1", which the client names
        "seed_provider": [{
            "class_name": "org.apache.cassandra.locator.SimpleSeedProvider",
            "parameters": [{"seeds": f"{peer}:{INTERNODE_PORT}"}],
        }],
        "listen_address": peer,
        "storage_port": INTERNODE_PORT,
        "rpc_address": c.listen,
        "native_transport_port": c.port,
        "native_transport_max_threads": max(128, c.max_clients),
        "data_file_directories": [str(data / "data")],
        "commitlog_directory": str(data / "commitlog"),
        "saved_caches_directory": str(data / "saved_caches"),
        "hints_directory": str(data / "hints"),
        "cdc_raw_directory": str(data / "cdc_raw"),
        "commitlog_sync": "periodic",  # Cassandra's default: fsync every 10 s
        "commitlog_sync_period": "10000ms",
        # Room a tmpfs placement is sized for (fleet.data_bytes): 256 MiB beyond twice the data.
        "commitlog_total_space": "256MiB",
        "memtable_heap_space": f"{heap // 4 // MIB}MiB",  # Cassandra's default share of the heap, said
        "file_cache_size": f"{max(32 * MIB, (c.memory - heap) // 8) // MIB}MiB",  # off-heap chunk cache
        "key_cache_size": f"{max(MIB, heap // 20) // MIB}MiB",
        # Every client logs in (the role cassandra with the run's password, set by ``ready``); what a
        # logged-in client may do is not checked per request (authorization would cost every operation).
        "authenticator": "PasswordAuthenticator" if c.password else "AllowAllAuthenticator",
        "authorizer": "AllowAllAuthorizer",
    }  # fmt: skip
    if c.listen == "0.0.0.0":
        out["broadcast_rpc_address"] = peer  # required with a wildcard rpc_address; the client keeps its own
    return out


def config_files(c: ServerConfig) -> dict[str, str]:
    return {"cassandra.yaml": yaml.safe_dump(settings(c), sort_keys=False), "logback.xml": LOGBACK}


def prepare(c: ServerConfig) -> list[list[str]]:
    return []  # Cassandra makes its directories at first start


def argv(c: ServerConfig) -> list[str]:
    heap, data = heap_bytes(c.memory), Path(c.data_dir)
    direct = max(64 * MIB, (c.memory - heap) // 4)  # netty's buffers and the chunk cache, off the heap
    return [
        str(java()),
        f"-Xms{heap // MIB}m", f"-Xmx{heap // MIB}m", f"-XX:MaxDirectMemorySize={direct // MIB}m",
        *SERVER_OPTIONS, *JVM17_OPTIONS,
        f"-Dcassandra.config=file://{data / 'cassandra.yaml'}",
        f"-Dlogback.configurationFile={data / 'logback.xml'}",
        f"-Dcassandra.storagedir={data}",
        "-cp", f"{lib_dir(c.cache_dir)}/*",  # java expands the * itself: no shell involved
        MAIN_CLASS,
    ]  # fmt: skip


# A CQL native-protocol v4 frame header: version, flags, stream, opcode, body length.
_HEADER = struct.Struct(">BBhBi")
ERROR, STARTUP, READY, AUTHENTICATE, OPTIONS, SUPPORTED, QUERY, RESULT = 0x00, 0x01, 0x02, 0x03, 0x05, 0x06, 0x07, 0x08
AUTH_RESPONSE, AUTH_SUCCESS = 0x0F, 0x10
REQUEST_V4, RESPONSE_V4 = 0x04, 0x84
ROLE, DEFAULT_PASSWORD = "cassandra", "cassandra"  # PasswordAuthenticator's default superuser
CONSISTENCY_ONE = 0x0001


class CqlError(Exception):
    """The server answered a request with something other than what was asked."""


def _frame(opcode: int, body: bytes = b"") -> bytes:
    return _HEADER.pack(REQUEST_V4, 0, 0, opcode, len(body)) + body


def _string(text: str) -> bytes:
    data = text.encode()
    return struct.pack(">H", len(data)) + data


def _exchange(s: socket.socket, opcode: int, body: bytes = b"") -> tuple[int, bytes]:
    s.sendall(_frame(opcode, body))
    head = s.recv(_HEADER.size, socket.MSG_WAITALL)
    if len(head) < _HEADER.size:
        raise CqlError("the connection closed")
    version, _, _, answer, length = _HEADER.unpack(head)
    if version != RESPONSE_V4:
        raise CqlError(f"not a CQL v4 response (version byte {version:#x})")
    body = s.recv(length, socket.MSG_WAITALL) if length else b""
    return answer, body


def _login(s: socket.socket, role: str, password: str) -> bool:
    """STARTUP, then SASL PLAIN if the server asks for it: did it let this role in?"""
    answer, _ = _exchange(s, STARTUP, struct.pack(">H", 1) + _string("CQL_VERSION") + _string("3.0.0"))
    if answer == READY:
        return True  # no authentication asked
    if answer != AUTHENTICATE:
        raise CqlError(f"STARTUP answered with opcode {answer:#x}")
    token = b"\0" + role.encode() + b"\0" + password.encode()
    answer, _ = _exchange(s, AUTH_RESPONSE, struct.pack(">i", len(token)) + token)
    return answer == AUTH_SUCCESS


def _query(s: socket.socket, cql: str) -> None:
    data = cql.encode()
    answer, body = _exchange(s, QUERY, struct.pack(">i", len(data)) + data + struct.pack(">HB", CONSISTENCY_ONE, 0))
    if answer != RESULT:
        raise CqlError(f"{cql.split(' WITH ')[0]}: {body[6:].decode(errors='replace')}")  # code, length, message


def _connect(host: str, port: int) -> socket.socket:
    return socket.create_connection((host, port), timeout=5)


def ready(host: str, port: int, runner: Runner, password: str = "") -> bool:
    """Does it serve CQL: an OPTIONS request answered with SUPPORTED (an open port alone is not enough);
    with a password, does the role cassandra log in with it.

    PasswordAuthenticator makes the role cassandra with the password cassandra once the node is up:
    the first probe that finds it so sets the run's password (ALTER ROLE), and the next one logs in
    with it. That default password works from the node's first answer until then (under a second).
    """
    try:
        with _connect(host, port) as s:
            answer, _ = _exchange(s, OPTIONS)
            if answer != SUPPORTED:
                return False
        if not password:
            return True
        with _connect(host, port) as s:
            if _login(s, ROLE, password):
                return True
        with _connect(host, port) as s:
            if _login(s, ROLE, DEFAULT_PASSWORD):
                _query(s, f"ALTER ROLE {ROLE} WITH PASSWORD = '{_quoted(password)}'")
    except (OSError, CqlError):
        return False  # not up yet, or the default role not made yet: asked again
    return False


def _quoted(text: str) -> str:
    return text.replace("'", "''")


DEFINITION = ServerDef(
    kind="cassandra",
    default_port=9042,
    binaries=binaries,
    files=files,
    prepare=prepare,
    argv=argv,
    ready=ready,
    config_files=config_files,
    stop_signal=signal.SIGTERM,  # its shutdown hook drains: memtables flushed, commit log closed
    stop_grace_s=120.0,
    ready_timeout_s=300.0,  # 11 s on a quiet 2-core host, a minute or more beside a busy neighbour
)
